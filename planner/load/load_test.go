package load

import (
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// nearestRank sorts a copy of v and takes its nearest-rank percentile.
func nearestRank(v []float64, q float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return NearestRank(s, q)
}

// The public trace's input and output percentiles (Chutes, 3 row groups).
var chutesIn = FromPercentiles(3919, 16184, 24832, 64428, false)

func TestDistributionReproducesPercentiles(t *testing.T) {
	s := &Spec{Input: &chutesIn, Output: ptr(FromPercentiles(299, 1108, 1377, 2816, false))}
	seq := s.Sequence(17, 10000, 0, 0)
	var in, out []float64
	for _, r := range seq {
		in = append(in, float64(r.Input))
		out = append(out, float64(r.Output))
	}
	for _, c := range []struct {
		name string
		got  []float64
		d    Dist
	}{{"input", in, *s.Input}, {"output", out, *s.Output}} {
		for _, p := range c.d.Points {
			got := nearestRank(c.got, p.Q)
			if rel := math.Abs(got-p.V) / p.V; rel > 0.02 {
				t.Errorf("%s p%g = %g, want %g within 2%% (off %.2f%%)", c.name, p.Q*100, got, p.V, rel*100)
			}
		}
	}
}

func TestLognormalFit(t *testing.T) {
	d := Lognormal(300, 1400)
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := d.Quantile(0.5); math.Abs(got-300) > 1e-6 {
		t.Errorf("median %g, want 300", got)
	}
	if got := d.Quantile(0.95); math.Abs(got-1400) > 1e-6 {
		t.Errorf("p95 %g, want 1400", got)
	}
}

func TestSequenceIsDeterministicAndSeeded(t *testing.T) {
	s := &Spec{Input: &chutesIn, Prefix: &Prefix{Groups: 4, SharedTokens: 512}}
	a, b := s.Sequence(1, 500, 0, 64), s.Sequence(1, 500, 0, 64)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different sequences")
	}
	if reflect.DeepEqual(a, s.Sequence(2, 500, 0, 64)) {
		t.Fatal("another seed gave the same sequence")
	}
	if reflect.DeepEqual(a, s.Warmup(1, 500, 0, 64)) {
		t.Fatal("warm-up requests repeat the measured ones")
	}
}

func TestClipToWindow(t *testing.T) {
	// The design's rule, as the profile's derived shapes use it.
	in, out, clipped := Clip(7893, 1377, 8192)
	if !clipped || out != 1377 || in != 8192-1377 {
		t.Errorf("Clip(7893, 1377, 8192) = %d, %d, %v", in, out, clipped)
	}
	in, out, clipped = Clip(100, 9000, 8192)
	if !clipped || out != 4096 || in != 4096 {
		t.Errorf("Clip(100, 9000, 8192) = %d, %d, %v", in, out, clipped)
	}
	if _, _, c := Clip(100, 100, 0); c {
		t.Error("no window clipped a request")
	}
	s := &Spec{Input: &chutesIn, Window: 8192}
	seq := s.Sequence(3, 10000, 0, 256)
	st := Summarize(nil, seq, 16)
	// The input distribution's p50 is 3,919 and its p90 16,184, so roughly
	// a third of the draws exceed 8,192 - 256.
	if f := float64(st.Clipped) / float64(st.Requests); f < 0.25 || f > 0.45 {
		t.Errorf("clipped fraction %.3f, want about a third", f)
	}
	for _, r := range seq {
		if r.Input+r.Output > 8192 {
			t.Fatalf("request %+v exceeds the window", r)
		}
	}
}

func TestIntendedHitRatio(t *testing.T) {
	// 4 groups sharing 2,048 of 4,096 tokens: after each group's first
	// request, every prompt reuses 2,048 tokens (128 whole blocks).
	s := &Spec{Prefix: &Prefix{Groups: 4, SharedTokens: 2048}}
	warm := s.Warmup(5, 8, 4096, 16)
	st := Summarize(warm, s.Sequence(5, 100, 4096, 16), 16)
	if got := st.HitRatio(); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("hit ratio with a warm cache %g, want 0.5", got)
	}
	cold := Summarize(nil, s.Sequence(5, 100, 4096, 16), 16)
	if got := cold.HitRatio(); got >= 0.5 || got < 0.45 {
		t.Errorf("cold hit ratio %g, want a little under 0.5 (each group's first request misses)", got)
	}
	// Shared lengths that are not whole blocks reuse whole blocks only.
	odd := &Spec{Prefix: &Prefix{Groups: 1, SharedTokens: 100}}
	if got := Summarize(nil, odd.Sequence(1, 2, 200, 8), 16).CachedTokens; got != 96 {
		t.Errorf("cached tokens %d, want 96 (6 whole blocks of the second request)", got)
	}
}

func TestHitRatioDistribution(t *testing.T) {
	// The public trace's bimodal reuse: median 1.8%, p90 99.4%.
	hr := FromPercentiles(0.018, 0.994, 0.999, 1, true)
	if err := hr.Validate(); err != nil {
		t.Fatal(err)
	}
	s := &Spec{Prefix: &Prefix{Groups: 1, HitRatio: &hr}}
	seq := s.Sequence(9, 2000, 1000, 8)
	var shares []float64
	for _, r := range seq {
		shares = append(shares, float64(r.Shared)/float64(r.Input))
	}
	if got := nearestRank(shares, 0.5); math.Abs(got-0.018) > 0.002 {
		t.Errorf("median shared fraction %g, want 0.018", got)
	}
	if got := nearestRank(shares, 0.9); math.Abs(got-0.994) > 0.002 {
		t.Errorf("p90 shared fraction %g, want 0.994", got)
	}
}

func TestSessionsCarryHistory(t *testing.T) {
	s := &Spec{Session: &Session{Turns: 3}}
	seq := s.Sequence(1, 7, 100, 20)
	wantTurns := []int{0, 1, 2, 0, 1, 2, 0}
	for i, r := range seq {
		if r.Turn != wantTurns[i] || r.Session != i/3 {
			t.Fatalf("request %d is session %d turn %d, want %d/%d", i, r.Session, r.Turn, i/3, wantTurns[i])
		}
	}
	if seq[1].Input != 100+120 || seq[2].Input != 100+240 || seq[1].History != 120 {
		t.Errorf("turn prompts %d, %d (history %d), want 220, 340 (120)", seq[1].Input, seq[2].Input, seq[1].History)
	}
	st := Summarize(nil, seq, 16)
	// Turn 1 reuses 112 of 120 history tokens, turn 2 reuses 240.
	if st.CachedTokens != 2*112+2*240 {
		t.Errorf("cached %d, want %d", st.CachedTokens, 2*112+2*240)
	}
	// A window too small for the next turn starts a new session.
	small := &Spec{Session: &Session{Turns: 5}, Window: 300}
	for _, r := range small.Sequence(1, 10, 100, 20) {
		if r.Input+r.Output > 300 || r.Clipped {
			t.Fatalf("turn %+v overflows or was clipped instead of starting a new session", r)
		}
	}
}

func TestValidateNamesTheProblem(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{Input: &Dist{Kind: "weibull"}}, `kind "weibull" is not known`},
		{Spec{Input: ptr(FromPercentiles(100, 50, 60, 70, false))}, "percentiles must increase"},
		{Spec{Input: ptr(Lognormal(300, 100))}, "sigma"},
		{Spec{Prefix: &Prefix{Groups: 0, SharedTokens: 10}}, "groups 0"},
		{Spec{Prefix: &Prefix{Groups: 2}}, "exactly one of"},
		{Spec{Session: &Session{Turns: 1}}, "turns 1"},
		{Spec{Session: &Session{Turns: 2}, Prefix: &Prefix{Groups: 1, SharedTokens: 8}}, "not both"},
		{Spec{Prefix: &Prefix{Groups: 1, HitRatio: ptr(FromPercentiles(0.1, 0.5, 0.9, 1.5, true))}}, "between 0 and 1"},
	} {
		err := c.s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.s, err, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzSessionsAndPrefixCut checks the summaries the planner's preflight
// reads off a sequence against the sequence itself, for any sizes: every
// session is counted once, a restarted one ended short of its turns before
// the last, no session exceeds its turns; PrefixCut counts exactly the
// prompts whose shared part was cut.
func FuzzSessionsAndPrefixCut(f *testing.F) {
	f.Add(int64(1), 32, 3000, 50, 4, 4096, 0)
	f.Add(int64(7), 12, 100, 16, 3, 4096, 0)
	f.Add(int64(3), 32, 512, 16, 0, 4096, 1024)
	f.Add(int64(5), 9, 700, 40, 2, 1000, 0)
	f.Fuzz(func(t *testing.T, seed int64, n, in, out, turns, window, shared int) {
		if n < 1 || n > 2000 || in < 1 || in > 1<<20 || out < 1 || out > 1<<20 || window < 0 || window > 1<<22 || turns < 0 || turns > 64 || shared < 0 {
			t.Skip()
		}
		s := &Spec{Window: window, Input: &Dist{Kind: KindLognormal, Median: float64(in), Sigma: 0.5}}
		if turns >= 2 {
			s.Session = &Session{Turns: turns}
		} else if shared > 0 {
			s.Prefix = &Prefix{Groups: 2, SharedTokens: shared}
		}
		seq := s.Sequence(seed, n, in, out)
		if s.Session != nil {
			st := Sessions(seq, turns)
			starts := 0
			for _, r := range seq {
				if r.Turn == 0 {
					starts++
				}
				if r.Turn >= turns {
					t.Fatalf("turn %d of a %d-turn session", r.Turn, turns)
				}
			}
			if st.Sessions != starts || st.Restarted > max(st.Sessions-1, 0) || st.MostTurns > turns || st.MostTurns < 1 {
				t.Fatalf("Sessions = %+v, %d sessions start in %d requests of %d turns", st, starts, n, turns)
			}
			if window == 0 && st.Restarted != 0 {
				t.Fatalf("no window, yet %d sessions restarted", st.Restarted)
			}
		}
		cut := 0
		for _, r := range seq {
			if s.Prefix != nil && r.Shared < shared {
				cut++
			}
		}
		if got := s.PrefixCut(seq); got != cut {
			t.Fatalf("PrefixCut = %d, want %d (prompts whose shared part is under %d)", got, cut, shared)
		}
	})
}
