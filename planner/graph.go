package planner

import "strconv"

// Node IDs are "<kind>.<subject>", with ".<n>" for runs: profile.TRACE,
// deploy.DEPLOYMENT, preflight.LANE, run.LANE.N, aggregate.LANE,
// gates.LANE, compare.SCREEN, report.SCREEN, teardown.DEPLOYMENT.
func nodeID(kind NodeKind, subject string) string { return string(kind) + "." + subject }

// graphBuilder accumulates nodes and edges in a deterministic order.
type graphBuilder struct{ g Graph }

func (b *graphBuilder) node(n Node) string {
	b.g.Nodes = append(b.g.Nodes, n)
	return n.ID
}

func (b *graphBuilder) edge(from, to string) { b.g.Edges = append(b.g.Edges, Edge{From: from, To: to}) }

// buildGraph makes the DAG of the lanes with work:
//
//	profile(trace) -> preflight(lane)            for lanes waiting on a trace
//	deploy(d) -> preflight(lane) -> run(lane, i) -> aggregate(lane) -> gates(lane) -> compare(screen) -> report(screen)
//	run -> run                                   every run on one deployment, one after another
//	last run of each lane on d -> teardown(d)    (Always: it runs even after failures)
//	teardown(d) -> report(screen)                reports record that cleanup happened
//
// Deployments appear in the order of their first lane (lanes are sorted by
// key), so the graph of a plan is as stable as the plan.
func buildGraph(p *Plan) Graph {
	// Size the graph up front: per lane with work, its runs plus preflight,
	// aggregate and gates; per deployment deploy and teardown; per screen
	// compare and report.
	nodes := 0
	for _, l := range p.Lanes {
		if l.Work() {
			nodes += l.RunsToDo() + 5
		}
	}
	nodes += 2 * len(p.Screens)
	b := &graphBuilder{g: Graph{Nodes: make([]Node, 0, nodes), Edges: make([]Edge, 0, 2*nodes)}}
	var deps []string
	onDep := map[string][]*Lane{}
	traces := map[string]bool{}
	for _, l := range p.Lanes {
		if !l.Work() {
			continue
		}
		if onDep[l.Deployment] == nil {
			deps = append(deps, l.Deployment)
		}
		onDep[l.Deployment] = append(onDep[l.Deployment], l)
		for _, t := range pendingTraces(l.Inputs.Pending) {
			traces[t] = true
		}
	}
	for _, t := range sortedKeys(traces) {
		b.node(Node{ID: nodeID(NodeProfile, t), Kind: NodeProfile, Trace: t})
	}
	gatesOf := map[string][]string{}     // screen -> gates nodes
	teardownsOf := map[string][]string{} // screen -> teardown nodes
	var screens []string
	for _, d := range deps {
		deploy := b.node(Node{ID: nodeID(NodeDeploy, d), Kind: NodeDeploy, Deployment: d})
		lanes := onDep[d]
		pres := make([]string, len(lanes))
		lasts := make([]string, len(lanes))
		most := 0
		for k, l := range lanes {
			pres[k] = b.node(Node{ID: nodeID(NodePreflight, l.ID), Kind: NodePreflight, Lane: l.ID, Deployment: d, Screen: l.Screen})
			b.edge(deploy, pres[k])
			for _, t := range pendingTraces(l.Inputs.Pending) {
				b.edge(nodeID(NodeProfile, t), pres[k])
			}
			lasts[k] = pres[k]
			most = max(most, l.Runs)
		}
		// A deployment runs one run at a time, interleaved across its
		// lanes (run 1 of each lane, then run 2, ...), so a slow drift of
		// the server or the host spreads over the lanes instead of
		// biasing the ones that run last.
		prev := ""
		for i := 1; i <= most; i++ {
			for k, l := range lanes {
				if i > l.Runs || l.RunDone(i) {
					continue // beyond the lane's runs, or complete in the state
				}
				run := b.node(Node{ID: nodeID(NodeRun, l.ID) + "." + strconv.Itoa(i), Kind: NodeRun, Lane: l.ID, Deployment: d, Screen: l.Screen, Run: i})
				if lasts[k] == pres[k] {
					b.edge(pres[k], run)
				}
				if prev != "" {
					b.edge(prev, run)
				}
				prev, lasts[k] = run, run
			}
		}
		seenScreen := map[string]bool{}
		for k, l := range lanes {
			agg := b.node(Node{ID: nodeID(NodeAggregate, l.ID), Kind: NodeAggregate, Lane: l.ID, Deployment: d, Screen: l.Screen})
			b.edge(lasts[k], agg)
			gates := b.node(Node{ID: nodeID(NodeGates, l.ID), Kind: NodeGates, Lane: l.ID, Deployment: d, Screen: l.Screen})
			b.edge(agg, gates)
			if gatesOf[l.Screen] == nil && teardownsOf[l.Screen] == nil {
				screens = append(screens, l.Screen)
			}
			gatesOf[l.Screen] = append(gatesOf[l.Screen], gates)
			seenScreen[l.Screen] = true
		}
		down := b.node(Node{ID: nodeID(NodeTeardown, d), Kind: NodeTeardown, Deployment: d, Always: true})
		b.edge(deploy, down)
		for _, last := range lasts {
			b.edge(last, down)
		}
		for _, s := range sortedKeys(seenScreen) {
			teardownsOf[s] = append(teardownsOf[s], down)
		}
	}
	for _, s := range sortedStrings(screens) {
		cmp := b.node(Node{ID: nodeID(NodeCompare, s), Kind: NodeCompare, Screen: s})
		for _, g := range gatesOf[s] {
			b.edge(g, cmp)
		}
		rep := b.node(Node{ID: nodeID(NodeReport, s), Kind: NodeReport, Screen: s})
		b.edge(cmp, rep)
		for _, d := range teardownsOf[s] {
			b.edge(d, rep)
		}
	}
	return b.g
}

func sortedStrings(s []string) []string {
	set := map[string]bool{}
	for _, x := range s {
		set[x] = true
	}
	return sortedKeys(set)
}
