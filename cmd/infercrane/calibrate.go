package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/infercrane/infercrane/executor/benchresult"
	"github.com/infercrane/infercrane/executor/calibrate"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/arch"
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
		Usage: "infercrane calibrate [flags] -out FILE EVIDENCE|RESULT...\n  infercrane calibrate [flags] -check FILE EVIDENCE|RESULT...",
		About: "Fits the performance model's five parameters (prefill MFU, decode bandwidth efficiency, the\n" +
			"per-step and per-request overheads and the request jitter), per GPU type and runtime version, to\n" +
			"the campaigns of evidence files: from each run's per-request records when -state names the state\n" +
			"directory they came from, else from the campaigns' aggregates. Says per parameter whether the\n" +
			"evidence identifies it (a parameter it cannot pin keeps the catalog's value). Writes a\n" +
			"digest-pinned calibration file to reference from a gpu or runtime block (calibration = \"FILE\",\n" +
			"calibration_digest = \"sha256:...\").\n" +
			"With -check FILE it fits nothing: it predicts the evidence's campaigns with FILE's parameters\n" +
			"and prints the error of each figure (how a calibration transfers to other lanes or models).\n" +
			"Besides InferCrane evidence it reads the results other tools wrote: `vllm bench serve --save-result`\n" +
			"JSON (with --save-detailed's per-request arrays), AIPerf's profile_export_aiperf.json and\n" +
			"profile_export.jsonl, GuideLLM's report JSON and the earlier InferCrane screen documents, mapping\n" +
			"each tool's metric definitions to InferCrane's; a result that does not record its GPU, engine\n" +
			"version or model is refused unless -gpu, -engine or -model supply them. Runs whose TTFT is far\n" +
			"below a lone prefill's compute (prompts served from an undeclared prefix cache) are left out of\n" +
			"the fit unless -keep-cached, and results that sent the same prompts as another (vllm bench serve\n" +
			"runs with one --num-prompts under one --seed, AIPerf runs with one --random-seed) are named: on one\n" +
			"server with prefix caching the later one measured the cache.",
		Examples: []string{
			"infercrane calibrate -out calib/l40s.json .infercrane/reports/qwen_l40s.evidence.json",
			"infercrane calibrate -state .infercrane -out calib/l40s.json .infercrane/reports/qwen_l40s.evidence.json",
			"infercrane calibrate -model Qwen/Qwen3-0.6B -out calib/l40s.json qwen_l40s.evidence.json",
			"infercrane calibrate -model Qwen/Qwen3-1.7B -check calib/l40s.json qwen_l40s.evidence.json",
			"infercrane calibrate -gpu H100 -engine vllm==0.11.0 -out calib/h100.json vllm-bench-result.json",
			"infercrane calibrate -gpu L40S -engine vllm==0.22.1 -out calib/l40s.json artifacts/profile_export_aiperf.json",
		},
	})
	stateDir := fs.String("state", "", "state directory the evidence came from: fit each run from its per-request records")
	out := fs.outFile("out", "", "calibration file to write (required unless -check)")
	check := fs.String("check", "", "calibration file to check against the evidence instead of fitting one")
	var models multiFlag
	fs.Var(&models, "model", "use only this model's campaigns (model id; repeatable); one -model also names the model of a result that does not record it")
	hints := resultHintFlags(fs, "stamped into the calibration")
	modelConfig := fs.String("model-config", "", "config.json of the model of other tools' results when the catalog does not have it (with one -model, or the result's own model id)")
	keepCached := fs.Bool("keep-cached", false, "fit runs whose TTFT says their prompts were served from a prefix cache the evidence does not declare")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	switch {
	case *out == "" && *check == "":
		return fs.usageError("-out FILE is required (or -check FILE to check a calibration)")
	case *out != "" && *check != "":
		return fs.usageError("give -out FILE to fit or -check FILE to check, not both")
	case len(pos) == 0:
		return fs.usageError("give at least one EVIDENCE file")
	}
	for _, p := range pos {
		if err := dirGivenForFiles(p, "evidence file", evidenceFiles...); err != nil {
			return fs.usageError("%v", err)
		}
	}
	if *stateDir != "" {
		err := refreshState(env, nil, *stateDir)
		if err == nil {
			err = appliedStateDir(*stateDir)
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane calibrate: %v\n", hinted(err))
			return 1
		}
	}
	opts := calibrate.Options{StateDir: *stateDir, Version: Version, Models: models, KeepCached: *keepCached,
		Hints: *hints}
	if len(models) == 1 {
		opts.Hints.Model = models[0]
	}
	if *modelConfig != "" {
		archs, err := readModelConfig(*modelConfig, models, pos, opts.Hints)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane calibrate: -model-config %v\n", err)
			return exitError
		}
		opts.Archs = archs
	}
	if *check != "" {
		return runCalibrateCheck(env, *check, pos, opts)
	}
	res, err := calibrate.Run(pos, opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane calibrate: %v\n", hinted(specDirGivenForState(*stateDir, err)))
		return exitError
	}
	printWarningsAndNotes(env, res.Warnings, res.Notes)
	if err := calibrate.Write(*out, res.Calibration); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane calibrate: %v\n", hinted(err))
		return exitError
	}
	c := res.Calibration
	for _, f := range c.Fits {
		fmt.Fprintf(env.Stdout, "%s with %s %s: %s, %s, from %s; fit error %.1f%% MAPE (%.1f%% RMS) over %d figures; evidence from executor %s.\n",
			f.GPUType, f.Engine, f.Version, plural(f.Lanes, "lane", "lanes"), plural(f.Runs, "run", "runs"), f.Source, 100*f.Fit.MAPE, 100*f.Fit.RMSRel, figures(f.Fit.Residuals), orDefaultText(f.Executor, "(not recorded)"))
		for _, e := range f.Evidence {
			if e.Tool != "" {
				fmt.Fprintf(env.Stdout, "  measured by %s (version %s): %s %s\n", e.Tool, e.ToolVersion, e.File, e.Screen)
			}
		}
		fmt.Fprintf(env.Stdout, "  prefill MFU %.3f (catalog %.3f), decode efficiency %.3f (%.3f), %.2f ms per step (%.2f), %.2f ms per request (%.2f)%s\n",
			f.Params.PrefillMFU, f.Start.PrefillMFU, f.Params.DecodeEfficiency, f.Start.DecodeEfficiency,
			f.Params.StepOverheadMs, f.Start.StepOverheadMs, f.Params.RequestOverheadMs, f.Start.RequestOverheadMs, planner.JitterText(f.Params.RequestJitterMs))
		printIdentification(env, &f)
		printLaneFits(env, f.Fit.Lanes, "FITTED")
	}
	fmt.Fprintf(env.Stdout, "Wrote %s (%s). Reference it from a gpu or runtime block:\n  calibration        = %q\n  calibration_digest = %q\n",
		*out, plural(len(c.Fits), "fit", "fits"), *out, c.Digest)
	return exitOK
}

// runCalibrateCheck predicts the evidence with a calibration file's
// parameters and prints the errors.
func runCalibrateCheck(env *cliEnv, file string, evidence []string, opts calibrate.Options) int {
	data, err := os.ReadFile(file)
	if err == nil {
		var cal *perf.Calibration
		if cal, err = perf.ParseCalibration(data); err == nil {
			var res *calibrate.Check
			if res, err = calibrate.CheckCalibration(evidence, opts, cal); err == nil {
				printWarningsAndNotes(env, res.Warnings, res.Notes)
				for _, f := range res.Fits {
					worst := 0.0
					for _, r := range f.Fit.Residuals {
						worst = max(worst, r.MaxRel)
					}
					fmt.Fprintf(env.Stdout, "%s with %s %s: %s predicts %s, %s (%s) with %.1f%% MAPE (%.1f%% RMS, worst %.1f%%) over %d figures.\n",
						f.GPUType, f.Engine, f.Version, file, plural(f.Lanes, "lane", "lanes"), plural(f.Runs, "run", "runs"), f.Source, 100*f.Fit.MAPE, 100*f.Fit.RMSRel, 100*worst, figures(f.Fit.Residuals))
					printLaneFits(env, f.Fit.Lanes, "PREDICTED")
				}
				return exitOK
			}
		}
	}
	fmt.Fprintf(env.Stderr, "infercrane calibrate: %v\n", hinted(err))
	return exitError
}

// readModelConfig reads a model's config.json for the results whose model
// the catalog does not have: under the one -model id when given, else
// under the model id of each result named that the catalog lacks.
func readModelConfig(path string, models []string, files []string, h benchresult.Hints) (map[string]perf.ModelArch, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ids := models
	if len(ids) != 1 {
		ids = nil
		for _, f := range files {
			rs, err := benchresult.Read(f, h)
			if err != nil {
				continue // not another tool's result (evidence), or refused later with its reason
			}
			for _, r := range rs {
				if _, ok := perf.LookupModel(r.Model); !ok {
					ids = append(ids, r.Model)
				}
			}
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: no result names a model the catalog lacks; give -model ID", path)
	}
	out := map[string]perf.ModelArch{}
	for _, id := range ids {
		p, err := arch.Pin(data, id, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		out[id] = perf.FromConfig(p)
	}
	return out, nil
}

// resultHintFlags declares -gpu, -engine and -tool-version: the conditions
// of other tools' results that do not record them (benchresult.Hints);
// stamp says where the tool version goes.
func resultHintFlags(fs *cmdFlags, stamp string) *benchresult.Hints {
	h := &benchresult.Hints{}
	fs.StringVar(&h.GPU, "gpu", "", "GPU type of other tools' results that do not record it (e.g. H100)")
	fs.StringVar(&h.Engine, "engine", "", "serving engine and version of other tools' results that do not record them (e.g. vllm==0.11.0)")
	fs.StringVar(&h.ToolVersion, "tool-version", "", "benchmark tool version of results that do not record it ("+stamp+")")
	return h
}

// printWarningsAndNotes prints calibrate's warnings and notes to stderr.
func printWarningsAndNotes(env *cliEnv, warnings, notes []string) {
	for _, w := range warnings {
		fmt.Fprintf(env.Stderr, "Warning: %s\n", w)
	}
	for _, n := range notes {
		fmt.Fprintf(env.Stderr, "Note: %s\n", n)
	}
}

func orDefaultText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// printLaneFits prints each lane's figures: measured, the model's
// (fitted or predicted) and the error.
func printLaneFits(env *cliEnv, lanes []perf.LaneFit, model string) {
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  LANE\tMETRIC\tMEASURED\t%s\tERROR\n", model)
	for _, l := range lanes {
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
	var ok []string
	for _, name := range perf.ParamNames {
		if x := id[name]; x.Identified {
			ok = append(ok, fmt.Sprintf("%s ±%.1f%%", perf.ParamLabel(name), 100*x.RelStdErr))
		}
	}
	if len(ok) > 0 {
		fmt.Fprintf(env.Stdout, "  identified (1-sigma standard error): %s\n", strings.Join(ok, ", "))
	}
	for _, name := range f.Unidentified() {
		fmt.Fprintf(env.Stdout, "  NOT IDENTIFIED: %s: %s\n", perf.ParamLabel(name), id[name].Reason)
	}
}
