package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/infercrane/infercrane/planner/workload/synth"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// TestProfileTraceFromS3Endpoint runs `profile trace s3://...` against an
// in-process S3-compatible store named by AWS_ENDPOINT_URL (path-style).
func TestProfileTraceFromS3Endpoint(t *testing.T) {
	var trace bytes.Buffer
	if err := synth.Write(&trace, synth.Options{Rows: 20_000, RowsPerGroup: 1000, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	backend := s3mem.New()
	if err := backend.CreateBucket("traces"); err != nil {
		t.Fatal(err)
	}
	if _, err := backend.PutObject("traces", "year/trace.parquet", map[string]string{}, bytes.NewReader(trace.Bytes()), int64(trace.Len()), nil); err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	h := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	vars := map[string]string{"AWS_ENDPOINT_URL": srv.URL, "AWS_REGION": "us-east-1"}
	var stdout, stderr bytes.Buffer
	env := &cliEnv{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return vars[k] }}
	code := runProfileTrace(env, []string{"s3://traces/year/trace.parquet", "--anonymous", "--region", "us-east-1", "--rows-per-group", "500", "--max-context", "4096"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"Profiled " + srv.URL + "/traces/year/trace.parquet: 20,000 rows in 20 row groups; read groups [2 10 17], 1,500 rows inspected.",
		"Shapes (clipped to a 4096-token context):",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`Read [\d.]+ KiB of [\d.]+ MiB \(\d+\.\d\d%\)`).MatchString(out) {
		t.Errorf("bytes read line missing:\n%s", out)
	}
	if served.Load() == 0 {
		t.Fatal("the S3 server saw no requests: AWS_ENDPOINT_URL was not honoured")
	}
	if strings.Contains(out+stderr.String(), "AKIA") {
		t.Fatal("credentials in output")
	}
}
