package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/infercrane/infercrane/executor/calibrate"
	"github.com/infercrane/infercrane/planner/perf"
)

// addCalibrateCommands registers the commands of this file (called by setupCommands).
func addCalibrateCommands() {
	register(&command{
		Name:     "calibrate",
		Synopsis: "Fit the performance model's parameters to measured evidence and write a calibration file",
		Run:      runCalibrate,
	})
}

func runCalibrate(env *cliEnv, args []string) int {
	fs := newFlags(env, "calibrate", usageDoc{
		Usage: "infercrane calibrate [flags] -out FILE EVIDENCE...",
		About: "Fits prefill MFU, decode bandwidth efficiency and the per-step and per-request overheads of the\n" +
			"performance model, per GPU type and runtime version, to the campaigns of evidence files: from\n" +
			"each run's per-request records when -state names the state directory they came from, else from\n" +
			"the campaigns' aggregates. Writes a digest-pinned calibration file to reference from a gpu or\n" +
			"runtime block (calibration = \"FILE\", calibration_digest = \"sha256:...\").",
		Examples: []string{
			"infercrane calibrate -out calib/l40s.json .infercrane/reports/qwen_l40s.evidence.json",
			"infercrane calibrate -state .infercrane -out calib/l40s.json .infercrane/reports/qwen_l40s.evidence.json",
		},
	})
	stateDir := fs.String("state", "", "state directory the evidence came from: fit each run from its per-request records")
	out := fs.String("out", "", "calibration file to write (required)")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if *out == "" {
		return fs.usageError("-out FILE is required")
	}
	if len(pos) == 0 {
		return fs.usageError("give at least one EVIDENCE file")
	}
	res, err := calibrate.Run(pos, calibrate.Options{StateDir: *stateDir, Version: Version})
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane calibrate: %v\n", err)
		return exitError
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(env.Stderr, "Warning: %s\n", w)
	}
	if err := calibrate.Write(*out, res.Calibration); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane calibrate: %v\n", err)
		return exitError
	}
	c := res.Calibration
	for _, f := range c.Fits {
		fmt.Fprintf(env.Stdout, "%s with %s %s: %d lanes, %d runs, from %s; fit error %.1f%% MAPE (%.1f%% RMS) over %d figures.\n",
			f.GPUType, f.Engine, f.Version, f.Lanes, f.Runs, f.Source, 100*f.Fit.MAPE, 100*f.Fit.RMSRel, figures(f.Fit.Residuals))
		fmt.Fprintf(env.Stdout, "  prefill MFU %.3f (catalog %.3f), decode efficiency %.3f (%.3f), %.2f ms per step (%.2f), %.2f ms per request (%.2f)\n",
			f.Params.PrefillMFU, f.Start.PrefillMFU, f.Params.DecodeEfficiency, f.Start.DecodeEfficiency,
			f.Params.StepOverheadMs, f.Start.StepOverheadMs, f.Params.RequestOverheadMs, f.Start.RequestOverheadMs)
		printIdentification(env, &f)
		tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  LANE\tMETRIC\tMEASURED\tFITTED\tERROR")
		for _, l := range f.Fit.Lanes {
			names := make([]string, 0, len(l.Measured))
			for m := range l.Measured {
				names = append(names, m)
			}
			sort.Strings(names)
			for _, m := range names {
				fmt.Fprintf(tw, "  %s\t%s\t%.3f\t%.3f\t%+.1f%%\n", l.Name, m, l.Measured[m], l.Predicted[m], 100*(l.Predicted[m]/l.Measured[m]-1))
			}
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(env.Stdout, "Wrote %s (%s). Reference it from a gpu or runtime block:\n  calibration        = %q\n  calibration_digest = %q\n",
		*out, plural(len(c.Fits), "fit", "fits"), *out, c.Digest)
	return exitOK
}

func figures(r map[string]perf.Residual) int {
	n := 0
	for _, x := range r {
		n += x.N
	}
	return n
}

// printIdentification says per parameter how well the evidence pinned it:
// the standard errors of those it identified, and for each other one that
// it kept the starting value, why, and what evidence would pin it.
func printIdentification(env *cliEnv, f *perf.CalibrationFit) {
	id := f.Fit.Identification
	if len(id) == 0 {
		return
	}
	labels := map[string]string{"prefill_mfu": "prefill MFU", "decode_efficiency": "decode efficiency",
		"step_overhead_ms": "step overhead", "request_overhead_ms": "request overhead"}
	var ok []string
	for _, name := range perf.ParamNames {
		if x := id[name]; x.Identified {
			ok = append(ok, fmt.Sprintf("%s ±%.1f%%", labels[name], 100*x.RelStdErr))
		}
	}
	if len(ok) > 0 {
		fmt.Fprintf(env.Stdout, "  identified (1-sigma standard error): %s\n", strings.Join(ok, ", "))
	}
	for _, name := range f.Unidentified() {
		fmt.Fprintf(env.Stdout, "  NOT IDENTIFIED: %s: %s\n", labels[name], id[name].Reason)
	}
}
