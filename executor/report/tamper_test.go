package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
)

// at walks a decoded JSON document along a dotted path of member names and
// array indices ("models.0.campaigns.1").
func at(t *testing.T, doc any, path string) any {
	t.Helper()
	cur := doc
	for _, k := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(c) {
				t.Fatalf("path %s: bad index %s", path, k)
			}
			cur = c[i]
		default:
			t.Fatalf("path %s: %s is not in a container", path, k)
		}
	}
	return cur
}

// obj and arr return the object or array at path.
func obj(t *testing.T, doc any, path string) map[string]any {
	t.Helper()
	m, ok := at(t, doc, path).(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object", path)
	}
	return m
}

// setArr replaces the array member name of the object at path.
func setArr(t *testing.T, doc any, path, name string, f func([]any) []any) {
	t.Helper()
	m := doc.(map[string]any)
	if path != "" {
		m = obj(t, doc, path)
	}
	a, ok := m[name].([]any)
	if !ok {
		t.Fatalf("%s.%s is not an array", path, name)
	}
	m[name] = f(a)
}

// deepCopy copies a decoded JSON value.
func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func appendCopy(i int, edit func(map[string]any)) func([]any) []any {
	return func(a []any) []any {
		c := deepCopy(a[i]).(map[string]any)
		if edit != nil {
			edit(c)
		}
		return append(a, c)
	}
}

func prependCopy(i int) func([]any) []any {
	return func(a []any) []any { return append([]any{deepCopy(a[i])}, a...) }
}

func swap(i, j int) func([]any) []any {
	return func(a []any) []any { a[i], a[j] = a[j], a[i]; return a }
}

// TestTamperSuite forges the evidence the ways a forger would, re-seals the
// digest (a plain SHA-256 over canonical JSON that anyone can recompute)
// and checks that verify -state rejects every forgery and names the field.
func TestTamperSuite(t *testing.T) {
	dir, oc := generateFixture(t, Options{})
	path := evidenceFile(t, oc)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Verify(path, dir); err != nil || !res.OK() || res.FilesChecked != 7 {
		t.Fatalf("the untouched evidence must verify: %v %+v", err, res)
	}
	const camp = "models.0.campaigns.0"
	const ratio = "comparisons.0.small_over_big_output_token_throughput"
	cases := []struct {
		name  string
		edit  func(t *testing.T, doc map[string]any)
		field string // a substring of a difference
	}{
		{"appended fabricated campaign", func(t *testing.T, d map[string]any) {
			setArr(t, d, "models.0", "campaigns", appendCopy(0, func(c map[string]any) { c["lane"] = "ffff0000" }))
		}, "models[0](small).campaigns[1](ffff0000): not in the document"},
		{"appended fabricated run", func(t *testing.T, d map[string]any) {
			setArr(t, d, camp, "runs", appendCopy(2, func(r map[string]any) { r["run"] = 4.0 }))
		}, "campaigns[0](aaaa1111).runs[3](run 4): not in the document"},
		{"appended fabricated model", func(t *testing.T, d map[string]any) {
			setArr(t, d, "", "models", appendCopy(0, func(m map[string]any) { m["name"] = "tiny"; m["model"] = "Org/Tiny" }))
		}, "models[2](tiny): not in the document"},
		{"appended fabricated comparison", func(t *testing.T, d map[string]any) {
			setArr(t, d, "", "comparisons", appendCopy(0, func(c map[string]any) { c["profile"] = "long" }))
		}, "comparisons: the evidence has 2 entries, the state gives 1"},
		{"duplicate model before the real ones", func(t *testing.T, d map[string]any) { setArr(t, d, "", "models", prependCopy(1)) }, "models: the evidence has 3 entries"},
		{"duplicate campaign before the real one", func(t *testing.T, d map[string]any) { setArr(t, d, "models.1", "campaigns", prependCopy(0)) }, "models[1](big).campaigns: the evidence has 2 entries"},
		{"duplicate run before the real ones", func(t *testing.T, d map[string]any) { setArr(t, d, camp, "runs", prependCopy(2)) }, "runs: the evidence has 4 entries"},
		{"duplicate comparison before the real one", func(t *testing.T, d map[string]any) { setArr(t, d, "", "comparisons", prependCopy(0)) }, "comparisons: the evidence has 2 entries"},
		{"runs reordered", func(t *testing.T, d map[string]any) { setArr(t, d, camp, "runs", swap(0, 1)) }, "runs[0](run 1).run: the evidence has 2"},
		{"models reordered", func(t *testing.T, d map[string]any) { setArr(t, d, "", "models", swap(0, 1)) }, "models[0](small).name"},
		{"significant flipped", func(t *testing.T, d map[string]any) { obj(t, d, ratio)["significant"] = true }, ratio[len("comparisons.0."):] + ".significant"},
		{"higher_is_better flipped", func(t *testing.T, d map[string]any) { obj(t, d, ratio)["higher_is_better"] = false }, "output_token_throughput.higher_is_better"},
		{"ratio value", func(t *testing.T, d map[string]any) { obj(t, d, ratio)["value"] = 1.5 }, "output_token_throughput.value"},
		{"ratio interval", func(t *testing.T, d map[string]any) { obj(t, d, ratio+".ci95")["low"] = 1.0 }, "output_token_throughput.ci95.low"},
		{"ratio note dropped", func(t *testing.T, d map[string]any) { delete(obj(t, d, ratio), "note") }, "output_token_throughput.note: missing from the evidence"},
		{"comparison candidate model", func(t *testing.T, d map[string]any) { obj(t, d, "comparisons.0")["candidate_model"] = "Org/Other" }, "comparisons[0](small).candidate_model"},
		{"evidence_class simulated to measured", func(t *testing.T, d map[string]any) { d["evidence_class"] = "measured-screen" }, "evidence_class: the evidence has \"measured-screen\""},
		{"different gpu", func(t *testing.T, d map[string]any) { obj(t, d, "environment")["gpu"] = []any{"H100"} }, "environment.gpu[0]"},
		{"different gpu request", func(t *testing.T, d map[string]any) { obj(t, d, "environment")["gpu_request"] = []any{"H100 x8"} }, "environment.gpu_request[0]"},
		{"different executor", func(t *testing.T, d map[string]any) { obj(t, d, "environment")["executor"] = []any{"modal"} }, "environment.executor[0]"},
		{"runtime version", func(t *testing.T, d map[string]any) { obj(t, d, "environment.runtime")["version"] = "0.22.1" }, "environment.runtime.version"},
		{"runtime arg appended", func(t *testing.T, d map[string]any) {
			setArr(t, d, "environment.runtime", "args", func(a []any) []any { return append(a, "--enforce-eager") })
		}, "environment.runtime.args[2]"},
		{"random seed", func(t *testing.T, d map[string]any) { obj(t, d, "environment")["random_seed"] = 18.0 }, "environment.random_seed"},
		{"server info", func(t *testing.T, d map[string]any) { obj(t, d, "environment.server_info")["engine"] = "vllm" }, "environment.server_info.engine"},
		{"different model id", func(t *testing.T, d map[string]any) { obj(t, d, "models.0")["model"] = "Org/Small-7B" }, "models[0](small).model"},
		{"different revision", func(t *testing.T, d map[string]any) { obj(t, d, "models.1")["revision"] = "def456" }, "models[1](big).revision"},
		{"model block name", func(t *testing.T, d map[string]any) { obj(t, d, "models.0")["name"] = "tiny" }, "models[0](small).name"},
		{"campaign gpu type", func(t *testing.T, d map[string]any) { obj(t, d, camp)["gpu_type"] = "H100" }, "campaigns[0](aaaa1111).gpu_type"},
		{"workload concurrency", func(t *testing.T, d map[string]any) { obj(t, d, camp+".workload")["concurrency"] = 64.0 }, "workload.concurrency"},
		{"aggregate requests", func(t *testing.T, d map[string]any) { obj(t, d, camp+".aggregate")["requests"] = 600.0 }, "aggregate.requests"},
		{"failure count", func(t *testing.T, d map[string]any) { obj(t, d, camp+".aggregate.failures")["server_error"] = 0.0 }, "aggregate.failures.server_error"},
		{"run figure", func(t *testing.T, d map[string]any) { obj(t, d, camp+".runs.1")["ttft_p95_ms"] = 1.0 }, "runs[1](run 2).ttft_p95_ms"},
		{"records_sha256", func(t *testing.T, d map[string]any) {
			obj(t, d, camp+".runs.0")["records_sha256"] = strings.Repeat("0", 64)
		}, "runs[0](run 1).records_sha256"},
		{"records file", func(t *testing.T, d map[string]any) { obj(t, d, camp+".runs.0")["records_file"] = "runs/x/1.jsonl" }, "runs[0](run 1).records_file"},
		{"runs planned", func(t *testing.T, d map[string]any) { obj(t, d, camp)["runs_planned"] = 2.0 }, "campaigns[0](aaaa1111).runs_planned"},
		{"complete flipped", func(t *testing.T, d map[string]any) { obj(t, d, camp)["complete"] = false }, "campaigns[0](aaaa1111).complete"},
		{"completeness", func(t *testing.T, d map[string]any) { obj(t, d, "completeness")["runs_missing"] = 1.0 }, "completeness.runs_missing"},
		{"gate status", func(t *testing.T, d map[string]any) { obj(t, d, camp+".gates.0")["status"] = "pass" }, "gates[0](clean).status"},
		{"gate summary exit code", func(t *testing.T, d map[string]any) { obj(t, d, "gate_summary")["exit_code"] = 0.0 }, "gate_summary.exit_code"},
		{"confidence resamples", func(t *testing.T, d map[string]any) { obj(t, d, camp+".confidence_intervals")["resamples"] = 40.0 }, "confidence_intervals"},
		{"cleanup active tasks", func(t *testing.T, d map[string]any) { obj(t, d, "cleanup")["active_gpu_tasks"] = 0.5 }, "cleanup.active_gpu_tasks"},
		{"cleanup state", func(t *testing.T, d map[string]any) { obj(t, d, "cleanup")["state"] = "unknown" }, "cleanup.state"},
		{"cleanup deployment dropped", func(t *testing.T, d map[string]any) {
			setArr(t, d, "cleanup", "deployments_torn_down", func(a []any) []any { return a[:1] })
		}, "cleanup.deployments_torn_down: the evidence has 1 entries"},
		{"spec digest", func(t *testing.T, d map[string]any) { d["spec_digest"] = "sha256:" + strings.Repeat("a", 64) }, "spec_digest"},
		{"plan digest", func(t *testing.T, d map[string]any) { d["plan_digest"] = "sha256:" + strings.Repeat("b", 64) }, "plan_digest"},
		{"workload profile digest", func(t *testing.T, d map[string]any) {
			d["workload_profile_digest"] = "sha256:" + strings.Repeat("c", 64)
		}, "workload_profile_digest"},
		{"parquet digest", func(t *testing.T, d map[string]any) { obj(t, d, "files.0")["sha256"] = strings.Repeat("d", 64) }, "files[0](s.records.parquet).sha256"},
		{"jsonl file left out", func(t *testing.T, d map[string]any) {
			setArr(t, d, "", "files", func(a []any) []any { return append(a[:1:1], a[2:]...) })
		}, "files: the evidence has 6 entries, the state gives 7"},
		{"preflight finding dropped", func(t *testing.T, d map[string]any) {
			setArr(t, d, "preflight", "findings", func(a []any) []any { return a[:0] })
		}, "preflight.findings: the evidence has 0 entries"},
		{"selection boundary", func(t *testing.T, d map[string]any) { d["selection_boundary"] = "Promote small." }, "selection_boundary"},
		{"observed_at", func(t *testing.T, d map[string]any) { d["observed_at"] = "2027-01-01T00:00:00Z" }, "observed_at"},
		{"infercrane version", func(t *testing.T, d map[string]any) { d["infercrane_version"] = "9.9.9" }, "infercrane_version"},
		{"fabricated top-level field", func(t *testing.T, d map[string]any) { d["approved_by"] = "qa" }, "approved_by: not in the document"},
		{"field left out", func(t *testing.T, d map[string]any) { delete(d, "cleanup") }, "cleanup: missing from the evidence"},
		{"number turned string", func(t *testing.T, d map[string]any) { obj(t, d, camp+".aggregate")["failed"] = "3" }, "aggregate.failed: the evidence has \"3\""},
		{"estimated gpu seconds", func(t *testing.T, d map[string]any) { obj(t, d, camp+".gpu_seconds")["estimated"] = 99.0 }, "gpu_seconds.estimated"},
	}
	if len(cases) < 40 {
		t.Fatalf("the suite has %d cases, want at least 40", len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(orig, &doc); err != nil {
				t.Fatal(err)
			}
			tc.edit(t, doc)
			delete(doc, "digest")
			d, err := evidence.Digest(doc)
			if err != nil {
				t.Fatal(err)
			}
			doc["digest"] = d
			b, _ := json.MarshalIndent(doc, "", "  ")
			forged := filepath.Join(filepath.Dir(path), fmt.Sprintf("forged-%d.json", i))
			if err := os.WriteFile(forged, b, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := Verify(forged, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !res.DigestOK {
				t.Fatal("the forgery is re-sealed: its digest must hold")
			}
			all := strings.Join(res.Differences, "\n")
			if res.OK() || !strings.Contains(all, tc.field) {
				t.Fatalf("verify -state did not name %q; differences:\n%s", tc.field, all)
			}
		})
	}
}
