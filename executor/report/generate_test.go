package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/state"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/planner"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenDir holds this package's golden files (evidence*).
const goldenDir = "testdata/golden"

// generateFixture writes the fixture state and generates every format.
func generateFixture(t *testing.T, opts Options) (string, *Outcome) {
	t.Helper()
	dir := t.TempDir()
	writeStateFixture(t, dir)
	if opts.Resamples == 0 {
		opts.Resamples = 500
	}
	if opts.Cleanup == nil {
		opts.Cleanup = &evidence.Cleanup{State: "torn_down", DeploymentsTornDown: []string{"dep-big", "dep-small"}}
	}
	oc, err := Generate(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, oc
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./executor/report -run Golden -update' to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
			i++
		}
		line := func(ls []string) string {
			if i < len(ls) {
				return ls[i]
			}
			return "(end of file)"
		}
		t.Errorf("%s differs from the golden file at line %d:\n got: %s\nwant: %s\nrerun with -update if the change is intended", name, i+1, line(gl), line(wl))
	}
}

// TestGoldenEvidence compares the JSON and Markdown of a state directory
// built by hand with the golden files.
func TestGoldenEvidence(t *testing.T) {
	dir, oc := generateFixture(t, Options{Formats: []string{FormatJSON, FormatMarkdown}})
	if len(oc.Files) != 3 || !strings.HasSuffix(oc.Files[0], ".parquet") {
		t.Fatalf("files %v (the evidence brings its Parquet records, written first)", oc.Files)
	}
	// The plan digest depends on the planner's Plan type, which others
	// evolve; the golden files hold placeholders for it and for the evidence
	// digest that covers it (TestDigestPinned pins a digest instead).
	ev := oc.Evidence[0]
	for _, f := range oc.Files[1:] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(ev.PlanDigest), []byte("sha256:<plan digest>"))
		b = bytes.ReplaceAll(b, []byte(ev.Digest), []byte("sha256:<evidence digest>"))
		name := "evidence.json"
		if strings.HasSuffix(f, ".md") {
			name = "evidence.md"
		}
		checkGolden(t, name, b)
	}
	if oc.ExitCode != evidence.ExitFail {
		t.Errorf("exit code %d, want %d (gate clean fails on small)", oc.ExitCode, evidence.ExitFail)
	}
	if filepath.Dir(oc.Files[1]) != filepath.Join(dir, "reports") {
		t.Errorf("default output dir: %s", oc.Files[0])
	}
}

// TestGatesFromPlan: the gates evaluated are the plan's (Screen.GateSpecs),
// not gate blocks read again from the spec snapshot.
func TestGatesFromPlan(t *testing.T) {
	_, oc := generateFixture(t, Options{Formats: []string{FormatJSON}})
	ev := oc.Evidence[0]
	for _, m := range ev.Models {
		for _, g := range m.Campaigns[0].Gates {
			if g.Condition == "" {
				t.Errorf("gate %s has no condition text", g.Gate)
			}
			if g.Gate == "clean" && m.Name == "small" && (g.Status != evidence.StatusFail || g.Reason != "Every request must succeed.") {
				t.Errorf("clean on small: %+v", g)
			}
		}
	}
}

func TestVerifyCatchesOneFlippedByte(t *testing.T) {
	dir, oc := generateFixture(t, Options{Formats: []string{FormatJSON}})
	path := evidenceFile(t, oc)
	res, err := Verify(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || !res.Recomputed || res.Checked < 100 {
		t.Fatalf("untouched evidence: ok=%v checked=%d differences=%v", res.OK(), res.Checked, res.Differences)
	}
	raw, _ := os.ReadFile(path)
	i := bytes.Index(raw, []byte(`"output_token_throughput": `)) + len(`"output_token_throughput": `)
	raw[i] = map[bool]byte{true: '2', false: '1'}[raw[i] == '1'] // one digit of a figure
	edited := filepath.Join(t.TempDir(), "edited.json")
	if err := os.WriteFile(edited, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Verify(edited, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.DigestOK || res.Computed == res.Recorded {
		t.Fatal("a flipped byte kept the digest")
	}
}

// TestVerifyNamesRecomputedFigure edits a figure and re-seals the digest,
// as a forger would; the records still expose it.
func TestVerifyNamesRecomputedFigure(t *testing.T) {
	dir, oc := generateFixture(t, Options{Formats: []string{FormatJSON}})
	ev := oc.Evidence[0]
	*ev.Models[1].Campaigns[0].Aggregate.TTFTP95Ms += 0.5
	ev.Digest = ""
	d, _ := evidence.Digest(ev)
	ev.Digest = d
	b, _ := json.MarshalIndent(ev, "", "  ")
	path := filepath.Join(filepath.Dir(evidenceFile(t, oc)), "forged.json")
	os.WriteFile(path, b, 0o644)
	res, err := Verify(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !res.DigestOK {
		t.Fatal("re-sealed digest should match")
	}
	if len(res.Differences) != 1 || !strings.Contains(res.Differences[0], "aggregate.ttft_p95_ms") {
		t.Fatalf("differences %v, want exactly the edited ttft_p95_ms", res.Differences)
	}
}

// TestVerifyNamesForgedGate turns a failed gate into a pass (status and
// gate summary) and re-seals the digest; the records still decide the gate.
func TestVerifyNamesForgedGate(t *testing.T) {
	dir, oc := generateFixture(t, Options{Formats: []string{FormatJSON}})
	ev := oc.Evidence[0]
	forged := false
	for mi := range ev.Models {
		for ci := range ev.Models[mi].Campaigns {
			gs := ev.Models[mi].Campaigns[ci].Gates
			for gi := range gs {
				if gs[gi].Status == evidence.StatusFail && !forged {
					gs[gi].Status, gs[gi].Reason = evidence.StatusPass, "the condition holds"
					forged = true
				}
			}
		}
	}
	if !forged {
		t.Fatal("the fixture has no failed gate")
	}
	ev.GateSummary.Fail--
	ev.GateSummary.Pass++
	ev.GateSummary.ExitCode = evidence.ExitPass
	ev.Digest = ""
	d, _ := evidence.Digest(ev)
	ev.Digest = d
	b, _ := json.MarshalIndent(ev, "", "  ")
	path := filepath.Join(filepath.Dir(evidenceFile(t, oc)), "forged.json")
	os.WriteFile(path, b, 0o644)
	res, err := Verify(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Differences, "\n")
	if res.OK() || !strings.Contains(all, ".status: the evidence has \"pass\", the state gives \"fail\"") || !strings.Contains(all, "gate_summary.fail") {
		t.Fatalf("forged gate not named: %v", res.Differences)
	}
}

// TestSecretsAppearInNoOutput puts a fake key where a careless server would
// echo it (a record's error message) and a runtime flag, and greps every file.
func TestSecretsAppearInNoOutput(t *testing.T) {
	const key = "sk-fake-9f8e7d6c5b4a"
	t.Setenv("INFERCRANE_TEST_API_KEY", key)
	dir := t.TempDir()
	in := fixtureInput()
	in.Plan.Lanes[0].Inputs.RuntimeArgs = append(in.Plan.Lanes[0].Inputs.RuntimeArgs, "--api-key", key)
	in.Runs["aaaa1111"][0].Records[7].Error = "401 bad bearer " + key
	evs, err := BuildEvidence(Input{Plan: in.Plan, Runs: in.Runs, Gates: in.Gates, Secrets: SecretsFromEnv(os.Environ())})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(evs[0])
	if bytes.Contains(raw, []byte(key)) {
		t.Fatal("key in the evidence")
	}
	if d, _ := evidence.Digest(evs[0]); d != evs[0].Digest {
		t.Fatal("redacted evidence does not verify")
	}
	md := filepath.Join(dir, "s.md")
	html := filepath.Join(dir, "s.html")
	pq := filepath.Join(dir, "s.parquet")
	secrets := SecretsFromEnv(os.Environ())
	lr := screenRecords(&in, evs[0])
	for path, render := range map[string]func(io.Writer) error{
		md:   func(w io.Writer) error { return WriteMarkdown(w, evs[0]) },
		html: func(w io.Writer) error { return WriteHTML(w, evs[0], lr) },
	} {
		b, err := renderText(redact.New(secrets...), render)
		if err == nil {
			err = writeAtomic(path, b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteParquetFile(pq, lr, secrets); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{md, html} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("the key appears in %s", filepath.Base(f))
		}
	}
	// The Parquet file is compressed: read every string back to search it.
	for _, col := range readParquet(t, pq).strings {
		for _, v := range col {
			if strings.Contains(v, key) {
				t.Errorf("the key appears in the Parquet records: %q", v)
			}
		}
	}
}

// FuzzVerify feeds arbitrary files to Verify: it may refuse them but must
// not panic, and a document it accepts with a matching digest must be one
// whose canonical form hashes to that digest.
func FuzzVerify(f *testing.F) {
	ev, _ := BuildEvidence(fixtureInputSized(3, 2))
	good, _ := json.Marshal(ev[0])
	f.Add(good)
	f.Add([]byte(`{"schema_version":"infercrane.screen-evidence/v1","digest":"sha256:00"}`))
	f.Add([]byte(`{"schema_version":"infercrane.screen-evidence/v1","models":[{"campaigns":[1]}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "e.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Verify(p, "")
		if err != nil || !res.DigestOK {
			return
		}
		if d, err := evidence.Digest(data); err != nil || d != res.Recorded {
			t.Fatalf("accepted digest %s, recomputed %s (%v)", res.Recorded, d, err)
		}
	})
}

// TestFormatsAgree generates every format and checks that the Markdown and
// HTML tables show the JSON's figures, and that the Parquet rows recompute
// the JSON's throughput and mean per-run p95 TTFT.
func TestFormatsAgree(t *testing.T) {
	_, oc := generateFixture(t, Options{})
	files := map[string]string{}
	for _, f := range oc.Files {
		files[filepath.Ext(f)] = f
	}
	md, _ := os.ReadFile(files[".md"])
	page, _ := os.ReadFile(files[".html"])
	var ev evidence.Evidence
	raw, _ := os.ReadFile(files[".json"])
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	pc := readParquet(t, files[".parquet"])
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			a := &c.Aggregate
			tput := withCV(a.OutputTokenThroughput, c.CoefficientOfVariation["output_token_throughput"], len(c.Runs))
			row := "| " + m.Model + " | " + c.Profile + " | " + c.GPUType + " | 3 | " + tput + " | " + fmtPtr(a.TTFTP95Ms) + " | " + fmtPtr(a.TPOTP95Ms) + " | " + fmtPtr(a.LatencyP95Ms) + " |"
			if !strings.Contains(string(md), row) {
				t.Errorf("Markdown lacks the row %q", row)
			}
			cells := `<td class="num">` + tput + `</td><td class="num">` + fmtPtr(a.TTFTP95Ms) + `</td>`
			if !strings.Contains(string(page), cells) {
				t.Errorf("HTML lacks %q", cells)
			}
			// Recompute from the Parquet rows of this lane.
			type acc struct {
				first, last int64
				tokens      int64
				ttft        []float64
			}
			runs := map[int64]*acc{}
			for i, lane := range pc.strings["lane"] {
				if lane != c.Lane {
					continue
				}
				r := pc.ints["run"][i]
				x := runs[r]
				if x == nil {
					x = &acc{first: pc.ints["sent_ns"][i]}
					runs[r] = x
				}
				x.first = min(x.first, pc.ints["sent_ns"][i])
				x.last = max(x.last, pc.ints["done_ns"][i])
				if pc.strings["error_class"][i] == "" {
					x.tokens += pc.ints["output_tokens"][i]
					x.ttft = append(x.ttft, pc.floats["ttft_ms"][i])
				}
			}
			var tokens int64
			var window, p95 float64
			for _, x := range runs {
				tokens += x.tokens
				window += float64(x.last-x.first) / 1e9
				p95 += numpyPercentile(x.ttft, 95) / float64(len(runs))
			}
			if got := float64(tokens) / window; math.Abs(got-a.OutputTokenThroughput) > 1e-9*got {
				t.Errorf("%s: Parquet gives %v tok/s, JSON %v", c.Lane, got, a.OutputTokenThroughput)
			}
			if math.Abs(p95-*a.TTFTP95Ms) > 1e-6 {
				t.Errorf("%s: Parquet gives p95 TTFT %v, JSON %v", c.Lane, p95, *a.TTFTP95Ms)
			}
		}
	}
}

// TestVerifyNamesChangedRecords: a records file edited after the run no
// longer matches the SHA-256 the journal recorded, and verify says so.
func TestVerifyNamesChangedRecords(t *testing.T) {
	dir, oc := generateFixture(t, Options{Formats: []string{FormatJSON}})
	recs := filepath.Join(dir, "runs", "bbbb2222", "2.jsonl")
	b, err := os.ReadFile(recs)
	if err != nil {
		t.Fatal(err)
	}
	// Same size (the state would drop a run whose size changed), one digit different.
	i := bytes.Index(b, []byte(`"status":200`))
	b[i+len(`"status":`)] = '3'
	if err := os.WriteFile(recs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Verify(evidenceFile(t, oc), dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || len(res.Differences) == 0 || !strings.Contains(strings.Join(res.Differences, "\n"), "records of lane bbbb2222 run 2: SHA-256") {
		t.Fatalf("differences %v", res.Differences)
	}
}

// TestGatesFromPlanWarns: a gate the plan names without a recorded
// condition (an older plan) or with one that does not parse is named, and
// left out (its results are inconclusive); a condition may use lane.* only.
func TestGatesFromPlanWarns(t *testing.T) {
	p := &planner.Plan{Screens: []*planner.Screen{{Name: "s", Gates: []string{"g", "old", "broken", "other"},
		GateSpecs: []planner.Gate{
			{Name: "g", Condition: "lane.failed == 0 &&\n  lane.failures.timeout == 0", MinRuns: 2},
			{Name: "broken", Condition: "lane.failed =="},
			{Name: "other", Condition: "var.x == 1"},
		}}}}
	gates, warnings := GatesFromPlan(p)
	if g := gates["g"]; g == nil || g.ConditionText != "lane.failed == 0 && lane.failures.timeout == 0" || g.MinRuns != 2 || g.Condition == nil {
		t.Fatalf("gate g: %+v", gates["g"])
	}
	if len(gates) != 1 {
		t.Errorf("gates %v", gates)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"the plan records no condition for gate old", `gate broken: the plan's condition "lane.failed ==" is not a valid gate condition`, "gate other:"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q: %q", want, warnings)
		}
	}
}

// evidenceFile is the evidence among the files Generate wrote.
func evidenceFile(t *testing.T, oc *Outcome) string {
	t.Helper()
	for _, f := range oc.Files {
		if strings.HasSuffix(f, ".evidence.json") {
			return f
		}
	}
	t.Fatalf("no evidence among %v", oc.Files)
	return ""
}

// TestReportFilesShareOneMode: every report file (evidence, Markdown, HTML,
// Parquet) is written 0644; the Parquet records were once 0600 while the
// others were 0644.
func TestReportFilesShareOneMode(t *testing.T) {
	old := syscallUmask(0o022)
	defer syscallUmask(old)
	_, oc := generateFixture(t, Options{})
	if len(oc.Files) < 4 {
		t.Fatalf("only %d files written: %v", len(oc.Files), oc.Files)
	}
	for _, f := range oc.Files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o644 {
			t.Errorf("%s has mode %o, want 644 like the other reports", filepath.Base(f), m)
		}
	}
}

// Evidence written before workload.arrival_process existed (an open loop
// without it, its digest its own) still verifies against the state it
// came from: the absent member is named as predating, not a difference;
// an arrival process present with another value (re-sealed) is one.
func TestVerifyAcceptsEvidenceWrittenBeforeArrivalProcess(t *testing.T) {
	in := fixtureInput()
	in.Plan.Lanes[0].Inputs.RequestRate, in.Plan.Lanes[0].Inputs.Arrival, in.Plan.Lanes[0].Inputs.Burstiness = 10, "gamma", 0.5
	dir := t.TempDir()
	writeStateFixtureOf(t, dir, in)
	oc, err := Generate(dir, Options{Formats: []string{FormatJSON}, Resamples: 500,
		Cleanup: &evidence.Cleanup{State: "torn_down", DeploymentsTornDown: []string{"dep-big", "dep-small"}}})
	if err != nil {
		t.Fatal(err)
	}
	path := evidenceFile(t, oc)
	reseal := func(edit func(w map[string]any)) string {
		t.Helper()
		var doc map[string]any
		raw, _ := os.ReadFile(path)
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for _, m := range doc["models"].([]any) {
			for _, c := range m.(map[string]any)["campaigns"].([]any) {
				edit(c.(map[string]any)["workload"].(map[string]any))
			}
		}
		delete(doc, "digest")
		b, _ := json.Marshal(doc)
		doc["digest"], _ = evidence.Digest(b)
		b, _ = json.MarshalIndent(doc, "", "  ")
		out := filepath.Join(filepath.Dir(path), "edited.evidence.json")
		os.WriteFile(out, b, 0o644)
		return out
	}
	old := reseal(func(w map[string]any) { delete(w, "arrival_process") })
	res, err := Verify(old, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || len(res.Predates) != 1 || !strings.HasSuffix(res.Predates[0], ".workload.arrival_process") {
		t.Errorf("evidence from before arrival_process: ok=%v differences %v predates %v", res.OK(), res.Differences, res.Predates)
	}
	changed := reseal(func(w map[string]any) {
		if p, ok := w["arrival_process"].(map[string]any); ok {
			p["burstiness"] = 5.0
		}
	})
	if res, err = Verify(changed, dir); err != nil || res.OK() || len(res.Differences) != 1 || !strings.Contains(res.Differences[0], "workload.arrival_process.burstiness") {
		t.Errorf("a changed arrival process: %v, differences %v", err, res.Differences)
	}
}

// TestVerifyCrossChecksTheJournal: a run summary edited in the journal
// (through the store, so its CRC holds; state show prints it) differs from
// the records the evidence is rebuilt from, and a run the journal records
// twice collapses into one in the state: verify -state names both
// (issue 25, defect 8; before, it said OK).
func TestVerifyCrossChecksTheJournal(t *testing.T) {
	dir, oc := generateFixture(t, Options{Formats: []string{FormatJSON}})
	snap, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ls := snap.Lanes["bbbb2222"]
	if ls == nil || len(ls.Results) == 0 {
		t.Fatalf("no runs of lane bbbb2222 in %+v", snap.Lanes)
	}
	var run state.RunRecord
	for _, r := range ls.Results {
		if r.Run == 2 {
			run = *r
		}
	}
	var s loadgen.Summary
	if err := json.Unmarshal(run.Summary, &s); err != nil {
		t.Fatal(err)
	}
	s.Succeeded += 7
	run.Summary, _ = json.Marshal(s)
	records, err := os.ReadFile(run.RecordsPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CommitRun(run, func(w io.Writer) error { _, err := w.Write(records); return err }); err != nil {
		t.Fatal(err)
	}
	st.Close()
	res, err := Verify(evidenceFile(t, oc), dir)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(res.Differences, "\n")
	if res.OK() || !strings.Contains(joined, "the journal records run 2 of lane bbbb2222 more than once") ||
		!strings.Contains(joined, "summary of lane bbbb2222 run 2 in the journal (what state show prints) differs from its records") {
		t.Fatalf("differences %v", res.Differences)
	}
}
