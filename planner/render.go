package planner

import (
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/infercrane/infercrane/planner/perf"
)

// SummaryLine is the first line of a human-readable plan, e.g.
// "Plan: 4 lanes to run (8 runs, 256 requests), 0 unchanged. Estimated 0.42
// GPU-hours, $0.82."
func SummaryLine(p *Plan) string {
	t := p.Totals
	s := fmt.Sprintf("Plan: %s to run (%s), %d unchanged", plural(t.LanesToRun, "lane"), t.RunsText(), t.Unchanged)
	if t.Dropped > 0 {
		s += fmt.Sprintf(", %d to drop", t.Dropped)
	}
	if p.HasReportChanges() {
		s += ", reports to re-evaluate"
	}
	s += fmt.Sprintf(". Estimated %s, %s", fmtGPUHours(t.GPUSeconds), fmtUSD(t.CostUSD))
	if t.WithoutEstimate > 0 {
		s += fmt.Sprintf(" (%d of %d lanes to run have no estimate yet)", t.WithoutEstimate, t.LanesToRun)
	}
	return s + "."
}

// RunsText says how many runs and requests the totals expect: "8 runs,
// 1,600 requests", or with capacity searches "expected 3 runs, 600
// requests; at most 8 runs, 1,600 requests".
func (t Totals) RunsText() string {
	s := plural(t.Runs, "run") + ", " + plural(t.Requests, "request")
	if t.RunsAtMost > t.Runs {
		s = fmt.Sprintf("expected %s; at most %s, %s", s, plural(t.RunsAtMost, "run"), plural(t.RequestsAtMost, "request"))
	}
	return s
}

// WriteText renders p for a reviewer: the summary line, a table per
// screen, the preflight findings and the estimator's assumptions.
func WriteText(w io.Writer, p *Plan) error { return WriteTextOpts(w, p, TextOptions{}) }

// TextOptions are choices of the plan's text form.
type TextOptions struct {
	// Verbose prints the paragraph on how the estimates are made (the
	// model, its ranges, what GPU-seconds cover); without it one line
	// points to it.
	Verbose bool
}

// WriteTextOpts is WriteText with options.
func WriteTextOpts(w io.Writer, p *Plan, o TextOptions) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n", SummaryLine(p))
	inSpec := map[string]bool{}
	for _, s := range p.Screens {
		inSpec[s.Name] = true
		writeScreen(ew, p, s)
	}
	writeGoneScreens(ew, p, inSpec)
	writeReportChanges(ew, p)
	writeExecutorSettings(ew, p)
	writeFindings(ew, p.Preflight)
	writeAssumptions(ew, p, o.Verbose)
	writeDeployments(ew, p)
	if o.Verbose {
		writeTTFTParts(ew, p)
	}
	switch n := countSeverity(p.Preflight, SeverityError); {
	case n == 1:
		ew.printf("\n1 preflight error blocks this plan: fix it, then plan again.\n")
	case n > 1:
		ew.printf("\n%d preflight errors block this plan: fix them, then plan again.\n", n)
	}
	return ew.err
}

// writeReportChanges lists what changes the reports without a lane
// running (Plan.ReportChanges).
func writeReportChanges(ew *errWriter, p *Plan) {
	if !p.HasReportChanges() {
		return
	}
	ew.printf("\nReports to re-evaluate (apply makes them again from the runs in the state; no lane runs for this):\n")
	for _, c := range p.ReportChanges {
		ew.printf("  ~ %s\n", c)
	}
}

func writeScreen(ew *errWriter, p *Plan, s *Screen) {
	t := s.Totals
	ew.printf("\nScreen %q: %s to run, %d unchanged", s.Name, plural(t.LanesToRun, "lane"), t.Unchanged)
	if t.Dropped > 0 {
		ew.printf(", %d to drop", t.Dropped)
	}
	if n := maxPoints(p, s.Name); n > 0 {
		ew.printf(". A capacity search per lane: the points it needs, at most %d; seed %d", n, s.Seed)
	} else {
		ew.printf(". %s per lane, seed %d", plural(s.Runs, "run"), s.Seed)
	}
	if s.Baseline != "" {
		ew.printf(", baseline %s", s.Baseline)
	}
	ew.printf(".\n")
	writeLaneTable(ew, p, s.Name, t)
}

// maxPoints is the largest max_points of the capacity searches of
// screen's lanes (0 when none searches).
func maxPoints(p *Plan, screen string) int {
	n := 0
	for _, l := range p.Lanes {
		if l.Screen == screen && l.Search != nil {
			n = max(n, l.Runs)
		}
	}
	return n
}

// writeGoneScreens lists the drop lanes of screens no longer in the spec.
func writeGoneScreens(ew *errWriter, p *Plan, inSpec map[string]bool) {
	gone := map[string]int{}
	for _, l := range p.Lanes {
		if !inSpec[l.Screen] {
			gone[l.Screen]++
		}
	}
	for _, name := range sortedKeys(gone) {
		ew.printf("\nScreen %q is no longer in the spec: %s to drop.\n", name, plural(gone[name], "lane"))
		writeLaneTable(ew, p, name, Totals{})
	}
}

// writeLaneTable renders the lanes of one screen with their notes.
func writeLaneTable(ew *errWriter, p *Plan, screen string, t Totals) {
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	// A screen comparing runtimes shows each lane's; one with a single
	// runtime keeps the table it always had.
	runtimes := map[string]bool{}
	for _, l := range p.Lanes {
		if l.Screen == screen {
			runtimes[l.Runtime] = true
		}
	}
	rtHead, rtTotal := "", ""
	if len(runtimes) > 1 {
		rtHead, rtTotal = "\tRUNTIME", "\t"
	}
	fmt.Fprintln(tw, "  ACTION\tLANE\tMODEL\tSHAPE\tGPU"+rtHead+"\tRUNS\tTTFT P95\tTPOT\tOUT TOK/S\tASSUMPTIONS\tGPU-S\tCOST")
	var notes []string
	notional := false
	for _, l := range p.Lanes {
		if l.Screen != screen {
			continue
		}
		runs := fmt.Sprint(l.RunsToDo())
		if l.RunsDone > 0 && l.Action != ActionDrop {
			runs = fmt.Sprintf("%d (%d done)", l.RunsToDo(), l.RunsDone)
		}
		if l.Search != nil && l.Action != ActionDrop {
			// A search runs the points it needs, up to max_points.
			runs = fmt.Sprintf("~%d of <=%d pts", len(l.Search.Expected), l.RunsToDo())
			if !l.Work() { // it had run them all ("~0 of <=0 pts" before)
				runs = fmt.Sprintf("%d pts done", l.RunsDone)
			}
		}
		ttft, tpot, tps, fit, gpus, cost := "?", "?", "?", "?", "?", "?"
		if e := l.Estimate; e.Available {
			ttft, tpot, tps = fmtMs(e.TTFTP95Ms), fmtMs(e.TPOTMs), fmtInt(int64(e.OutputTokenThroughput+0.5))
			if u := e.Uncertainty; u != nil {
				ttft, tpot, tps = ttft+" "+fmtPlusMinus(u.TTFT), tpot+" "+fmtPlusMinus(u.TPOT), tps+" "+fmtPlusMinus(u.Throughput)
			}
			gpus, cost = fmtInt(int64(e.GPUSeconds+0.5)), fmtUSD(e.CostUSD)
			if usd, ok := notionalUSD(p, l); ok {
				cost += fmt.Sprintf(" (~%s*)", fmtUSD(usd))
				notional = true
			}
			fit = "catalog"
			if c := l.Calibration; c != nil {
				fit = fmt.Sprintf("calibrated: %s, fit %.1f%%", plural(c.Runs, "run"), 100*c.MAPE)
			}
		}
		if l.Action == ActionDrop {
			ttft, tpot, tps, fit, gpus, cost = "", "", "", "", "", ""
		}
		gpu := l.GPU
		if rtHead != "" {
			gpu += "\t" + l.Runtime
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", actionSymbol(l.Action), l.ID, l.Model, l.Shape, gpu, runs, ttft, tpot, tps, fit, gpus, cost)
		if l.Action == ActionRerun || l.Action == ActionDrop || l.RunsDone > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s", l.ID, l.Reason))
		}
		if line := searchLine(l); line != "" && l.Action != ActionDrop {
			notes = append(notes, fmt.Sprintf("%s: %s", l.ID, line))
		}
		for _, n := range l.Notes {
			notes = append(notes, fmt.Sprintf("%s: %s", l.ID, n))
		}
	}
	fmt.Fprintf(tw, "  total\t\t\t\t"+rtTotal+"\t%d\t\t\t\t\t%s\t%s\n", t.Runs, fmtInt(int64(t.GPUSeconds+0.5)), fmtUSD(t.CostUSD))
	_ = tw.Flush()
	if notional {
		ew.printf("  * notional: the sim executor bills nothing; ~ is what the lane's runs would cost on its GPU at the plan's price\n")
	}
	for _, n := range notes {
		ew.printf("  %s\n", n)
	}
}

// notionalUSD is what lane l's work in this plan would cost on its GPU
// when its executor bills nothing (the sim): its wall time x GPUs x the
// GPU's price. ok is false for a billed executor, no work or no price.
func notionalUSD(p *Plan, l *Lane) (usd float64, ok bool) {
	e := l.Estimate
	if Billed(l.Inputs) || e.WallSeconds <= 0 {
		return 0, false
	}
	for _, a := range p.Assumptions {
		if a.GPU == l.GPU && a.PricePerSecond > 0 {
			return e.WallSeconds * float64(max(a.Count, 1)) * a.PricePerSecond, true
		}
	}
	return 0, false
}

// writeExecutorSettings lists, per executor block that lanes of the plan
// use, the settings its executor runs with (every default applied, as the
// lanes carry them), so a reviewer sees e.g. Modal's timeout or the sim's
// timing before anything is deployed.
func writeExecutorSettings(ew *errWriter, p *Plan) {
	type block struct {
		name, typ string
		settings  map[string]any
	}
	var blocks []block
	seen := map[string]bool{}
	var last *block // the lane before's, seen: lanes of a screen repeat it
	for _, l := range p.Lanes {
		if l.Action == ActionDrop {
			continue
		}
		b := block{l.Executor, l.Inputs.ExecutorType, l.ExecutorSettings}
		if last != nil && b.name == last.name && b.typ == last.typ && reflect.DeepEqual(b.settings, last.settings) {
			continue // equal values encode alike: no need to encode it
		}
		last = &b
		id, _ := encode([]any{b.name, b.typ, b.settings})
		if seen[string(id)] {
			continue
		}
		seen[string(id)] = true
		blocks = append(blocks, b)
	}
	if len(blocks) == 0 {
		return
	}
	sort.SliceStable(blocks, func(i, j int) bool { return blocks[i].name < blocks[j].name })
	ew.printf("\nExecutor settings (what each executor runs with, defaults applied):\n")
	for _, b := range blocks {
		ew.printf("  executor.%s (%s)", b.name, b.typ)
		if len(b.settings) == 0 {
			ew.printf(": no settings\n")
			continue
		}
		ew.printf("\n")
		width := 0
		for k := range b.settings {
			width = max(width, len(k))
		}
		for _, k := range sortedKeys(b.settings) {
			v, err := encode(b.settings[k])
			if err != nil {
				v = []byte(fmt.Sprint(b.settings[k]))
			}
			ew.printf("    %-*s = %s\n", width, k, v)
		}
	}
}

func writeFindings(ew *errWriter, fs []Finding) {
	if len(fs) == 0 {
		ew.printf("\nPreflight: no findings.\n")
		return
	}
	ew.printf("\nPreflight: %s, %s, %s.\n", plural(countSeverity(fs, SeverityError), "error"),
		plural(countSeverity(fs, SeverityWarning), "warning"), plural(countSeverity(fs, SeverityNote), "note"))
	for _, f := range fs {
		where := ""
		switch {
		case f.Lane != "":
			where = " [lane " + f.Lane + "]"
		case f.Screen != "":
			where = " [screen " + f.Screen + "]"
		}
		ew.printf("  %s: %s%s\n", strings.ToUpper(string(f.Severity[:1]))+string(f.Severity[1:]), f.Summary, where)
		if f.Detail != "" {
			ew.printf("    %s\n", f.Detail)
		}
	}
}

func writeAssumptions(ew *errWriter, p *Plan, verbose bool) {
	revision := orDefault(p.ModelRevision, "not recorded")
	if !verbose {
		ew.printf("\nAssumptions: how the estimates are made is in docs/performance-model.md and plan -verbose (performance model revision %s); the constants:\n", revision)
	} else {
		writeAssumptionsParagraph(ew, revision)
	}
	writeAssumptionLines(ew, p)
}

// writeAssumptionsParagraph says how the estimates are made.
func writeAssumptionsParagraph(ew *errWriter, revision string) {
	ew.printf("\nAssumptions (performance model revision %s): predictions are read off virtual-time runs of the simulated engine's scheduler (continuous batching, chunked prefill under max_num_batched_tokens, max_num_seqs, KV-cache capacity and preemption) under the load generator's arrivals (closed-loop streams starting together, seeded open-loop schedules); a step lasts the roofline maximum of its compute (prefill at a fraction of peak FLOPS, MFU) and its memory traffic (weights and KV cache at a fraction of peak bandwidth, the matrix multiplies' fixed time a layer beside the weights) plus a per-step overhead, and each request pays a per-request overhead. TTFT P95 is the run's 95th percentile, TPOT its median; each carries its expected range (±: a calibration's residuals, or the catalog's stated uncertainty, ±50%% TTFT and ±25%% the rest, when uncalibrated). GPU-seconds cover the runs still to do plus model load and server start, shared by the lanes of one deployment; the sim executor bills nothing. Override prefill_mfu, decode_efficiency and price_per_second in a gpu block, or calibrate from evidence (infercrane calibrate) and reference the file from a gpu or runtime block; engine settings come from the runtime block's args and the engine version's defaults.\n", revision)
}

// writeAssumptionLines lists the constants of each runtime's front end and
// each GPU block the estimates used.
func writeAssumptionLines(ew *errWriter, p *Plan) {
	seenRT := map[string]bool{}
	for _, l := range p.Lanes {
		in := l.Inputs
		o, ok := perf.FrontEnd(in.RuntimeEngine, in.RuntimeVersion, in.frontEndAPI())
		key := l.Runtime + "\x00" + in.API + "\x00" + in.frontEndAPI()
		if !ok || seenRT[key] {
			continue
		}
		seenRT[key] = true
		queue := fmt.Sprintf("%.0f µs per streamed output token, the front end one request at a time", o.TokenUs)
		if o.AdmitUs > 0 {
			queue = fmt.Sprintf("the front end admits the requests sent together %.1f ms each and hands them over together", o.AdmitUs/1000)
		}
		step := fmt.Sprintf("%.1f ms per step", o.StepMs)
		if o.CUDAStepMs > 0 {
			step = fmt.Sprintf("%.1f ms per step on a CUDA GPU (its CUDA graph mode), %.1f elsewhere", o.CUDAStepMs, o.StepMs)
		}
		if o.SeqUs > 0 {
			step += fmt.Sprintf(" plus %.0f µs per sequence in the step", o.SeqUs)
			if l.Perf != nil && l.Perf.Hardware.Assume.AsyncScheduling {
				step += fmt.Sprintf(" (async scheduling: %.0f%% of it beside the GPU's work)", 100*perf.AsyncOverlapShare)
			}
		}
		// --enforce-eager is the runtime's whatever the lane's GPU (its
		// assumptions say so only on a CUDA GPU, as Describe does).
		eager := o.Eager
		if l.Perf != nil && l.Perf.Runtime != nil && l.Perf.Runtime.EnforceEager {
			eager = perf.EagerAll
		}
		if d := eager.Describe(); d != "" {
			step += ", " + d
		}
		api := orDefault(in.API, "chat") + " API"
		if in.FrontEndAPI != "" {
			api += " through the " + in.FrontEndAPI + " front end (the model's chat is rendered by harmony, not a chat template)"
		}
		ew.printf("  runtime %s (%s %s, %s): %.1f ms per request through the front end, %s, %s (%s; in place of the gpu lines' overheads unless calibrated)\n",
			orDefault(l.Runtime, "(default)"), in.RuntimeEngine, orDefault(in.RuntimeVersion, "unpinned"), api, o.RequestMs, step, queue, o.Source)
	}
	for _, a := range p.Assumptions {
		src := "catalog"
		if len(a.Overridden) > 0 {
			src = "spec sets " + strings.Join(a.Overridden, ", ")
		}
		ew.printf("  gpu %s: %d x %s (%.0f GB, %.0f GB/s, %g TFLOPS BF16); prefill MFU %.2f, decode efficiency %.2f, $%.6f per GPU-second; load %.1f GB/s + %.0f s start, %.1f ms per step, %.1f ms per request (%s)\n",
			a.GPU, a.Count, a.GPUType, a.MemoryGB, a.BandwidthGBs, a.BF16TFLOPS, a.PrefillMFU, a.DecodeEfficiency, a.PricePerSecond,
			a.LoadBandwidthGBs, a.ServerStartSeconds, a.StepOverheadMs, a.RequestOverheadMs, src)
		seen := map[string]bool{}
		for _, l := range p.Lanes {
			c := l.Calibration
			if l.GPU != a.GPU || c == nil {
				continue
			}
			key := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%+v", c.File, c.Digest, c.Block, c.Engine, c.Version, c.Params)
			if seen[key] {
				continue
			}
			seen[key] = true
			unident := ""
			if len(c.Unidentified) > 0 {
				unident = "; not identified by its evidence (catalog value and range): " + strings.Join(c.Unidentified, ", ")
			}
			ew.printf("    calibrated for %s %s by %s (%s): %s, %s from %s, fit error %.1f%% MAPE; prefill MFU %.3f, decode efficiency %.3f, %.2f ms per step, %.2f ms per request%s%s\n",
				orDefault(c.Engine, "?"), orDefault(c.Version, "?"), c.File, c.Block, plural(c.Lanes, "lane"), plural(c.Runs, "run"), c.Source, 100*c.MAPE,
				c.Params.PrefillMFU, c.Params.DecodeEfficiency, c.Params.StepOverheadMs, c.Params.RequestOverheadMs, JitterText(c.Params.RequestJitterMs), unident)
		}
	}
}

// JitterText describes a request jitter for the text after "N ms per
// request": "" for none.
func JitterText(ms float64) string {
	if ms <= 0 {
		return ""
	}
	return fmt.Sprintf(" spread by %.2f ms of jitter", ms)
}

func countSeverity(fs []Finding, s Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// errWriter remembers the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// writeTTFTParts says, lane by lane, where the estimate's mean TTFT goes
// (perf.TTFTParts): the front end, the engine's queue and the prefill.
func writeTTFTParts(ew *errWriter, p *Plan) {
	first := true
	for _, l := range p.Lanes {
		parts := l.Estimate.TTFTParts
		if !l.Estimate.Available || parts == nil || l.Action == ActionDrop {
			continue
		}
		if first {
			ew.printf("\nWhere the TTFT goes (each lane's mean: the front end + queued in the engine + prefilling):\n")
			first = false
		}
		ew.printf("  %s: %s = %s + %s + %s\n", l.ID, fmtMs(parts.MeanMs), fmtMs(parts.FrontEndMs), fmtMs(parts.QueuedMs), fmtMs(parts.PrefillMs))
	}
}
