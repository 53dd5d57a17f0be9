package sim

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/sim/internal/arrival"
	"github.com/infercrane/infercrane/planner/cputime"
)

// pacedSSE is the baseline of BenchmarkManyStreams: a bare handler that
// keeps the same schedule with one time.Timer per stream and writes the
// same chunk bytes, one flush per token, with no engine logic. It pays the
// same write syscalls and wakeups as the engine, and times requests from
// the same arrival (package arrival, when served as the engine is), so a
// loaded machine slows both alike and their ratio is the engine's own cost.
func pacedSSE(ttft, itl time.Duration, tokens int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at, ok := arrival.Of(r)
		if !ok {
			at = time.Now()
		}
		ch := newChunker(false, "cmpl-x", 1, "m", 1, false, "")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		for k := 0; k < tokens; k++ {
			t.Reset(time.Until(at.Add(ttft + time.Duration(k)*itl)))
			<-t.C
			ch.reset()
			ch.token(vocab.wordIDs[" the"], "", k+1)
			if _, err := w.Write(ch.buf); err != nil {
				return
			}
			_ = rc.Flush()
		}
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	})
}

// BenchmarkManyStreams is issue 26's load in one process: 256 streams of 64
// tokens at TTFT 50 ms and ITL 5 ms (51,200 tokens/s offered), all sent at
// once, read by a minimal client. Two baselines run in alternating rounds
// of the same run, so a shared machine's load meets all three alike:
//
//   - the same engine at 16 streams (3,200 tokens/s), which any machine
//     keeps on time: the 256-stream figures are reported as ratios to it
//     (TTFT p50, the engine's own mean lateness per token from its
//     infercrane:sim_token_lateness_seconds, and the process's CPU time per
//     token, engine and client together, which load barely disturbs);
//   - a bare handler keeping the 256-stream schedule with one time.Timer per
//     stream (pacedSSE: the same writes and wakeups, no engine), the floor
//     this machine sets whatever its load.
//
// It fails when the engine's TTFT p50 is more than 5% of the TTFT later than
// the bare handler's or than its own at 16 streams, when its tokens arrive coalesced (ITL p50 under half
// the configured one) where the bare handler's do not, or when a token costs
// the engine more than 1.6x the bare handler's CPU (a per-token cost that
// would make the engine fall behind as soon as anything else runs).
func BenchmarkManyStreams(b *testing.B) {
	const (
		streams = 256
		few     = 16
		tokens  = 64
		ttft    = 50 * time.Millisecond
		itl     = 5 * time.Millisecond
		// cpuOverBare is the most CPU per token the engine may cost over the
		// bare handler at the same 256 streams. Fourteen runs on a loaded
		// 2-core machine (load average 6-10) put the ratio at 0.54-1.36; a
		// planted 30 µs busy loop per token read 1.67. (At 16 streams a
		// token costs 3-7x what it does at 256: fixed per-round costs, so 16
		// streams is no baseline for CPU.)
		cpuOverBare = 1.6
	)
	// target is one server under test at one number of streams, and what
	// its client measured.
	type target struct {
		url         string
		streams     int
		client      *http.Client
		ttfts, gaps []float64
		// cpu is the process's CPU time over the recorded rounds; late and
		// lateCount the engine's lateness sum (seconds) and tokens.
		cpu       time.Duration
		late      float64
		lateCount uint64
	}
	body := []byte(fmt.Sprintf(`{"prompt":"the","max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens))
	url, eng := start(b, Options{Model: "m", TTFT: ttft, ITL: itl})
	lateness := func() (float64, uint64) {
		_, n, sum := eng.metrics.lateness.snapshot()
		return sum, n
	}
	round := func(tg *target, record bool) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		cpu0 := cputime.Used()
		sum0, n0 := lateness()
		for s := 0; s < tg.streams; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var first, last time.Time
				local := make([]float64, 0, tokens)
				sent := time.Now()
				_ = benchStream(tg.client, tg.url+"/v1/completions", body, func(at time.Time) {
					if first.IsZero() {
						first = at
					} else {
						local = append(local, float64(at.Sub(last))/1e6)
					}
					last = at
				})
				if record {
					mu.Lock()
					tg.ttfts = append(tg.ttfts, float64(first.Sub(sent))/1e6)
					tg.gaps = append(tg.gaps, local...)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if record {
			tg.cpu += cputime.Used() - cpu0
			sum1, n1 := lateness()
			tg.late, tg.lateCount = tg.late+sum1-sum0, tg.lateCount+n1-n0
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bare := &http.Server{Handler: arrival.Handler(pacedSSE(ttft, itl, tokens)), ConnContext: arrival.ConnContext}
	go bare.Serve(arrival.Listener(ln))
	defer bare.Close()
	engine := &target{url: url, streams: streams, client: benchClient(streams)}
	small := &target{url: url, streams: few, client: benchClient(few)}
	paced := &target{url: "http://" + ln.Addr().String(), streams: streams, client: benchClient(streams)}
	// The first rounds open the connections, as a load generator's warmup does.
	round(engine, false)
	round(small, false)
	round(paced, false)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Rounds alternate, so the engine and the baselines meet the same
		// load on a shared machine.
		b.StartTimer()
		round(engine, true)
		b.StopTimer()
		round(small, true)
		round(paced, true)
	}
	ttftP50, itlP50 := percentile(engine.ttfts, 0.5), percentile(engine.gaps, 0.5)
	fewTTFT := percentile(small.ttfts, 0.5)
	baseTTFT, baseITL := percentile(paced.ttfts, 0.5), percentile(paced.gaps, 0.5)
	wantMs, itlMs := float64(ttft)/1e6, float64(itl)/1e6
	b.ReportMetric(ttftP50, "ttft-p50-ms")
	b.ReportMetric(ttftP50/wantMs, "ttft-vs-configured")
	b.ReportMetric(itlP50/itlMs, "itl-vs-configured")
	b.ReportMetric(fewTTFT, "16-stream-ttft-p50-ms")
	b.ReportMetric(ttftP50/fewTTFT, "ttft-256-vs-16")
	lateMs := 1e3 * engine.late / float64(max(engine.lateCount, 1))
	fewLateMs := 1e3 * small.late / float64(max(small.lateCount, 1))
	b.ReportMetric(lateMs, "lateness-mean-ms")
	b.ReportMetric(fewLateMs, "16-stream-lateness-mean-ms")
	b.ReportMetric(lateMs/max(fewLateMs, 0.01), "lateness-256-vs-16")
	perToken := func(tg *target) float64 {
		return float64(tg.cpu.Microseconds()) / float64(b.N*tg.streams*tokens)
	}
	cpuRatio := perToken(engine) / perToken(paced)
	b.ReportMetric(perToken(engine), "cpu-us-per-token")
	b.ReportMetric(perToken(small), "16-stream-cpu-us-per-token")
	b.ReportMetric(perToken(engine)/perToken(small), "cpu-per-token-256-vs-16")
	b.ReportMetric(perToken(paced), "bare-cpu-us-per-token")
	b.ReportMetric(cpuRatio, "cpu-per-token-vs-bare")
	b.ReportMetric(baseTTFT, "bare-ttft-p50-ms")
	b.ReportMetric(baseITL/itlMs, "bare-itl-vs-configured")
	b.ReportMetric((ttftP50-wantMs)/max(baseTTFT-wantMs, 0.01), "late-vs-bare")
	// A failed benchmark prints no metrics line, so the figures go to the log too.
	b.Logf("%d streams: TTFT p50 %.2f ms (16 streams %.2f, bare handler %.2f), ITL p50 %.3f ms (bare %.3f), engine lateness mean %.3f ms (16 streams %.3f), CPU %.1f µs/token (16 streams %.1f, bare handler %.1f)",
		streams, ttftP50, fewTTFT, baseTTFT, itlP50, baseITL, lateMs, fewLateMs, perToken(engine), perToken(small), perToken(paced))
	// The engine may be later than the bare handler by 5% of the TTFT at
	// most, may coalesce tokens only where the bare handler does too, and a
	// token may not cost much more CPU than the bare handler's.
	if excess := (ttftP50 - baseTTFT) / wantMs; excess > 0.05 {
		b.Errorf("TTFT p50 %.2f ms against the bare handler's %.2f ms: the engine adds %.1f%% of the configured %v", ttftP50, baseTTFT, excess*100, ttft)
	}
	// A wave of 256 requests must not delay the engine's first tokens
	// beyond the 16-stream rounds' by more than 5% of the TTFT (issue 26's
	// bound at load average 4): the engine times a request from its bytes'
	// arrival, so the wave's reading and dispatch do not count. Timed from
	// its handler instead, it read 2-14 ms over the 16-stream rounds.
	if excess := (ttftP50 - fewTTFT) / wantMs; excess > 0.05 {
		b.Errorf("TTFT p50 %.2f ms at %d streams against %.2f ms at %d: the wave adds %.1f%% of the configured %v", ttftP50, streams, fewTTFT, few, excess*100, ttft)
	}
	if itlP50 < itlMs/2 && baseITL >= itlMs/2 {
		b.Errorf("ITL p50 %.3f ms against %v configured (the bare handler's %.3f ms): the engine's tokens arrive coalesced", itlP50, itl, baseITL)
	}
	if cpuRatio > cpuOverBare && perToken(paced) > 0 {
		b.Errorf("a token costs %.1f µs of CPU in the engine against %.1f µs in the bare handler at %d streams (%.2fx, at most %.1fx)", perToken(engine), perToken(paced), streams, cpuRatio, cpuOverBare)
	}
}
