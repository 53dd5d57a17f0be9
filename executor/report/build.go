package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/search"
	"github.com/infercrane/infercrane/planner/state"
)

// LoadgenName names the load generator in the evidence environment.
const LoadgenName = "infercrane-loadgen"

// Input is everything BuildEvidence needs; it reads no files.
type Input struct {
	Plan *planner.Plan
	// Runs holds each lane's completed runs in run order, keyed by lane ID.
	Runs map[string][]RunData
	// Gates are the gate blocks by name; a screen's gates are named in its plan.
	Gates map[string]*GateSpec
	// WorkloadProfileDigest and WorkloadSource describe the trace profile
	// the shapes came from, when one did.
	WorkloadProfileDigest string
	WorkloadSource        map[string]string
	// Corrections are changes the planner made to the spec's shapes (clipping).
	Corrections []string
	// Cleanup are the runner's teardown facts; nil records them as unknown.
	Cleanup *evidence.Cleanup
	// ObservedAt stamps the evidence; zero takes the last run's finish time.
	ObservedAt time.Time
	// InfercraneVersion is the binary's version (also the load generator's).
	InfercraneVersion string
	// Resamples is the bootstrap size (0: DefaultResamples).
	Resamples int
	// Secrets are values (API keys, tokens) that must not appear in the
	// evidence; any occurrence, in any spelling derived from it, is replaced by
	// redact.Marker before digesting.
	Secrets []string
}

// RunData is one completed run of a lane.
type RunData struct {
	Run int
	// Summary is the run's summary as recorded; nil computes it from Records.
	Summary *loadgen.Summary
	// Records are the run's per-request records.
	Records       []loadgen.Record
	RecordsFile   string
	RecordsSHA256 string
	Server        map[string]string
	// ServerMetrics are the server's Prometheus samples scraped during the run.
	ServerMetrics map[string]float64
	// ServerView is the server's latency histograms over the measured
	// requests (nil when the server has none).
	ServerView *loadgen.ServerView
	// ServerSeries samples the server's gauges over the run (HTML only).
	ServerSeries []loadgen.MetricSample
	// GPUSeconds is the GPU time the run was measured to use (0: unknown).
	GPUSeconds float64
	// SearchLoad is the load of a capacity search's point (0: not a point).
	SearchLoad float64
	StartedAt  string
	FinishedAt string
}

// laneSLO is the loadgen form of a lane's objectives.
func laneSLO(in *planner.LaneInputs) loadgen.SLO {
	return loadgen.SLO{TTFTMs: in.SLOTTFTMs, TPOTMs: in.SLOTPOTMs, LatencyMs: in.SLOLatencyMs}
}

// BuildEvidence computes one evidence document per screen of the plan, in
// plan order, each with its digest set.
func BuildEvidence(in Input) ([]*evidence.Evidence, error) {
	if in.Plan == nil {
		return nil, fmt.Errorf("no applied plan to report on: %w", state.ErrNoState)
	}
	var out []*evidence.Evidence
	for _, sc := range in.Plan.Screens {
		ev, err := buildScreen(&in, sc)
		if err != nil {
			return nil, fmt.Errorf("screen %s: %w", sc.Name, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// screenLanes returns the plan's live lanes of a screen in plan order.
func screenLanes(p *planner.Plan, screen string) []*planner.Lane {
	var lanes []*planner.Lane
	for _, l := range p.Lanes {
		if l.Screen == screen && l.Action != planner.ActionDrop {
			lanes = append(lanes, l)
		}
	}
	return lanes
}

func buildScreen(in *Input, sc *planner.Screen) (*evidence.Evidence, error) {
	resamples := in.Resamples
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	lanes := screenLanes(in.Plan, sc.Name)
	ev := &evidence.Evidence{
		SchemaVersion:         evidence.SchemaVersion,
		InfercraneVersion:     in.InfercraneVersion,
		Screen:                sc.Name,
		SpecDigest:            in.Plan.SpecDigest,
		PlanDigest:            in.Plan.PlanDigest,
		WorkloadProfileDigest: in.WorkloadProfileDigest,
		WorkloadSource:        in.WorkloadSource,
		Models:                []evidence.ModelEvidence{},
		Comparisons:           []evidence.Comparison{},
		SelectionBoundary:     strings.TrimSpace(strings.TrimSpace(sc.SelectionBoundary) + " " + evidence.NeverPromotes),
	}
	figures := map[string][]runFigures{}
	byModel := map[string]int{}
	var lastFinish string
	for _, l := range lanes {
		c, figs, finish := buildCampaign(in, sc, l, resamples)
		figures[l.ID] = figs
		if finish > lastFinish {
			lastFinish = finish
		}
		i, ok := byModel[l.Model]
		if !ok {
			i = len(ev.Models)
			byModel[l.Model] = i
			ev.Models = append(ev.Models, evidence.ModelEvidence{Name: l.Model, Model: l.Inputs.ModelID, Revision: l.Inputs.Revision})
		}
		ev.Models[i].Campaigns = append(ev.Models[i].Campaigns, c)
	}
	ev.Comparisons = compare(sc, lanes, figures, resamples)
	campaigns := map[string]*evidence.Campaign{}
	for i := range ev.Models {
		for j := range ev.Models[i].Campaigns {
			c := &ev.Models[i].Campaigns[j]
			campaigns[c.Lane] = c
		}
	}
	ev.RuntimeComparisons = compareRuntimes(sc, lanes, figures, campaigns, resamples)
	ev.Completeness = completeness(ev.Models)
	ev.GateSummary = summarize(ev.Models, ev.Completeness)
	ev.Pareto = paretoSets(ev.Models)
	ev.Environment = environment(in, sc, lanes)
	ev.EvidenceClass = evidenceClass(lanes)
	ev.Preflight = preflight(in, sc.Name, lanes)
	ev.Cleanup = evidence.Cleanup{State: "unknown", DeploymentsTornDown: []string{}, ActiveGPUTasks: -1}
	if in.Cleanup != nil {
		ev.Cleanup = *in.Cleanup
		if ev.Cleanup.DeploymentsTornDown == nil {
			ev.Cleanup.DeploymentsTornDown = []string{}
		}
	}
	switch {
	case !in.ObservedAt.IsZero():
		ev.ObservedAt = in.ObservedAt.UTC().Format(time.RFC3339)
	default:
		ev.ObservedAt = lastFinish
		if t, err := time.Parse(time.RFC3339Nano, lastFinish); err == nil {
			ev.ObservedAt = t.UTC().Format(time.RFC3339)
		}
	}
	red := redact.New(in.Secrets...)
	pq, err := encodeParquet(screenRecords(in, ev), red)
	if err != nil {
		return nil, fmt.Errorf("encode the Parquet records: %w", err)
	}
	ev.Parquet = pq
	ev.Files = evidenceFiles(ev, pq)
	return seal(ev, red)
}

// completeness counts the planned and completed runs of a screen's campaigns.
func completeness(models []evidence.ModelEvidence) evidence.Completeness {
	c := evidence.Completeness{Complete: true, IncompleteLanes: []string{}}
	for _, m := range models {
		for _, camp := range m.Campaigns {
			c.RunsPlanned += camp.RunsPlanned
			c.RunsCompleted += min(len(camp.Runs), camp.RunsPlanned)
			if !camp.Complete {
				c.Complete = false
				c.IncompleteLanes = append(c.IncompleteLanes, camp.Lane)
			}
		}
	}
	c.RunsMissing = c.RunsPlanned - c.RunsCompleted
	return c
}

// evidenceFiles lists the files the evidence vouches for: the Parquet
// records beside it, then every run's JSONL records in the state.
func evidenceFiles(ev *evidence.Evidence, parquet []byte) []evidence.FileDigest {
	sum := sha256.Sum256(parquet)
	files := []evidence.FileDigest{{Path: FileName(ev.Screen, FormatParquet), Base: evidence.BaseReport, Kind: evidence.KindRecordsParquet, SHA256: hex.EncodeToString(sum[:])}}
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			for _, r := range c.Runs {
				files = append(files, evidence.FileDigest{Path: r.RecordsFile, Base: evidence.BaseState, Kind: evidence.KindRecordsJSONL, SHA256: r.RecordsSHA256})
			}
		}
	}
	return files
}

// promptsOf says where a lane's prompts come from (executor.RunSpecFor:
// run n has the lane's seed + n - 1, salted with the lane's id) and
// whether any of its runs repeats the prompt seed of another run, of it or
// of another lane of the screen; recorded runs beyond the plan's (a
// search's points) count too.
func promptsOf(plan *planner.Plan, sc *planner.Screen, l *planner.Lane, recorded int) *evidence.Prompts {
	seeds := func(x *planner.Lane, n int) []int64 {
		out := make([]int64, 0, n)
		for r := 1; r <= n; r++ {
			out = append(out, loadgen.PromptSeed(executor.RunSpecFor(x, r).Load))
		}
		return out
	}
	mine := seeds(l, max(l.Runs, recorded))
	p := &evidence.Prompts{Source: fmt.Sprintf("run n sends the prompts of seed %d + n - 1 salted with the lane's id %s (the load generator draws request i's prompt from that prompt seed and i alone)", l.Inputs.Seed, l.ID)}
	seen := map[int64]bool{}
	for _, s := range mine {
		p.RepeatAcrossRuns = p.RepeatAcrossRuns || seen[s]
		seen[s] = true
	}
	for _, o := range plan.Lanes {
		if o.ID == l.ID || o.Screen != sc.Name {
			continue
		}
		for _, s := range seeds(o, o.Runs) {
			p.RepeatAcrossLanes = p.RepeatAcrossLanes || seen[s]
		}
	}
	return p
}

// buildCampaign computes one lane's campaign and returns its run figures
// and its last run's finish time.
func buildCampaign(in *Input, sc *planner.Screen, l *planner.Lane, resamples int) (evidence.Campaign, []runFigures, string) {
	li := &l.Inputs
	slo := laneSLO(li)
	withSLO := slo != (loadgen.SLO{})
	c := evidence.Campaign{
		Profile: l.Shape, Lane: l.ID, GPU: l.GPU, GPUType: li.GPUType,
		Runtime:    severalRuntimes(sc, l),
		Workload:   evidence.WorkloadOf(li.Settings),
		Runs:       []evidence.RunEvidence{},
		Gates:      []evidence.GateResult{},
		GPUSeconds: evidence.GPUSeconds{Estimated: l.Estimate.GPUSeconds},
	}
	c.Workload.SLOTTFTMs, c.Workload.SLOTPOTMs, c.Workload.SLOLatencyMs = optional(li.SLOTTFTMs), optional(li.SLOTPOTMs), optional(li.SLOLatencyMs)
	c.Workload.Prompts = promptsOf(in.Plan, sc, l, len(in.Runs[l.ID]))
	runs := append([]RunData(nil), in.Runs[l.ID]...)
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].Run < runs[b].Run })
	var figs []runFigures
	var records [][]loadgen.Record
	var points []pointRun
	var finish string
	for i := range runs {
		r := &runs[i]
		s := r.Summary
		if s == nil {
			computed := loadgen.Compute(r.Records, slo)
			s = &computed
		}
		figs = append(figs, newRunFigures(s, withSLO))
		records = append(records, r.Records)
		c.Runs = append(c.Runs, evidence.RunEvidence{
			Run: r.Run, Metrics: runMetrics(s, withSLO), RecordsFile: r.RecordsFile, RecordsSHA256: r.RecordsSHA256,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, ServerMetrics: r.ServerMetrics, GPUSeconds: r.GPUSeconds,
			WarmupRequests: warmupCount(r.Records),
			ServerView:     r.ServerView,
		})
		c.GPUSeconds.Measured += r.GPUSeconds
		if r.FinishedAt > finish {
			finish = r.FinishedAt
		}
		points = append(points, pointRun{run: r.Run, load: r.SearchLoad, sum: s})
	}
	c.ClientVsServer = reconcileRuns(c.Runs, figs, l.Inputs.Search != nil)
	if l.Inputs.Search != nil {
		// A search's points ran at different loads: the lane's aggregate
		// is its point at capacity (all points when none met the SLOs).
		var at int
		c.Capacity, at = buildCapacity(in.Plan, l, points)
		if at >= 0 {
			figs, records = figs[at:at+1], records[at:at+1]
		}
	}
	c.RunsPlanned = l.Runs
	c.Complete = completedRuns(runs, l.Runs) >= l.Runs
	if c.Capacity != nil {
		// A search plans up to max_points and is complete once its points
		// decide it.
		c.RunsPlanned = len(runs)
		c.Complete = c.Capacity.Status != string(search.StatusRunning)
		if !c.Complete {
			c.RunsPlanned = len(runs) + 1
		}
	}
	c.Aggregate = aggregate(figs, withSLO)
	c.Price = lanePrice(in.Plan, l, c.Aggregate.OutputTokenThroughput)
	c.Pooled = pooledLatencies(records, slo)
	c.RequestMix = requestMix(l, runs)
	c.Prediction = prediction(l, &c.Aggregate, c.Runs)
	c.CoefficientOfVariation = coefficientOfVariation(figs, withSLO)
	ciMetrics := append([]string{}, throughputMetrics...)
	if !withSLO {
		ciMetrics = ciMetrics[:len(ciMetrics)-1] // goodput
	}
	ciMetrics = append(ciMetrics, percentileMetrics...)
	c.ConfidenceIntervals = laneIntervals(figs, ciMetrics, sc.Seed, l.ID, resamples)
	for _, name := range sc.Gates {
		g := in.Gates[name]
		if g == nil {
			c.Gates = append(c.Gates, evidence.GateResult{Gate: name, Status: evidence.StatusInconclusive,
				Reason: "the gate's definition is not available to the report (pass the spec, or re-apply to save it in the state)"})
			continue
		}
		c.Gates = append(c.Gates, evaluateGate(g, &c))
	}
	return c, figs, finish
}

// completedRuns counts the distinct runs 1..planned among runs.
func completedRuns(runs []RunData, planned int) int {
	seen := map[int]bool{}
	for _, r := range runs {
		if r.Run >= 1 && r.Run <= planned {
			seen[r.Run] = true
		}
	}
	return len(seen)
}

func optional(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return ptr(v)
}

// environment collects the facts of where and how the screen ran.
func environment(in *Input, sc *planner.Screen, lanes []*planner.Lane) evidence.Environment {
	env := evidence.Environment{
		Executor: []string{}, GPURequest: []string{}, GPU: []string{},
		Benchmark:   evidence.Benchmark{Name: LoadgenName, Version: in.InfercraneVersion},
		ProfileRuns: sc.Runs, RandomSeed: sc.Seed, Streaming: len(lanes) > 0,
		Runtime: evidence.Runtime{Args: []string{}},
	}
	add := func(list *[]string, v string) {
		if v != "" && !contains(*list, v) {
			*list = append(*list, v)
		}
	}
	info := map[string][]string{}
	runtimes := map[string]evidence.Runtime{}
	for _, l := range lanes {
		li := &l.Inputs
		add(&env.Executor, li.ExecutorType)
		add(&env.GPURequest, fmt.Sprintf("%s x%d", li.GPUType, max(li.GPUCount, 1)))
		rt := evidence.Runtime{Engine: li.RuntimeEngine, Version: li.RuntimeVersion, Dtype: li.RuntimeDtype, Args: append([]string{}, li.RuntimeArgs...)}
		if env.Runtime.Engine == "" && (len(sc.Runtimes) < 2 || l.Runtime == sc.Runtimes[0]) {
			env.Runtime = rt
		}
		if len(sc.Runtimes) > 1 {
			runtimes[l.Runtime] = rt
		}
		env.Streaming = env.Streaming && li.Streaming
		sawGPU := false
		for _, r := range in.Runs[l.ID] {
			for _, k := range sortedKeys(r.Server) {
				if k == "gpu" {
					add(&env.GPU, r.Server[k])
					sawGPU = true
				}
				if !contains(info[k], r.Server[k]) {
					info[k] = append(info[k], r.Server[k])
				}
			}
		}
		if !sawGPU {
			add(&env.GPU, li.GPUType)
		}
	}
	if len(info) > 0 {
		env.ServerInfo = map[string]string{}
		for k, vs := range info {
			env.ServerInfo[k] = strings.Join(vs, ", ")
		}
	}
	sort.Strings(env.Executor)
	for _, name := range sc.Runtimes {
		if rt, ok := runtimes[name]; ok {
			rt.Name = name
			env.Runtimes = append(env.Runtimes, rt)
		}
	}
	if env.Runtime.Engine == "" && len(env.Runtimes) > 0 {
		env.Runtime = env.Runtimes[0]
		env.Runtime.Name = ""
	}
	return env
}

// severalRuntimes is the lane's runtime block when its screen compares
// several runtimes, else "" (the evidence then names none per campaign).
func severalRuntimes(sc *planner.Screen, l *planner.Lane) string {
	if len(sc.Runtimes) > 1 {
		return l.Runtime
	}
	return ""
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// preflight keeps the plan's findings that concern the screen: its lanes,
// the screen itself, and spec-wide ones.
func preflight(in *Input, screen string, lanes []*planner.Lane) evidence.Preflight {
	ids := map[string]bool{}
	for _, l := range lanes {
		ids[l.ID] = true
	}
	p := evidence.Preflight{Findings: []evidence.Finding{}, Corrections: append([]string{}, in.Corrections...)}
	for _, f := range in.Plan.Preflight {
		if (f.Lane == "" && (f.Screen == "" || f.Screen == screen)) || ids[f.Lane] {
			p.Findings = append(p.Findings, evidence.Finding{Severity: string(f.Severity), Lane: f.Lane, Summary: f.Summary, Detail: f.Detail})
		}
	}
	return p
}

// seal redacts secrets from the document and sets its digest.
func seal(ev *evidence.Evidence, red *redact.Set) (*evidence.Evidence, error) {
	if !red.Empty() {
		ev.Digest = ""
		raw, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		raw = red.Bytes(raw)
		var clean evidence.Evidence
		if err := json.Unmarshal(raw, &clean); err != nil {
			return nil, fmt.Errorf("redacting secrets: %w", err)
		}
		clean.Parquet = ev.Parquet // encoded from redacted records already
		ev = &clean
	}
	ev.Digest = ""
	d, err := evidence.Digest(ev)
	if err != nil {
		return nil, err
	}
	ev.Digest = d
	return ev, nil
}

// warmupCount is the number of warmup records of a run.
func warmupCount(recs []loadgen.Record) int {
	n := 0
	for i := range recs {
		if recs[i].Warmup {
			n++
		}
	}
	return n
}

// lanePrice is what lane l's output costs at tokensPerSecond on its GPUs at
// the plan's price (notional on an executor that bills nothing); nil
// without a price or without output.
func lanePrice(p *planner.Plan, l *planner.Lane, tokensPerSecond float64) *evidence.Price {
	if p == nil || tokensPerSecond <= 0 {
		return nil
	}
	for _, a := range p.Assumptions {
		if a.GPU == l.GPU && a.PricePerSecond > 0 {
			n := max(l.Inputs.GPUCount, 1)
			return &evidence.Price{PerSecond: a.PricePerSecond, GPUCount: n, USDPerMTok: a.PricePerSecond * float64(n) / tokensPerSecond * 1e6,
				Notional: !planner.Billed(l.Inputs)}
		}
	}
	return nil
}

// priceWords renders a lane's price per million output tokens, marked
// when notional ("$0.5891*"); "-" without one.
func priceWords(pr *evidence.Price) string {
	if pr == nil {
		return "-"
	}
	s := fmt.Sprintf("$%.4f", pr.USDPerMTok)
	if pr.Notional {
		s += "*"
	}
	return s
}

// notionalNote explains the mark of priceWords when a lane of ev carries it.
func notionalNote(ev *evidence.Evidence) string {
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			if c.Price != nil && c.Price.Notional {
				return "* notional: the simulated engine bills nothing; this is what the lane's measured throughput would cost on its GPU at the plan's price."
			}
		}
	}
	return ""
}

// evidenceClass is "simulated-screen" when every lane of the screen ran on
// a simulated executor (lang.Capabilities.Simulated), and
// "measured-screen" otherwise.
func evidenceClass(lanes []*planner.Lane) string {
	if len(lanes) == 0 {
		return "measured-screen"
	}
	for _, l := range lanes {
		if !l.Inputs.Capabilities.Simulated {
			return "measured-screen"
		}
	}
	return "simulated-screen"
}
