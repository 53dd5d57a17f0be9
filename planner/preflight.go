package planner

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/perf"
)

// MinDecisionRuns is the fewest runs per lane whose variation can be judged;
// fewer is a "not decision grade" warning.
const MinDecisionRuns = 5

// chatTemplateMinTokens is the fewest tokens a chat template adds to a
// single user message (role markers and the assistant prefix); an
// uncalibrated chat lane without template_headroom overflows when input +
// output leave less room.
const chatTemplateMinTokens = 8

// findings collects preflight results.
type findings []Finding

func (f *findings) add(sev Severity, lane, screen, summary, detail string) {
	*f = append(*f, Finding{Severity: sev, Lane: lane, Screen: screen, Summary: summary, Detail: detail})
}

// sorted orders findings by severity, then screen, lane and summary, and
// never returns nil.
func (f findings) sorted() []Finding {
	rank := map[Severity]int{SeverityError: 0, SeverityWarning: 1, SeverityNote: 2}
	out := append([]Finding{}, f...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.Screen != b.Screen {
			return a.Screen < b.Screen
		}
		if a.Lane != b.Lane {
			return a.Lane < b.Lane
		}
		return a.Summary < b.Summary
	})
	return out
}

// preflight checks everything knowable before any GPU time is spent.
func preflight(cfg *lang.Config, screens []*Screen, lanes []*lanePlan, f *findings) {
	for _, s := range screens {
		screenChecks(cfg, s, f)
	}
	models, runtimes, gpus := map[string]bool{}, map[string]bool{}, map[string]bool{}
	// Models and runtimes that some lane runs on a real engine: pinning
	// warnings hold for them whichever lane is checked first.
	pinned := map[string]bool{}
	for _, l := range lanes {
		if !l.Inputs.Capabilities.Simulated {
			pinned["model."+l.Model], pinned["runtime."+l.Runtime] = true, true
		}
	}
	pending := map[string][]string{} // trace -> lane keys
	calWarned := map[string]bool{}
	for _, l := range lanes {
		if l.calWarning != "" && !calWarned[l.calWarningKey] {
			calWarned[l.calWarningKey] = true
			f.add(SeverityWarning, "", "", fmt.Sprintf("gpu %q: %s", l.GPU, strings.SplitN(l.calWarning, ":", 2)[0]), l.calWarning)
		}
		if !models[l.Model] {
			models[l.Model] = true
			modelChecks(l, pinned["model."+l.Model], f)
		}
		if l.Runtime != "" && !runtimes[l.Runtime] {
			runtimes[l.Runtime] = true
			if l.Inputs.RuntimeVersion == "" && pinned["runtime."+l.Runtime] {
				f.add(SeverityWarning, "", "", fmt.Sprintf("runtime %q has no pinned version", l.Runtime),
					fmt.Sprintf("Without version, results depend on whatever %s release the executor installs. Set version = \"X.Y.Z\" in runtime %q.", orDefault(l.Inputs.RuntimeEngine, "the engine"), l.Runtime))
			}
		}
		if !gpus[l.GPU] {
			gpus[l.GPU] = true
			if !l.hwOK {
				f.add(SeverityError, "", "", fmt.Sprintf("gpu %q has unknown type %q", l.GPU, l.blocks.gpu.Type),
					"Use a catalog type: "+strings.Join(perf.GPUNames(), ", ")+".")
			}
		}
		if len(l.Inputs.Pending) > 0 {
			for _, t := range pendingTraces(l.Inputs.Pending) {
				pending[t] = append(pending[t], l.Key)
			}
			what := "token counts"
			if fs := pendingFields(l.Inputs.Pending); len(fs) > 0 {
				what = strings.Join(fs, " and ")
			}
			l.Notes = append(l.Notes, fmt.Sprintf("%s unknown until trace %s is profiled; checks and estimates wait for it", what, strings.Join(pendingTraces(l.Inputs.Pending), ", ")))
			continue
		}
		laneChecks(l, f)
		if l.perfErr != nil {
			fix := fmt.Sprintf("Fix runtime %q (its args or attributes) or gpu %q.", orDefault(l.Runtime, "(none)"), l.GPU)
			var kv *perf.KVTooSmallError
			if errors.As(l.perfErr, &kv) {
				ctx, source := effectiveContext(l)
				fix = fmt.Sprintf("Max model len %d is %s: set max_context = %d or less on model %q (the executors pass it as --max-model-len), or fix runtime %q or gpu %q.",
					ctx, source, kv.Holds, l.Model, orDefault(l.Runtime, "(none)"), l.GPU)
			}
			f.add(SeverityError, l.ID, "", "the engine would refuse this deployment's settings",
				fmt.Sprintf("%s: %v. %s", l.Key, l.perfErr, fix))
		} else if l.unstartedAt > 0 {
			ctx, source := effectiveContext(l)
			f.add(SeverityWarning, l.ID, "", "a real vLLM server would refuse this deployment at its default max model len",
				fmt.Sprintf("%s: the KV cache holds %d tokens, fewer than one request of max model len %d (%s) needs, and vLLM refuses to start then; the simulated engine serves the lane all the same and the estimate is that of a server that started. Set max_context = %d or less on model %q before running it on a real server.",
					l.Key, l.unstartedAt, ctx, source, l.unstartedAt, l.Model))
		} else if l.Perf != nil && l.Perf.StartRisk != "" {
			ctx, source := effectiveContext(l)
			f.add(SeverityWarning, l.ID, "", "the engine may refuse to start: one request of max model len barely fits the KV cache",
				fmt.Sprintf("%s: %s (runtime %q, gpu %q; max model len %d is %s).", l.Key, l.Perf.StartRisk, orDefault(l.Runtime, "(none)"), l.GPU, ctx, source))
		}
	}
	sameRuntimes(screens, lanes, f)
	coldKernels(lanes, f)
	weakRegimes(lanes, f)
	unmodelledRuntimeArgs(lanes, f)
	for _, t := range sortedKeys(pending) {
		f.add(SeverityNote, "", "", fmt.Sprintf("%s wait for trace %q to be profiled", plural(len(pending[t]), "lane"), t),
			fmt.Sprintf("Their token counts, context and memory checks and estimates are unknown until the trace is profiled. Run 'infercrane profile' and pin the result with profile and digest in trace %q to plan with known values.", t))
	}
}

// pendingTraces returns the names of the traces that pending entries wait
// for, sorted and unique.
func pendingTraces(pending []string) []string {
	set := map[string]bool{}
	for _, p := range pending {
		for _, sub := range traceRef.FindAllStringSubmatch(p, -1) {
			set[sub[1]] = true
		}
	}
	return sortedKeys(set)
}

// pendingFields returns the shape attributes of pending entries.
func pendingFields(pending []string) []string {
	var out []string
	for _, p := range pending {
		if f := fieldPrefix.FindStringSubmatch(p); f != nil {
			out = append(out, f[1])
		}
	}
	return compactStrings(out)
}

// allSearched reports whether every lane of a screen is a capacity
// search, whose points are single runs and for which runs does not apply.
func allSearched(cfg *lang.Config, s *lang.Screen) bool {
	if s == nil || len(s.Shapes) == 0 {
		return false
	}
	for _, name := range s.Shapes {
		if sh := cfg.Shapes[name]; s.Search == "" && (sh == nil || sh.Search == "") {
			return false
		}
	}
	return true
}

func screenChecks(cfg *lang.Config, s *Screen, f *findings) {
	switch {
	case s.Runs < 1:
		f.add(SeverityError, "", s.Name, fmt.Sprintf("screen %q has %d runs", s.Name, s.Runs),
			fmt.Sprintf("Every lane needs at least one run; set runs >= 1 (%d or more for decision-grade results) in screen %q.", MinDecisionRuns, s.Name))
	case s.Runs < MinDecisionRuns && !allSearched(cfg, cfg.Screens[s.Name]):
		f.add(SeverityWarning, "", s.Name, fmt.Sprintf("screen %q has %s per lane: not decision grade", s.Name, plural(s.Runs, "run")),
			fmt.Sprintf("Run-to-run variation cannot be judged from fewer than %d runs; set runs = %d or more in screen %q before acting on the results.", MinDecisionRuns, MinDecisionRuns, s.Name))
	}
	if s.Baseline != "" {
		found := false
		if sc := cfg.Screens[s.Name]; sc != nil {
			for _, m := range sc.Models {
				found = found || m == s.Baseline
			}
		}
		if !found {
			f.add(SeverityError, "", s.Name, fmt.Sprintf("screen %q has baseline %q, which is not one of its models", s.Name, s.Baseline),
				"Comparisons are ratios against the baseline; set baseline to one of the screen's models.")
		}
	}
}

// sameRuntimes warns about a screen comparing runtimes that resolve to
// the same inputs: their lanes would measure one server twice.
func sameRuntimes(screens []*Screen, lanes []*lanePlan, f *findings) {
	for _, s := range screens {
		if len(s.Runtimes) < 2 {
			continue
		}
		first := map[string]string{} // lane inputs -> the first runtime with them
		warned := map[[2]string]bool{}
		for _, l := range lanes {
			if l.Screen != s.Name {
				continue
			}
			id := LaneID(l.Inputs) + "/" + l.Model + "/" + l.Shape + "/" + l.GPU
			other, dup := first[id]
			if !dup {
				first[id] = l.Runtime
				continue
			}
			pair := [2]string{other, l.Runtime}
			if warned[pair] {
				continue
			}
			warned[pair] = true
			f.add(SeverityWarning, "", s.Name, fmt.Sprintf("runtimes %q and %q of screen %q are the same server", other, l.Runtime, s.Name),
				fmt.Sprintf("Their lanes have identical inputs, so comparing them measures run-to-run noise only. Make the runtimes differ in what you mean to compare (such as \"--no-enable-prefix-caching\" in one's args) or list the runtime once in screen %q.", s.Name))
		}
	}
}

// runtimeNotes sets, on each lane of a screen comparing runtimes, its
// prediction beside its lane on the screen's first runtime (the one the
// report compares it with): the plan table shows p95 TTFT only, and
// prefix caching moves the median most.
func runtimeNotes(screens []*Screen, lanes []*lanePlan) {
	for _, s := range screens {
		if len(s.Runtimes) < 2 {
			continue
		}
		ref := map[string]*lanePlan{}
		for _, l := range lanes {
			if l.Screen == s.Name && l.Runtime == s.Runtimes[0] {
				ref[l.Model+"/"+l.Shape+"/"+l.GPU] = l
			}
		}
		for _, l := range lanes {
			b := ref[l.Model+"/"+l.Shape+"/"+l.GPU]
			if l.Screen != s.Name || b == nil || b == l || !l.Estimate.Available || !b.Estimate.Available {
				continue
			}
			e, r := l.Estimate, b.Estimate
			l.Notes = append(l.Notes, fmt.Sprintf("predicted against runtime %s: TTFT p50 %s vs %s, p95 %s vs %s; TPOT %s vs %s; %s vs %s output tok/s",
				b.Runtime, fmtMs(e.TTFTMs), fmtMs(r.TTFTMs), fmtMs(e.TTFTP95Ms), fmtMs(r.TTFTP95Ms), fmtMs(e.TPOTMs), fmtMs(r.TPOTMs),
				fmtInt(int64(e.OutputTokenThroughput+0.5)), fmtInt(int64(r.OutputTokenThroughput+0.5))))
		}
	}
}

func modelChecks(l *lanePlan, realEngine bool, f *findings) {
	m := l.blocks.model
	if m.Revision == "" {
		// The simulated engine loads no weights, but its evidence names
		// the model, and the same spec on a real executor loads whatever
		// the repository holds that day.
		why := fmt.Sprintf("Without a revision, %s may change under the screen.", m.ID)
		if !realEngine {
			why = fmt.Sprintf("The simulated engine loads no weights, but its evidence names %s with no revision, and the same spec on a real executor loads whatever the repository holds that day.", m.ID)
		}
		f.add(SeverityWarning, "", "", fmt.Sprintf("model %q has no pinned revision", m.Name),
			fmt.Sprintf("%s Set revision = \"<commit hash>\" in model %q.", why, m.Name))
	}
	if len(l.missing) > 0 {
		cache := "the Hugging Face cache was not consulted"
		if p := l.blocks.config.looked; p != "" {
			cache = "the Hugging Face cache has no " + p
		}
		f.add(SeverityWarning, "", "", fmt.Sprintf("estimates unavailable for model %q (%s)", m.Name, m.ID),
			fmt.Sprintf("%s is not in the built-in catalog (%s), and %s. Set config = \"path/to/config.json\" (the model's config.json at its revision) with config_digest, or %s, on model %q to get time, memory and cost estimates and the memory check.",
				m.ID, strings.Join(perf.ModelIDs(), ", "), cache, strings.Join(l.missing, ", "), m.Name))
	}
}

// laneChecks runs the checks of one lane with known inputs.
func laneChecks(l *lanePlan, f *findings) {
	in := l.Inputs
	name := fmt.Sprintf("lane %s (%s)", l.Key, l.ID)
	bad := false
	for _, c := range []struct {
		field string
		v     int
	}{{"input_tokens", in.InputTokens}, {"output_tokens", in.OutputTokens}, {"concurrency", in.Concurrency}, {"requests", in.Requests}} {
		if c.v < 1 {
			bad = true
			f.add(SeverityError, l.ID, "", fmt.Sprintf("%s is %d in shape %q", c.field, c.v, l.Shape),
				fmt.Sprintf("%s: %s must be at least 1; set it in shape %q.", name, c.field, l.Shape))
		}
	}
	if in.TemplateHeadroom < 0 {
		bad = true
		f.add(SeverityError, l.ID, "", fmt.Sprintf("template_headroom is %d in shape %q", in.TemplateHeadroom, l.Shape),
			fmt.Sprintf("%s: template_headroom cannot be negative; set it to 0 or more in shape %q.", name, l.Shape))
	}
	if bad {
		return
	}
	contextCheck(l, name, f)
	templateFloorCheck(l, name, f)
	workloadChecks(l, name, f)
	memoryCheck(l, name, f)
	parallelCheck(l, name, f)
	if in.Requests < in.Concurrency {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("requests %d < concurrency %d in shape %q", in.Requests, in.Concurrency, l.Shape),
			fmt.Sprintf("%s never reaches its concurrency, so the load is lighter than the shape says; set requests >= %d in shape %q.", name, in.Concurrency, l.Shape))
	}
	if seqs, from := maxNumSeqs(l); seqs > 0 && seqs < in.Concurrency {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("max_num_seqs %d < concurrency %d", seqs, in.Concurrency),
			fmt.Sprintf("%s: the server batches at most %d sequences (%s), so requests queue and TTFT includes waiting; raise it in runtime %q or lower concurrency in shape %q.", name, seqs, from, l.Runtime, l.Shape))
	}
}

// coldKernels notes, once for each shape, the lanes that serve a mixture
// of experts on a real vLLM server with fewer warmup requests than the
// shape's concurrency: vLLM compiles its fused MoE kernel's Triton
// variants the first time a prefill of a new size needs one, and every
// request waits meanwhile. LambdaLabsML's vLLM 0.6 bursts of Mixtral 8x7B
// on two and four H100s stalled 1.7-1.9 s a variant, up to five times in
// a burst's first seconds (the first token of a 10-prompt burst after 1.8
// s, where Llama 3 70B's came after 0.14 s; planner/perf/testdata/published),
// and vLLM's own JIT monitor still reports kernels compiled during
// inference in 2026 (vllm-project/vllm PR 45631). The estimate is a warm
// server's; a warmup burst at the shape's concurrency compiles what the
// measured requests will need.
func coldKernels(lanes []*lanePlan, f *findings) {
	byShape := map[string][]*lanePlan{}
	for _, l := range lanes {
		in := l.Inputs
		if len(in.Pending) > 0 || in.Capabilities.Simulated || in.RuntimeEngine != "vllm" || !l.arch.RoutesExperts() || in.warmsAtConcurrency() {
			continue
		}
		byShape[l.Shape] = append(byShape[l.Shape], l)
	}
	for _, shape := range sortedKeys(byShape) {
		ls := byShape[shape]
		lane, named := laneGroup(ls)
		f.add(SeverityNote, lane, "", fmt.Sprintf("a fresh vLLM server compiles its fused MoE kernels during the first prefills of shape %q", shape),
			fmt.Sprintf("%s: vLLM compiles a Triton variant of the fused MoE kernel the first time a prefill of a new size needs it, and every request waits (1.7-1.9 s a variant, several in a burst's first seconds, in vLLM 0.6 bursts of Mixtral 8x7B on H100s); the estimates are a warm server's, so a run's TTFT and duration can exceed them by seconds. Set warmup = %d (the concurrency) in shape %q so a warmup burst compiles them before the measured requests.",
				named, ls[0].Inputs.Concurrency, shape))
	}
}

// weakRegimes warns, once for each regime, of the uncalibrated lanes on
// real engines whose deployment lies in a regime where published
// measurements show the catalog's estimates missing by more than their
// ranges (perf.WeakRegimeOf), with the misses measured there; each such
// lane's notes say so too.
func weakRegimes(lanes []*lanePlan, f *findings) {
	byRegime := map[string][]*lanePlan{}
	regimes := map[string]perf.WeakRegime{}
	for _, l := range lanes {
		if len(l.Inputs.Pending) > 0 || l.Inputs.Capabilities.Simulated || l.Calibration != nil || !l.hwOK || len(l.missing) > 0 {
			continue
		}
		r, ok := perf.WeakRegimeOf(l.arch, l.hw)
		if !ok {
			continue
		}
		regimes[r.Name] = r
		byRegime[r.Name] = append(byRegime[r.Name], l)
		l.Notes = append(l.Notes, fmt.Sprintf("estimate in a weak regime of the model (%s): its estimates of published measurements there missed by %s (+: over the measurement); calibrate before deciding on it", r.Name, r.Misses))
	}
	for _, name := range sortedKeys(byRegime) {
		ls, r := byRegime[name], regimes[name]
		lane, named := laneGroup(ls)
		f.add(SeverityWarning, lane, "", fmt.Sprintf("%s estimated in a weak regime of the model: %s", plural(len(ls), "lane"), name),
			fmt.Sprintf("%s: the catalog's cold estimates of published vLLM measurements in this regime missed by %s (+: over the measurement; docs/performance-model.md, \"Where the model is weak\"), beyond the ± ranges the plan prints. Calibrate from a run of this deployment (infercrane calibrate, then calibration = ... in the gpu or runtime block) before deciding on these figures.",
				named, r.Misses))
	}
}

// unmodelledRuntimeArgs notes, once for each runtime, the args it gives
// that change vLLM's performance in ways the model leaves out
// (perf.RuntimeSettings.Unmodelled): the estimates are the server's
// without them.
func unmodelledRuntimeArgs(lanes []*lanePlan, f *findings) {
	byRuntime := map[string][]*lanePlan{}
	for _, l := range lanes {
		if l.settings == nil || len(l.settings.Unmodelled) == 0 || l.Inputs.Capabilities.Simulated {
			continue
		}
		byRuntime[l.Runtime] = append(byRuntime[l.Runtime], l)
	}
	for _, rt := range sortedKeys(byRuntime) {
		ls := byRuntime[rt]
		lane, named := laneGroup(ls)
		flags := make([]string, len(ls[0].settings.Unmodelled))
		for i, a := range ls[0].settings.Unmodelled {
			flags[i] = "--" + a
		}
		detail := fmt.Sprintf("%s: the performance model does not model %s; the estimates are the server's without it.", named, strings.Join(flags, ", "))
		if slices.Contains(ls[0].settings.Unmodelled, "enable-expert-parallel") {
			detail += " " + expertParallelMeasured
		}
		if dp := ls[0].settings.DataParallel; dp > 1 {
			detail += fmt.Sprintf(" With --data-parallel-size %d they are one replica's (its tensor x pipeline GPUs), serving the whole load: %d replicas behind one front end serve up to %d times its throughput at the same TTFT and TPOT.", dp, dp, dp)
		}
		f.add(SeverityNote, lane, "", fmt.Sprintf("runtime %q sets %s, which the estimates leave out", rt, strings.Join(flags, ", ")), detail)
	}
}

// expertParallelMeasured is what published measurements say
// --enable-expert-parallel changes beside tensor parallelism alone:
// GPUStack's ShareGPT bursts (vLLM 0.11, 1,000 chat requests at once;
// planner/perf/testdata/published) of Qwen3-235B-A22B-FP8 over four A100s
// and four H100s and of GLM-4.6-FP8 over eight A100s, each run with and
// without the flag.
const expertParallelMeasured = "With it GPUStack measured 3-7% fewer output tokens/s and a 3-8% longer median TPOT than tensor parallelism alone (vLLM 0.11, bursts of 1,000 ShareGPT requests: Qwen3-235B-A22B-FP8 over four A100s and four H100s, GLM-4.6-FP8 over eight A100s)."

// laneGroup is how a finding on the lanes ls names them: the lane's ID
// for the finding's lane when there is one (a finding on several names
// them in its detail), and "N lanes (key, key)".
func laneGroup(ls []*lanePlan) (lane, named string) {
	keys := make([]string, len(ls))
	for i, l := range ls {
		keys[i] = l.Key
	}
	if len(ls) == 1 {
		lane = ls[0].ID
	}
	return lane, fmt.Sprintf("%s (%s)", plural(len(ls), "lane"), strings.Join(keys, ", "))
}

// maxNumSeqs is the batch cap the spec sets for a lane's server, from the
// resolved engine settings whatever their source (the runtime block's
// max_num_seqs or --max-num-seqs in its args, the last one winning as it
// does in vLLM), and where it came from; 0 when the spec leaves it to the
// engine's default.
func maxNumSeqs(l *lanePlan) (int, string) {
	if s := l.settings; s != nil {
		switch s.Sources["max_num_seqs"] {
		case "args":
			return s.MaxNumSeqs, "--max-num-seqs in its args"
		case "runtime":
			return s.MaxNumSeqs, "its max_num_seqs"
		}
		return 0, ""
	}
	if l.Inputs.MaxNumSeqs > 0 {
		return l.Inputs.MaxNumSeqs, "its max_num_seqs"
	}
	return 0, ""
}

// kvCapacity is the lane's KV cache in tokens: the one its performance
// model runs (perf.NewLane sized it, after the engine's reserves and at
// least one request of max model len), else the hardware's capacity
// after the catalog's reserve.
func (l *lanePlan) kvCapacity() float64 {
	if l.Perf != nil {
		return float64(l.Perf.Engine.KVBlocks * l.Perf.Engine.BlockSize)
	}
	return perf.KVCapacityTokens(l.arch, l.hw)
}

// engineMaxModelLen is the max model len the lane's engine starts with,
// as far as the plan knows it: effectiveContext, down to the model's
// positions (vLLM's default) when the executor starts the server with
// the spec's settings. A server the spec does not start (an endpoint, a
// custom command) was started with a length the plan knows only if the
// spec states one: else 0, and no start-up check.
func engineMaxModelLen(l *lanePlan) int {
	in := l.Inputs
	if (!deploys(in) || ownServer(in)) && !contextStated(in) {
		return 0
	}
	ctx, _ := effectiveContext(l)
	return ctx
}

// contextStated reports whether the spec states the lane's context
// (the model's max_context or --max-model-len in the runtime's args).
func contextStated(in LaneInputs) bool {
	return in.MaxContext > 0 || maxModelLen(in.RuntimeArgs) > 0
}

// effectiveContext is the context window the server enforces: the smaller
// of the model's max_context and --max-model-len, else the model's maximum
// positions. It returns 0 when nothing says.
func effectiveContext(l *lanePlan) (ctx int, source string) {
	ctx, source = l.Inputs.MaxContext, "max_context of model "+quote(l.Model)
	if n := maxModelLen(l.Inputs.RuntimeArgs); n > 0 && (ctx == 0 || n < ctx) {
		ctx, source = n, "--max-model-len of runtime "+quote(l.Runtime)
	}
	if ctx == 0 && l.arch.MaxPositions > 0 {
		ctx, source = l.arch.MaxPositions, "the maximum positions of "+l.Inputs.ModelID
	}
	return ctx, source
}

// PromptsCalibrated reports whether a lane's prompts are sized with the server's
// /tokenize, so that input_tokens counts the prompt as the server sees it,
// chat template included: the lane's executor declares that the servers it
// starts answer /tokenize (lang.Capabilities.Tokenizes: the sim, modal and
// local executors do), unless the lane sets the executor's
// OwnServerSetting (a local custom command). An endpoint or an external
// executor's server may not, and then the load generator approximates one
// token per word and the chat template comes on top of input_tokens.
func PromptsCalibrated(in LaneInputs) bool {
	c := in.Capabilities
	if !c.Tokenizes {
		return false
	}
	return !ownServer(in)
}

// ownServer reports whether a lane runs a server of the user's own
// instead of the executor's (its executor's OwnServerSetting is set).
func ownServer(in LaneInputs) bool {
	if c := in.Capabilities; c.OwnServerSetting != "" {
		_, own := in.ExecutorConfig[c.OwnServerSetting]
		return own
	}
	return false
}

// templateReserve is the context a lane keeps free for the chat template
// besides input_tokens: nothing when its prompts are calibrated (the
// template is inside input_tokens), else the shape's template_headroom.
func templateReserve(in LaneInputs) int {
	if PromptsCalibrated(in) {
		return 0
	}
	return in.TemplateHeadroom
}

// contextCheck checks that input + output (+ template_headroom when the
// prompts are not calibrated) fit the context window the server enforces.
func contextCheck(l *lanePlan, name string, f *findings) {
	in := l.Inputs
	ctx, source := effectiveContext(l)
	if ctx == 0 {
		f.add(SeverityWarning, l.ID, "", "context length unknown; context check skipped",
			fmt.Sprintf("%s: set max_context on model %q so plan can check input + output against it.", name, l.Model))
		return
	}
	// The model's positions bound every window the spec asks the server
	// for, whichever says it: max_context or --max-model-len in the args.
	for _, w := range []struct {
		what, fix string
		n         int
	}{
		{"max_context", fmt.Sprintf("lower max_context on model %q", l.Model), in.MaxContext},
		{"--max-model-len", fmt.Sprintf("lower --max-model-len in the args of runtime %q", l.Runtime), maxModelLen(in.RuntimeArgs)},
	} {
		if l.arch.MaxPositions > 0 && w.n > l.arch.MaxPositions {
			f.add(SeverityWarning, l.ID, "", fmt.Sprintf("%s %d exceeds the %d positions of %s", w.what, w.n, l.arch.MaxPositions, in.ModelID),
				fmt.Sprintf("%s: the server refuses a context longer than the model supports; %s to at most %d.", name, w.fix, l.arch.MaxPositions))
		}
	}
	reserve := templateReserve(in)
	total := in.InputTokens + reserve + in.OutputTokens
	if total > ctx {
		sum := fmt.Sprintf("input %d + output %d = %d > %d", in.InputTokens, in.OutputTokens, total, ctx)
		why := "input_tokens counts the prompt as the server sees it (calibrated with its /tokenize, chat template included)"
		if reserve > 0 {
			sum = fmt.Sprintf("input %d + template headroom %d + output %d = %d > %d", in.InputTokens, reserve, in.OutputTokens, total, ctx)
			why = fmt.Sprintf("the %s executor's server may have no /tokenize, so the chat template comes on top of input_tokens and template_headroom reserves room for it", in.ExecutorType)
		}
		f.add(SeverityError, l.ID, "", "context overflow: "+sum,
			fmt.Sprintf("%s: every request would be rejected by the server's context guard (%s is %d; %s). Fix one of: %s.",
				name, source, ctx, why, strings.Join(overflowFixes(l, ctx, source, total, reserve), "; or ")))
		return
	}
	if !PromptsCalibrated(in) && in.API == "chat" && in.TemplateHeadroom == 0 {
		f.add(SeverityWarning, l.ID, "", "no template headroom for a chat workload that may not be calibrated",
			fmt.Sprintf("%s: if the %s executor's server has no /tokenize, prompts are approximated (one token per word) and the chat template, at least %d tokens, comes on top of input_tokens, which %s leaves %d tokens for. Set template_headroom in shape %q (512 is safe) so the context check covers it.",
				name, in.ExecutorType, chatTemplateMinTokens, source, ctx-in.InputTokens-in.OutputTokens, l.Shape))
	}
}

// overflowFixes lists the changes that make a lane's requests (total
// tokens, reserve of them for the template) fit a window of ctx tokens
// (set by source):
// shorter outputs or inputs when a positive length fits, and a longer
// window, which only another model gives when this one's positions are
// too few.
func overflowFixes(l *lanePlan, ctx int, source string, total, reserve int) []string {
	in := l.Inputs
	var fixes []string
	if n := ctx - in.InputTokens - reserve; n >= 1 {
		fixes = append(fixes, fmt.Sprintf("lower output_tokens in shape %q to at most %d", l.Shape, n))
	}
	if n := ctx - in.OutputTokens - reserve; n >= 1 {
		fixes = append(fixes, fmt.Sprintf("lower input_tokens in shape %q to at most %d", l.Shape, n))
	}
	if reserve > 0 && ctx-in.InputTokens-in.OutputTokens >= 0 {
		fixes = append(fixes, fmt.Sprintf("lower template_headroom in shape %q to at most %d (when the chat template needs no more)", l.Shape, ctx-in.InputTokens-in.OutputTokens))
	}
	if len(fixes) == 0 {
		fixes = append(fixes, fmt.Sprintf("shorten both input_tokens and output_tokens in shape %q so that together they take at most %d tokens", l.Shape, ctx-reserve))
	}
	if pos := l.arch.MaxPositions; pos > 0 && pos < total {
		return append(fixes, fmt.Sprintf("use a model whose context window holds %d tokens (%s has %d positions)", total, in.ModelID, pos))
	}
	return append(fixes, fmt.Sprintf("raise the context window (%s) to at least %d", source, total))
}

// templateFloorCheck warns about prompts shorter than a chat template can
// be: on a calibrated chat lane input_tokens counts the template, which
// takes at least chatTemplateMinTokens tokens and a word, so a shorter
// prompt goes out at that minimum and its length is off target (the
// run summary's prompt_off_target counts them). Drawn lengths are counted
// draw by draw.
func templateFloorCheck(l *lanePlan, name string, f *findings) {
	in := l.Inputs
	if in.API != "chat" || !PromptsCalibrated(in) {
		return
	}
	floor := chatTemplateMinTokens + 1
	short, total := 0, 1
	if w := in.Workload; w != nil && w.Input != nil {
		seq := w.Sequence(in.Seed, in.Requests, in.InputTokens, in.OutputTokens)
		total = len(seq)
		for _, q := range seq {
			if q.Input-q.History < floor {
				short++
			}
		}
	} else if in.InputTokens < floor {
		short = 1
	}
	if short == 0 {
		return
	}
	what := fmt.Sprintf("input_tokens %d is", in.InputTokens)
	if total > 1 {
		what = fmt.Sprintf("%d of %d drawn prompts are", short, total)
	}
	f.add(SeverityWarning, l.ID, "", fmt.Sprintf("prompts shorter than a chat template in shape %q", l.Shape),
		fmt.Sprintf("%s: %s under %d tokens: input_tokens counts the prompt as the server sees it, chat template included, and a chat template takes at least %d tokens and a word, so such a prompt goes out longer than asked (each run's summary counts it in prompt_off_target). Set input_tokens (or the distribution's low end) to %d or more in shape %q, or use api = \"completions\".",
			name, what, floor, chatTemplateMinTokens, floor, l.Shape))
}

func memoryCheck(l *lanePlan, name string, f *findings) {
	if len(l.missing) > 0 || !l.hwOK {
		return
	}
	in, h := l.Inputs, l.hw
	var eng perf.EngineConfig // without a performance model: every layer holds every token
	if l.Perf != nil {
		h, eng = l.Perf.Hardware, l.Perf.Engine // the tensor-parallel size and KV cache the engine runs
	}
	n := float64(h.GPUs())
	deviceGB := n * h.GPU.MemoryGB
	usableGB := deviceGB * h.Assume.GPUMemoryUtilization
	weightsGB := l.arch.WeightBytesOn(h) / 1e9
	reserveGB := n * h.Assume.ActivationReserveGB
	gpuDesc := fmt.Sprintf("%d x %s", h.GPUs(), h.GPU.Name)
	if weightsGB+reserveGB >= usableGB {
		seqs := ""
		if l.Perf != nil && l.Perf.ReserveSource() != "" {
			seqs = fmt.Sprintf(" The reserve is %s: a lower --max-num-seqs in the runtime's args shrinks it.", l.Perf.ReserveSource())
		}
		f.add(SeverityError, l.ID, "", fmt.Sprintf("weights do not fit: %.1f GB + %.1f GB reserve > %.1f GB usable on %s",
			weightsGB, reserveGB, usableGB, gpuDesc),
			fmt.Sprintf("%s: %s needs %.1f GB for weights%s, and %s offers %.0f GB at gpu_memory_utilization %.2f. Use a larger GPU type or more GPUs (count) in gpu %q, or quantised weights (--quantization fp8 in the runtime's args).%s",
				name, in.ModelID, weightsGB, precisionNote(h), gpuDesc, deviceGB, h.Assume.GPUMemoryUtilization, l.GPU, seqs))
		return
	}
	capacity := l.kvCapacity()
	perSeq := in.InputTokens + in.OutputTokens
	seqKV := eng.KVTokens(perSeq) // less where sliding-window layers keep only their window
	need := float64(in.Concurrency) * seqKV
	if need > capacity {
		perToken := l.arch.KVBytesPerTokenPerGPU(h) * n
		kvGB := need * perToken / 1e9
		freeGB := capacity * perToken / 1e9
		maxC := int(math.Floor(capacity / seqKV))
		if maxC < 1 {
			f.add(SeverityError, l.ID, "", fmt.Sprintf("KV cache does not fit one request: %d + %d tokens need %.2f GB, %.2f GB free on %s",
				in.InputTokens, in.OutputTokens, seqKV*perToken/1e9, freeGB, gpuDesc),
				fmt.Sprintf("%s: weights take %.1f GB of %.1f GB usable (gpu_memory_utilization %.2f), leaving room for %.0f tokens of KV cache, fewer than one request needs (%.0f): the engine cannot serve it. Use shorter requests in shape %q, or a larger GPU or more GPUs in gpu %q.",
					name, weightsGB, usableGB, h.Assume.GPUMemoryUtilization, capacity, seqKV, l.Shape, l.GPU))
			return
		}
		// vLLM queues what its KV cache cannot hold (and preempts when
		// running requests outgrow it): `vllm bench serve`'s default burst
		// does this. The estimate runs the same scheduler model, so its
		// figures include the queueing.
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("KV cache holds %d of %d concurrent requests: %d x (%d + %d) tokens need %.1f GB, %.1f GB free on %s",
			maxC, in.Concurrency, in.Concurrency, in.InputTokens, in.OutputTokens, kvGB, freeGB, gpuDesc),
			fmt.Sprintf("%s: weights take %.1f GB of %.1f GB usable (gpu_memory_utilization %.2f), leaving room for %.0f tokens of KV cache: the engine runs about %d requests at once and queues (or preempts) the rest, and the estimate includes that queueing in its TTFT, duration and throughput. To measure without queueing, lower concurrency in shape %q to at most %d, or use a larger GPU or more GPUs in gpu %q.",
				name, weightsGB, usableGB, h.Assume.GPUMemoryUtilization, capacity, maxC, l.Shape, maxC, l.GPU))
	}
}

// parallelCheck warns when the engine's tensor-parallel size
// (--tensor-parallel-size) leaves some of the gpu block's GPUs idle: one
// vLLM server uses that many GPUs, the plan estimates it on them, and the
// rest are rented for nothing (data parallelism is not modelled). A size
// above the count is the engine's refusal (resolvePerf).
func parallelCheck(l *lanePlan, name string, f *findings) {
	rs, gpus := l.settings, l.hw.Count
	if rs == nil || l.perfErr != nil {
		return
	}
	used := rs.GPUs()
	if used >= gpus {
		return
	}
	if used != rs.TensorParallel {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("the parallel sizes use %d of the %d GPUs of gpu %q", used, gpus, l.GPU),
			fmt.Sprintf("%s: one server runs on %d GPU(s) (tensor x pipeline x data parallel sizes in runtime %q) and the estimate is for them; the other %d are idle but counted in GPU-seconds and cost. Set count = %d in gpu %q, or larger parallel sizes.",
				name, used, l.Runtime, gpus-used, used, l.GPU))
		return
	}
	f.add(SeverityWarning, l.ID, "", fmt.Sprintf("tensor_parallel_size %d uses %d of the %d GPUs of gpu %q", rs.TensorParallel, rs.TensorParallel, gpus, l.GPU),
		fmt.Sprintf("%s: one server runs on %d GPU(s) (--tensor-parallel-size in runtime %q) and the estimate is for them; the other %d are idle but counted in GPU-seconds and cost. Set count = %d in gpu %q, or --tensor-parallel-size %d.",
			name, rs.TensorParallel, l.Runtime, gpus-rs.TensorParallel, rs.TensorParallel, l.GPU, gpus))
}

// precisionNote says how a lane holds its weights when that is not its
// dtype throughout (" at fp8").
func precisionNote(h perf.Hardware) string {
	if p := h.Precision; p != nil && p.Quantization != "" {
		return " at " + p.Quantization
	}
	return ""
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// externalChecks runs the checks of Options.Checks on every lane whose
// inputs are known (a lane waiting for a trace is checked once it is
// profiled).
func externalChecks(screens []*Screen, lanes []*lanePlan, checks []LaneCheck, f *findings) {
	if len(checks) == 0 {
		return
	}
	byName := map[string]*Screen{}
	for _, s := range screens {
		byName[s.Name] = s
	}
	for _, l := range lanes {
		if len(l.Inputs.Pending) > 0 {
			continue
		}
		for _, check := range checks {
			*f = append(*f, check(byName[l.Screen], l.Lane)...)
		}
	}
}
