package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCommitRun measures making one run durable (records file written,
// fsynced and renamed, directory fsynced, journal entry appended and
// fsynced) and reports it as a ratio against the bare minimum in the same
// process: the same bytes written to a file and fsynced, plus one fsynced
// append.
func BenchmarkCommitRun(b *testing.B) {
	rec := []byte(`{"index":1,"scheduled_ns":0,"sent_ns":1000,"first_token_ns":20000000,"last_token_ns":90000000,"done_ns":91000000,"input_tokens":512,"prompt_tokens":512,"max_tokens":128,"output_tokens":128,"client_tokens":128,"status":200}` + "\n")
	records := bytes.Repeat(rec, 256)
	summary := json.RawMessage(`{"requests":256,"succeeded":256}`)
	dir := b.TempDir()

	base := filepath.Join(dir, "baseline")
	os.MkdirAll(base, 0o755)
	jf, err := os.OpenFile(filepath.Join(base, "j"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer jf.Close()
	baseline := func(i int) {
		f, _ := os.Create(filepath.Join(base, fmt.Sprint(i)))
		f.Write(records)
		f.Sync()
		f.Close()
		jf.Write(summary)
		jf.Sync()
	}
	const warm = 20
	start := time.Now()
	for i := 0; i < warm; i++ {
		baseline(i)
	}
	perBaseline := time.Since(start) / warm

	s, err := Open(filepath.Join(dir, "state"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.StartLane("lane", "k", b.N, map[string]any{})
	b.SetBytes(int64(len(records)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := s.CommitRun(RunRecord{Lane: "lane", Run: i + 1, Summary: summary}, func(w io.Writer) error {
			_, err := w.Write(records)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per)/float64(perBaseline), "x_baseline")
}
