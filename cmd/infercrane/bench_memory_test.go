package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/sim"
)

// benchPeakRSS runs `infercrane bench` (its own process) for n short
// requests against srv and returns its peak resident set in MiB.
func benchPeakRSS(b *testing.B, url string, n int, records string) float64 {
	b.Helper()
	args := []string{"bench", "--url", url, "--model", "m", "--input-tokens", "8", "--output-tokens", "2",
		"--concurrency", "16", "--requests", strconv.Itoa(n), "--json"}
	if records != "" {
		args = append(args, "--records", records)
	}
	cmd := exec.Command("infercrane", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("bench of %d requests: %v\n%s", n, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Skip("no rusage on this system")
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}

// BenchmarkBenchPeakMemory measures the peak memory of `bench` for 10,000
// and for 1,000,000 short requests (INFERCRANE_BENCH_MEM_REQUESTS changes
// the large count) against the simulated engine, streaming the records to
// a file, and reports both and their ratio; the records path keeps memory
// flat in the number of requests, so the ratio stays under 2. Run it with
//
//	go test -run '^$' -bench BenchmarkBenchPeakMemory -benchtime 1x ./cmd/infercrane
func BenchmarkBenchPeakMemory(b *testing.B) {
	large := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("INFERCRANE_BENCH_MEM_REQUESTS")); err == nil && v > 0 {
		large = v
	}
	srv, err := sim.Listen("127.0.0.1:0", sim.Options{Model: "m", TTFT: time.Nanosecond, ITL: time.Nanosecond})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown(b.Context())
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		small := benchPeakRSS(b, srv.URL, 10_000, dir+"/small.jsonl")
		big := benchPeakRSS(b, srv.URL, large, dir+"/large.jsonl")
		b.ReportMetric(small, "MiB-peak-10k")
		b.ReportMetric(big, fmt.Sprintf("MiB-peak-%dk", large/1000))
		b.ReportMetric(big/small, "ratio")
		if big/small > 2 {
			b.Errorf("peak memory %.1f MiB for %d requests is %.2fx the %.1f MiB of 10,000 (want within 2x)", big, large, big/small, small)
		}
	}
}
