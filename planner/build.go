package planner

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/perf"
	"github.com/infercrane/infercrane/planner/state"
)

// Options tune Build.
type Options struct {
	// Replace lists lane IDs (or unique ID prefixes, or lane keys) to rerun
	// even when the state has them complete (-replace).
	Replace []string
	// Target limits the plan to the lanes these name (-target): lane IDs,
	// ID prefixes, keys or key prefixes ending at a "/". Empty: every lane.
	Target []string
	// Version is the infercrane version stamped into the plan.
	Version string
	// Variables overrides the plan's record of variable values; nil takes
	// them from the Config. Sensitive variables are always redacted.
	Variables map[string]any
	// Checks are preflight checks that need knowledge above the planner
	// (an executor's deploy-time rules, the report's lane metrics), run on
	// every lane with known inputs after the planner's own; their findings
	// join the plan's preflight. cmd wires them (see LaneCheck).
	Checks []LaneCheck
	// Env reads the environment for the Hugging Face cache's location (a
	// model's config.json at its revision); nil: the cache is not read.
	Env Env
	// NoDigest leaves the plan's PlanDigest empty, for a caller that
	// neither shows nor keeps it: Marshal and SavedPlan compute their own.
	// The digest encodes the whole plan once more (a sixth of `plan`'s
	// time at 10,000 lanes).
	NoDigest bool
}

// LaneCheck checks one planned lane of screen sc and returns what the plan
// must report about it (an error blocks apply). It reads only the plan: the
// lane's resolved inputs, settings and performance model.
type LaneCheck func(sc *Screen, l *Lane) []Finding

// lanePlan is a lane together with what Build resolved for it.
type lanePlan struct {
	*Lane
	blocks  laneBlocks
	arch    perf.ModelArch
	missing []string // architecture attributes nobody gave
	hw      perf.Hardware
	hwOK    bool
	perfErr error // runtime settings the engine would refuse
	// unstartedAt is the KV cache, in tokens, of a simulated lane that a
	// real vLLM server would refuse to start at its default max model len
	// (the model's positions, which the spec does not state): the lane is
	// estimated all the same, and preflight warns (0: no such refusal).
	unstartedAt int
	// settings are the engine's settings resolved from the runtime block's
	// attributes and args (nil: the GPU type is unknown); preflight reads
	// them, whatever their source.
	settings *perf.RuntimeSettings
	// uncertainty is the range of the lane's estimate (calibration
	// residuals or the catalog's stated uncertainty).
	uncertainty perf.Uncertainty
	// calWarning is why the lane's calibration was refused or is
	// suspect (preflight makes it a warning); calWarningKey dedupes it
	// across lanes.
	calWarning, calWarningKey string
}

// Build compiles cfg into a Plan. snap is the state directory's content
// (nil or empty: nothing has run yet). Problems of the spec itself (a screen
// naming an undeclared block, an unknown -replace target) are returned as
// diagnostics; problems a run would hit (context overflow, memory) are
// preflight findings in the plan. The returned plan is never nil.
func Build(cfg *lang.Config, snap *state.Snapshot, opts Options) (*Plan, hcl.Diagnostics) {
	if snap == nil {
		snap = &state.Snapshot{}
	}
	p := &Plan{
		FormatVersion:     FormatVersion,
		InfercraneVersion: opts.Version,
		ModelRevision:     perf.ModelRevision,
		SpecDigest:        cfg.SpecDigest(),
		Variables:         variables(cfg, opts.Variables),
		Screens:           []*Screen{},
		Lanes:             []*Lane{},
		Preflight:         []Finding{},
		Assumptions:       []Assumption{},
		Graph:             Graph{Nodes: []Node{}, Edges: []Edge{}},
		Traces:            traceProfiles(cfg),
		secrets:           append([]string(nil), cfg.Secrets...),
	}
	models, diags := modelConfigs(cfg, opts.Env)
	lanes, ediags := expand(cfg, p, models)
	diags = append(diags, ediags...)
	cals, cdiags := calibrations(cfg)
	kinds := executorKinds(cfg)
	diags = append(diags, cdiags...)
	for _, l := range lanes {
		calibrate(l, cals, kinds)
		resolvePerf(l)
	}
	assignIDs(lanes)

	replaced, rdiags := resolveReplace(lanes, opts.Replace)
	diags = append(diags, rdiags...)
	drops := applyState(lanes, snap, replaced)
	for _, l := range lanes {
		if l.Inputs.Search != nil {
			applySearchState(l, snap)
		}
	}

	var f findings
	lanes, drops, tdiags := applyTargets(lanes, drops, opts.Target, &f)
	diags = append(diags, tdiags...)
	preflight(cfg, p.Screens, lanes, &f)
	externalChecks(p.Screens, lanes, opts.Checks, &f)
	estimate(lanes)
	runtimeNotes(p.Screens, lanes)
	for _, l := range lanes {
		if l.Inputs.Search != nil && l.Work() && len(l.Inputs.Pending) == 0 {
			searchChecks(l, &f)
		}
	}

	for _, l := range lanes {
		p.Lanes = append(p.Lanes, l.Lane)
	}
	p.Lanes = append(p.Lanes, drops...)
	p.Preflight = f.sorted()
	p.Totals = totals(p, "")
	for _, s := range p.Screens {
		s.Totals = totals(p, s.Name)
	}
	p.Assumptions = assumptions(cfg, lanes)
	p.Graph = buildGraph(p)
	if !p.HasWork() && p.Totals.Dropped == 0 {
		// (When lanes run or drop, apply makes the reports again anyway.)
		p.ReportChanges = reportChanges(snap.Applied, p)
	}
	if opts.NoDigest {
		return p, diags
	}
	if d, err := Digest(p); err == nil {
		p.PlanDigest = d
	}
	return p, diags
}

// HasErrors reports whether a preflight finding blocks apply.
func (p *Plan) HasErrors() bool {
	for _, f := range p.Preflight {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// HasWork reports whether apply has a lane to run.
func (p *Plan) HasWork() bool { return p.Totals.LanesToRun > 0 }

// Lane returns the lane with the given ID, or nil.
func (p *Plan) Lane(id string) *Lane {
	for _, l := range p.Lanes {
		if l.ID == id {
			return l
		}
	}
	return nil
}

// expand makes one lane per (screen, model, shape, gpu, runtime), sorted
// by key.
func expand(cfg *lang.Config, p *Plan, models map[*lang.Model]modelConfig) ([]*lanePlan, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var lanes []*lanePlan
	memo := &laneMemo{deployments: deploymentIDs{}, settings: executorSettingsMemo{}}
	for _, sname := range sortedKeys(cfg.Screens) {
		s := cfg.Screens[sname]
		if s == nil {
			continue
		}
		p.Screens = append(p.Screens, &Screen{
			Name: sname, Baseline: s.Baseline, Gates: nonNil(s.Gates), GateSpecs: gateSpecs(cfg, s.Gates),
			SelectionBoundary: s.SelectionBoundary, Seed: s.Seed, Runs: s.Runs,
		})
		if len(s.Runtimes) > 1 {
			p.Screens[len(p.Screens)-1].Runtimes = append([]string(nil), s.Runtimes...)
		}
		b := laneBlocks{screen: s}
		var ok bool
		// A screen with one runtime (or none) keeps the lane keys it always
		// had; one that compares several names the runtime in each key.
		runtimes := s.RuntimeNames()
		several := len(runtimes) > 1
		if len(runtimes) == 0 {
			runtimes = []string{""}
		}
		declared := true
		for _, rname := range runtimes {
			if rname != "" && cfg.Runtimes[rname] == nil {
				diags = append(diags, undeclared(s, "runtime", rname))
				declared = false
			}
		}
		if !declared {
			continue
		}
		b.execName = s.Executor
		if b.execName == "" {
			b.execName = lang.DefaultExecutorName
		}
		if b.executor, ok = cfg.Executors[b.execName]; (!ok || b.executor == nil) && s.Executor != "" {
			diags = append(diags, undeclared(s, "executor", s.Executor))
			continue
		}
		seen := map[string]bool{}
		for _, mname := range s.Models {
			for _, shname := range s.Shapes {
				for _, gname := range s.GPUs {
					for _, rname := range runtimes {
						key := sname + "/" + mname + "/" + shname + "/" + gname
						if several {
							key += "/" + rname
						}
						if seen[key] {
							continue // a block listed twice is planned once
						}
						seen[key] = true
						lb := b
						lb.model, lb.shape, lb.gpu = cfg.Models[mname], cfg.Shapes[shname], cfg.GPUs[gname]
						if rname != "" {
							lb.runtime, lb.runtimeName = cfg.Runtimes[rname], rname
						}
						if lb.model == nil || lb.shape == nil || lb.gpu == nil {
							continue // reported once below
						}
						lb.config = models[lb.model]
						lb.search = laneSearch(cfg, s, lb.shape)
						lanes = append(lanes, newLane(key, sname, mname, shname, gname, lb, memo))
					}
				}
			}
		}
		diags = append(diags, checkRefs(cfg, s)...)
	}
	sort.Slice(lanes, func(i, j int) bool { return lanes[i].Key < lanes[j].Key })
	return lanes, diags
}

// gateSpecs resolves the gates a screen names (undeclared ones are left
// to the language's diagnostics).
func gateSpecs(cfg *lang.Config, names []string) []Gate {
	var out []Gate
	for _, n := range names {
		g := cfg.Gates[n]
		if g == nil {
			continue
		}
		out = append(out, Gate{Name: n, Condition: g.ConditionText, Metrics: nonNil(g.Metrics),
			ErrorMessage: g.ErrorMessage, MinRuns: g.MinRuns, MaxCV: g.MaxCV})
	}
	return out
}

// laneMemo is what the lanes of one expansion share rather than compute
// each: their deployment IDs and their executors' settings.
type laneMemo struct {
	deployments deploymentIDs
	settings    executorSettingsMemo
}

// newLane resolves one lane's inputs, model architecture and hardware.
func newLane(key, screen, model, shape, gpu string, b laneBlocks, memo *laneMemo) *lanePlan {
	in := laneInputs(b)
	if p := b.config.pinned; p != nil {
		if api := perf.FrontEndAPI(p.Config.HarmonyChat, in.API); api != in.API {
			in.FrontEndAPI = api
		}
	}
	runtimeName := ""
	if b.runtime != nil {
		runtimeName = b.runtimeName
	}
	l := &lanePlan{
		Lane: &Lane{
			Key: key, Screen: screen, Model: model, Shape: shape, GPU: gpu,
			Runtime: runtimeName, Executor: b.execName,
			Runs: runsOf(b, in), RequestsPerRun: in.Requests,
			Inputs: in, ChangedInputs: []string{},
		},
		blocks: b,
	}
	l.Deployment = memo.deployments.of(in, b)
	l.ExecutorSettings = memo.settings.of(b.executor, &l.Inputs)
	l.arch, l.missing = ResolveModelArch(b.model, b.config.pinned)
	l.hw, l.hwOK = hardware(b.gpu, in)
	resolveWorkload(l)
	return l
}

// runsOf is a lane's planned run count: the screen's runs, or for a
// capacity search its max_points (each point is one run).
func runsOf(b laneBlocks, in LaneInputs) int {
	if in.Search != nil {
		return in.Search.MaxPoints
	}
	return b.screen.Runs
}

// assignIDs sets every lane's ID from its inputs. Lanes of different
// screens with identical inputs would collide; those take a hash of their
// inputs and key instead, which depends only on the set of colliding lanes.
func assignIDs(lanes []*lanePlan) {
	byID := map[string][]*lanePlan{}
	for _, l := range lanes {
		l.ID = LaneID(l.Inputs)
		byID[l.ID] = append(byID[l.ID], l)
	}
	for _, group := range byID {
		if len(group) < 2 {
			continue
		}
		for _, l := range group {
			l.ID = shortHash(struct {
				Inputs LaneInputs `json:"inputs"`
				Key    string     `json:"key"`
			}{l.Inputs, l.Key})
		}
	}
}

// checkRefs reports the blocks a screen names that are not declared.
func checkRefs(cfg *lang.Config, s *lang.Screen) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, m := range s.Models {
		if cfg.Models[m] == nil {
			diags = append(diags, undeclared(s, "model", m))
		}
	}
	for _, sh := range s.Shapes {
		if cfg.Shapes[sh] == nil {
			diags = append(diags, undeclared(s, "shape", sh))
		}
	}
	for _, g := range s.GPUs {
		if cfg.GPUs[g] == nil {
			diags = append(diags, undeclared(s, "gpu", g))
		}
	}
	return diags
}

func undeclared(s *lang.Screen, kind, name string) *hcl.Diagnostic {
	r := s.DeclRange
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Screen %q refers to an undeclared %s", s.Name, kind),
		Detail:   fmt.Sprintf("There is no %s block named %q; declare it or fix the reference in screen %q.", kind, name, s.Name),
		Subject:  &r,
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// nonNil returns s, or an empty slice for nil, so JSON shows [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return append([]T{}, s...)
}
