package loadgen_test

import (
	"os"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/affinity"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// Bounds on the open loop's send lateness (SentNs - ScheduledNs) at 200
// req/s on a 2-vCPU machine, engine in the same process. Measured with the
// precise dispatch: p50 0.10-0.25 ms, p99 0.3-0.5 ms on a quiet machine;
// with a time.Timer: p50 0.46-0.68 ms, p99 1.2-1.4 ms, which these fail.
const (
	onTimeP50 = 400 * time.Microsecond
	onTimeP99 = time.Millisecond
)

// TestOpenLoopSendsOnTime runs 300 requests at 200 req/s (Poisson) against
// the simulated engine: no request may leave before its scheduled instant,
// and the schedule delay's p50 and p99 must stay under onTimeP50 and
// onTimeP99. The bounds are skipped under the race detector and when
// tasks waited for a CPU over 10% of the run (/proc/pressure/cpu): then
// the test measures the machine, not the dispatcher.
//
// Those bounds are `make timing`'s (INFERCRANE_TIMING_STRICT=1, on an idle
// machine). make test runs on loaded 2-core machines whose scheduler delays
// a few sends by a millisecond or more with the CPU pressure still under
// 10%, so there the bounds are ten times looser and hold the p90 instead
// of the p99: one run beside make test's other packages (CPU pressure 8%)
// sent 3 of its 300 requests 10-12 ms late (p50 84 µs), which says nothing
// of the dispatcher. A dispatcher that sleeps at a coarse tick or sends
// late by design still fails (it is late for most sends, not for 1%), and
// a send before its instant fails either way.
func TestOpenLoopSendsOnTime(t *testing.T) {
	boundP50, boundTail, tail := onTimeP50, onTimeP99, 99.0
	if os.Getenv("INFERCRANE_TIMING_STRICT") != "1" {
		boundP50, boundTail, tail = 10*onTimeP50, 10*onTimeP99, 90
	}
	url := startSim(t, sim.Options{Model: "sim", TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	starved := affinity.Starved()
	late, _ := sendLateness(t, url, 200, 300)
	st := starved()
	if len(late) != 300 {
		t.Fatalf("%d open-loop records, want 300", len(late))
	}
	if late[0] < 0 { // sorted: the earliest send first
		t.Errorf("a request left %.1f µs before its scheduled instant", -late[0])
	}
	p50, p90, p99 := loadgen.Percentile(late, 50), loadgen.Percentile(late, 90), loadgen.Percentile(late, 99)
	t.Logf("send lateness p50 %.0f µs, p90 %.0f µs, p99 %.0f µs, max %.0f µs; CPU starvation %.0f%%", p50, p90, p99, late[len(late)-1], 100*st)
	switch {
	case loadgen.RaceEnabled:
		t.Skip("the race detector slows the client; the lateness bounds need a run without -race")
	case st > 0.10:
		t.Skipf("tasks on this machine waited for a CPU %.0f%% of the run's time (/proc/pressure/cpu): too busy to bound the send lateness; rerun on an idle machine", 100*st)
	}
	if pt := loadgen.Percentile(late, tail); p50 > float64(boundP50.Microseconds()) || pt > float64(boundTail.Microseconds()) {
		t.Errorf("send lateness p50 %.0f µs, p%.0f %.0f µs; want under %v and %v", p50, tail, pt, boundP50, boundTail)
	}
}
