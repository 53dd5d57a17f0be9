package evidence

import (
	"reflect"
	"testing"

	"github.com/infercrane/infercrane/lang/shape"
)

// TestWorkloadSettingsRoundTrip: WorkloadOf and Workload.Settings are each
// other's inverse on a lane's canonical shape settings, so what calibrate
// rebuilds from evidence is the load the lane ran.
func TestWorkloadSettingsRoundTrip(t *testing.T) {
	no := false
	base := shape.Settings{InputTokens: 512, OutputTokens: 64, TemplateHeadroom: 32, Concurrency: 4,
		Requests: 40, Warmup: 2, WarmupSeconds: 1.5, Streaming: true, API: "chat"}
	cases := map[string]func(*shape.Settings){
		"closed":   func(*shape.Settings) {},
		"poisson":  func(s *shape.Settings) { s.RequestRate = 3 },
		"constant": func(s *shape.Settings) { s.RequestRate, s.Arrival = 3, shape.ArrivalConstant },
		"gamma":    func(s *shape.Settings) { s.RequestRate, s.Arrival, s.Burstiness = 3, shape.ArrivalGamma, 0.5 },
		"curve": func(s *shape.Settings) {
			s.RequestRate, s.ArrivalCurve, s.ArrivalCurveStepSeconds = 3, []float64{1, 2}, 6
		},
		"no ignoreEOS": func(s *shape.Settings) { s.IgnoreEOS = &no },
		"completions":  func(s *shape.Settings) { s.API, s.Streaming = "completions", false },
	}
	for name, set := range cases {
		s := base
		set(&s)
		s = s.Canonical()
		if got := WorkloadOf(s).Settings(); !reflect.DeepEqual(got, s) {
			t.Errorf("%s: %+v came back as %+v", name, s, got)
		}
	}
	if p := WorkloadOf(base.Canonical()).ArrivalProcess; p != nil {
		t.Errorf("a closed loop has an arrival process: %+v", p)
	}
	g := base
	g.RequestRate, g.Arrival = 2, shape.ArrivalGamma
	if p := WorkloadOf(g).ArrivalProcess; p == nil || p.Kind != shape.ArrivalGamma || p.Burstiness != 1 {
		t.Errorf("gamma without burstiness: %+v, want the default 1 spelt out", p)
	}
}
