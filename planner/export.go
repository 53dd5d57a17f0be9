package planner

import (
	"fmt"
	"strings"
)

// labeler names graph nodes for people.
type labeler struct {
	lanes map[string]*Lane
	deps  map[string]string // deployment -> "model on N x GPU"
}

func newLabeler(p *Plan) *labeler {
	lb := &labeler{lanes: make(map[string]*Lane, len(p.Lanes)), deps: map[string]string{}}
	for _, l := range p.Lanes {
		lb.lanes[l.ID] = l
		if _, ok := lb.deps[l.Deployment]; !ok && l.Work() {
			lb.deps[l.Deployment] = fmt.Sprintf("%s on %d x %s", l.Inputs.ModelID, l.Inputs.GPUCount, l.Inputs.GPUType)
		}
	}
	return lb
}

// label is the human label of a node: its kind and what it is about.
func (lb *labeler) label(n Node) string {
	switch n.Kind {
	case NodeProfile:
		return "profile trace " + n.Trace
	case NodeDeploy, NodeTeardown:
		desc, ok := lb.deps[n.Deployment]
		if !ok {
			desc = n.Deployment
		}
		return string(n.Kind) + " " + desc
	case NodeCompare, NodeReport:
		return string(n.Kind) + " screen " + n.Screen
	case NodeRun:
		return fmt.Sprintf("run %d %s", n.Run, lb.lane(n.Lane))
	default:
		return string(n.Kind) + " " + lb.lane(n.Lane)
	}
}

func (lb *labeler) lane(id string) string {
	l := lb.lanes[id]
	if l == nil {
		return id
	}
	return l.Model + "/" + l.Shape + "/" + l.GPU
}

// DOT renders the plan's DAG in Graphviz DOT. Nodes of one deployment are
// grouped in a cluster; teardown nodes, which always run, are dashed.
func DOT(p *Plan) string {
	var b strings.Builder
	lb := newLabeler(p)
	b.WriteString("digraph infercrane_plan {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	cluster := ""
	for _, n := range p.Graph.Nodes {
		if n.Deployment != cluster {
			if cluster != "" {
				b.WriteString("  }\n")
			}
			cluster = n.Deployment
			if cluster != "" {
				fmt.Fprintf(&b, "  subgraph %s {\n    label=%s;\n", dotQuote("cluster_"+cluster), dotQuote("deployment "+cluster))
			}
		}
		indent := "  "
		if cluster != "" {
			indent = "    "
		}
		attrs := "label=" + dotQuote(lb.label(n))
		if n.Always {
			attrs += ", style=dashed"
		}
		fmt.Fprintf(&b, "%s%s [%s];\n", indent, dotQuote(n.ID), attrs)
	}
	if cluster != "" {
		b.WriteString("  }\n")
	}
	for _, e := range p.Graph.Edges {
		fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(e.From), dotQuote(e.To))
	}
	b.WriteString("}\n")
	return b.String()
}

// dotQuote makes s a DOT quoted string.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// Mermaid renders the plan's DAG as a Mermaid flowchart, for Markdown
// (GitHub renders ```mermaid blocks). Node IDs become n0, n1, ... in graph
// order; teardown nodes are drawn with rounded, dashed borders.
func Mermaid(p *Plan) string {
	var b strings.Builder
	lb := newLabeler(p)
	ids := make(map[string]string, len(p.Graph.Nodes))
	b.WriteString("flowchart LR\n")
	for i, n := range p.Graph.Nodes {
		id := fmt.Sprintf("n%d", i)
		ids[n.ID] = id
		label := mermaidQuote(lb.label(n))
		if n.Always {
			fmt.Fprintf(&b, "  %s([%s])\n", id, label)
		} else {
			fmt.Fprintf(&b, "  %s[%s]\n", id, label)
		}
	}
	for _, e := range p.Graph.Edges {
		fmt.Fprintf(&b, "  %s --> %s\n", ids[e.From], ids[e.To])
	}
	var always []string
	for _, n := range p.Graph.Nodes {
		if n.Always {
			always = append(always, ids[n.ID])
		}
	}
	if len(always) > 0 {
		b.WriteString("  classDef always stroke-dasharray: 5 5\n")
		fmt.Fprintf(&b, "  class %s always\n", strings.Join(always, ","))
	}
	return b.String()
}

// mermaidQuote makes s a quoted Mermaid label.
func mermaidQuote(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "\n", " ")
	return `"` + r.Replace(s) + `"`
}
