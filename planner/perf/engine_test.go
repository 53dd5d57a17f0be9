package perf

import (
	"testing"
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
