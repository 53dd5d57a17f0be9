package report

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor/benchresult"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/state"
)

// The report formats.
const (
	FormatJSON     = "json"
	FormatMarkdown = "md"
	FormatHTML     = "html"
	FormatParquet  = "parquet"
)

// AllFormats are the formats Generate writes by default.
var AllFormats = []string{FormatJSON, FormatMarkdown, FormatHTML, FormatParquet}

// CleanupFile is where the teardown facts of the last apply are kept in the
// state's reports directory, so that a later `infercrane report` (to any
// -out directory) can restate them.
const CleanupFile = "cleanup.json"

// Options control Generate.
type Options struct {
	// Formats to write (nil: AllFormats).
	Formats []string
	// OutDir receives the files (empty: the state's reports/ directory).
	OutDir string
	// Config is the loaded spec; only its trace digests are used, and only
	// when the state's plan.json has no spec snapshot. Gates always come
	// from the plan (Screen.GateSpecs) and the evidence from the state, so
	// that verify can rebuild it.
	Config *lang.Config
	// Cleanup are the teardown facts of the apply that just ran; nil reads
	// them from STATE_DIR/reports/cleanup.json when an earlier apply left them.
	Cleanup *evidence.Cleanup
	// Secrets are values that must appear in no output (see SecretsFromEnv).
	Secrets []string
	// Resamples is the bootstrap size (0: DefaultResamples).
	Resamples int
	// SigningKey, when set, signs each screen's evidence: a DSSE envelope
	// with an in-toto statement over the evidence and the files it vouches
	// for, written beside it (evidence.EnvelopeFile).
	SigningKey ed25519.PrivateKey
	// RepairOnly rewrites only the reports that are missing, truncated,
	// different from what the state gives, or older than the state, and
	// lists them in Outcome.Repaired (apply does this when it has nothing
	// to run).
	RepairOnly bool
	// Results are other tools' results (benchresult) to set beside the
	// plan's estimates: Generate writes them, matched to the plan's lanes,
	// to ResultsFile in the output directory (Outcome.Results).
	Results []benchresult.Result
	// Check, when set, is called before each file Generate writes (the
	// state store's Check: the lock it holds is still on the state
	// directory); an error stops it before the write.
	Check func() error
}

// check is opts.Check, or nothing to check.
func (opts Options) check() error {
	if opts.Check == nil {
		return nil
	}
	return opts.Check()
}

// Outcome is what Generate produced.
type Outcome struct {
	// ExitCode is 0 when every gate passed, 3 when one failed, 4 when one
	// was inconclusive (and none failed).
	ExitCode int
	// Files are the paths written, in order.
	Files    []string
	Evidence []*evidence.Evidence
	// Warnings name problems that did not stop the report (runs not counted,
	// gates that could not be read).
	Warnings []string
	// Repaired names the reports RepairOnly rewrote, each with why.
	Repaired []string
	// Results set Options.Results beside the plan's estimates.
	Results []ResultComparison
}

// Generate reads the plan, spec snapshot, journal and records of a state
// directory, builds the evidence of every screen and writes the requested
// formats into the output directory.
func Generate(stateDir string, opts Options) (*Outcome, error) {
	in, warnings, err := LoadInput(stateDir, opts)
	if err != nil {
		return nil, err
	}
	evs, err := BuildEvidence(*in)
	if err != nil {
		return nil, err
	}
	formats := opts.Formats
	if len(formats) == 0 {
		formats = AllFormats
	}
	if err := CheckFormats(formats); err != nil {
		return nil, err
	}
	out := opts.OutDir
	if out == "" {
		out = filepath.Join(stateDir, state.ReportsDir)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("create the report directory: %w; choose a writable one with -out", err)
	}
	oc := &Outcome{Evidence: evs, Warnings: warnings}
	if opts.Cleanup != nil && !opts.RepairOnly {
		if err := opts.check(); err != nil {
			return nil, err
		}
		if err := saveCleanup(stateDir, opts.Cleanup); err != nil {
			return nil, err
		}
	}
	if contains(formats, FormatJSON) && !contains(formats, FormatParquet) {
		// The evidence vouches for the Parquet records beside it.
		formats = append(append([]string{}, formats...), FormatParquet)
	}
	changed := stateTime(stateDir)
	if opts.RepairOnly {
		removeTemps(out, evs, formats)
	}
	red := redact.New(opts.Secrets...)
	for _, ev := range evs {
		for _, f := range orderFormats(formats) {
			path := filepath.Join(out, FileName(ev.Screen, f))
			b, err := renderFormat(f, ev, in, red)
			if err == nil && opts.RepairOnly {
				why := staleness(path, b, changed)
				if why == "" {
					continue
				}
				oc.Repaired = append(oc.Repaired, filepath.ToSlash(path)+" ("+why+")")
			}
			if err == nil {
				err = opts.check()
			}
			if err == nil {
				err = writeAtomic(path, b)
			}
			if err != nil {
				return nil, fmt.Errorf("write the %s report of screen %s: %w", f, ev.Screen, err)
			}
			oc.Files = append(oc.Files, path)
		}
		if opts.SigningKey != nil && contains(formats, FormatJSON) {
			ep := filepath.Join(out, FileName(ev.Screen, FormatJSON))
			repaired := !opts.RepairOnly || contains(oc.Files, ep)
			if _, err := os.Stat(evidence.EnvelopeFile(ep)); repaired || err != nil {
				if err := opts.check(); err != nil {
					return nil, err
				}
				signed, err := signEvidence(ep, opts.SigningKey)
				if err != nil {
					return nil, fmt.Errorf("sign the evidence of screen %s: %w", ev.Screen, err)
				}
				oc.Files = append(oc.Files, signed)
			}
		}
		oc.ExitCode = worseExit(oc.ExitCode, ev.GateSummary.ExitCode)
	}
	if len(opts.Results) > 0 {
		oc.Results = CompareResults(in.Plan, opts.Results)
		b, err := renderText(red, func(w io.Writer) error { return WriteResults(w, oc.Results) })
		if err == nil {
			err = opts.check()
		}
		path := filepath.Join(out, ResultsFile)
		if err == nil {
			err = writeAtomic(path, b)
		}
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", ResultsFile, err)
		}
		oc.Files = append(oc.Files, path)
	}
	return oc, nil
}

// orderFormats puts the Parquet records first and the evidence next, so a
// crash mid-report never leaves evidence that vouches for records not yet
// written.
func orderFormats(formats []string) []string {
	var out []string
	for _, f := range []string{FormatParquet, FormatJSON} {
		if contains(formats, f) {
			out = append(out, f)
		}
	}
	for _, f := range formats {
		if f != FormatParquet && f != FormatJSON && !contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// CheckFormats rejects unknown format names, saying which exist.
func CheckFormats(formats []string) error {
	for _, f := range formats {
		if !contains(AllFormats, f) {
			return fmt.Errorf("unknown report format %q; choose from %s", f, strings.Join(AllFormats, ","))
		}
	}
	return nil
}

// worseExit keeps the more severe of two exit codes (fail over inconclusive).
func worseExit(a, b int) int {
	rank := map[int]int{evidence.ExitPass: 0, evidence.ExitInconclusive: 1, evidence.ExitFail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// FileName is the name of a screen's report in a format.
func FileName(screen, format string) string {
	switch format {
	case FormatJSON:
		return screen + ".evidence.json"
	case FormatParquet:
		return screen + ".records.parquet"
	}
	return screen + "." + format
}

// renderFormat renders one report of a screen into memory.
func renderFormat(format string, ev *evidence.Evidence, in *Input, red *redact.Set) ([]byte, error) {
	var b []byte
	var err error
	switch format {
	case FormatJSON:
		b, err = encodeJSON(ev)
	case FormatMarkdown:
		b, err = renderText(red, func(w io.Writer) error { return WriteMarkdown(w, ev) })
	case FormatHTML:
		b, err = renderText(red, func(w io.Writer) error { return WriteHTML(w, ev, screenRecords(in, ev)) })
	case FormatParquet:
		if b = ev.Parquet; b == nil {
			err = errors.New("the evidence was not built with its Parquet records")
		}
	}
	return b, err
}

// staleness says why the report at path needs rewriting to hold want:
// "missing", "truncated or changed" (its bytes differ), "older than the
// state"; "" when it is up to date.
func staleness(path string, want []byte, stateTime time.Time) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	got, err := os.ReadFile(path)
	switch {
	case err != nil || !bytes.Equal(got, want):
		if err == nil && len(got) < len(want) && bytes.HasPrefix(want, got) {
			return "truncated"
		}
		return "differs from what the state gives"
	case fi.ModTime().Before(stateTime):
		return "older than the state"
	}
	return ""
}

// removeTemps deletes the temporary files a report writer killed mid-write
// left beside the reports (see state.WriteFileAtomic for their names).
func removeTemps(dir string, evs []*evidence.Evidence, formats []string) {
	for _, ev := range evs {
		for _, f := range formats {
			left, _ := filepath.Glob(filepath.Join(dir, "."+FileName(ev.Screen, f)+".*.tmp"))
			for _, p := range left {
				os.Remove(p)
			}
		}
	}
}

// stateTime is when the state last changed: the newest of its journal and
// plan.
func stateTime(stateDir string) time.Time {
	var t time.Time
	for _, f := range []string{state.JournalFile, state.PlanFile} {
		if fi, err := os.Stat(filepath.Join(stateDir, f)); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

// renderText renders a text report into memory and redacts secrets.
func renderText(red *redact.Set, render func(io.Writer) error) ([]byte, error) {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return nil, err
	}
	return red.Bytes(buf.Bytes()), nil
}

// encodeJSON is the indented JSON form of v, newline-terminated.
func encodeJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// signEvidence signs the evidence file at path with key (evidence.Sign)
// and writes its envelope atomically; it returns the envelope's path.
func signEvidence(path string, key ed25519.PrivateKey) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	b, err := evidence.Sign(path, raw, key)
	if err != nil {
		return "", err
	}
	out := evidence.EnvelopeFile(path)
	return out, writeAtomic(out, b)
}

// writeFile is where writeAtomic writes; tests replace it to simulate a
// full disk or a crash mid-write.
var writeFile = state.WriteFileAtomic

// writeAtomic writes a report through a temporary file, fsync and rename,
// so a full disk or a crash leaves the old report or the new one, never a
// torn one.
func writeAtomic(path string, b []byte) error {
	_, _, err := writeFile(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	return err
}

func writeJSONFile(path string, v any) error {
	b, err := encodeJSON(v)
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

// LaneRecords are the records of one run of one lane, for the HTML plots
// and the Parquet file.
type LaneRecords struct {
	Lane, Model, ModelID, Shape, GPU string
	// Runtime is the lane's runtime block when its screen compares
	// several ("" otherwise).
	Runtime string
	Run     int
	Records []loadgen.Record
	// ServerSeries are the server gauges scraped over the run (HTML only).
	ServerSeries []loadgen.MetricSample
}

// screenRecords lists the records of every run of the screen's campaigns.
func screenRecords(in *Input, ev *evidence.Evidence) []LaneRecords {
	var out []LaneRecords
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			runs := append([]RunData(nil), in.Runs[c.Lane]...)
			sort.SliceStable(runs, func(a, b int) bool { return runs[a].Run < runs[b].Run })
			for _, r := range runs {
				out = append(out, LaneRecords{Lane: c.Lane, Model: m.Name, ModelID: m.Model, Shape: c.Profile, GPU: c.GPU, Runtime: c.Runtime, Run: r.Run, Records: r.Records, ServerSeries: r.ServerSeries})
			}
		}
	}
	return out
}

// LoadInput reads a state directory into the Input of BuildEvidence.
func LoadInput(stateDir string, opts Options) (*Input, []string, error) {
	planPath := filepath.Join(stateDir, state.PlanFile)
	if _, err := os.Stat(planPath); err != nil {
		return nil, nil, fmt.Errorf("%s has no %s: %w", stateDir, state.PlanFile, state.ErrNoState)
	}
	plan, saved, err := planner.ReadPlanFile(planPath)
	if err != nil {
		return nil, nil, err
	}
	snap, err := state.Load(stateDir)
	if err != nil {
		return nil, nil, err
	}
	warnings := append([]string{}, snap.Warnings...)
	in := &Input{
		Plan: plan, Runs: map[string][]RunData{},
		// The evidence names the version that planned and ran the screen,
		// so regenerating it later gives the same document.
		InfercraneVersion: plan.InfercraneVersion, Secrets: opts.Secrets, Resamples: opts.Resamples, Cleanup: opts.Cleanup,
	}
	var w []string
	in.Gates, w = GatesFromPlan(plan)
	warnings = append(warnings, w...)
	switch {
	case len(plan.Traces) > 0:
		in.WorkloadProfileDigest, in.WorkloadSource = planProfileFacts(plan.Traces)
	case saved != nil:
		in.WorkloadProfileDigest, in.WorkloadSource = profileFacts(nil, saved)
	case opts.Config != nil:
		in.WorkloadProfileDigest, in.WorkloadSource = profileFacts(opts.Config, nil)
	}
	if in.Cleanup == nil {
		in.Cleanup = loadCleanup(stateDir)
	}
	for _, l := range plan.Lanes {
		rec := snap.Lanes[l.ID]
		if rec == nil {
			continue
		}
		for _, rr := range rec.Results {
			rd, err := loadRun(snap.Dir, rr)
			if err != nil {
				return nil, nil, fmt.Errorf("lane %s run %d: %w", l.ID, rr.Run, err)
			}
			in.Runs[l.ID] = append(in.Runs[l.ID], rd)
		}
	}
	return in, warnings, nil
}

// loadRun reads one run's summary and records.
func loadRun(stateDir string, rr *state.RunRecord) (RunData, error) {
	f, err := os.Open(rr.RecordsPath)
	if err != nil {
		return RunData{}, fmt.Errorf("open its records: %w", err)
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		return RunData{}, fmt.Errorf("%s: %w", rr.RecordsPath, err)
	}
	rd := RunData{Run: rr.Run, Records: recs, RecordsSHA256: rr.RecordsSHA256, Server: rr.Server,
		ServerMetrics: rr.ServerMetrics, GPUSeconds: rr.GPUSeconds, SearchLoad: rr.SearchLoad, StartedAt: rr.StartedAt, FinishedAt: rr.FinishedAt}
	if len(rr.ServerView) > 0 && string(rr.ServerView) != "null" {
		var v loadgen.ServerView
		if err := json.Unmarshal(rr.ServerView, &v); err != nil {
			return RunData{}, fmt.Errorf("its server view in the journal: %w", err)
		}
		rd.ServerView = &v
	}
	if len(rr.ServerSeries) > 0 && string(rr.ServerSeries) != "null" {
		if err := json.Unmarshal(rr.ServerSeries, &rd.ServerSeries); err != nil {
			return RunData{}, fmt.Errorf("its server series in the journal: %w", err)
		}
	}
	rd.RecordsFile = rr.RecordsPath
	if rel, err := filepath.Rel(stateDir, rr.RecordsPath); err == nil {
		rd.RecordsFile = filepath.ToSlash(rel)
	}
	if len(rr.Summary) > 0 && string(rr.Summary) != "null" {
		var s loadgen.Summary
		if err := json.Unmarshal(rr.Summary, &s); err != nil {
			return RunData{}, fmt.Errorf("its summary in the journal: %w", err)
		}
		rd.Summary = &s
	}
	return rd, nil
}

// planProfileFacts names the workload profiles the plan's traces resolved
// to: their document digests (comma-separated, by trace name) and, per
// trace, its source ("trace.NAME") and pinned profile file
// ("trace.NAME.profile").
func planProfileFacts(traces []planner.TraceProfile) (string, map[string]string) {
	src := map[string]string{}
	digests := make([]string, 0, len(traces))
	for _, t := range traces {
		digests = append(digests, t.Digest)
		src["trace."+t.Name] = t.Source
		if t.Profile != "" {
			src["trace."+t.Name+".profile"] = filepath.ToSlash(t.Profile)
		}
	}
	return strings.Join(digests, ","), src
}

// profileFacts names the pinned workload profiles of the spec, for a plan
// made before plans recorded their traces (Plan.Traces): a saved plan's
// digests are then those of the profile files' bytes, as the evidence of
// such a plan was written (so that it still rebuilds field for field).
func profileFacts(cfg *lang.Config, saved *planner.SavedPlan) (string, map[string]string) {
	src := map[string]string{}
	var digests []string
	if cfg != nil {
		for _, name := range sortedKeys(cfg.Traces) {
			t := cfg.Traces[name]
			if t == nil || t.Digest == "" {
				continue
			}
			digests = append(digests, t.Digest)
			src["trace."+name] = t.Source
		}
	}
	if saved != nil {
		for _, p := range sortedKeys(saved.Inputs.Profiles) {
			if d := saved.Inputs.Profiles[p]; d != "" && d != "absent" {
				digests = append(digests, d)
				src["profile "+p] = d
			}
		}
	}
	if len(src) == 0 {
		src = nil
	}
	return strings.Join(digests, ","), src
}

// saveCleanup keeps the teardown facts of an apply in the state directory.
func saveCleanup(stateDir string, c *evidence.Cleanup) error {
	dir := filepath.Join(stateDir, state.ReportsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record the teardown facts: %w", err)
	}
	return writeJSONFile(filepath.Join(dir, CleanupFile), c)
}

// loadCleanup reads the teardown facts the last apply kept, or nil.
func loadCleanup(stateDir string) *evidence.Cleanup {
	b, err := os.ReadFile(filepath.Join(stateDir, state.ReportsDir, CleanupFile))
	if err != nil {
		return nil
	}
	var c evidence.Cleanup
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return &c
}
