package planner

import (
	"fmt"
	"strings"
	"testing"
)

// checkGraph verifies the DAG invariants the runner relies on.
func checkGraph(t testing.TB, p *Plan) {
	t.Helper()
	g := p.Graph
	nodes := map[string]Node{}
	for _, n := range g.Nodes {
		if _, dup := nodes[n.ID]; dup {
			t.Fatalf("node %s twice", n.ID)
		}
		nodes[n.ID] = n
	}
	succ := map[string][]string{}
	indeg := map[string]int{}
	for _, e := range g.Edges {
		if _, ok := nodes[e.From]; !ok {
			t.Fatalf("edge from unknown node %s", e.From)
		}
		if _, ok := nodes[e.To]; !ok {
			t.Fatalf("edge to unknown node %s", e.To)
		}
		succ[e.From] = append(succ[e.From], e.To)
		indeg[e.To]++
	}
	// Kahn: every node is reached, so there is no cycle.
	var queue []string
	for _, n := range g.Nodes {
		if indeg[n.ID] == 0 {
			queue = append(queue, n.ID)
		}
	}
	seen := 0
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		seen++
		for _, s := range succ[id] {
			if indeg[s]--; indeg[s] == 0 {
				queue = append(queue, s)
			}
		}
	}
	if seen != len(g.Nodes) {
		t.Fatalf("graph has a cycle (%d of %d nodes ordered)", seen, len(g.Nodes))
	}
	reach := func(from, to string) bool {
		stack, visited := []string{from}, map[string]bool{from: true}
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if id == to {
				return true
			}
			for _, s := range succ[id] {
				if !visited[s] {
					visited[s] = true
					stack = append(stack, s)
				}
			}
		}
		return false
	}
	runsOn := map[string][]string{}
	for _, n := range g.Nodes {
		if n.Kind == NodeRun {
			runsOn[n.Deployment] = append(runsOn[n.Deployment], n.ID)
		}
	}
	for d, runs := range runsOn {
		for i := 1; i < len(runs); i++ {
			if !reach(runs[i-1], runs[i]) {
				t.Errorf("runs %s and %s on deployment %s are not serialised", runs[i-1], runs[i], d)
			}
		}
		down, ok := nodes["teardown."+d]
		if !ok || !down.Always {
			t.Fatalf("deployment %s has no always-run teardown", d)
		}
		for _, r := range runs {
			if !reach(r, down.ID) {
				t.Errorf("teardown of %s does not wait for %s", d, r)
			}
		}
		if !reach("deploy."+d, runs[0]) {
			t.Errorf("first run on %s does not wait for its deploy", d)
		}
	}
	screens := map[string]bool{}
	for _, l := range p.Lanes {
		if !l.Work() {
			continue
		}
		screens[l.Screen] = true
		want := l.RunsToDo()
		got := 0
		for _, n := range g.Nodes {
			if n.Kind == NodeRun && n.Lane == l.ID {
				got++
				if !reach("preflight."+l.ID, n.ID) || !reach(n.ID, "aggregate."+l.ID) {
					t.Errorf("run %s is not between preflight and aggregate", n.ID)
				}
			}
		}
		if got != want {
			t.Errorf("lane %s has %d run nodes, want %d", l.ID, got, want)
		}
		if !reach("aggregate."+l.ID, "gates."+l.ID) || !reach("gates."+l.ID, "compare."+l.Screen) {
			t.Errorf("lane %s: aggregate -> gates -> compare missing", l.ID)
		}
		if !reach("teardown."+l.Deployment, "report."+l.Screen) {
			t.Errorf("report of %s does not wait for teardown of %s", l.Screen, l.Deployment)
		}
		for _, tr := range pendingTraces(l.Inputs.Pending) {
			if !reach("profile."+tr, "preflight."+l.ID) {
				t.Errorf("lane %s does not wait for profile.%s", l.ID, tr)
			}
		}
	}
	for s := range screens {
		if !reach("compare."+s, "report."+s) {
			t.Errorf("screen %s: compare -> report missing", s)
		}
	}
}

func TestGraphInvariants(t *testing.T) {
	p := build(t, fixture())
	checkGraph(t, p)
	kinds := map[NodeKind]int{}
	for _, n := range p.Graph.Nodes {
		kinds[n.Kind]++
	}
	want := map[NodeKind]int{NodeDeploy: 2, NodePreflight: 4, NodeRun: 8, NodeAggregate: 4, NodeGates: 4, NodeCompare: 1, NodeReport: 1, NodeTeardown: 2}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s nodes, want %d", kinds[k], k, n)
		}
	}
}

func TestGraphExports(t *testing.T) {
	p := build(t, fixture())
	dot := DOT(p)
	if !strings.HasPrefix(dot, "digraph infercrane_plan {") || strings.Count(dot, " -> ") != len(p.Graph.Edges) ||
		!strings.Contains(dot, `style=dashed`) || !strings.Contains(dot, `label="run 1 qwen06/interactive/l40s"`) {
		t.Errorf("DOT:\n%s", dot)
	}
	mm := Mermaid(p)
	if !strings.HasPrefix(mm, "flowchart LR\n") || strings.Count(mm, " --> ") != len(p.Graph.Edges) || !strings.Contains(mm, "class ") {
		t.Errorf("Mermaid:\n%s", mm)
	}
	if strings.Contains(dotQuote(`a"b\c`), `a"b`) || mermaidQuote(`say "hi"`) != `"say #quot;hi#quot;"` {
		t.Error("labels are not escaped")
	}
}

// A deployment's runs form one chain interleaved across its lanes (run 1
// of each lane, then run 2), so the server's or the host's slow drift over
// the deployment's life is spread over its lanes, not borne by the last.
func TestGraphInterleavesADeploymentsRuns(t *testing.T) {
	p := build(t, fixture())
	runs := map[string]Node{}
	for _, n := range p.Graph.Nodes {
		if n.Kind == NodeRun {
			runs[n.ID] = n
		}
	}
	next := map[string]string{}
	hasPrev := map[string]bool{}
	for _, e := range p.Graph.Edges {
		if _, ok := runs[e.From]; ok {
			if _, ok := runs[e.To]; ok {
				next[e.From] = e.To
				hasPrev[e.To] = true
			}
		}
	}
	chains := 0
	for id, n := range runs {
		if hasPrev[id] {
			continue
		}
		chains++
		var order []string
		lanes := map[string]bool{}
		for cur := id; cur != ""; cur = next[cur] {
			r := runs[cur]
			if r.Deployment != n.Deployment {
				t.Fatalf("run %s of deployment %s chained after deployment %s's", cur, r.Deployment, n.Deployment)
			}
			order = append(order, fmt.Sprintf("%s.%d", r.Lane, r.Run))
			lanes[r.Lane] = true
		}
		if len(lanes) != 2 || len(order) != 4 {
			t.Fatalf("deployment %s: chain %v; want two lanes' two runs", n.Deployment, order)
		}
		for i, o := range order {
			if want := fmt.Sprintf(".%d", i/2+1); !strings.HasSuffix(o, want) {
				t.Errorf("deployment %s runs in order %v; want run 1 of each lane, then run 2", n.Deployment, order)
				break
			}
		}
	}
	if chains != 2 {
		t.Errorf("%d chains of runs; want one per deployment (2)", chains)
	}
}
