package modal

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor"
)

// TestCheckDeploymentRefusesWhatDeployWould: the plan-time check refuses a
// gpu attribute that is not the lane's GPU type and count, exactly as
// Spec (which Deploy starts with) does, and passes the ones that agree.
func TestCheckDeploymentRefusesWhatDeployWould(t *testing.T) {
	settings := func(gpu string) map[string]any {
		s := map[string]any{"app": DefaultApp, "volume_mount": "/root/.cache/huggingface", "timeout": "30m", "idle_timeout": "5m", "health_timeout": "20m"}
		if gpu != "" {
			s["gpu"] = gpu
		}
		return s
	}
	for _, c := range []struct {
		gpu, lane string
		count     int
		want      string // "" accepted
	}{
		{"", "L40S", 1, ""},
		{"L40S", "L40S", 1, ""},
		{"h100!", "H100", 1, ""},
		{"A100-80GB:2", "A100-80GB", 2, ""},
		{"H100", "L40S", 1, `gpu = "H100" asks for 1 x H100 but the lane was planned on 1 x L40S`},
		{"L40S:2", "L40S", 1, `asks for 2 x L40S but the lane was planned on 1 x L40S`},
	} {
		d := executor.Deployment{ID: "d", ModelID: "Qwen/Qwen3-0.6B", GPUType: c.lane, GPUCount: c.count, Config: settings(c.gpu)}
		err := CheckDeployment(d)
		if c.want == "" {
			if err != nil {
				t.Errorf("gpu %q on %d x %s: %v", c.gpu, c.count, c.lane, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("gpu %q on %d x %s: got %v, want %q", c.gpu, c.count, c.lane, err, c.want)
		}
		e, nerr := NewExecutor(d.Config)
		if nerr != nil {
			t.Fatal(nerr)
		}
		if _, serr := e.Spec(d); serr == nil || serr.Error() != err.Error() {
			t.Errorf("Deploy's Spec says %v, the check %v", serr, err)
		}
	}
}
