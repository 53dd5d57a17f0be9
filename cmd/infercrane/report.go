package main

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/infercrane/infercrane/executor/benchresult"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/planner/state"
)

// addReportCommands registers the commands of this file (called by setupCommands).
func addReportCommands() {
	register(&command{
		Name:     "report",
		Synopsis: "Write the evidence and reports of a state directory; exit 0/3/4 by the gates",
		Run:      runReport,
	})
}

func runReport(env *cliEnv, args []string) int {
	fs := newFlags(env, "report", usageDoc{
		Usage: "infercrane report [flags] [STATE_DIR]",
		About: "Builds the evidence of every screen in STATE_DIR (default " + state.DefaultDir + ") from its\n" +
			"per-request records and writes it with the Markdown, HTML and Parquet reports.\n" +
			"With -results it also reads results other tools wrote (`vllm bench serve --save-result` JSON,\n" +
			"AIPerf's profile_export_aiperf.json or profile_export.jsonl, GuideLLM's report JSON, the earlier\n" +
			"InferCrane screen documents), matches each to the plan's lane with its model, GPU, engine, lengths\n" +
			"and load, and writes the lane's estimate beside the result's figures to " + report.ResultsFile + ",\n" +
			"flagging runs whose TTFT says a prefix cache served their prompts and results that sent the same\n" +
			"prompts as another (vllm bench serve runs with one --num-prompts under one --seed, AIPerf runs\n" +
			"with one --random-seed).\n" +
			"Exit status: 0 every gate passed, 3 a gate failed, 4 a gate was inconclusive, 1 an error.",
		Examples: []string{
			"infercrane report",
			"infercrane report examples/quickstart/.infercrane -format html,md",
			"infercrane report -out /tmp/reports .infercrane",
			"infercrane report -results vllm-bench-result.json -gpu H100 -engine vllm==0.11.0 .infercrane",
		},
	})
	formats := fs.String("format", strings.Join(report.AllFormats, ","), "comma-separated formats to write: "+strings.Join(report.AllFormats, ", "))
	out := fs.outDir("out", "", "directory for the reports (default STATE_DIR/reports)")
	sign := fs.String("sign", env.Getenv(signingKeyEnv), "sign each evidence file with this ed25519 private key (PEM), in a DSSE envelope beside it (default $"+signingKeyEnv+")")
	var resultFiles multiFlag
	fs.Var(&resultFiles, "results", "another tool's result to set beside the plan's estimates (repeatable)")
	hints := resultHintFlags(fs, "shown beside its figures")
	fs.StringVar(&hints.Model, "model", "", "model id of results that do not record it (an AIPerf record export)")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	dir, code, ok := fs.oneOptional(pos, "STATE_DIR", state.DefaultDir)
	if !ok {
		return code
	}
	var list []string
	for _, f := range strings.Split(*formats, ",") {
		if f = strings.TrimSpace(f); f != "" {
			list = append(list, f)
		}
	}
	if err := report.CheckFormats(list); err != nil {
		return fs.usageError("%v", err)
	}
	// A running apply writes the same reports when it finishes; two writers
	// of one file would leave either's bytes, or a mix.
	if held, pid := state.Held(dir); held && *out == "" {
		fmt.Fprintf(env.Stderr, "infercrane report: an apply (PID %d) holds %s and writes its reports when it finishes; wait for it, or write a report of the runs completed so far elsewhere with -out DIR\n", pid, dir)
		return 1
	}
	if err := refreshState(env, nil, dir); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane report: %v\n", hinted(err))
		return 1
	}
	opts := report.Options{Formats: list, OutDir: *out}
	// Every result is read before anything is written: one that cannot
	// be read stops the report with nothing changed.
	for _, f := range resultFiles {
		rs, err := benchresult.Read(f, *hints)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane report: -results %v\n", err)
			return 1
		}
		opts.Results = append(opts.Results, rs...)
	}
	opts.Secrets = env.secrets.Values()
	var err error
	if opts.SigningKey, err = signingKey(*sign); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane report: %v\n", hinted(err))
		return 1
	}
	oc, err := report.Generate(dir, opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane report: %v\n", hinted(specDirGivenForState(dir, err)))
		return 1
	}
	printOutcome(env, oc)
	printResults(env, oc.Results)
	return oc.ExitCode
}

// printResults prints each result's comparison with the plan: the lane it
// matches and its figures' errors, or why it matches none; a result a
// prefix cache served is a warning.
func printResults(env *cliEnv, cs []report.ResultComparison) {
	for _, c := range cs {
		if c.SamePrompts != "" {
			fmt.Fprintf(env.Stderr, "Warning: %s sent the same prompts as another result: %s\n", c.Name(), c.SamePrompts)
		}
		if c.Lane == nil {
			fmt.Fprintf(env.Stderr, "Warning: %s not compared: %s\n", c.Name(), c.Unmatched)
			continue
		}
		p := c.Prediction
		var errs []string
		if p != nil {
			for _, pm := range p.Metrics {
				e := fmt.Sprintf("%s %+.1f%%", pm.Metric, 100*pm.Error)
				if !pm.Within {
					e += " (outside the range)"
				}
				errs = append(errs, e)
			}
		}
		if len(errs) == 0 {
			errs = []string{"no figure the estimate has"}
		}
		fmt.Fprintf(env.Stdout, "%s (%s) against lane %s: %s\n", c.Name(), c.Result.Tool, c.Lane.Key, strings.Join(errs, ", "))
		if p != nil {
			for _, h := range p.CacheHits {
				fmt.Fprintf(env.Stderr, "Warning: %s is CACHE-SERVED: %s\n", c.Name(), h)
			}
		}
	}
}

// printOutcome renders what Generate wrote and the gates; apply uses it too.
func printOutcome(env *cliEnv, oc *report.Outcome) {
	for _, f := range oc.Files {
		fmt.Fprintf(env.Stdout, "Wrote %s\n", filepath.ToSlash(f))
	}
	printGates(env, oc)
}

// printGates prints the report's warnings (on stderr), each screen's gate
// summary and every gate that did not pass.
func printGates(env *cliEnv, oc *report.Outcome) {
	for _, w := range oc.Warnings {
		fmt.Fprintf(env.Stderr, "Warning: %s\n", w)
	}
	out := env.colored(env.Stdout) // FAIL and INCONCLUSIVE lines stand out on a terminal
	defer flushColor(out)
	for _, ev := range oc.Evidence {
		gs := ev.GateSummary
		if c := ev.Completeness; !c.Complete {
			fmt.Fprintf(out, "Screen %s: %s (%d missing, lanes %s); %d gate(s) pass, %d fail, %d inconclusive.\n",
				ev.Screen, c.Words(), c.RunsMissing, strings.Join(c.IncompleteLanes, ", "), gs.Pass, gs.Fail, gs.Inconclusive)
		} else {
			fmt.Fprintf(out, "Screen %s: %d gate(s) pass, %d fail, %d inconclusive.\n", ev.Screen, gs.Pass, gs.Fail, gs.Inconclusive)
		}
		for _, m := range ev.Models {
			for _, c := range m.Campaigns {
				for _, g := range c.Gates {
					if g.Status != evidence.StatusPass {
						fmt.Fprintf(out, "  %s %s on %s/%s: %s\n", strings.ToUpper(g.Status), g.Gate, m.Name, c.Profile, g.Reason)
					}
				}
			}
		}
	}
}

// signingKeyEnv names the environment variable holding the path of the
// key that apply and report sign evidence with.
const signingKeyEnv = "INFERCRANE_SIGNING_KEY"

// signingKey reads the private key at path (nil when path is empty).
func signingKey(path string) (ed25519.PrivateKey, error) {
	if path == "" {
		return nil, nil
	}
	return readKeyFile(path, evidence.ParsePrivateKey)
}
