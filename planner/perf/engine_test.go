package perf

import (
	"math"
	"testing"

	"github.com/infercrane/infercrane/planner/arch"
)

// TestEngineDecisionRule checks the rule for which step a request joins:
// an idle engine starts a step the moment a request enters, with that
// request alone (another sent at the same instant waits); a request that
// enters while a step runs waits for the next; one that enters exactly
// when a step starts joins it.
func TestEngineDecisionRule(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	o := s.RequestOverheadSeconds()
	e := NewEngine(s, 0)
	a, b := &Seq{Prompt: 512, Output: 4}, &Seq{Prompt: 512, Output: 4}
	if at := e.Arrive(a, 0); at != o {
		t.Fatalf("a enters at %v, want the overhead %v", at, o)
	}
	e.Arrive(b, 0)
	var st Step
	start, ok := e.Next()
	if !ok || start != o {
		t.Fatalf("the first step starts at %v (%v), want %v", start, ok, o)
	}
	d := e.Begin(start, &st)
	if len(st.Seqs) != 1 || st.Seqs[0] != a || d != s.StepSeconds(&st) {
		t.Fatalf("the first step on an idle engine has %d requests (want a alone), %v s", len(st.Seqs), d)
	}
	// c enters during the step, dd exactly when the next starts.
	c, dd := &Seq{Prompt: 64, Output: 4}, &Seq{Prompt: 64, Output: 4}
	e.Arrive(c, start+d/2-o)
	e.End(&st, nil)
	if next, _ := e.Next(); next != start+d {
		t.Fatalf("a busy engine's next step starts at %v, want the last one's end %v", next, start+d)
	}
	e.Arrive(dd, start+d-o)
	e.Begin(start+d, &st)
	if len(st.Seqs) != 4 || st.DecodeSeqs != 1 || st.PrefillTokens != 512+64+64 {
		t.Fatalf("the second step: %d requests, %d decodes, %d prefill tokens; want a's decode and the prefills of b, c and dd", len(st.Seqs), st.DecodeSeqs, st.PrefillTokens)
	}
	late := &Seq{Prompt: 64, Output: 1}
	e.Arrive(late, start+d+1e-9-o)
	if e.Waiting() != 1 || e.Scheduler().Running() != 4 {
		t.Fatalf("waiting %d running %d: the request entering after the step started must wait", e.Waiting(), e.Scheduler().Running())
	}
	e.Abort(late)
	if e.Waiting() != 0 {
		t.Fatalf("an aborted request on its way is still counted: %d", e.Waiting())
	}
}

// TestClosedLoopStreamsDesynchronise (issue 15): of four closed-loop
// streams starting together with fixed lengths, the engine prefills the
// first alone and the other three jointly one step later, and that
// offset persists (as measured on vLLM: the first stream's requests stay
// one step ahead of the other three). In steady state each of the three
// waits for the first stream's lone prefill and is then prefilled beside
// its decode; the lockstep model before prefilled all four prompts
// jointly every time. With fixed lengths the 3 streams' value is the p50
// and the opening wave's (plus the overhead) the maximum.
func TestClosedLoopStreamsDesynchronise(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	const in, out = 512, 32
	st, err := s.Run(Load{InputTokens: in, OutputTokens: out, Concurrency: 4, Requests: 32})
	if err != nil {
		t.Fatal(err)
	}
	alone := StepTime(s.Model, s.Hardware, in, 1, 0, in)
	three := StepTime(s.Model, s.Hardware, 3*in, 3, 1, 3*in+in+1)
	want := (alone + three) * 1000
	if !near(st.TTFT.P50, want, 1e-9) || !near(st.TTFT.P99, want+s.RequestOverheadSeconds()*1000, 1e-9) {
		t.Errorf("ttft %+v; want p50 %v ms (a lone prefill, then three beside a decode) and max %v ms (the opening wave)", st.TTFT, want, want+s.RequestOverheadSeconds()*1000)
	}
	lockstep := (s.RequestOverheadSeconds() + StepTime(s.Model, s.Hardware, 4*in, 4, 0, 4*in)) * 1000
	t.Logf("ttft %+v; lockstep (all four prompts jointly) would be %.3f ms", st.TTFT, lockstep)
}

// TestBatchingFrontEnd (vLLM before 0.8, Assumptions.FrontEndAdmitUs):
// ten requests sent at once enter the engine together when the front
// end has admitted all ten, and one step prefills them all, as
// LambdaLabsML's ten-prompt bursts on vLLM 0.6 show (every request's
// first token within a millisecond of the others'); a request sent after
// the busy period ended starts a new one and enters at its own delay.
// The one-at-a-time front end of vLLM 0.8 and later (FrontEndTokenUs)
// staggers the same burst instead.
func TestBatchingFrontEnd(t *testing.T) {
	o, ok := FrontEnd("vllm", "0.6.0", "completions")
	if !ok || o.AdmitUs <= 0 || o.TokenUs != 0 {
		t.Fatalf("vLLM 0.6.0's front end %+v: want a batching one (AdmitUs > 0, no per-token queue)", o)
	}
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192})
	s.Hardware.Assume.RequestOverheadMs, s.Hardware.Assume.FrontEndAdmitUs = o.RequestMs, o.AdmitUs
	adm := o.AdmitUs / 1e6
	e := NewEngine(s, 0)
	burst := make([]*Seq, 10)
	for i := range burst {
		burst[i] = &Seq{Prompt: 100, Output: 4, Index: i}
		e.Arrive(burst[i], 0)
	}
	if e.Waiting() != 10 {
		t.Fatalf("%d waiting, want the 10 held by the front end", e.Waiting())
	}
	start, ok := e.Next()
	if want := math.Max(10*adm, s.RequestOverheadSeconds()); !ok || !near(start, want, 1e-12) {
		t.Fatalf("the burst's step starts at %v, want when the front end admitted all ten, %v", start, want)
	}
	var st Step
	d := e.Begin(start, &st)
	if len(st.Seqs) != 10 || st.PrefillTokens != 1000 {
		t.Fatalf("the first step prefills %d requests (%d tokens), want all ten together", len(st.Seqs), st.PrefillTokens)
	}
	e.End(&st, nil)
	// Sent after the busy period: its own delay, not held behind anything.
	late := &Seq{Prompt: 100, Output: 4, Index: 10}
	sent := start + d
	if at := e.Arrive(late, sent); !near(at, sent+s.RequestOverheadSeconds(), 1e-12) {
		t.Fatalf("a request sent after the busy period enters at %v, want its send plus the overhead, %v", at, sent+s.RequestOverheadSeconds())
	}
	e.Abort(late)
	if e.Waiting() != 0 {
		t.Fatalf("an aborted held request is still counted: %d", e.Waiting())
	}

	// vLLM 0.8 and later: one request at a time, so the burst's first
	// step has the first request alone.
	v := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	o1, _ := FrontEnd("vllm", "0.19.0", "completions")
	v.Hardware.Assume.RequestOverheadMs, v.Hardware.Assume.FrontEndTokenUs, v.Hardware.Assume.FrontEndAdmitUs = o1.RequestMs, o1.TokenUs, o1.AdmitUs
	e = NewEngine(v, 0)
	for i := 0; i < 10; i++ {
		e.Arrive(&Seq{Prompt: 100, Output: 4, Index: i}, 0)
	}
	start, _ = e.Next()
	e.Begin(start, &st)
	if len(st.Seqs) != 1 {
		t.Fatalf("vLLM 0.19's first step has %d requests, want the first alone", len(st.Seqs))
	}
}

// TestV1ChatFrontEnd: vLLM's V1 API server up to 0.11 prepares a burst's
// chat requests on its one event loop before they go on to the engine, so
// the burst enters together when the last is prepared (GPUStack's 1,000
// chat requests at once on vLLM 0.11: first tokens from 18 s of a 22.7 s
// run at the median), while the request that found the front end idle
// goes on at its own delay. Completions, and chat from 0.12 (unpinned
// counts as the newest), keep the one-at-a-time front end.
func TestV1ChatFrontEnd(t *testing.T) {
	o, ok := FrontEnd("vllm", "0.11.0", "chat")
	if !ok || o.AdmitUs <= 0 || !o.IdleAlone || o.TokenUs != 0 {
		t.Fatalf("vLLM 0.11's chat front end %+v: want a batching one that lets a lone request through", o)
	}
	for _, v := range [][2]string{{"0.11.0", "completions"}, {"0.12.0", "chat"}, {"0.32.0", "chat"}, {"", "chat"}} {
		if c, _ := FrontEnd("vllm", v[0], v[1]); c.AdmitUs != 0 || c.TokenUs <= 0 || c.IdleAlone {
			t.Fatalf("vLLM %q's %s front end %+v: want one request at a time", v[0], v[1], c)
		}
	}
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	var a Assumptions
	o.Apply(&a, s.Hardware.GPU)
	s.Hardware.Assume.RequestOverheadMs, s.Hardware.Assume.FrontEndTokenUs = a.RequestOverheadMs, a.FrontEndTokenUs
	s.Hardware.Assume.FrontEndAdmitUs, s.Hardware.Assume.FrontEndIdleAlone = a.FrontEndAdmitUs, a.FrontEndIdleAlone
	adm := o.AdmitUs / 1e6
	e := NewEngine(s, 0)
	var enters []float64
	for i := 0; i < 10; i++ {
		enters = append(enters, e.Arrive(&Seq{Prompt: 100, Output: 4, Index: i}, 0))
	}
	if !near(enters[0], s.RequestOverheadSeconds(), 1e-12) {
		t.Fatalf("the first request of the burst enters at %v, want its own delay %v", enters[0], s.RequestOverheadSeconds())
	}
	if e.Waiting() != 10 {
		t.Fatalf("%d waiting, want all ten on their way", e.Waiting())
	}
	var st Step
	start, _ := e.Next()
	e.Begin(start, &st)
	if len(st.Seqs) != 1 {
		t.Fatalf("the first step has %d requests, want the first alone", len(st.Seqs))
	}
	e.End(&st, nil)
	for {
		start, ok := e.Next()
		if !ok || start >= 10*adm {
			break
		}
		var st Step
		e.Begin(start, &st)
		e.End(&st, nil)
	}
	start, _ = e.Next()
	st = Step{}
	e.Begin(start, &st)
	if start < 10*adm || st.PrefillTokens != 900 {
		t.Fatalf("the step at %v prefills %d tokens, want the other nine's 900 together once the front end prepared all ten (%v)", start, st.PrefillTokens, 10*adm)
	}
	// Sent after the busy period: its own delay.
	sent := 20 * adm
	if at := e.Arrive(&Seq{Prompt: 100, Output: 4, Index: 10}, sent); !near(at, sent+s.RequestOverheadSeconds(), 1e-12) {
		t.Fatalf("a lone request enters at %v, want its send plus the overhead, %v", at, sent+s.RequestOverheadSeconds())
	}
}

// TestBatchingFrontEndBurstTTFT: in a virtual run of ten requests sent at
// once on vLLM 0.6's front end every first token comes from the one joint
// prefill, so the TTFTs are equal (LambdaLabsML's ten-prompt bursts:
// 126.4-127.9 ms on an A100), ten admissions plus that step; vLLM 0.19's
// front end spreads them.
func TestBatchingFrontEndBurstTTFT(t *testing.T) {
	for _, version := range []string{"0.6.0", "0.19.0"} {
		o, _ := FrontEnd("vllm", version, "completions")
		s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192})
		s.Hardware.Assume.RequestOverheadMs, s.Hardware.Assume.StepOverheadMs = o.RequestMs, o.StepOn(s.Hardware.GPU)
		s.Hardware.Assume.FrontEndTokenUs, s.Hardware.Assume.FrontEndAdmitUs = o.TokenUs, o.AdmitUs
		st, err := s.Run(Load{InputTokens: 200, OutputTokens: 8, Concurrency: 10, Requests: 10})
		if err != nil {
			t.Fatal(err)
		}
		if version == "0.6.0" {
			want := (10*s.FrontEndAdmitSeconds() + StepTime(s.Model, s.Hardware, 2000, 10, 0, 2000)) * 1000
			if st.TTFT.P99 != st.TTFT.P50 || !near(st.TTFT.P50, want, 1e-9) {
				t.Errorf("vLLM 0.6: TTFT %+v, want every request's %v ms (ten admissions, one joint prefill)", st.TTFT, want)
			}
		} else if st.TTFT.P99 <= st.TTFT.P50 {
			t.Errorf("vLLM 0.19: TTFT %+v, want the one-at-a-time front end to spread them", st.TTFT)
		}
	}
}

// An engine remembers its steps' cost splits (stepCosts) and still prices
// every step exactly as Lane.StepSeconds does, for steps that repeat a
// split, new ones pushing old ones out of its few entries, and a split met
// again after it was pushed out; and a pure decode phase's line is made
// from the same split.
func TestEngineStepCostsAreTheLanes(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	e := NewEngine(s, 0)
	seqs := make([]*Seq, 16)
	for i := range seqs {
		seqs[i] = &Seq{Prompt: 100, Output: 10}
	}
	// The same tokens from other sequence counts are other splits (a
	// compute-bound prefill of 4,096 tokens: one sequence's logits, or
	// sixteen's).
	steps := []Step{
		{Seqs: seqs[:16], PrefillTokens: 4096},
		{Seqs: seqs[:1], PrefillTokens: 4096},
		{Seqs: seqs[:16], PrefillTokens: 4096, KVTokens: 800},
	}
	for i := range 400 {
		n := 1 + i%7*i%11%16 // 1..16 sequences, in a pattern that returns to earlier counts
		dec := i % (n + 1)
		steps = append(steps, Step{Seqs: seqs[:n], DecodeSeqs: min(dec, n), PrefillTokens: (n - min(dec, n)) * (64 + i%3), KVTokens: float64(i * 37)})
	}
	for i, st := range steps {
		n := len(st.Seqs)
		if got, want := e.stepSeconds(&st), s.StepSeconds(&st); got != want {
			t.Fatalf("step %d (%d seqs, %d decoding, %d prefill tokens): %v s, the lane says %v", i, n, st.DecodeSeqs, st.PrefillTokens, got, want)
		}
	}
	if got, want := decodeLineOf(e.costs.get(8, 8), 1000, 8), decodeLineOf(s.Model.stepCost(s.Hardware, 8, 8), 1000, 8); got != want {
		t.Errorf("decode line %+v, want %+v", got, want)
	}
}

// The step overhead follows the version's CUDA graph mode on a CUDA GPU
// (cudaGraphStepMs): V1 up to 0.10 launches each layer's attention on its
// own (piecewise graphs), 0.11 on replays a decode step as one graph; the
// V0 engine has its own figure; any engine on a processor without CUDA
// keeps StepMs.
func TestCUDAGraphStepOverhead(t *testing.T) {
	h100, _ := LookupGPU("H100")
	cpu, _ := LookupGPU("CPU")
	for _, c := range []struct {
		version string
		g       GPU
		want    float64
	}{
		{"0.6.0", h100, v0GraphStepMs},
		{"0.6.0", cpu, frontEndStepMs},
		{"0.9.1", h100, piecewiseGraphStepMs},
		{"0.10.2", h100, piecewiseGraphStepMs},
		{"0.11.0", h100, fullGraphStepMs},
		{"0.23.0", h100, fullGraphStepMs},
		{"", h100, fullGraphStepMs}, // unpinned: the newest
		{"0.9.1", cpu, frontEndStepMs},
		{"0.32.0", cpu, frontEndStepMs},
	} {
		o, _ := FrontEnd("vllm", c.version, "completions")
		var a Assumptions
		o.Apply(&a, c.g)
		if a.StepOverheadMs != c.want {
			t.Errorf("vLLM %q on %s: step overhead %v ms, want %v", c.version, c.g.Name, a.StepOverheadMs, c.want)
		}
	}
	if !(fullGraphStepMs < piecewiseGraphStepMs && fullGraphStepMs < v0GraphStepMs) {
		t.Errorf("full graphs %v ms, V0 %v, piecewise %v: full graphs must launch the fewest kernels from Python", fullGraphStepMs, v0GraphStepMs, piecewiseGraphStepMs)
	}
}

// TestV1StepCostPerSequence: vLLM 0.8 to 0.11 spend v1SeqUs outside the
// GPU for each sequence a step schedules (whatever the API), later
// versions and the V0 engine nothing; and a lane's step of n sequences
// lasts n times the cost longer than the same step without it.
func TestV1StepCostPerSequence(t *testing.T) {
	for _, c := range []struct {
		version, api string
		want         float64
	}{
		{"0.6.0", "completions", 0},
		{"0.8.5", "chat", v1SeqUs},
		{"0.9.1", "completions", v1SeqUs},
		{"0.11.0", "chat", v1SeqUs},
		{"0.11.0", "completions", v1SeqUs},
		{"0.12.0", "chat", 0},
		{"0.19.0", "completions", 0},
		{"", "chat", 0}, // unpinned: the newest
	} {
		o, _ := FrontEnd("vllm", c.version, c.api)
		var a Assumptions
		o.Apply(&a, GPU{Capability: 90})
		if a.StepSeqUs != c.want {
			t.Errorf("vLLM %q %s: %v us per sequence a step, want %v", c.version, c.api, a.StepSeqUs, c.want)
		}
	}
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	with := s
	with.Hardware.Assume.StepSeqUs = 50
	seqs := make([]*Seq, 32)
	for i := range seqs {
		seqs[i] = &Seq{Prompt: 100, Output: 10}
	}
	for _, n := range []int{1, 8, 32} {
		st := Step{Seqs: seqs[:n], DecodeSeqs: n, KVTokens: float64(100 * n)}
		if got, want := with.StepSeconds(&st)-s.StepSeconds(&st), float64(n)*50e-6; math.Abs(got-want) > 1e-12 {
			t.Errorf("a step of %d sequences: %v s more with 50 us a sequence, want %v", n, got, want)
		}
	}
}

// TestAsyncSchedulingOverlapsSequenceWork: with async scheduling a share
// of the engine's work for a step's sequences (AsyncOverlapShare) runs
// beside the GPU's, so a step lasts the longer of the two plus the rest
// of the work and the step overhead; without it the work adds up. With
// few sequences the share hides behind the GPU, with many it sets the
// pace.
func TestAsyncSchedulingOverlapsSequenceWork(t *testing.T) {
	sync := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	sync.Hardware.Assume.StepSeqUs = 200
	async := sync
	async.Hardware.Assume.AsyncScheduling = true
	bare := sync
	bare.Hardware.Assume.StepSeqUs = 0
	fixed := sync.Hardware.Assume.StepOverheadMs / 1000
	seqs := make([]*Seq, 256)
	for i := range seqs {
		seqs[i] = &Seq{Prompt: 100, Output: 10}
	}
	for _, n := range []int{1, 4, 64, 256} {
		st := Step{Seqs: seqs[:n], DecodeSeqs: n, KVTokens: float64(100 * n), Attended: float64(100 * n)}
		gpu := bare.StepSeconds(&st) - fixed
		work := float64(n) * 200e-6
		if got, want := sync.StepSeconds(&st), gpu+work+fixed; math.Abs(got-want) > 1e-12 {
			t.Errorf("%d sequences, synchronous: %v s, want the GPU's %v + the work %v + the overhead %v", n, got, gpu, work, fixed)
		}
		beside := AsyncOverlapShare * work
		if got, want := async.StepSeconds(&st), math.Max(gpu, beside)+work-beside+fixed; math.Abs(got-want) > 1e-12 {
			t.Errorf("%d sequences, async: %v s, want the longer of the GPU's %v and the work beside it %v, + the rest %v and the overhead %v", n, got, gpu, beside, work-beside, fixed)
		}
		if hidden := beside < gpu; hidden != (n <= 4) {
			t.Errorf("%d sequences: the work beside the GPU's (%v s) hidden behind it (%v s) is %v; the test wants it for 4 or fewer", n, beside, gpu, hidden)
		}
	}
}

// TestFrontEndAPI: vLLM serves a harmony-rendered chat (gpt-oss) the way
// of a completion; every other model's chat, and any completion, keeps
// its API's front end. The catalog's gpt-oss configs say they are
// harmony-rendered, and no other catalog model does.
func TestFrontEndAPI(t *testing.T) {
	for _, c := range []struct {
		harmony   bool
		api, want string
	}{
		{true, "chat", "completions"},
		{true, "", "completions"},
		{true, "completions", "completions"},
		{false, "chat", "chat"},
		{false, "completions", "completions"},
	} {
		if got := FrontEndAPI(c.harmony, c.api); got != c.want {
			t.Errorf("FrontEndAPI(%v, %q) = %q, want %q", c.harmony, c.api, got, c.want)
		}
	}
	for _, p := range arch.Catalog() {
		if want := p.Config.ModelType == "gpt_oss"; p.Config.HarmonyChat != want {
			t.Errorf("%s: harmony chat %v, want %v", p.ID, p.Config.HarmonyChat, want)
		}
	}
}
