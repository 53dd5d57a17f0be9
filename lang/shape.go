package lang

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang/shape"
	"github.com/zclconf/go-cty/cty"
)

// Arrivals are the open-loop arrival processes.
var Arrivals = choicesOf("arrival")

// DefaultWarmup is a shape's warmup when it sets neither warmup nor
// warmup_seconds: one request, as vllm bench serve sends one before it
// measures.
const DefaultWarmup = 1

// APIs are the OpenAI-compatible APIs a shape can drive.
var APIs = choicesOf("api")

// shapeSpecs are a shape block's attributes: the settings package shape
// declares, then the search it names.
var shapeSpecs = append(settingSpecs(shape.Attributes()), attrSpec{name: "search", raw: true})

// choicesOf returns the values a declared string setting may take.
func choicesOf(name string) []string {
	f, _ := shape.Lookup(name)
	return f.Choices
}

var sloSpecs = []attrSpec{
	{name: "ttft_ms", typ: cty.Number, max: MaxMilliseconds},
	{name: "tpot_ms", typ: cty.Number, max: MaxMilliseconds},
	{name: "latency_ms", typ: cty.Number, max: MaxMilliseconds},
}

func (l *loader) decodeShape(d *decl, in instance, body hcl.Body, ctx *hcl.EvalContext) cty.Value {
	a, content := l.decodeBody(d, body, ctx, shapeSpecs, append([]hcl.BlockHeaderSchema{{Type: "slo"}}, workloadBlocks...)...)
	s := &Shape{Name: in.name, DeclRange: d.block.DefRange, AttrRanges: a.ranges()}
	l.decodeSettings(a, shape.Attributes(), &s.Settings)
	sloBlocks, workload := splitBlocks(content.Blocks, "slo")
	l.decodeWorkload(d, s, workload, ctx)
	s.Search = l.refOne(d, a, "search", "search", ctx)
	s.InputTokens = l.tokens(d, a, "input_tokens", s)
	s.OutputTokens = l.tokens(d, a, "output_tokens", s)
	l.prefixFits(s)
	if a.known("requests") && a.known("concurrency") && s.Requests > 0 && s.Requests < s.Concurrency {
		l.diags = append(l.diags, errorf(a.rangeOf("requests"), "Fewer requests than concurrency",
			"requests (%d) is smaller than concurrency (%d), so %d streams would never send a request and the load would not be what the shape says. Set requests to at least %d.",
			s.Requests, s.Concurrency, s.Concurrency-s.Requests, s.Concurrency))
	}
	if a.set["arrival"] && !a.set["request_rate"] {
		l.diags = append(l.diags, errorf(a.rangeOf("arrival"), "arrival without request_rate",
			"arrival only applies to open-loop load. Set request_rate (requests per second) too, or remove arrival for closed-loop load."))
	}
	if !a.set["warmup"] && !a.set["warmup_seconds"] {
		// As vllm bench serve does (its initial test request): one
		// unmeasured request first, so a server's first-request costs stay
		// out of the figures. warmup = 0 turns it off.
		s.Warmup = DefaultWarmup
	}
	if a.set["request_rate"] && !a.set["arrival"] {
		s.Arrival = "poisson"
	}
	if a.set["burstiness"] && s.Arrival != "gamma" {
		l.diags = append(l.diags, errorf(a.rangeOf("burstiness"), "burstiness without gamma arrivals",
			`burstiness is the shape of gamma inter-arrival times. Set arrival = "gamma", or remove burstiness.`))
	}
	if s.Arrival == "gamma" && !a.set["burstiness"] {
		s.Burstiness = 1
	}
	slo := cty.NullVal(cty.DynamicPseudoType)
	for i, b := range sloBlocks {
		if i > 0 {
			l.diags = append(l.diags, errorf(b.DefRange, "Duplicate slo block",
				"A shape has at most one slo block; one was already declared at %s.", sloBlocks[0].DefRange))
			continue
		}
		sc, diags := b.Body.Content(schemaFor(sloSpecs))
		l.diags = append(l.diags, withHints(diags, "An slo block", schemaFor(sloSpecs))...)
		sa, diags := decodeAttrs(sc, b.Body.MissingItemRange(), sloSpecs, ctx)
		l.diags = append(l.diags, diags...)
		l.requireKnown(d, sa)
		for _, n := range []string{"ttft_ms", "tpot_ms", "latency_ms"} {
			l.diags = appendIf(l.diags, numCheck(sa, n, positive, "greater than 0", "Leave it out for no objective."))
		}
		s.SLO = SLO{TTFTMs: sa.float("ttft_ms"), TPOTMs: sa.float("tpot_ms"), LatencyMs: sa.float("latency_ms")}
		slo = sa.object(nil)
	}
	l.cfg.Shapes[in.name] = s
	return a.object(map[string]cty.Value{"name": cty.StringVal(in.name), "slo": slo})
}

// tokens returns a token count, or 0 and a Pending note while it depends on
// an unprofiled trace. It also insists that a count is given.
func (l *loader) tokens(d *decl, a *attrs, name string, s *Shape) int {
	if !a.set[name] {
		if n, ok := s.Lengths.representative(name); ok {
			return n
		}
		if _, hasExpr := a.exprs[name]; !hasExpr {
			l.diags = append(l.diags, errorf(a.body, "Missing required argument",
				"The argument %q is required: a number, or a trace percentile such as trace.NAME.%s.p50.", name, name))
		}
		return 0
	}
	v := a.vals[name]
	if v.IsWhollyKnown() {
		return int(a.int(name))
	}
	if len(d.traces) > 0 {
		for _, t := range sortedKeys(d.traces) {
			s.Pending = append(s.Pending, fmt.Sprintf(
				"%s: trace.%s is not profiled yet; run `infercrane profile trace` or set profile+digest", name, t))
		}
	}
	return 0
}
