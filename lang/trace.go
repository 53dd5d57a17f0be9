package lang

import (
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var traceSpecs = []attrSpec{
	{name: "source", typ: cty.String, required: true},
	{name: "region", typ: cty.String},
	{name: "anonymous", typ: cty.Bool, def: cty.False},
	{name: "profile", typ: cty.String},
	{name: "digest", typ: cty.String},
	wholeNum("max_context", MaxTokens),
	{name: "executor", raw: true},
}

var sampleSpecs = []attrSpec{
	wholeNum("row_groups", 1_000_000),
	{name: "row_group_indices", typ: cty.List(cty.Number), max: 1_000_000},
	{name: "all", typ: cty.Bool, def: cty.False},
	{name: "rows_per_group", typ: cty.Number, whole: true, def: cty.NumberIntVal(0), max: 1_000_000_000},
	{name: "sketch", typ: cty.Bool, def: cty.False},
	{name: "quantiles", typ: cty.Bool, def: cty.False},
	wholeNum("shards", 10_000),
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func (l *loader) decodeTrace(d *decl) {
	before := len(l.diags)
	ctx := l.evalContext(d, cty.NilVal)
	a, content := l.decodeBody(d, d.block.Body, ctx, traceSpecs, hcl.BlockHeaderSchema{Type: "sample"})
	t := &Trace{
		Name: d.name, Source: a.str("source"), Region: a.str("region"), Anonymous: a.boolean("anonymous"),
		Profile: a.str("profile"), Digest: a.str("digest"), MaxContext: int(a.int("max_context")),
		Value: cty.DynamicVal, DeclRange: d.block.DefRange, AttrRanges: a.ranges(),
	}
	l.cfg.Traces[d.name] = t
	if a.known("source") && strings.TrimSpace(t.Source) == "" {
		l.diags = append(l.diags, errorf(a.rangeOf("source"), "Invalid value for source",
			`source must be a local Parquet path or an s3://bucket/key URL.`))
	}
	if a.known("digest") && !digestPattern.MatchString(t.Digest) {
		l.diags = append(l.diags, errorf(a.rangeOf("digest"), "Invalid value for digest",
			`digest must be "sha256:" followed by 64 lowercase hex digits, as printed by infercrane profile trace.`))
	}
	if a.set["digest"] && !a.set["profile"] {
		l.diags = append(l.diags, errorf(a.rangeOf("digest"), "digest without profile",
			"digest pins a profile file; set profile to the path of the workload profile it belongs to."))
	}
	if a.set["profile"] && !a.set["digest"] {
		l.diags = append(l.diags, warnf(a.rangeOf("profile"), "Profile is not pinned",
			"Without digest, a changed profile file silently changes every shape derived from it. Add the digest printed by infercrane profile trace."))
	}
	l.diags = appendIf(l.diags, numCheck(a, "max_context", positive, "greater than 0", "It clips derived shapes to a context window; leave it out for no clipping."))
	for i, b := range content.Blocks {
		if i > 0 {
			l.diags = append(l.diags, errorf(b.DefRange, "Duplicate sample block",
				"A trace has at most one sample block; one was already declared at %s.", content.Blocks[0].DefRange))
			continue
		}
		t.Sample = l.decodeSample(d, b, ctx)
	}
	if name := l.refOne(d, a, "executor", "executor", ctx); name != "" {
		t.Executor = l.cfg.Executors[name]
		l.checkTraceExecutor(t, a)
	} else if t.Sample != nil && t.Sample.Shards > 0 {
		l.diags = append(l.diags, errorf(t.Sample.DeclRange, "Shards without an executor",
			"sample.shards splits the scan over an executor's sandboxes; set executor = executor.NAME (a modal executor) in the trace block, or leave shards out to profile here."))
	}
	if r, ok := l.opts.Traces[d.name]; ok && !d.failed && !hasErrors(l.diags[before:]) && r.Value != cty.NilVal {
		t.Value, t.ProfileDigest = r.Value, r.ProfileDigest
	}
	if !t.Value.IsWhollyKnown() {
		d.traces[d.name] = true
	}
	l.setValue("trace", d.name, t.Value)
}

// checkTraceExecutor checks that a trace's profiling executor can run it:
// a modal executor, a full scan or sketch sample, and a shard count.
func (l *loader) checkTraceExecutor(t *Trace, a *attrs) {
	rng := a.rangeOf("executor")
	switch {
	case t.Executor == nil:
	case !t.Executor.Capabilities.ProfilesTraces:
		l.diags = append(l.diags, errorf(rng, "Invalid executor for profiling",
			"executor.%s is a %s executor, which cannot profile a trace; only a modal executor profiles a trace (on Modal CPU sandboxes). Leave executor out to profile here.", t.Executor.Name, t.Executor.Type))
	case t.Sample == nil || !t.Sample.All && !t.Sample.Sketch:
		l.diags = append(l.diags, errorf(rng, "Sharded profile needs sketches",
			"A trace profiled by an executor is split into shards whose sketches are merged; set all = true (a full scan) or sketch = true in its sample block."))
	case t.Sample.Shards == 0:
		t.Sample.Shards = DefaultTraceShards
	}
	if t.Executor != nil && !strings.HasPrefix(t.Source, "s3://") {
		l.diags = append(l.diags, errorf(a.rangeOf("source"), "Trace not readable from the executor",
			"executor.%s reads the trace inside Modal sandboxes, which cannot see %s on this machine; point source at an s3:// object.", t.Executor.Name, t.Source))
	}
}

// DefaultTraceShards is how many shards an executor splits a trace's
// profile into when the sample block does not say.
const DefaultTraceShards = 8

func (l *loader) decodeSample(d *decl, b *hcl.Block, ctx *hcl.EvalContext) *TraceSample {
	c, diags := b.Body.Content(schemaFor(sampleSpecs))
	l.diags = append(l.diags, withHints(diags, "A sample block", schemaFor(sampleSpecs))...)
	a, diags := decodeAttrs(c, b.Body.MissingItemRange(), sampleSpecs, ctx)
	l.diags = append(l.diags, diags...)
	l.requireKnown(d, a)
	s := &TraceSample{RowGroups: int(a.int("row_groups")), All: a.boolean("all"), RowsPerGroup: int(a.int("rows_per_group")),
		Sketch: a.boolean("sketch"), Quantiles: a.boolean("quantiles"), Shards: int(a.int("shards")), DeclRange: b.DefRange}
	if a.known("row_group_indices") {
		for it := a.vals["row_group_indices"].ElementIterator(); it.Next(); {
			_, v := it.Element()
			if !v.IsKnown() || v.IsNull() {
				continue
			}
			if d := checkWhole("row_group_indices", v, a.rangeOf("row_group_indices")); d != nil {
				l.diags = append(l.diags, d)
				continue
			}
			i, _ := v.AsBigFloat().Int64()
			if i < 0 {
				l.diags = append(l.diags, errorf(a.rangeOf("row_group_indices"), "Invalid value for row_group_indices",
					"Row group indices start at 0; got %d.", i))
				continue
			}
			s.RowGroupIndices = append(s.RowGroupIndices, int(i))
		}
	}
	l.diags = appendIf(l.diags,
		numCheck(a, "row_groups", positive, "greater than 0", "It is how many row groups the 10%..90% rule picks."),
		numCheck(a, "rows_per_group", nonNegative, "0 or more", "It is how many leading rows of each group are read (0: all)."),
		numCheck(a, "shards", positive, "greater than 0", "It is how many sandboxes the trace's executor splits the row groups into."),
	)
	chosen := 0
	for _, n := range []string{"row_groups", "row_group_indices"} {
		if a.set[n] {
			chosen++
		}
	}
	if s.All {
		chosen++
	}
	if chosen != 1 {
		l.diags = append(l.diags, errorf(b.DefRange, "Ambiguous sample",
			"A sample block sets exactly one of row_groups (how many, spread 10%%..90%%), row_group_indices (which) or all = true (every row group); this one sets %d.", chosen))
	}
	return s
}
