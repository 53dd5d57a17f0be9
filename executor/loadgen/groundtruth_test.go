package loadgen_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// truthData is what the engine did, per request index: when the request
// arrived and when each of its flushes returned (the moment a chunk left the
// server), in wall-clock nanoseconds, comparable across processes on one
// machine. The engine flushes the headers first, then once per token.
type truthData struct {
	Arrival map[int]int64   `json:"arrival"`
	Flushes map[int][]int64 `json:"flushes"`
}

// truthRecorder wraps the simulated engine and records truthData for the
// requests that carry the load generator's X-Request-Id.
type truthRecorder struct {
	next http.Handler
	mu   sync.Mutex
	data truthData
}

func newTruthRecorder(next http.Handler) *truthRecorder {
	tr := &truthRecorder{next: next}
	tr.reset()
	return tr
}

func (tr *truthRecorder) reset() {
	tr.mu.Lock()
	tr.data = truthData{Arrival: map[int]int64{}, Flushes: map[int][]int64{}}
	tr.mu.Unlock()
}

// snapshot returns a copy of what was recorded.
func (tr *truthRecorder) snapshot() truthData {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	b, _ := json.Marshal(tr.data)
	var d truthData
	_ = json.Unmarshal(b, &d)
	return d
}

type flushRecorder struct {
	http.ResponseWriter
	times *[]int64
}

func (f flushRecorder) Flush() {
	f.ResponseWriter.(http.Flusher).Flush()
	*f.times = append(*f.times, time.Now().UnixNano())
}

func (f flushRecorder) Unwrap() http.ResponseWriter { return f.ResponseWriter }

func (tr *truthRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_truth":
		d := tr.snapshot()
		_ = json.NewEncoder(w).Encode(d)
		return
	case "/_truth/reset":
		tr.reset()
		return
	}
	id, err := strconv.Atoi(strings.TrimPrefix(r.Header.Get("X-Request-Id"), "infercrane-"))
	if err != nil || !strings.HasPrefix(r.URL.Path, "/v1/") || r.Method != http.MethodPost {
		tr.next.ServeHTTP(w, r)
		return
	}
	arrival := time.Now().UnixNano()
	times := make([]int64, 0, 64)
	tr.next.ServeHTTP(flushRecorder{w, &times}, r)
	tr.mu.Lock()
	tr.data.Arrival[id], tr.data.Flushes[id] = arrival, times
	tr.mu.Unlock()
}

// truthServer is a simulated engine with a truth recorder, in this process
// or in a child process.
type truthServer struct {
	URL   string
	local *truthRecorder // nil for a child process
}

// startTruth serves the engine in this process.
func startTruth(t testing.TB, opts sim.Options) *truthServer {
	t.Helper()
	e, err := sim.NewEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTruthRecorder(e)
	srv := httptest.NewServer(tr)
	t.Cleanup(func() { e.Close(); srv.CloseClientConnections(); srv.Close() })
	return &truthServer{URL: srv.URL, local: tr}
}

// Environment of the child process that serves the engine for benchmarks.
const (
	childEnv    = "LOADGEN_TEST_SIM_CHILD"
	childTTFT   = "LOADGEN_TEST_SIM_TTFT"
	childITL    = "LOADGEN_TEST_SIM_ITL"
	childPrefix = "serving on "
)

// TestMain lets the test binary serve the engine as a child process, so a
// benchmark can measure the client's CPU apart from the engine's.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		serveChild()
		return
	}
	os.Exit(m.Run())
}

func serveChild() {
	ttft, _ := time.ParseDuration(os.Getenv(childTTFT))
	itl, _ := time.ParseDuration(os.Getenv(childITL))
	e, err := sim.NewEngine(sim.Options{TTFT: ttft, ITL: itl})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := httptest.NewServer(newTruthRecorder(e))
	fmt.Printf("%s%s\n", childPrefix, srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin) // serve until the parent closes stdin
	srv.Close()
}

// startChildTruth serves the engine in a child process (this test binary
// re-executed) until the benchmark ends.
func startChildTruth(t testing.TB, ttft, itl time.Duration) *truthServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childTTFT+"="+ttft.String(), childITL+"="+itl.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, childPrefix) {
		t.Fatalf("the engine child did not start: %q %v", line, err)
	}
	return &truthServer{URL: strings.TrimSpace(strings.TrimPrefix(line, childPrefix))}
}

func (ts *truthServer) reset() {
	if ts.local != nil {
		ts.local.reset()
		return
	}
	if resp, err := http.Get(ts.URL + "/_truth/reset"); err == nil {
		resp.Body.Close()
	}
}

func (ts *truthServer) fetch() truthData {
	if ts.local != nil {
		return ts.local.snapshot()
	}
	var d truthData
	resp, err := http.Get(ts.URL + "/_truth")
	if err == nil {
		_ = json.NewDecoder(resp.Body).Decode(&d)
		resp.Body.Close()
	}
	return d
}

// wall converts a record time to wall-clock nanoseconds.
func wall(res *loadgen.Result, ns int64) int64 { return res.Started.UnixNano() + ns }

// lag returns, over every token chunk of every succeeded request, the
// client's arrival time minus the server's flush time, in milliseconds,
// sorted.
func (ts *truthServer) lag(res *loadgen.Result) []float64 {
	d := ts.fetch()
	var out []float64
	for _, r := range res.Records {
		fl := d.Flushes[r.Index]
		if !r.OK() || r.Warmup || len(fl) < len(r.ChunkNs)+1 {
			continue
		}
		for k, c := range r.ChunkNs {
			out = append(out, float64(wall(res, c)-fl[k+1])/1e6)
		}
	}
	sort.Float64s(out)
	return out
}

// truth returns what the engine actually did, in ms: the TTFT the client
// should see (first-token flush minus the client's send time) and every gap
// between token flushes, both sorted; and the engine's own lateness on every
// token (flush minus arrival minus the configured TTFT + k*ITL).
func (ts *truthServer) truth(res *loadgen.Result, ttft, itl time.Duration) (ttfts, itls, engineErr []float64) {
	d := ts.fetch()
	for _, r := range res.Records {
		fl := d.Flushes[r.Index]
		if !r.OK() || r.Warmup || len(fl) < len(r.ChunkNs)+1 {
			continue
		}
		ttfts = append(ttfts, float64(fl[1]-wall(res, r.SentNs))/1e6)
		for k := 1; k <= len(r.ChunkNs); k++ {
			due := int64(ttft + time.Duration(k-1)*itl)
			engineErr = append(engineErr, float64(fl[k]-d.Arrival[r.Index]-due)/1e6)
			if k >= 2 {
				itls = append(itls, float64(fl[k]-fl[k-1])/1e6)
			}
		}
	}
	sort.Float64s(ttfts)
	sort.Float64s(itls)
	sort.Float64s(engineErr)
	return ttfts, itls, engineErr
}
