package loadgen_test

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// truthServer serves the simulated engine and records, per request, the
// monotonic time at which each of its flushes returned: the moment a chunk
// left the server. Comparing those with the client's chunk times isolates
// the client's own timing error from the engine's timer jitter.
type truthServer struct {
	URL     string
	mu      sync.Mutex
	arrival map[int]time.Time
	flushes map[int][]time.Time
}

type flushRecorder struct {
	http.ResponseWriter
	times *[]time.Time
	mu    *sync.Mutex
}

func (f flushRecorder) Flush() {
	f.ResponseWriter.(http.Flusher).Flush()
	now := time.Now()
	f.mu.Lock()
	*f.times = append(*f.times, now)
	f.mu.Unlock()
}

func (f flushRecorder) Unwrap() http.ResponseWriter { return f.ResponseWriter }

func startTruth(t testing.TB, opts sim.Options) *truthServer {
	t.Helper()
	e, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := &truthServer{arrival: map[int]time.Time{}, flushes: map[int][]time.Time{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(strings.TrimPrefix(r.Header.Get("X-Request-Id"), "infercrane-"))
		if err != nil || !strings.HasPrefix(r.URL.Path, "/v1/") {
			e.ServeHTTP(w, r)
			return
		}
		times := make([]time.Time, 0, 64)
		ts.mu.Lock()
		ts.arrival[id] = time.Now()
		ts.mu.Unlock()
		e.ServeHTTP(flushRecorder{w, &times, &ts.mu}, r)
		ts.mu.Lock()
		ts.flushes[id] = times
		ts.mu.Unlock()
	}))
	srv.Config.SetKeepAlivesEnabled(true)
	srv.Start()
	t.Cleanup(func() { e.Close(); srv.CloseClientConnections(); srv.Close() })
	ts.URL = srv.URL
	return ts
}

// lag returns, over every token chunk of every succeeded request, the
// client's arrival time minus the server's flush time, in milliseconds,
// sorted. The engine flushes the headers first, then one flush per token.
func (ts *truthServer) lag(res *loadgen.Result) []float64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []float64
	for _, r := range res.Records {
		fl := ts.flushes[r.Index]
		if !r.OK() || r.Warmup || len(fl) < len(r.ChunkNs)+1 {
			continue
		}
		for k, c := range r.ChunkNs {
			server := fl[k+1].Sub(res.Started)
			out = append(out, float64(c-int64(server))/1e6)
		}
	}
	sort.Float64s(out)
	return out
}

// truth returns what the engine actually did, from its flush times, in ms:
// the TTFT the client should see (first-token flush minus the client's send
// time) and every gap between token flushes, both sorted; and the engine's
// own lateness on every token (flush minus arrival minus the configured
// TTFT + k*ITL).
func (ts *truthServer) truth(res *loadgen.Result, ttft, itl time.Duration) (ttfts, itls, engineErr []float64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, r := range res.Records {
		fl := ts.flushes[r.Index]
		if !r.OK() || r.Warmup || len(fl) < len(r.ChunkNs)+1 {
			continue
		}
		ttfts = append(ttfts, float64(int64(fl[1].Sub(res.Started))-r.SentNs)/1e6)
		for k := 1; k <= len(r.ChunkNs); k++ {
			due := ttft + time.Duration(k-1)*itl
			engineErr = append(engineErr, float64(fl[k].Sub(ts.arrival[r.Index])-due)/1e6)
		}
		for k := 2; k <= len(r.ChunkNs); k++ {
			itls = append(itls, float64(fl[k].Sub(fl[k-1]))/1e6)
		}
	}
	sort.Float64s(ttfts)
	sort.Float64s(itls)
	sort.Float64s(engineErr)
	return ttfts, itls, engineErr
}

// reset forgets what earlier runs recorded (request indexes restart at 0).
func (ts *truthServer) reset() {
	ts.mu.Lock()
	ts.arrival, ts.flushes = map[int]time.Time{}, map[int][]time.Time{}
	ts.mu.Unlock()
}
