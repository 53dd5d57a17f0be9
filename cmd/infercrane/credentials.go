package main

import (
	"fmt"
	"sort"

	"github.com/infercrane/infercrane/planner"
)

// credentialProblems lists, once per executor block, the credentials that
// the executors of the plan's lanes with work need and the environment
// lacks ("executor.modal (modal): ... set MODAL_TOKEN_ID ..."). plan warns
// with them; apply refuses before deploying anything.
func credentialProblems(env *cliEnv, p *planner.Plan) []string {
	reg := env.registry(nil)
	seen := map[string]bool{}
	var out []string
	for _, l := range p.Lanes {
		if !l.Work() || seen[l.Executor] {
			continue
		}
		seen[l.Executor] = true
		if err := reg.MissingCredentials(l.Inputs.ExecutorType, l.RevealedSettings(), env.Getenv); err != nil {
			out = append(out, fmt.Sprintf("executor.%s (%s): %v", l.Executor, l.Inputs.ExecutorType, err))
		}
	}
	sort.Strings(out)
	return out
}
