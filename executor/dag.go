package executor

import (
	"context"
	"fmt"

	"github.com/infercrane/infercrane/planner"
)

// nodeState is where a DAG node is.
type nodeState int

const (
	nodeWaiting nodeState = iota
	nodeDone
	nodeFailed
	nodeSkipped
)

type dagNode struct {
	planner.Node
	deps    []*dagNode
	succ    []*dagNode
	pending int
	state   nodeState
	err     error
}

// dag is a plan graph prepared for walking.
type dag struct {
	nodes []*dagNode
	byID  map[string]*dagNode
}

// newDAG checks the graph (unknown edge ends, cycles) and links its nodes.
func newDAG(g planner.Graph) (*dag, error) {
	d := &dag{byID: map[string]*dagNode{}}
	for _, n := range g.Nodes {
		if _, dup := d.byID[n.ID]; dup {
			return nil, fmt.Errorf("the plan's graph has node %s twice; re-run plan", n.ID)
		}
		dn := &dagNode{Node: n}
		d.nodes = append(d.nodes, dn)
		d.byID[n.ID] = dn
	}
	for _, e := range g.Edges {
		from, to := d.byID[e.From], d.byID[e.To]
		if from == nil || to == nil {
			return nil, fmt.Errorf("the plan's graph has an edge %s -> %s to an unknown node; re-run plan", e.From, e.To)
		}
		from.succ = append(from.succ, to)
		to.deps = append(to.deps, from)
		to.pending++
	}
	// Kahn's algorithm on a copy of the counts finds cycles.
	count := map[*dagNode]int{}
	var queue []*dagNode
	for _, n := range d.nodes {
		count[n] = n.pending
		if n.pending == 0 {
			queue = append(queue, n)
		}
	}
	seen := 0
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		seen++
		for _, s := range n.succ {
			if count[s]--; count[s] == 0 {
				queue = append(queue, s)
			}
		}
	}
	if seen != len(d.nodes) {
		return nil, fmt.Errorf("the plan's graph has a cycle; re-run plan")
	}
	return d, nil
}

// walk runs every node once its dependencies have ended. A node whose
// dependency failed or was skipped is skipped, and so is every node that
// becomes ready after ctx is cancelled, except Always nodes (teardown),
// which run once all their dependencies have ended whatever the outcome.
// exec runs in its own goroutine per node; skip is told of skipped nodes.
func (d *dag) walk(ctx context.Context, exec func(*dagNode) error, skip func(*dagNode, string)) {
	type result struct {
		n   *dagNode
		err error
	}
	done := make(chan result)
	var ready []*dagNode
	for _, n := range d.nodes {
		if n.pending == 0 {
			ready = append(ready, n)
		}
	}
	running := 0
	settle := func(n *dagNode, st nodeState, err error) {
		n.state, n.err = st, err
		for _, s := range n.succ {
			if s.pending--; s.pending == 0 {
				ready = append(ready, s)
			}
		}
	}
	for {
		for len(ready) > 0 {
			n := ready[0]
			ready = ready[1:]
			if !n.Always {
				if why := skipReason(ctx, n); why != "" {
					skip(n, why)
					settle(n, nodeSkipped, nil)
					continue
				}
			}
			running++
			go func() { done <- result{n, exec(n)} }()
		}
		if running == 0 {
			return
		}
		r := <-done
		running--
		if r.err != nil {
			settle(r.n, nodeFailed, r.err)
		} else {
			settle(r.n, nodeDone, nil)
		}
	}
}

func skipReason(ctx context.Context, n *dagNode) string {
	// Once the apply is interrupted, that is why nothing more runs (the
	// step before may have "failed" only because it was cut short).
	if ctx.Err() != nil {
		return "the apply was interrupted"
	}
	for _, dep := range n.deps {
		switch dep.state {
		case nodeFailed:
			return dep.ID + " failed"
		case nodeSkipped:
			return dep.ID + " was skipped"
		}
	}
	return ""
}
