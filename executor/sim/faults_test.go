package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/lang/engine"
)

func TestFailAtAndFailRate(t *testing.T) {
	url, _ := start(t, Options{Model: "m", Faults: Faults{FailAt: map[int]int{2: 429, 3: 500}}})
	want := []int{200, 429, 500, 200}
	for i, w := range want {
		res := post(t, http.DefaultClient, url+"/v1/chat/completions", chatBody("m", "hi", 2, false))
		if res.status != w {
			t.Fatalf("request %d: status %d, want %d", i+1, res.status, w)
		}
		if w != 200 {
			var body struct {
				Error apiError `json:"error"`
			}
			if err := json.Unmarshal(res.body, &body); err != nil || body.Error.Code != w {
				t.Fatalf("request %d: error body %s", i+1, res.body)
			}
		}
	}

	url, _ = start(t, Options{Model: "m", Seed: 7, Faults: Faults{FailRate: 0.5, FailStatus: 503}})
	failed := 0
	for i := 0; i < 200; i++ {
		res := post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1})
		switch res.status {
		case 503:
			failed++
		case 200:
		default:
			t.Fatalf("status %d", res.status)
		}
	}
	if failed < 70 || failed > 130 {
		t.Fatalf("fail rate 0.5 failed %d of 200", failed)
	}
}

func TestCutAfterBreaksStream(t *testing.T) {
	url, _ := start(t, Options{Model: "m", Faults: Faults{CutAfter: 3}})
	res := post(t, http.DefaultClient, url+"/v1/chat/completions", chatBody("m", "hi", 10, true))
	if res.status != 200 || res.done || len(res.times) != 3 || res.err == nil {
		t.Fatalf("status %d done %v tokens %d err %v: want a stream broken after 3 tokens", res.status, res.done, len(res.times), res.err)
	}
}

func TestStallPausesStream(t *testing.T) {
	stall := 60 * time.Millisecond
	for _, timing := range []string{TimingConstant, TimingModel} {
		url, _ := start(t, Options{Model: "m", Timing: timing, ModelID: "Qwen/Qwen3-0.6B", GPU: "H100", ITL: time.Millisecond, Faults: Faults{StallAfter: 4, StallFor: stall}})
		res := post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 8, "ignore_eos": true, "stream": true})
		if len(res.times) != 8 || !res.done {
			t.Fatalf("%s: %d tokens, done %v", timing, len(res.times), res.done)
		}
		// token 4 is due 4 ITLs (or 4 engine steps, each longer) plus the stall
		if at := res.times[4]; at < 4*time.Millisecond+stall {
			t.Fatalf("%s: token 5 arrived after %v, before 4ms + the stall %v", timing, at, stall)
		}
	}
}

// TestSlowStartHealth: during a slow start the engine answers 503 to
// /health, generation and /v1/models, then /health turns 200. The three
// requests must fit in the slow start; one answered 200 fails the test when
// it came inside the window (measured from before the engine started, so
// never longer than the engine's own), and is retried with a longer window
// when a loaded machine took longer than the window to send them.
func TestSlowStartHealth(t *testing.T) {
	for _, window := range []time.Duration{500 * time.Millisecond, 5 * time.Second, 30 * time.Second} {
		began := time.Now()
		url, _ := start(t, Options{Model: "m", Faults: Faults{SlowStart: window}})
		get := func(path string) int {
			resp, err := http.Get(url + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		var problems []string
		if st := get("/health"); st != 503 {
			problems = append(problems, fmt.Sprintf("/health during slow start: %d, want 503", st))
		}
		if res := post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1}); res.status != 503 {
			problems = append(problems, fmt.Sprintf("generation during slow start: %d, want 503", res.status))
		}
		if st := get("/v1/models"); st != 503 {
			problems = append(problems, fmt.Sprintf("/v1/models during slow start: %d, want 503", st))
		}
		if len(problems) > 0 {
			if el := time.Since(began); el < window {
				t.Fatalf("%s (%v into a %v slow start)", strings.Join(problems, "; "), el.Round(time.Millisecond), window)
			}
			t.Logf("the requests took longer than the %v slow start on this machine; again with a longer one (%s)", window, strings.Join(problems, "; "))
			continue
		}
		deadline := time.Now().Add(window + 30*time.Second) // a hang, not a slow machine
		for get("/health") != 200 {
			if time.Now().After(deadline) {
				t.Fatal("/health never became 200")
			}
			time.Sleep(20 * time.Millisecond)
		}
		return
	}
	t.Fatal("the requests never fitted in a slow start, even of 30 s")
}

func TestCrashDropsConnections(t *testing.T) {
	url, e := start(t, Options{Model: "m", ITL: 5 * time.Millisecond, Faults: Faults{CrashAfter: 1}})
	inflight := make(chan sseResult, 1)
	go func() {
		inflight <- post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 400, "ignore_eos": true, "stream": true})
	}()
	for e.requests.Load() < 1 { // the stream is in flight
		time.Sleep(time.Millisecond)
	}
	res := post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1})
	if res.err == nil {
		t.Fatalf("the request that crashed the engine got status %d", res.status)
	}
	select {
	case <-e.Crashed():
	case <-time.After(30 * time.Second): // a hang, not a slow machine
		t.Fatal("engine did not report the crash")
	}
	first := <-inflight
	if first.done || first.err == nil {
		t.Fatalf("stream in flight survived the crash: done %v, %d tokens", first.done, len(first.times))
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Fatal("the crashed server still answers /health")
	}
}

func TestQueueFullIs503(t *testing.T) {
	url, e := start(t, Options{Model: "m", Timing: TimingModel, ModelID: "Qwen/Qwen3-0.6B", GPU: "L40S", Runtime: engine.Runtime{MaxNumSeqs: 1}, MaxWaiting: 1})
	body := map[string]any{"prompt": "a", "max_tokens": 200, "ignore_eos": true, "stream": true}
	results := make(chan int, 3)
	// one running, then one waiting, then one rejected
	for _, want := range [][2]int{{1, 0}, {1, 1}, {1, 1}} {
		go func() { results <- post(t, http.DefaultClient, url+"/v1/completions", body).status }()
		deadline := time.Now().Add(30 * time.Second) // a hang, not a slow machine
		for {
			r, w, _ := e.timing.gauges()
			if r == want[0] && w == want[1] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("running %d waiting %d, want %v", r, w, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	count := map[int]int{}
	for i := 0; i < 3; i++ {
		count[<-results]++
	}
	if count[200] != 2 || count[503] != 1 {
		t.Fatalf("statuses %v, want two 200 and one 503", count)
	}
}
