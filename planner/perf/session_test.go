package perf

import "testing"

// TestSessionTurnsFollowTheirStream: a closed loop sends a session's later
// turns on its stream after the turn before, as the load generator does.
// Session A has a long first turn; with its second turn a follow-up, the
// other stream cannot take it and the run lasts A's two turns; sent as
// independent requests, the other stream would run it beside A's first.
func TestSessionTurnsFollowTheirStream(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	sizes := []RequestSize{
		{Input: 256, Output: 400},                             // A, turn 0: long answer
		{Input: 900, Output: 64, Cached: 640, FollowUp: true}, // A, turn 1
		{Input: 256, Output: 8},                               // B, turn 0
		{Input: 512, Output: 8, Cached: 256, FollowUp: true},  // B, turn 1
	}
	independent := make([]RequestSize, len(sizes))
	for i, z := range sizes {
		z.FollowUp = false
		independent[i] = z
	}
	run := func(z []RequestSize) RunStats {
		st, err := s.Run(Load{Concurrency: 2, Requests: len(z), Sizes: z})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	chained, loose := run(sizes), run(independent)
	alone := func(z RequestSize) float64 {
		z.FollowUp = false
		st, err := s.Run(Load{Concurrency: 1, Requests: 1, Sizes: []RequestSize{z}})
		if err != nil {
			t.Fatal(err)
		}
		return st.DurationSeconds
	}
	aFirst, aSecond := alone(sizes[0]), alone(sizes[1])
	t.Logf("chained %.4f s, independent %.4f s; A's turns alone %.4f and %.4f s", chained.DurationSeconds, loose.DurationSeconds, aFirst, aSecond)
	// Chained: A's second turn starts when its first ends, so the run
	// outlasts A's first turn by about the second's time; loose: B's
	// stream takes it at once and the run ends with A's first turn.
	if chained.DurationSeconds < aFirst+0.8*aSecond {
		t.Errorf("chained run %.4f s, A's turns alone %.4f + %.4f s: the follow-up did not wait for its turn", chained.DurationSeconds, aFirst, aSecond)
	}
	if loose.DurationSeconds > aFirst+0.4*aSecond {
		t.Errorf("independent run %.4f s, A's turns alone %.4f + %.4f s: B's stream should have taken A's second turn beside the first", loose.DurationSeconds, aFirst, aSecond)
	}
	if chained.Succeeded != 4 || loose.Succeeded != 4 {
		t.Errorf("succeeded %d and %d, want 4", chained.Succeeded, loose.Succeeded)
	}
	// More streams than sessions: the spare streams stay idle.
	wide, err := s.Run(Load{Concurrency: 8, Requests: len(sizes), Sizes: sizes})
	if err != nil || wide.Succeeded != 4 || wide.DurationSeconds < aFirst+0.8*aSecond {
		t.Errorf("8 streams on 2 sessions: %+v, %v", wide, err)
	}
}
