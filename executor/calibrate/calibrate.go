// Package calibrate fits the performance model's free parameters (prefill
// MFU, decode bandwidth efficiency, per-step and per-request overheads) to
// measured evidence, per GPU type and runtime version, and writes the
// digest-pinned calibration file a gpu or runtime block references.
package calibrate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor/benchresult"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
	"github.com/infercrane/infercrane/planner/state"
)

// Options tune Run.
type Options struct {
	// StateDir, when set, is the state directory the evidence was made
	// from: the fit then uses every run's figures recomputed from its
	// per-request records (each run with its own arrival seed) instead of
	// the campaigns' aggregates.
	StateDir string
	// Version is the infercrane version stamped into the file.
	Version string
	// Now stamps generated_at (default time.Now).
	Now func() time.Time
	// Models, when set, are the model ids (compared without case) whose
	// campaigns are used; the others are left out (e.g. calibrate from
	// one model's lanes and check on another's).
	Models []string
	// Hints are the conditions (GPU, engine and version, model) of other
	// tools' results that do not record them (benchresult.Hints).
	Hints benchresult.Hints
	// KeepCached keeps runs whose TTFT says their prompts came from a
	// prefix cache the evidence does not declare; they are left out of a
	// fit by default.
	KeepCached bool
	// Archs are the architectures of models the catalog does not have, by
	// model id (read from their config.json: -model-config).
	Archs map[string]perf.ModelArch
}

// lookupModel is the catalog's architecture of model id, else opts.Archs'.
func (o Options) lookupModel(id string) (perf.ModelArch, bool) {
	if m, ok := perf.LookupModel(id); ok {
		return m, true
	}
	m, ok := o.Archs[id]
	return m, ok
}

// source is the fit's source: "records" with a state, else "aggregates".
func (o Options) source() string {
	if o.StateDir != "" {
		return "records"
	}
	return "aggregates"
}

// wants reports whether campaigns of model are used.
func (o Options) wants(model string) bool {
	if len(o.Models) == 0 {
		return true
	}
	for _, m := range o.Models {
		if strings.EqualFold(m, model) {
			return true
		}
	}
	return false
}

// Result is a calibration and what was left out of it.
type Result struct {
	Calibration *perf.Calibration
	// Warnings name campaigns that could not be used, and why.
	Warnings []string
	// Notes say how other tools' definitions were mapped and which runs
	// were left out as served from a prefix cache.
	Notes []string
}

// group is the observations of one GPU type and runtime.
type group struct {
	gpuType, engine, version string
	// executor is the evidence's executor kind ("sim", "local", ...,
	// "external: TOOL" for another tool's results; several joined by
	// ", ").
	executor string
	// foreign is set when another tool's results are among the
	// observations.
	foreign  bool
	obs      []perf.Observation
	lanes    map[string]bool
	runs     int
	evidence []perf.EvidenceRef
	start    perf.Params
}

// Run reads infercrane.screen-evidence/v1 documents (their digests checked
// as verify checks them; models[].campaigns[].workload and aggregate
// figures, environment.gpu_request and environment.runtime) and fits one
// set of parameters per GPU type and runtime version found.
func Run(paths []string, opts Options) (*Result, error) {
	groups, keys, warnings, notes, err := collect(paths, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Warnings: warnings, Notes: notes}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	cal := &perf.Calibration{SchemaVersion: perf.CalibrationSchema, GeneratedAt: now().UTC().Format(time.RFC3339), InfercraneVersion: opts.Version}
	for _, k := range keys {
		g := groups[k]
		fit, err := perf.Fit(g.obs, g.start)
		if err != nil {
			return nil, fmt.Errorf("%s with %s %s: %w", g.gpuType, g.engine, g.version, err)
		}
		cal.Fits = append(cal.Fits, perf.CalibrationFit{GPUType: g.gpuType, Engine: g.engine, Version: g.version, Source: g.source(opts), Executor: g.executor,
			ModelRevision: perf.ModelRevision, Evidence: g.evidence, Lanes: len(g.lanes), Runs: g.runs, Start: g.start, Params: fit.Params, Fit: fit})
	}
	cal.Digest = cal.ComputeDigest()
	res.Calibration = cal
	return res, nil
}

// Check is a calibration's predictions for evidence it may not have been
// fitted to, per GPU type and runtime.
type Check struct {
	// Fits are the comparisons, one per GPU type and runtime of the
	// evidence that the calibration has a fit for; Fit.Params are the
	// calibration's parameters and Fit.MAPE the prediction error.
	Fits []perf.CalibrationFit
	// Warnings name campaigns that could not be used, and GPU types or
	// runtimes the calibration has no fit for.
	Warnings []string
	// Notes are Result's.
	Notes []string
}

// CheckCalibration predicts every usable campaign of the evidence (as Run
// reads it, with opts' state and model filter) with the parameters of
// cal's fit for its GPU type and runtime and compares the predictions
// with the measurements: how well a calibration transfers to other lanes
// (another model's, other shapes).
func CheckCalibration(paths []string, opts Options, cal *perf.Calibration) (*Check, error) {
	groups, keys, warnings, notes, err := collect(paths, opts)
	if err != nil {
		return nil, err
	}
	out := &Check{Warnings: warnings, Notes: notes}
	for _, k := range keys {
		g := groups[k]
		fit, ok := cal.Find(g.gpuType, g.engine, g.version)
		if !ok {
			out.Warnings = append(out.Warnings, fmt.Sprintf("the calibration has no fit for %s with %s %s; its %d lanes are not checked", g.gpuType, g.engine, g.version, len(g.lanes)))
			continue
		}
		res, err := perf.Evaluate(g.obs, fit.Params)
		if err != nil {
			return nil, fmt.Errorf("%s with %s %s: %w", g.gpuType, g.engine, g.version, err)
		}
		if old := fit.OutdatedModel(); old != "" {
			out.Warnings = append(out.Warnings, fmt.Sprintf("the fit for %s with %s %s %s, whose parameters hold other things: the check shows how far off it is now; refit it from its evidence",
				g.gpuType, g.engine, g.version, old))
		}
		out.Fits = append(out.Fits, perf.CalibrationFit{GPUType: g.gpuType, Engine: g.engine, Version: g.version, Source: g.source(opts), Executor: g.executor,
			ModelRevision: fit.ModelRevision, Evidence: g.evidence, Lanes: len(g.lanes), Runs: g.runs, Start: fit.Params, Params: fit.Params, Fit: res})
	}
	if len(out.Fits) == 0 {
		return nil, fmt.Errorf("the calibration has no fit for the evidence's GPU types and runtimes: %s", strings.Join(out.Warnings, "; "))
	}
	return out, nil
}

// source is the fit's source: "records" with a state, else "aggregates";
// "results" when other tools' results are among them.
func (g *group) source(opts Options) string {
	if g.foreign {
		if opts.StateDir != "" {
			return "records and results"
		}
		return "aggregates and results"
	}
	return opts.source()
}

// addExecutor records another executor kind of the group's evidence.
func (g *group) addExecutor(kind string) {
	if kind == "" {
		return
	}
	for _, k := range strings.Split(g.executor, ", ") {
		if k == kind {
			return
		}
	}
	if g.executor == "" {
		g.executor = kind
	} else {
		g.executor += ", " + kind
	}
}

// collect reads the evidence into observations grouped by GPU type and
// runtime (keys sorted).
func collect(paths []string, opts Options) (map[string]*group, []string, []string, []string, error) {
	if len(paths) == 0 {
		return nil, nil, nil, nil, fmt.Errorf("give at least one evidence file")
	}
	var snap *state.Snapshot
	planned := map[string]*planner.Lane{}
	if opts.StateDir != "" {
		s, err := state.Load(opts.StateDir)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("read state %s: %w", opts.StateDir, err)
		}
		snap = s
		// The applied plan knows each lane's architecture (also for models
		// outside the catalog, from the model block) and engine settings;
		// its assumptions are not used, the fit starts from the catalog's.
		if p, _, err := planner.ReadPlanFile(filepath.Join(opts.StateDir, state.PlanFile)); err == nil {
			for _, l := range p.Lanes {
				if l.Perf != nil {
					planned[l.ID] = l
				}
			}
		}
	}
	var warnings, notes []string
	groups := map[string]*group{}
	skipped := map[string]bool{}
	join := func(g *group, obs []perf.Observation, lane string, runs int, ref perf.EvidenceRef, executor string) {
		key := g.gpuType + "\x00" + g.engine + "\x00" + g.version
		if groups[key] == nil {
			g.lanes = map[string]bool{}
			g.executor = ""
			groups[key] = g
		}
		gr := groups[key]
		gr.obs = append(gr.obs, obs...)
		gr.lanes[lane] = true
		gr.runs += runs
		gr.addExecutor(executor)
		if strings.HasPrefix(executor, "external: ") {
			gr.foreign = true
		}
		if !hasRef(gr.evidence, ref) {
			gr.evidence = append(gr.evidence, ref)
		}
	}
	// Every file is read once, first: whether two of other tools' results
	// sent the same prompts (benchresult.SharedPrompts) takes all of them.
	// A result is keyed by its path and label, as join keys it (AIPerf
	// names every export profile_export_aiperf.json).
	data := map[string][]byte{}
	foreign := map[string][]benchresult.Result{}
	var all []benchresult.Result
	var allKeys []string
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		data[path] = b
		if kind := benchresult.Kind(b); kind != "" && kind != "infercrane evidence" {
			rs, err := benchresult.Parse(filepath.Base(path), b, opts.Hints)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			foreign[path] = rs
			all = append(all, rs...)
			for _, r := range rs {
				allKeys = append(allKeys, path+"\x00"+r.Label)
			}
		}
	}
	shared := map[string]string{}
	for i, n := range benchresult.SharedPrompts(all) {
		shared[allKeys[i]] = n
	}
	for _, path := range paths {
		if rs, ok := foreign[path]; ok {
			for _, r := range rs {
				if !opts.wants(r.Model) {
					skipped[r.Model] = true
					continue
				}
				obs, g, warn, ns := foreignObservations(r, opts)
				notes = append(notes, ns...)
				where := r.Name()
				if n := shared[path+"\x00"+r.Label]; n != "" {
					notes = append(notes, where+": "+n)
				}
				if warn != "" {
					warnings = append(warnings, fmt.Sprintf("%s: %s", where, warn))
					continue
				}
				join(g, obs, path+"\x00"+r.Label, r.Runs, foreignRef(r), g.executor)
			}
			continue
		}
		ev, err := readEvidence(path, data[path])
		if err != nil {
			if benchresult.Kind(data[path]) == "" {
				err = fmt.Errorf("%w (nor is it a result of another tool calibrate reads: vllm bench serve --save-result JSON, AIPerf's profile_export_aiperf.json or profile_export.jsonl, GuideLLM's report JSON, or an InferCrane screen document)", err)
			}
			return nil, nil, nil, nil, err
		}
		ref := perf.EvidenceRef{File: filepath.ToSlash(filepath.Base(path)), Screen: ev.Screen, Digest: ev.Digest}
		for _, m := range ev.Models {
			if !opts.wants(m.Model) {
				skipped[m.Model] = true
				continue
			}
			for _, c := range m.Campaigns {
				obs, g, warn, note := observations(ev, m, c, snap, planned[c.Lane], opts.KeepCached)
				if warn != "" {
					warnings = append(warnings, fmt.Sprintf("%s: %s/%s: %s", filepath.Base(path), m.Model, c.Profile, warn))
					continue
				}
				if note != "" {
					warnings = append(warnings, fmt.Sprintf("%s: %s/%s: %s", filepath.Base(path), m.Model, c.Profile, note))
				}
				join(g, obs, path+"\x00"+m.Model+"\x00"+c.Profile+"\x00"+c.Lane, max(len(c.Runs), 1), ref, strings.Join(ev.Environment.Executor, ", "))
			}
		}
	}
	if len(groups) == 0 {
		if len(warnings) == 0 && len(skipped) > 0 {
			var names []string
			for m := range skipped {
				names = append(names, m)
			}
			sort.Strings(names)
			return nil, nil, nil, nil, fmt.Errorf("the evidence has no campaign of the models asked for (%s); it has %s", strings.Join(opts.Models, ", "), strings.Join(names, ", "))
		}
		if len(warnings) == 0 {
			return nil, nil, nil, nil, fmt.Errorf("the evidence (%s) has no campaigns to calibrate from: its screens ran no lane", strings.Join(paths, ", "))
		}
		return nil, nil, nil, nil, fmt.Errorf("no campaign of the evidence can be calibrated from: %s", strings.Join(warnings, "; "))
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return groups, keys, warnings, notes, nil
}

// readEvidence reads the evidence file at path, whose bytes are data,
// after checking its digest as verify does: a document changed after
// 'infercrane report' wrote it (a figure edited by hand, a truncated
// copy) is refused, since the calibration would be fitted to figures
// nothing vouches for and would name the document's stated digest as its
// provenance.
func readEvidence(path string, data []byte) (*evidence.Evidence, error) {
	vr, err := report.VerifyDigest(path, data)
	if err != nil {
		return nil, err
	}
	if !vr.DigestOK {
		return nil, fmt.Errorf("%s: digest MISMATCH: the evidence states %s, its content gives %s: %w, so its figures are not the ones measured", path, vr.Recorded, vr.Computed, report.ErrEvidenceChanged)
	}
	var ev evidence.Evidence
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("%s is not an evidence document: %v", path, err)
	}
	return &ev, nil
}

func hasRef(refs []perf.EvidenceRef, r perf.EvidenceRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// observations turns one campaign into observations: one per run from the
// state's records, or one from the aggregate. warn says why the campaign
// cannot be used; note is something about it the user should know.
func observations(ev *evidence.Evidence, m evidence.ModelEvidence, c evidence.Campaign, snap *state.Snapshot, planned *planner.Lane, keepCached bool) (obs []perf.Observation, gr *group, warn, note string) {
	obs, gr, warn = campaignObservations(ev, m, c, snap, planned)
	if warn != "" || c.RequestMix != nil {
		return obs, gr, warn, ""
	}
	if note, drop := undeclaredCacheHits(c, obs); note != "" {
		if !keepCached {
			if drop == nil {
				return nil, nil, note + "; give -keep-cached to fit it anyway", ""
			}
			obs = slices.DeleteFunc(obs, func(o perf.Observation) bool { return drop[o.Name] })
			if len(obs) == 0 {
				return nil, nil, note + "; nothing is left to fit (give -keep-cached to fit them anyway)", ""
			}
			return obs, gr, "", note + "; those runs are left out of the fit (give -keep-cached to fit them)"
		}
		return obs, gr, "", note + "; kept (-keep-cached)"
	}
	var hits, queried float64
	for _, r := range c.Runs {
		if v := r.ServerView; v != nil && v.PrefixCache != nil {
			hits += v.PrefixCache.HitTokens
			queried += v.PrefixCache.QueriedTokens
		}
	}
	if hits > 0 {
		note = fmt.Sprintf("the server's prefix cache served %.0f of the %.0f prompt tokens the measured requests sent, though the shape's prompts share nothing: they met prompts of an earlier lane on the same server (evidence from before infercrane salted prompts per lane?); the fit models the cached tokens the records or the server's counters report", hits, queried)
	}
	return obs, gr, "", note
}

// undeclaredCacheHits flags the campaign's runs whose TTFT p50 is under
// CachedTTFTFraction of a lone prefill's compute while the server declared
// no prefix-cache hit: their prompts were served from a cache the evidence
// does not declare. drop names the observations of those runs (records
// mode, one observation a run); nil drop with a note means the aggregate
// mixes them in and the campaign cannot be used as it is.
func undeclaredCacheHits(c evidence.Campaign, obs []perf.Observation) (note string, drop map[string]bool) {
	if len(obs) == 0 {
		return "", nil
	}
	lane := obs[0].Lane
	var flagged []string
	drop = map[string]bool{}
	for _, r := range c.Runs {
		if v := r.ServerView; v != nil && v.PrefixCache != nil && v.PrefixCache.HitTokens > 0 {
			continue // declared: the model is told (cachedPerRequest)
		}
		if r.TTFTP50Ms == nil {
			continue
		}
		if why := cachedTTFT(lane, c.Workload.InputTokens, *r.TTFTP50Ms); why != "" {
			flagged = append(flagged, fmt.Sprintf("run %d: %s", r.Run, why))
			for _, o := range obs {
				if strings.HasSuffix(o.Name, fmt.Sprintf(" run %d", r.Run)) {
					drop[o.Name] = true
				}
			}
		}
	}
	if len(flagged) == 0 {
		return "", nil
	}
	if len(drop) == 0 {
		drop = nil
	}
	return strings.Join(flagged, "; "), drop
}

// cachedPerRequest is the prompt tokens per measured request that the
// server's prefix cache served in run run of c (0: over all its runs),
// from the server's counters (server_view), in whole blocks. A fixed
// shape's prompts share nothing, so such hits are prompts an earlier lane
// sent to the same server (evidence written before the load generator
// salted prompts per lane): the prefills were shorter than the shape's,
// and the model is told so.
func cachedPerRequest(c evidence.Campaign, run, blockSize int) int {
	var hits float64
	n := 0
	for _, r := range c.Runs {
		if run != 0 && r.Run != run {
			continue
		}
		if v := r.ServerView; v != nil && v.PrefixCache != nil {
			hits += v.PrefixCache.HitTokens
			n += r.Succeeded
		}
	}
	if hits <= 0 || n == 0 {
		return 0
	}
	b := max(blockSize, 1)
	return int(hits/float64(n)) / b * b
}

// campaignObservations is observations without the prefix-cache check.
func campaignObservations(ev *evidence.Evidence, m evidence.ModelEvidence, c evidence.Campaign, snap *state.Snapshot, pl *planner.Lane) ([]perf.Observation, *group, string) {
	lane, gr, why := calibrationLane(ev, m, c, snap, pl)
	if why != "" {
		return nil, nil, why
	}
	scale, why := speedupScale(ev)
	if why != "" {
		return nil, nil, why
	}
	w := c.Workload
	load, why2 := evidenceLoad(w, ev.Environment.RandomSeed)
	if why2 != "" && (snap == nil || pl == nil) {
		return nil, nil, why2
	}
	load = scaleLoad(load, scale)
	name := m.Model + " " + c.Profile + " " + c.GPU
	if c.Runtime != "" {
		name += " " + c.Runtime
	}
	if snap == nil {
		meas := scaled(metricsOf(c.Aggregate.Latencies, c.Aggregate.OutputTokenThroughput), scale)
		if len(meas) == 0 {
			return nil, nil, "the aggregate has no latency or throughput figures"
		}
		load.CachedTokens = min(cachedPerRequest(c, 0, lane.Engine.BlockSize), load.InputTokens-1)
		return []perf.Observation{{Name: name, Lane: lane, Load: load, Runs: max(len(c.Runs), 1), Measured: meas}}, gr, ""
	}
	obs, why := runObservations(ev, c, snap, pl, lane, load, scale, name)
	if why != "" {
		return nil, nil, why
	}
	return obs, gr, ""
}

// calibrationLane is the performance model of a campaign's lane as the
// fit starts from: the applied plan's when there is one (pl), else the
// catalog's model and GPU with the evidence's runtime; and the fit group it
// belongs to. why says why the campaign cannot be calibrated from.
func calibrationLane(ev *evidence.Evidence, m evidence.ModelEvidence, c evidence.Campaign, snap *state.Snapshot, pl *planner.Lane) (perf.Lane, *group, string) {
	var planned *perf.Lane
	if pl != nil {
		planned = pl.Perf
	}
	arch, ok := perf.LookupModel(m.Model)
	if planned != nil {
		arch, ok = planned.Model, true
	}
	if !ok {
		return perf.Lane{}, nil, fmt.Sprintf("model %q is not in the model catalog (%s); with -state the applied plan's architecture is used", m.Model, strings.Join(perf.ModelIDs(), ", "))
	}
	gpuType, count := c.GPUType, 1
	if len(ev.Environment.GPURequest) > 0 {
		t, n := parseGPURequest(ev.Environment.GPURequest[0])
		if gpuType == "" {
			gpuType = t
		}
		if strings.EqualFold(t, gpuType) {
			count = n
		}
	}
	g, ok := perf.LookupGPU(gpuType)
	if !ok {
		return perf.Lane{}, nil, fmt.Sprintf("GPU %q is not in the catalog", gpuType)
	}
	if c.RequestMix != nil && (snap == nil || pl == nil) {
		return perf.Lane{}, nil, "a lane with drawn lengths, prefixes or sessions is used only with -state: the applied plan has the sizes the load generator drew, the evidence alone does not"
	}
	if c.Capacity != nil || (pl != nil && pl.Inputs.Search != nil) {
		return perf.Lane{}, nil, "a capacity search's runs are points at loads of their own (its workload's concurrency and request rate are placeholders), which calibrate does not model; calibrate from lanes of a fixed load"
	}
	w := c.Workload
	if w.InputTokens < 1 || w.OutputTokens < 1 || (w.Concurrency < 1 && w.RequestRate <= 0) {
		return perf.Lane{}, nil, "the workload gives no token counts or load"
	}
	rt := ev.CampaignRuntime(&c)
	maxLen := maxModelLen(rt.Args)
	if maxLen == 0 {
		maxLen = w.InputTokens + w.OutputTokens + w.TemplateHeadroom
	}
	// The version's settings, front end and precision, as the plan models
	// them; the fit starts from its overheads. A planned lane's engine and
	// precision are the plan's.
	hw, rs, err := perf.CatalogServer(m.Model, g, count,
		engine.Runtime{RuntimeEngine: rt.Engine, RuntimeVersion: rt.Version, RuntimeArgs: rt.Args, RuntimeDtype: rt.Dtype}, "chat", maxLen)
	if err != nil {
		return perf.Lane{}, nil, err.Error()
	}
	engine := rs.Engine()
	if planned != nil {
		engine, hw.Precision = planned.Engine, planned.Hardware.Precision
	}
	lane, err := perf.NewLane(arch, hw, engine, min(maxLen, w.InputTokens+w.OutputTokens+w.TemplateHeadroom))
	if err != nil {
		return perf.Lane{}, nil, err.Error()
	}
	gr := &group{gpuType: g.Name, engine: rt.Engine, version: rt.Version, start: perf.ParamsOf(hw.Assume)}
	return lane, gr, ""
}

// speedupScale is the speedup S of a simulated engine whose evidence this
// is (1 for a real one): its time runs S times faster than the load
// generator's, so its figures are scaled back to engine time (times x S,
// throughputs / S) and an open loop's rate is divided by S.
func speedupScale(ev *evidence.Evidence) (float64, string) {
	scale := 1.0
	if s := ev.Environment.ServerInfo["speedup"]; s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			return 0, fmt.Sprintf("server_info speedup %q is not one number (lanes of several speedups?); calibrate from one speedup at a time", s)
		}
		scale = v
	}
	return scale, ""
}

// runObservations are the observations of each completed run of a
// campaign's lane in the state, with the load each run sent.
func runObservations(ev *evidence.Evidence, c evidence.Campaign, snap *state.Snapshot, pl *planner.Lane, lane perf.Lane, load perf.Load, scale float64, name string) ([]perf.Observation, string) {
	rec := snap.Lanes[c.Lane]
	if rec == nil || len(rec.Results) == 0 {
		return nil, fmt.Sprintf("lane %s has no completed runs in the state", c.Lane)
	}
	var obs []perf.Observation
	for _, rr := range rec.Results {
		recs, err := readRecords(rr.RecordsPath)
		if err != nil {
			return nil, fmt.Sprintf("run %d: %v", rr.Run, err)
		}
		s := loadgen.Compute(recs, loadgen.SLO{})
		meas := scaled(summaryMetrics(s), scale)
		if len(meas) == 0 {
			continue
		}
		l := load
		l.Seed = ev.Environment.RandomSeed + int64(rr.Run-1)
		if pl != nil {
			// The load the estimator simulates for this run (its seed's
			// draws, sessions, arrival curve), as the load generator sent it.
			l = plannedLoad(pl, rr.Run, scale)
		}
		if c.RequestMix == nil {
			l.Sizes, l.WarmupSizes = recordSizes(recs)
			if cached := cachedPerRequest(c, rr.Run, lane.Engine.BlockSize); cached > 0 && !anyCached(l.Sizes) {
				for j := range l.Sizes {
					l.Sizes[j].Cached = min(cached, l.Sizes[j].Input-1)
				}
			}
		}
		obs = append(obs, perf.Observation{Name: fmt.Sprintf("%s run %d", name, rr.Run), Lane: lane, Load: l, Runs: 1, Measured: meas})
	}
	if len(obs) == 0 {
		return nil, "no run has a succeeded request"
	}
	return obs, ""
}

// plannedLoad is the load of run run of an applied lane as the estimator
// simulates it (planner.Lane.PerfLoad with the run's seed), scaled to a
// simulated engine's time (scaleLoad).
func plannedLoad(pl *planner.Lane, run int, scale float64) perf.Load {
	cp := *pl
	cp.Inputs.Seed += int64(run - 1)
	return scaleLoad(cp.PerfLoad(), scale)
}

// evidenceLoad rebuilds the load of a campaign's first run from its
// evidence alone, as the planner builds a lane's (planner.Lane.PerfLoad of
// the same inputs): the shape's fixed sizes, the closed loop's concurrency
// or the open loop's arrival process in full (kind, burstiness, arrival
// curve), requests and warmup, seeded with the screen's seed. why says
// why it cannot: an open loop of evidence written before the evidence
// recorded its arrival process, whose burstiness or arrival curve is not
// known.
func evidenceLoad(w evidence.Workload, seed int64) (perf.Load, string) {
	in := planner.LaneInputs{Settings: w.Settings(), Seed: seed}
	why := ""
	if w.ArrivalProcess == nil && w.RequestRate > 0 {
		why = "an open-loop lane whose evidence does not record its arrival process (written before workload.arrival_process: its burstiness and arrival curve are unknown) cannot be rebuilt from the aggregates; calibrate with -state STATE_DIR, or write the evidence again with 'infercrane report STATE_DIR'"
	}
	return (&planner.Lane{Inputs: in}).PerfLoad(), why
}

// scaleLoad converts a load to a simulated engine's time at speedup s (1:
// a real engine): the engine runs s times faster than the load generator,
// so an open loop's rate is divided by s and each step of its arrival
// curve lasts s times as long.
func scaleLoad(l perf.Load, s float64) perf.Load {
	l.RequestRate /= s
	l.CurveStepSeconds *= s
	return l
}

// anyCached reports whether the records said a request's prompt was
// partly cached (the server reports it per request).
func anyCached(sizes []perf.RequestSize) bool {
	for _, z := range sizes {
		if z.Cached > 0 {
			return true
		}
	}
	return false
}

// recordSizes are the sizes the server saw, in send order, of a run's
// measured and warm-up requests: prompt tokens as the server counted them
// (the requested length when it did not say), output tokens, and the
// prompt tokens it reported serving from its prefix cache. The model then
// simulates the run that happened, not the shape's nominal sizes (a
// prompt sized off target, a cached prefix).
func recordSizes(recs []loadgen.Record) (measured, warmup []perf.RequestSize) {
	sorted := append([]loadgen.Record{}, recs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	for _, r := range sorted {
		in := r.PromptTokens
		if in < 1 {
			in = r.InputTokens
		}
		if in < 1 || r.OutputTokens < 1 {
			continue
		}
		z := perf.RequestSize{Input: in, Output: r.OutputTokens}
		if r.CachedTokens != nil {
			z.Cached = min(*r.CachedTokens, in-1)
		}
		if r.Warmup {
			warmup = append(warmup, z)
		} else {
			measured = append(measured, z)
		}
	}
	return measured, warmup
}

func readRecords(path string) ([]loadgen.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return loadgen.ReadRecords(f)
}

// parseGPURequest reads "L40S x2" (or "L40S").
func parseGPURequest(s string) (string, int) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return "", 1
	}
	n := 1
	if len(f) > 1 {
		if v, err := strconv.Atoi(strings.TrimPrefix(f[1], "x")); err == nil && v > 0 {
			n = v
		}
	}
	return f[0], n
}

// maxModelLen is --max-model-len in runtime args, or 0.
func maxModelLen(args []string) int {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--max-model-len=")
		if a == "--max-model-len" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if n, err := strconv.Atoi(v); ok && err == nil {
			return n
		}
	}
	return 0
}

func put(m map[string]float64, name string, v *float64) {
	if v != nil && *v > 0 {
		m[name] = *v
	}
}

// metricsOf names an aggregate's figures as planner.FitMetrics does.
func metricsOf(l evidence.Latencies, outTput float64) map[string]float64 {
	m := map[string]float64{}
	put(m, "ttft_p50_ms", l.TTFTP50Ms)
	put(m, "ttft_p95_ms", l.TTFTP95Ms)
	put(m, "ttft_p99_ms", l.TTFTP99Ms)
	put(m, "tpot_p50_ms", l.TPOTP50Ms)
	put(m, "tpot_p95_ms", l.TPOTP95Ms)
	put(m, "itl_p50_ms", l.ITLP50Ms)
	put(m, "latency_p50_ms", l.LatencyP50Ms)
	put(m, "latency_p95_ms", l.LatencyP95Ms)
	if outTput > 0 {
		m["output_token_throughput"] = outTput
	}
	return m
}

// summaryMetrics names a run summary's figures as planner.FitMetrics does.
func summaryMetrics(s loadgen.Summary) map[string]float64 {
	m := map[string]float64{}
	if s.Succeeded == 0 {
		return m
	}
	d := func(name string, v float64, n int) {
		if n > 0 && v > 0 {
			m[name] = v
		}
	}
	d("ttft_p50_ms", s.TTFTMs.P50, s.TTFTMs.Count)
	d("ttft_p95_ms", s.TTFTMs.P95, s.TTFTMs.Count)
	d("ttft_p99_ms", s.TTFTMs.P99, s.TTFTMs.Count)
	d("tpot_p50_ms", s.TPOTMs.P50, s.TPOTMs.Count)
	d("tpot_p95_ms", s.TPOTMs.P95, s.TPOTMs.Count)
	d("itl_p50_ms", s.ITLMs.P50, s.ITLMs.Count)
	d("latency_p50_ms", s.LatencyMs.P50, s.LatencyMs.Count)
	d("latency_p95_ms", s.LatencyMs.P95, s.LatencyMs.Count)
	d("output_token_throughput", s.OutputTokenThroughput, s.Succeeded)
	return m
}

// scaled converts a simulated engine's figures at speedup s to engine time.
func scaled(m map[string]float64, s float64) map[string]float64 {
	for k, v := range m {
		if strings.HasSuffix(k, "_ms") {
			m[k] = v * s
		} else {
			m[k] = v / s
		}
	}
	return m
}

// Write writes the calibration file as indented JSON.
func Write(path string, c *perf.Calibration) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
