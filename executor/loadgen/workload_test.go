package loadgen_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/planner/load"
)

// nearestRank sorts a copy of v and takes its nearest-rank percentile.
func nearestRank(v []float64, q float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return load.NearestRank(s, q)
}

// A shape drawing its lengths from a profile's percentiles, sent to the
// simulated engine, reproduces them in what the server counted; and one
// drawing from a profile's finer quantile sketch (profile --quantiles)
// reproduces every quantile of it, body and tails.
func TestDistributionShapeReproducesProfile(t *testing.T) {
	sketch := load.Dist{Kind: load.KindEmpirical, Points: []load.Point{
		{Q: 0.01, V: 22}, {Q: 0.05, V: 50}, {Q: 0.10, V: 80}, {Q: 0.25, V: 150}, {Q: 0.50, V: 200},
		{Q: 0.75, V: 640}, {Q: 0.90, V: 800}, {Q: 0.95, V: 1200}, {Q: 0.99, V: 3000}, {Q: 0.999, V: 9000},
	}}
	for name, in := range map[string]load.Dist{"percentiles": load.FromPercentiles(200, 800, 1200, 3000, false), "quantiles": sketch} {
		t.Run(name, func(t *testing.T) { distributionShape(t, in) })
	}
}

func distributionShape(t *testing.T, in load.Dist) {
	url := startSim(t, sim.Options{MaxModelLen: 32768})
	out := load.FromPercentiles(4, 16, 24, 64, false)
	cfg := baseConfig(url)
	cfg.Concurrency, cfg.Requests = 16, 10000
	cfg.Workload = &load.Spec{Input: &in, Output: &out, Window: 32768}
	res, err := loadgen.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Failed != 0 || res.Summary.Succeeded != 10000 {
		t.Fatalf("succeeded %d, failed %d (%v)", res.Summary.Succeeded, res.Summary.Failed, res.Summary.Failures)
	}
	var prompts, outputs []float64
	for _, r := range res.Records {
		prompts = append(prompts, float64(r.PromptTokens))
		outputs = append(outputs, float64(r.OutputTokens))
	}
	for _, c := range []struct {
		name string
		got  []float64
		d    load.Dist
	}{{"prompt_tokens", prompts, in}, {"completion_tokens", outputs, out}} {
		for _, p := range c.d.Points {
			got := nearestRank(c.got, p.Q)
			// The p99.9 of 10,000 draws is the 10th largest: one stratum
			// of 0.01% below it, where a steep tail moves several percent.
			tol := 0.02
			if p.Q > 0.99 {
				tol = 0.05
			}
			if rel := math.Abs(got-p.V) / p.V; rel > tol {
				t.Errorf("%s p%g = %g, want %g within %.0f%%", c.name, p.Q*100, got, p.V, 100*tol)
			}
		}
	}
	// Only draws shorter than the shortest templated prompt (the template's
	// 8 tokens and one word) can miss their length, and they are counted.
	minimum := len(sim.Tokenize(sim.RenderChat([]sim.Message{{Role: "user", Content: "the"}}, true)))
	off := 0
	for _, r := range res.Records {
		if r.PromptTokens != r.InputTokens {
			off++
			if r.InputTokens >= minimum || r.PromptTokens != minimum {
				t.Errorf("a %d-token draw was sent as %d tokens", r.InputTokens, r.PromptTokens)
			}
		}
	}
	if off != res.Summary.PromptOffTarget || off > 50 {
		t.Errorf("%d prompts off target (summary says %d); want a few of the lower tail at most", off, res.Summary.PromptOffTarget)
	}
}

// capture proxies to the simulated engine and keeps every generation
// request's body.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *capture) start(t *testing.T, target string) string {
	u, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			b, _ := io.ReadAll(r.Body)
			c.mu.Lock()
			c.bodies = append(c.bodies, b)
			c.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type chatBody struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens int `json:"max_tokens"`
}

func (c *capture) tokens(t *testing.T, i int) []int {
	var b chatBody
	if err := json.Unmarshal(c.bodies[i], &b); err != nil {
		t.Fatal(err)
	}
	var msgs []sim.Message
	for _, m := range b.Messages {
		msgs = append(msgs, sim.Message{Role: m.Role, Content: m.Content})
	}
	return sim.Tokenize(sim.RenderChat(msgs, true))
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Prompts of one prefix group share exactly the intended number of leading
// tokens as the server's tokenizer sees them, chat template included;
// prompts of different groups share only the template's header.
func TestPrefixPromptsShareExactTokens(t *testing.T) {
	var c capture
	cfg := baseConfig(c.start(t, startSim(t, sim.Options{})))
	cfg.Concurrency, cfg.Requests, cfg.InputTokens = 1, 24, 300
	cfg.Workload = &load.Spec{Prefix: &load.Prefix{Groups: 3, SharedTokens: 160}}
	res, err := loadgen.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	seq := cfg.Workload.Sequence(cfg.Seed, cfg.Requests, 300, cfg.OutputTokens)
	header := commonPrefix(sim.Tokenize(sim.RenderChat([]sim.Message{{Role: "user", Content: "the"}}, true)),
		sim.Tokenize(sim.RenderChat([]sim.Message{{Role: "user", Content: "of"}}, true)))
	same, other := 0, 0
	for i := range seq {
		if n := len(c.tokens(t, i)); n != 300 {
			t.Fatalf("request %d has %d prompt tokens, want 300", i, n)
		}
		if res.Records[i].SharedTokens != 160 {
			t.Fatalf("record %d says %d shared tokens, want 160", i, res.Records[i].SharedTokens)
		}
		for j := range i {
			got := commonPrefix(c.tokens(t, i), c.tokens(t, j))
			switch {
			case seq[i].Group == seq[j].Group:
				same++
				if got != 160 {
					t.Fatalf("requests %d and %d of group %d share %d tokens, want 160", j, i, seq[i].Group, got)
				}
			default:
				other++
				if got != header {
					t.Fatalf("requests %d and %d of different groups share %d tokens, want the %d of the template header", j, i, got, header)
				}
			}
		}
	}
	if same == 0 || other == 0 {
		t.Fatalf("the draw put %d pairs in one group and %d across groups; the test needs both", same, other)
	}
}

// Each turn of a session sends the conversation so far: the earlier
// prompts and the server's own answers, then a new message.
func TestSessionTurnsCarryTheConversation(t *testing.T) {
	var c capture
	cfg := baseConfig(c.start(t, startSim(t, sim.Options{})))
	cfg.Concurrency, cfg.Requests, cfg.InputTokens, cfg.OutputTokens = 2, 6, 40, 8
	cfg.Workload = &load.Spec{Session: &load.Session{Turns: 3}}
	res, err := loadgen.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Succeeded != 6 {
		t.Fatalf("succeeded %d of 6 (%v)", res.Summary.Succeeded, res.Summary.Failures)
	}
	byTurn := map[int]int{}
	for i := range c.bodies {
		var b chatBody
		if err := json.Unmarshal(c.bodies[i], &b); err != nil {
			t.Fatal(err)
		}
		turn := (len(b.Messages) - 1) / 2
		byTurn[turn]++
		for k := 1; k < len(b.Messages); k += 2 {
			if b.Messages[k].Role != "assistant" || len(sim.Tokenize(b.Messages[k].Content)) != 8 {
				t.Errorf("request %d message %d is %q %q, want the 8-token answer of the earlier turn", i, k, b.Messages[k].Role, b.Messages[k].Content)
			}
		}
	}
	if byTurn[0] != 2 || byTurn[1] != 2 || byTurn[2] != 2 {
		t.Errorf("turns sent %v, want two sessions of three turns", byTurn)
	}
	for _, r := range res.Records {
		if r.Turn > 0 && (r.SharedTokens == 0 || r.PromptTokens <= r.SharedTokens) {
			t.Errorf("turn %d of session %d: %d prompt tokens, %d shared with its history", r.Turn, r.Session, r.PromptTokens, r.SharedTokens)
		}
	}
}

// A warm-up bounded by time alone draws its own requests (it used to
// divide by zero looking for a warm-up draw).
func TestWorkloadWithTimedWarmup(t *testing.T) {
	cfg := baseConfig(startSim(t, sim.Options{}))
	d := load.Lognormal(40, 120)
	cfg.Warmup, cfg.WarmupDurationMs, cfg.Requests = 0, 50, 8
	cfg.Workload = &load.Spec{Input: &d}
	res, err := loadgen.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Succeeded != 8 {
		t.Fatalf("succeeded %d of 8: %v", res.Summary.Succeeded, res.Summary.Failures)
	}
	warm := 0
	for _, r := range res.Records {
		if r.Warmup {
			warm++
		}
	}
	if warm == 0 {
		t.Error("no warm-up request was sent in 50 ms")
	}
}

// An open loop with an arrival curve schedules its sends by the curve: no
// send in a step of weight 0, three times as many in a step of weight 3.
func TestArrivalCurveShapesTheSchedule(t *testing.T) {
	cfg := baseConfig(startSim(t, sim.Options{TTFT: time.Millisecond, ITL: time.Millisecond}))
	cfg.RequestRate, cfg.Arrival, cfg.Requests, cfg.Concurrency = 40, "constant", 40, 0
	cfg.InputTokens, cfg.OutputTokens = 16, 2
	cfg.ArrivalCurve, cfg.CurveStepMs = []float64{1, 0, 3}, 300
	res, err := loadgen.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	first := res.Records[len(res.Records)-cfg.Requests].ScheduledNs
	perStep := map[int]int{}
	for _, r := range res.Records {
		if off := r.ScheduledNs - first; !r.Warmup && off < 900e6 {
			perStep[int(off/300e6)]++
		}
	}
	// 40 req/s on average over the first 0.9 s cycle: 36 requests, 9 at
	// 30 req/s in step 0, none in step 1, 27 at 90 req/s in step 2.
	if perStep[0] != 9 || perStep[1] != 0 || perStep[2] != 27 {
		t.Errorf("sends per step of the first cycle %v, want 9, 0 and 27", perStep)
	}
}

// Runs of different lanes (different PromptSalt) under one seed on one
// server find none of each other's prompts in its prefix cache, whatever
// their lengths; without the salt a longer prompt starts with a shorter
// one's words (same seed, same index) and prefills only its tail.
func TestLanesDoNotSharePromptsUnderOneSeed(t *testing.T) {
	hits := func(url string) float64 {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		v, ok := loadgen.ParseMetrics(resp.Body)["vllm:prefix_cache_hits_total"]
		if !ok {
			t.Fatal("no vllm:prefix_cache_hits_total in /metrics")
		}
		return v
	}
	for _, c := range []struct {
		salts []string
		hit   bool
	}{{[]string{"lane-a", "lane-b", "lane-c"}, false}, {[]string{"", "", ""}, true}} {
		url := startSim(t, sim.Options{PrefixCaching: true})
		for i, salt := range c.salts {
			cfg := baseConfig(url)
			cfg.InputTokens, cfg.Requests, cfg.Concurrency, cfg.PromptSalt = 100*(i+1), 4, 1, salt
			if _, err := loadgen.Run(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
		}
		if got := hits(url); (got > 0) != c.hit {
			t.Errorf("salts %q: the server's prefix cache served %.0f tokens; want hits %v", c.salts, got, c.hit)
		}
	}
}
