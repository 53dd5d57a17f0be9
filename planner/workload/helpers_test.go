package workload

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/infercrane/infercrane/planner/workload/synth"
)

var traceCache sync.Map // synth.Options -> path

// synthTrace writes a synthetic trace once per test binary and returns its path.
func synthTrace(t testing.TB, o synth.Options) string {
	t.Helper()
	if p, ok := traceCache.Load(o); ok {
		return p.(string)
	}
	dir, err := os.MkdirTemp("", "infercrane-trace-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trace.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.Write(f, o); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	traceCache.Store(o, p)
	return p
}

// smallTrace is the trace most tests share: 60,000 rows in 12 row groups.
var smallTrace = synth.Options{Rows: 60_000, RowsPerGroup: 5_000, Seed: 7}

func TestMain(m *testing.M) {
	code := m.Run()
	traceCache.Range(func(_, v any) bool {
		os.RemoveAll(filepath.Dir(v.(string)))
		return true
	})
	os.Exit(code)
}
