package main

import (
	"fmt"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/planner"
)

// planChecks are the preflight checks whose knowledge lives above the
// planner: each built-in executor's deploy-time rules on a lane's planned
// deployment (once per deployment), and the report's rules for which gates
// a lane can be judged by.
func (env *cliEnv) planChecks() []planner.LaneCheck {
	reg := env.registry(nil)
	seen := map[string]bool{}
	deployable := func(_ *planner.Screen, l *planner.Lane) []planner.Finding {
		if seen[l.Deployment] {
			return nil
		}
		seen[l.Deployment] = true
		err := reg.CheckDeployment(l.Inputs.ExecutorType, executor.DeploymentFor(l, "", ""))
		if err == nil {
			return nil
		}
		msg := redact.New(l.SecretValues()...).String(err.Error())
		return []planner.Finding{{Severity: planner.SeverityError, Lane: l.ID,
			Summary: fmt.Sprintf("executor %q (%s) would refuse to deploy lane %s", l.Executor, l.Inputs.ExecutorType, l.Key),
			Detail:  fmt.Sprintf("lane %s (%s): %s.", l.Key, l.ID, msg)}}
	}
	return []planner.LaneCheck{deployable, report.GateFindings}
}
