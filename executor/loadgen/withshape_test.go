package loadgen_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang/setting"
	"github.com/infercrane/infercrane/lang/shape"
)

// TestWithShapeCarriesEverySetting: every declared shape setting a run
// needs reaches the config WithShape makes, under its own JSON name or the
// one this format gives it (milliseconds where the settings count
// seconds). A setting added to shape.Settings without a line in WithShape
// fails here.
func TestWithShapeCarriesEverySetting(t *testing.T) {
	renamed := map[string]string{"arrival_curve_step_seconds": "curve_step_ms", "warmup_seconds": "warmup_duration_ms"}
	notSent := map[string]bool{"template_headroom": true} // the planner's preflight only
	var s shape.Settings
	want := map[string]string{}
	for i, f := range shape.Fields() {
		if notSent[f.JSON] {
			continue
		}
		var x any
		switch f.Kind {
		case setting.Whole:
			x = 10 + i
		case setting.Number:
			x = float64(10 + i)
		case setting.String:
			x = fmt.Sprintf("v%d", i)
		case setting.Bool:
			x = f.Default != "true" // not the default
		case setting.List:
			s.ArrivalCurve = []float64{float64(i)}
			want[f.JSON] = fmt.Sprintf("[%d]", i)
			continue
		}
		f.Set(&s, x)
		name, text := f.JSON, fmt.Sprint(x)
		if r, ok := renamed[name]; ok {
			name, text = r, fmt.Sprint(x.(float64)*1000)
		}
		want[name] = text
	}
	b, err := json.Marshal(loadgen.Config{}.WithShape(s))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for name, text := range want {
		if g := string(got[name]); g != text && g != `"`+text+`"` {
			t.Errorf("%s: the config has %s, want %s (%s)", name, g, text, b)
		}
	}
}
