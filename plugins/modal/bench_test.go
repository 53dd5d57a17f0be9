package modal_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/plugins/modal"
)

// BenchmarkRunOverhead measures what the executor adds to a run: the same
// load generator command against the same server, run directly (the
// baseline) and through Executor.Run (exec in the sandbox, progress
// streaming, records read back with cat, parsing and the consistency check).
// It reports both times per run and their ratio.
func BenchmarkRunOverhead(b *testing.B) {
	f := newFixture(b, nil, nil)
	f.cloud.SimArgs = []string{"--ttft", "1ms", "--itl", "1ms"}
	srv, err := f.exec.Deploy(b.Context(), f.deployment("dep1"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.exec.Teardown(b.Context(), srv)
	meta, err := f.cloud.Meta(srv.Handle)
	if err != nil {
		b.Fatal(err)
	}
	l := load(32)
	l.Concurrency = 4
	records := filepath.Join(b.TempDir(), "direct.jsonl")
	msg, err := modal.LoadMessage(srv.Model, l)
	if err != nil {
		b.Fatal(err)
	}
	config := filepath.Join(b.TempDir(), "load.json")
	if err := os.WriteFile(config, msg, 0o644); err != nil {
		b.Fatal(err)
	}
	direct := modal.BenchCommand(config, records)
	direct[0] = loadgenBin
	for i, a := range direct {
		direct[i] = strings.Replace(a, "127.0.0.1:8000", "127.0.0.1:"+strconv.Itoa(meta.Port), 1)
	}
	var baseline, through time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		out, err := exec.Command(direct[0], direct[1:]...).Output()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := loadgen.ReadResult(bytes.NewReader(out)); err != nil {
			b.Fatal(err)
		}
		rf, err := os.Open(records)
		if err != nil {
			b.Fatal(err)
		}
		recs, err := loadgen.ReadRecords(rf)
		rf.Close()
		if err != nil || len(recs) != 32 {
			b.Fatalf("%d records, %v", len(recs), err)
		}
		baseline += time.Since(t0)

		t1 := time.Now()
		res, err := f.exec.Run(b.Context(), srv, executor.RunSpec{Lane: "l", Run: i + 1, Load: l})
		if err != nil || len(res.Records) != 32 {
			b.Fatalf("%v", err)
		}
		through += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(baseline.Milliseconds())/n, "direct-ms/run")
	b.ReportMetric(float64(through.Milliseconds())/n, "executor-ms/run")
	b.ReportMetric(through.Seconds()/baseline.Seconds(), "executor/direct")
}
