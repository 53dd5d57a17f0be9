package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// TestRunLoadStreamsRecordsToDisk: with RecordsPath set, RunLoad keeps no
// record in memory: the records are in the file, in index order, and the
// summary is exactly the one Compute makes from the file.
func TestRunLoadStreamsRecordsToDisk(t *testing.T) {
	srv, err := sim.Listen("127.0.0.1:0", sim.Options{Model: "m", TTFT: time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	path := filepath.Join(t.TempDir(), "runs", "l", "1.jsonl.stream.tmp")
	spec := executor.RunSpec{Lane: "l", Run: 1, RecordsPath: path, Load: loadgen.Config{API: "chat", Streaming: true,
		InputTokens: 8, OutputTokens: 4, Concurrency: 4, Requests: 40, Warmup: 3, Seed: 1}}
	res, err := executor.RunLoad(context.Background(), &executor.Server{BaseURL: srv.URL, Model: "m"}, spec, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != nil || res.RecordsFile != path {
		t.Fatalf("records in memory: %d, file %q", len(res.Records), res.RecordsFile)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 43 {
		t.Fatalf("%d records in the file, want 43 (3 warm-up)", len(recs))
	}
	for i, r := range recs {
		if r.Index != i {
			t.Fatalf("record %d has index %d: not in index order", i, r.Index)
		}
	}
	if got := loadgen.Compute(recs, loadgen.SLO{}); !reflect.DeepEqual(got, res.Summary) {
		t.Fatalf("summary recomputed from the file differs:\n%+v\n%+v", got, res.Summary)
	}
}
