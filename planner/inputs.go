package planner

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/zclconf/go-cty/cty"
)

// Redacted replaces secret values in plans.
const Redacted = "(sensitive)"

// laneBlocks are the blocks one lane is made of.
type laneBlocks struct {
	screen  *lang.Screen
	model   *lang.Model
	config  modelConfig // the model's config.json, where one was found
	shape   *lang.Shape
	gpu     *lang.GPU
	runtime *lang.Runtime // nil: none named
	// runtimeName is the runtime block's name ("" with none).
	runtimeName string
	executor    *lang.Executor
	execName    string
	search      *lang.Search // nil: a fixed load
}

// laneInputs computes the canonical inputs of a lane.
func laneInputs(b laneBlocks) LaneInputs {
	m, s, g := b.model, b.shape, b.gpu
	in := LaneInputs{
		ModelID:      m.ID,
		Revision:     m.Revision,
		MaxContext:   m.MaxContext,
		Settings:     s.Settings.Canonical(),
		SLOTTFTMs:    s.SLO.TTFTMs,
		SLOTPOTMs:    s.SLO.TPOTMs,
		SLOLatencyMs: s.SLO.LatencyMs,
		GPUType:      canonicalGPUType(g.Type),
		GPUCount:     max(g.Count, 1),
		Runtime:      engine.Default(),
		Seed:         b.screen.Seed,
		Workload:     workloadSpec(s),
	}
	if len(s.Pending) > 0 {
		in.Pending = canonicalPending(s.Pending)
	}
	if r := b.runtime; r != nil {
		in.Runtime = r.Runtime.WithDefaults()
		in.RuntimeArgs = append([]string{}, r.RuntimeArgs...) // [], not null, with none
		for i, sens := range r.ArgsSensitive {
			if sens && i < len(in.RuntimeArgs) {
				in.secrets().RuntimeArgs[i] = in.RuntimeArgs[i]
				in.RuntimeArgs[i] = Redacted
			}
		}
	}
	if b.search != nil {
		searchInputs(&in, searchSpec(b.search))
	}
	if b.executor != nil {
		in.ExecutorType, in.Capabilities = b.executor.Type, b.executor.Capabilities
		var real map[string]any
		in.ExecutorConfig, real = executorConfig(b.executor.Attrs)
		for k, v := range real {
			in.secrets().ExecutorConfig[k] = v
		}
	} else {
		in.ExecutorType = "sim"
		in.Capabilities = lang.BuiltinExecutors[in.ExecutorType]
	}
	return in
}

// executorSettings are the settings a lane's executor runs with: the
// block's resolved settings (lang.Executor.Settings: every default of the
// type's schema applied, durations canonical), with each attribute that
// the lane's inputs show redacted in executor_config redacted alike, its
// real value kept in the inputs' in-memory secrets.
func executorSettings(e *lang.Executor, in *LaneInputs) map[string]any {
	if e == nil || len(e.Settings) == 0 {
		return nil
	}
	out := make(map[string]any, len(e.Settings))
	for k, v := range e.Settings {
		if shown, ok := in.ExecutorConfig[k]; ok && containsRedacted(shown) {
			out[k] = shown
			in.secrets().ExecutorSettings[k] = v
			continue
		}
		out[k] = v
	}
	return out
}

// executorSettingsMemo shares executorSettings among the lanes of an
// executor block whose inputs redact none of its settings: they are the
// block's settings alike, and lanes that share one map (read-only, as
// every reader takes it) spare a copy each and compare at once when the
// plan text lists them (writeExecutorSettings).
type executorSettingsMemo map[*lang.Executor]map[string]any

// of returns executorSettings(e, in), shared when none of it is redacted.
func (m executorSettingsMemo) of(e *lang.Executor, in *LaneInputs) map[string]any {
	if e == nil {
		return nil
	}
	for k := range e.Settings {
		if shown, ok := in.ExecutorConfig[k]; ok && containsRedacted(shown) {
			return executorSettings(e, in)
		}
	}
	out, ok := m[e]
	if !ok {
		out = executorSettings(e, in)
		m[e] = out
	}
	return out
}

// canonicalGPUType spells a GPU type as the catalog does, so "l40s" and
// "L40S" make the same lane.
func canonicalGPUType(t string) string {
	if g, ok := lookupGPU(t); ok {
		return g.Name
	}
	return strings.TrimSpace(t)
}

// secretName matches attribute names whose values must never be printed.
var secretName = regexp.MustCompile(`(?i)(api_?key|token|secret|password|passwd|credential|auth)`)

// secrets returns the lane's in-memory secrets, creating them.
func (in *LaneInputs) secrets() *LaneSecrets {
	if in.Secrets == nil {
		in.Secrets = &LaneSecrets{RuntimeArgs: map[int]string{}, ExecutorConfig: map[string]any{}, ExecutorSettings: map[string]any{}}
	}
	return in.Secrets
}

// executorConfig converts an executor block's attributes to plain JSON
// values, redacting sensitive ones: values marked sensitive by the spec
// language (wherever they sit inside an attribute) and attributes named
// like secrets (api_key, token, ...), except those that only name an
// environment variable (api_key_env). real holds the unredacted value of
// every attribute that was redacted, for apply.
func executorConfig(attrs map[string]cty.Value) (shown, real map[string]any) {
	if len(attrs) == 0 {
		return nil, nil
	}
	shown = make(map[string]any, len(attrs))
	for name, v := range attrs {
		byName := secretName.MatchString(name) && !strings.HasSuffix(strings.ToLower(name), "_env")
		switch {
		case byName:
			shown[name] = Redacted
		case lang.IsSensitive(v):
			shown[name] = redactMarked(v)
		default:
			shown[name] = ctyToAny(v)
			continue
		}
		if real == nil {
			real = map[string]any{}
		}
		real[name] = ctyToAny(v)
	}
	return shown, real
}

// redactMarked converts v like ctyToAny, with every value marked
// sensitive (an element, a map entry, or all of v) shown as Redacted.
func redactMarked(v cty.Value) any {
	if v.IsMarked() {
		return Redacted
	}
	if v.IsKnown() && !v.IsNull() {
		t := v.Type()
		switch {
		case t.IsListType() || t.IsTupleType() || t.IsSetType():
			out := []any{}
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				out = append(out, redactMarked(e))
			}
			return out
		case t.IsMapType() || t.IsObjectType():
			out := map[string]any{}
			for it := v.ElementIterator(); it.Next(); {
				k, e := it.Element()
				out[k.AsString()] = redactMarked(e)
			}
			return out
		}
	}
	return ctyToAny(v)
}

// ctyToAny converts v to a JSON-like Go value (marks dropped); unknown
// values become "(known after apply)".
func ctyToAny(v cty.Value) any {
	v, _ = v.UnmarkDeep()
	if !v.IsWhollyKnown() {
		return "(known after apply)"
	}
	x, err := lang.JSONValue(v)
	if err != nil {
		return v.GoString()
	}
	return x
}

// variables returns the plan's view of the spec's variables, with
// sensitive values redacted.
func variables(cfg *lang.Config, override map[string]any) map[string]any {
	out := map[string]any{}
	for name, v := range cfg.Variables {
		if v == nil {
			continue
		}
		if v.Sensitive {
			out[name] = Redacted
			continue
		}
		if secretName.MatchString(name) && !strings.HasSuffix(strings.ToLower(name), "_env") {
			out[name] = Redacted
			continue
		}
		out[name] = ctyToAny(v.Value)
	}
	for name, v := range override {
		if cv := cfg.Variables[name]; cv != nil && cv.Sensitive {
			continue
		}
		out[name] = v
	}
	return out
}

// maxModelLen returns the --max-model-len value in runtime args, or 0.
func maxModelLen(args []string) int {
	for i, a := range args {
		var v string
		switch {
		case a == "--max-model-len" && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, "--max-model-len="):
			v = strings.TrimPrefix(a, "--max-model-len=")
		default:
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// traceRef finds trace references in the spec language's pending messages.
var traceRef = regexp.MustCompile(`\btrace\.([A-Za-z_][A-Za-z0-9_-]*)`)

// fieldPrefix is the shape attribute a pending message is about.
var fieldPrefix = regexp.MustCompile(`^([a-z_.]+):`)

// canonicalPending reduces the spec language's pending messages
// ("input_tokens: trace.chutes is not profiled yet; ...") to
// "input_tokens: trace.chutes" entries, sorted and unique, so advice
// wording never changes a lane ID.
func canonicalPending(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		var traces []string
		for _, sub := range traceRef.FindAllStringSubmatch(m, -1) {
			traces = append(traces, "trace."+sub[1])
		}
		if len(traces) == 0 {
			out = append(out, m)
			continue
		}
		sort.Strings(traces)
		entry := strings.Join(compactStrings(traces), ", ")
		if f := fieldPrefix.FindStringSubmatch(m); f != nil {
			entry = f[1] + ": " + entry
		}
		out = append(out, entry)
	}
	sort.Strings(out)
	return compactStrings(out)
}

// compactStrings removes adjacent duplicates of a sorted slice.
func compactStrings(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
