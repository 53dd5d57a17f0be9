package lang

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/zclconf/go-cty/cty"
)

// decodeBody extracts and evaluates a block body against specs. It returns
// nil attrs when the body's structure is wrong.
func (l *loader) decodeBody(d *decl, body hcl.Body, ctx *hcl.EvalContext, specs []attrSpec, blocks ...hcl.BlockHeaderSchema) (*attrs, *hcl.BodyContent) {
	schema := schemaFor(specs, blocks...)
	content, diags := body.Content(schema)
	hint := schema
	if forEachKinds[d.kind] {
		hint = &hcl.BodySchema{Attributes: append([]hcl.AttributeSchema{{Name: "for_each"}}, schema.Attributes...), Blocks: schema.Blocks}
	}
	l.diags = append(l.diags, withHints(diags, fmt.Sprintf("A %s block", d.kind), hint)...)
	a, diags := decodeAttrs(content, body.MissingItemRange(), specs, ctx)
	l.diags = append(l.diags, diags...)
	l.requireKnown(d, a, "input_tokens", "output_tokens")
	return a, content
}

// requireKnown reports attributes whose value is unknown because they
// depend on an unprofiled trace (except the one named allowed).
func (l *loader) requireKnown(d *decl, a *attrs, allowed ...string) {
	if len(d.traces) == 0 {
		return
	}
	for _, name := range a.order {
		v := a.vals[name]
		if !a.set[name] || v == cty.NilVal || v.IsWhollyKnown() || contains(allowed, name) {
			continue
		}
		l.unprofiled(a.rangeOf(name), "Value depends on an unprofiled trace",
			"%s depends on %s, which is not profiled yet; only a shape's input_tokens and output_tokens may. Profile the trace (infercrane profile trace) and pin it with profile and digest, or write a number here.",
			name, traceList(d.traces))
	}
}

// unprofiled reports a value that must be known but depends on a trace not
// profiled yet: an error, or, in a static decode (Options.Static), a
// warning, since the planner's trace step profiles the trace and the
// second decode checks the value.
func (l *loader) unprofiled(rng hcl.Range, summary, format string, args ...any) {
	if !l.opts.Static {
		l.diags = append(l.diags, errorf(rng, summary, format, args...))
		return
	}
	l.diags = append(l.diags, warnf(rng, summary, format+" (Checked when plan profiles the trace; validate reads no trace.)", args...))
}

// ref returns an instance's value as other blocks see it.
func ref(a *attrs, name string) cty.Value {
	return a.object(map[string]cty.Value{"name": cty.StringVal(name)})
}

// wholeNum declares an optional whole-number attribute of at most max.
func wholeNum(name string, max float64) attrSpec {
	return attrSpec{name: name, typ: cty.Number, whole: true, max: max}
}

var modelSpecs = []attrSpec{
	{name: "id", typ: cty.String, required: true},
	{name: "revision", typ: cty.String},
	{name: "config", typ: cty.String},
	{name: "config_digest", typ: cty.String},
	wholeNum("max_context", MaxTokens),
	wholeNum("params", 1e14), wholeNum("layers", 10_000), wholeNum("hidden", 1_000_000),
	wholeNum("heads", 100_000), wholeNum("kv_heads", 100_000), wholeNum("head_dim", 100_000), wholeNum("vocab", MaxTokens),
}

func (l *loader) decodeModel(d *decl, in instance, body hcl.Body, ctx *hcl.EvalContext) cty.Value {
	a, _ := l.decodeBody(d, body, ctx, modelSpecs)
	m := &Model{
		Name: in.name, ID: a.str("id"), Revision: a.str("revision"), MaxContext: int(a.int("max_context")),
		Params: a.int("params"), Layers: int(a.int("layers")), Hidden: int(a.int("hidden")),
		Heads: int(a.int("heads")), KVHeads: int(a.int("kv_heads")), HeadDim: int(a.int("head_dim")),
		Vocab: int(a.int("vocab")), DeclRange: d.block.DefRange, AttrRanges: a.ranges(),
	}
	m.Config = l.pinnedFile(a, modelConfigFile)
	if a.known("id") && strings.TrimSpace(m.ID) == "" {
		l.diags = append(l.diags, errorf(a.rangeOf("id"), "Invalid value for id",
			`id must name the model, such as "Qwen/Qwen3-0.6B" (a Hugging Face repository id).`))
	}
	for _, n := range []string{"max_context", "params", "layers", "hidden", "heads", "kv_heads", "head_dim", "vocab"} {
		l.diags = appendIf(l.diags, numCheck(a, n, positive, "greater than 0", "Leave it out to use the model catalog's value."))
	}
	l.cfg.Models[in.name] = m
	return ref(a, in.name)
}

var gpuSpecs = []attrSpec{
	{name: "type", typ: cty.String, required: true},
	{name: "count", typ: cty.Number, whole: true, def: cty.NumberIntVal(1), max: 1024},
	{name: "prefill_mfu", typ: cty.Number, max: 1},
	{name: "decode_efficiency", typ: cty.Number, max: 1},
	{name: "price_per_second", typ: cty.Number, max: 1000},
	{name: "calibration", typ: cty.String},
	{name: "calibration_digest", typ: cty.String},
}

func (l *loader) decodeGPU(d *decl, in instance, body hcl.Body, ctx *hcl.EvalContext) cty.Value {
	a, _ := l.decodeBody(d, body, ctx, gpuSpecs)
	g := &GPU{Name: in.name, Type: a.str("type"), Count: int(a.int("count")), DeclRange: d.block.DefRange}
	if a.set["prefill_mfu"] && a.known("prefill_mfu") {
		g.PrefillMFU = ptr(a.float("prefill_mfu"))
	}
	if a.set["decode_efficiency"] && a.known("decode_efficiency") {
		g.DecodeEfficiency = ptr(a.float("decode_efficiency"))
	}
	if a.set["price_per_second"] && a.known("price_per_second") {
		g.PricePerSecond = ptr(a.float("price_per_second"))
	}
	l.diags = appendIf(l.diags,
		numCheck(a, "count", positive, "greater than 0", "It is the number of GPUs per deployment (tensor parallel size)."),
		numCheck(a, "prefill_mfu", fraction, "in (0, 1]", "It is the fraction of peak FLOPS prefill achieves."),
		numCheck(a, "decode_efficiency", fraction, "in (0, 1]", "It is the fraction of peak memory bandwidth decode achieves."),
		numCheck(a, "price_per_second", nonNegative, "0 or more", "It is the price in US dollars per GPU-second."),
	)
	if a.known("type") && l.opts.GPUTypes != nil && !l.knownGPU(g.Type) {
		l.diags = append(l.diags, errorf(a.rangeOf("type"), "Unknown GPU type",
			"The GPU catalog has no type %q.%s Known types: %s.", g.Type, didYouMean(g.Type, l.opts.GPUTypes), strings.Join(l.opts.GPUTypes, ", ")))
	}
	g.Calibration = l.calibrationRef(a)
	l.cfg.GPUs[in.name] = g
	return ref(a, in.name)
}

// knownGPU reports whether the catalog has a GPU type.
func (l *loader) knownGPU(t string) bool {
	if l.opts.IsGPUType != nil {
		return l.opts.IsGPUType(t)
	}
	for _, n := range l.opts.GPUTypes {
		if strings.EqualFold(n, t) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// runtimeSpecs are a runtime block's attributes: the settings package
// engine declares, then the calibration it pins.
var runtimeSpecs = append(settingSpecs(engine.Fields()),
	attrSpec{name: "calibration", typ: cty.String},
	attrSpec{name: "calibration_digest", typ: cty.String},
)

func (l *loader) decodeRuntime(d *decl, in instance, body hcl.Body, ctx *hcl.EvalContext) cty.Value {
	a, _ := l.decodeBody(d, body, ctx, runtimeSpecs)
	r := &Runtime{Name: in.name, ArgsSensitive: a.sensitiveElems("args"), DeclRange: d.block.DefRange}
	l.decodeSettings(a, engine.Fields(), &r.Runtime)
	if a.known("engine") && strings.TrimSpace(r.RuntimeEngine) == "" {
		l.diags = append(l.diags, errorf(a.rangeOf("engine"), "Invalid value for engine", `engine must name the serving engine, such as "vllm".`))
	}
	r.Calibration = l.calibrationRef(a)
	l.cfg.Runtimes[in.name] = r
	return ref(a, in.name)
}

// pinnedFileKind names a kind of file a block pins by path and digest,
// for the diagnostics.
type pinnedFileKind struct {
	attr, digestAttr string // e.g. "calibration", "calibration_digest"
	what             string // "the path of a calibration file (from infercrane calibrate)"
	printedBy        string // "as printed by infercrane calibrate"
	changes          string // "every estimate it calibrates"
}

var (
	calibrationFile = pinnedFileKind{"calibration", "calibration_digest",
		"the path of a calibration file (from infercrane calibrate)", "as printed by infercrane calibrate", "every estimate it calibrates"}
	modelConfigFile = pinnedFileKind{"config", "config_digest",
		"the path of the model's config.json", "as printed by infercrane plan or sha256sum", "the architecture of every lane of the model"}
)

// calibrationRef reads a block's calibration and calibration_digest.
func (l *loader) calibrationRef(a *attrs) *CalibrationRef { return l.pinnedFile(a, calibrationFile) }

// pinnedFile reads a block's file attribute of kind k and its digest
// (nil when neither is set or they are invalid, which is a diagnostic).
func (l *loader) pinnedFile(a *attrs, k pinnedFileKind) *PinnedFile {
	if !a.set[k.attr] && !a.set[k.digestAttr] {
		return nil
	}
	c := &PinnedFile{File: a.str(k.attr), Digest: a.str(k.digestAttr),
		FileRange: a.rangeOf(k.attr), DigestRange: a.rangeOf(k.digestAttr)}
	switch {
	case !a.set[k.attr]:
		l.diags = append(l.diags, errorf(c.DigestRange, k.digestAttr+" without "+k.attr,
			"%s pins a file; set %s to %s.", k.digestAttr, k.attr, k.what))
		return nil
	case a.known(k.attr) && strings.TrimSpace(c.File) == "":
		l.diags = append(l.diags, errorf(c.FileRange, "Invalid value for "+k.attr, "%s must be %s, relative to the spec directory.", k.attr, k.what))
		return nil
	case a.known(k.digestAttr) && a.set[k.digestAttr] && !digestPattern.MatchString(c.Digest):
		l.diags = append(l.diags, errorf(c.DigestRange, "Invalid value for "+k.digestAttr,
			`%s must be "sha256:" followed by 64 lowercase hex digits, %s.`, k.digestAttr, k.printedBy))
		return nil
	case !a.set[k.digestAttr]:
		l.diags = append(l.diags, warnf(c.FileRange, strings.ToUpper(k.attr[:1])+k.attr[1:]+" is not pinned",
			"Without %s, a changed file silently changes %s. Add the digest %s.", k.digestAttr, k.changes, k.printedBy))
	}
	return c
}

// oneOf reports a string attribute outside choices.
func oneOf(a *attrs, name string, choices []string) *hcl.Diagnostic {
	if !a.known(name) || contains(choices, a.str(name)) {
		return nil
	}
	return errorf(a.rangeOf(name), "Invalid value for "+name, "%s must be one of %s, got %q.%s",
		name, quoteList(choices), a.str(name), didYouMean(a.str(name), choices))
}

// describe renders a value briefly for messages.
func describe(v cty.Value) string {
	if !v.IsKnown() {
		return "an unknown value"
	}
	if v.IsNull() {
		return "null"
	}
	return fmt.Sprintf("a %s", v.Type().FriendlyName())
}
