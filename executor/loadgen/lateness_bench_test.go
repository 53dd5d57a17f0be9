package loadgen_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/cputime"
)

// sendLateness runs one open loop of n requests at rate (Poisson arrivals)
// against url and returns each request's send delay (SentNs minus
// ScheduledNs, µs) and the client's CPU time per request (µs).
func sendLateness(tb testing.TB, url string, rate float64, n int, opts ...loadgen.Option) (late []float64, cpuPerReq float64) {
	tb.Helper()
	cfg := baseConfig(url)
	cfg.Concurrency, cfg.RequestRate, cfg.Requests, cfg.OutputTokens = 0, rate, n, 4
	c0 := cputime.Used()
	res, err := loadgen.Run(context.Background(), cfg, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	cpu := cputime.Used() - c0
	if res.Summary.Succeeded != n {
		tb.Fatalf("%d of %d requests succeeded: %v", res.Summary.Succeeded, n, res.Summary.Failures)
	}
	for _, r := range res.Records {
		if r.OpenLoop && !r.Warmup {
			late = append(late, float64(r.SentNs-r.ScheduledNs)/1e3)
		}
	}
	slices.Sort(late)
	return late, float64(cpu.Microseconds()) / float64(n)
}

// BenchmarkOpenLoopSendLateness measures how late the open-loop dispatcher
// sends requests (the records' SentNs - ScheduledNs, the summary's schedule
// delay) at 50, 200 and 1,000 req/s, Poisson arrivals, against the
// simulated engine in constant mode served by a child process (so this
// process's CPU time is the client's alone). Every iteration runs, on the
// same schedule, the dispatch Run uses (the precise clock with its bounded
// spin), the precise clock without the spin ("nospin-") and the baseline,
// the time.Timer dispatch the loadgen had before ("timer-"), in an order
// that rotates over iterations (run it with -benchtime 3x); it reports
// each one's p50, p99 and max in µs and the client's CPU (user+sys) per
// request, and the timer-over-precise ratios.
func BenchmarkOpenLoopSendLateness(b *testing.B) {
	ts := startChildTruth(b, 2*time.Millisecond, time.Millisecond)
	variants := []struct {
		prefix string
		opts   []loadgen.Option
	}{
		{"", nil},
		{"nospin-", []loadgen.Option{loadgen.WithDispatchSpin(0)}},
		{"timer-", []loadgen.Option{loadgen.WithStdTimerDispatch(), loadgen.WithDispatchSpin(0)}},
	}
	for _, rate := range []float64{50, 200, 1000} {
		n := max(int(rate*2), 200)
		b.Run(fmt.Sprintf("rate=%g", rate), func(b *testing.B) {
			late := make([][]float64, len(variants))
			cpu := make([]float64, len(variants))
			k := 0
			for b.Loop() {
				// The first run of an iteration comes out later at the
				// tail (after the previous run's end): rotate which
				// variant goes first, so -benchtime 3x treats them alike.
				for r := range variants {
					i := (r + k) % len(variants)
					l, c := sendLateness(b, ts.URL, rate, n, variants[i].opts...)
					late[i], cpu[i] = append(late[i], l...), cpu[i]+c
				}
				k++
			}
			p := func(i int, q float64) float64 { return loadgen.Percentile(late[i], q) }
			for i, v := range variants {
				slices.Sort(late[i])
				b.ReportMetric(p(i, 50), v.prefix+"late-p50-µs")
				b.ReportMetric(p(i, 99), v.prefix+"late-p99-µs")
				b.ReportMetric(late[i][len(late[i])-1], v.prefix+"late-max-µs")
				b.ReportMetric(cpu[i]/float64(k), v.prefix+"cpu-µs/req")
			}
			b.ReportMetric(p(2, 50)/max(p(0, 50), 1), "timer-vs-precise-p50")
			b.ReportMetric(p(2, 99)/max(p(0, 99), 1), "timer-vs-precise-p99")
		})
	}
}
