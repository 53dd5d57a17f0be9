// Package benchresult reads the benchmark results people already have,
// written by other tools, and maps each tool's metric definitions to
// InferCrane's (docs/performance-model.md, "Calibrating from other
// tools"): `vllm bench serve --save-result` JSON (with --save-detailed's
// per-request arrays when present), AIPerf's profile_export_aiperf.json and
// its per-record profile_export.jsonl, GuideLLM's report JSON, and the
// earlier InferCrane screen documents
// (infercrane.modal-public-trace-two-model-screen/v1).
//
// A result is only useful with the conditions it was measured under: the
// GPU, the serving engine and its version, the request lengths and the
// load. Read refuses a document whose conditions it cannot tell, naming the
// missing field and the flag that supplies it.
//
// Each tool's reader has a file of its own (vllmbench.go, aiperf.go,
// guidellm.go, screen.go); shared.go says when two results sent the same
// prompts.
package benchresult

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/infercrane/infercrane/lang/shape"
)

// Tool names, as a Result's Tool says them.
const (
	ToolVLLMBench = "vllm bench serve"
	ToolAIPerf    = "aiperf"
	ToolGuideLLM  = "guidellm"
	ToolScreen    = "infercrane screen (modal-public-trace-two-model-screen/v1)"
)

// ScreenSchema is the schema of the earlier InferCrane screen documents.
const ScreenSchema = "infercrane.modal-public-trace-two-model-screen/v1"

// Hints are the conditions the caller knows (command-line flags) for
// documents that do not record them. A document's own record wins over
// a hint only where the hint is empty.
type Hints struct {
	// GPU is a catalog GPU name (-gpu H100).
	GPU string
	// Engine is "engine==version" (-engine vllm==0.11.0).
	Engine string
	// ToolVersion is the benchmark tool's version when the document does
	// not record it (-tool-version 0.13.0).
	ToolVersion string
	// Model is the model id when the document does not record it (an
	// AIPerf record export; -model ID).
	Model string
}

// Size is one request's prompt and output tokens as the tool counted them.
type Size struct{ Input, Output int }

// Settings are the shape settings of the load r measured (its mean
// lengths, its loop and its request counts), as a lane's inputs would hold
// them: the one place that maps this format onto the declaration.
func (r *Result) Settings() shape.Settings {
	return shape.Settings{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Concurrency: r.Concurrency,
		RequestRate: r.RequestRate, Arrival: r.Arrival, Burstiness: r.Burstiness, Requests: r.Requests, Warmup: r.Warmup}
}

// Result is one measured load point read from another tool's output, in
// InferCrane's definitions.
type Result struct {
	// File is the document's base name and Digest "sha256:" + hex of its bytes.
	File, Digest string
	// Label names the point within the file (a profile, a benchmark's
	// strategy); empty when the file holds one.
	Label string
	// Tool and ToolVersion say what measured it ("" version: not recorded).
	Tool, ToolVersion string
	Model             string
	// GPU is a catalog GPU name, GPUCount how many.
	GPU      string
	GPUCount int
	// Engine and EngineVersion are the serving engine (e.g. "vllm", "0.22.1").
	Engine, EngineVersion string
	// InputTokens and OutputTokens are the mean prompt and output lengths;
	// Sizes, when the document lists them, each request's in send order.
	InputTokens, OutputTokens int
	Sizes                     []Size
	// The load: a closed loop of Concurrency streams (every request at
	// once when Concurrency equals Requests), or an open loop at
	// RequestRate per second (Arrival "poisson" or "gamma" with
	// Burstiness), at most Concurrency in flight when set.
	Concurrency int
	RequestRate float64
	Arrival     string
	Burstiness  float64
	// Requests is the measured requests per run, Warmup the warm-up ones.
	Requests, Warmup int
	// Failed is the requests the tool sent but did not count as completed
	// (errored, or cut off when the benchmark ended): the figures are the
	// completed requests' (vllm bench's failed; GuideLLM 0.8's requests its
	// scheduler created but did not see succeed, else its errored and
	// incomplete request totals).
	Failed int
	// Runs is how many runs Metrics aggregates; RunMetrics, when the
	// document has them, each run's own figures.
	Runs       int
	Metrics    map[string]float64
	RunMetrics []map[string]float64
	// TTFTsMs are the measured requests' TTFTs when the document lists them.
	TTFTsMs []float64
	// Seed is the prompt generator's seed when the document records it
	// (AIPerf's --random-seed); nil when it does not (vllm bench serve's
	// --seed, 0 unless given, is not saved).
	Seed *int64
	// Notes say how the tool's definitions were mapped to InferCrane's.
	Notes []string
}

// Metric names in Metrics and RunMetrics (the evidence aggregate's names,
// plus means).
const (
	TTFTMean   = "ttft_mean_ms"
	TTFTP50    = "ttft_p50_ms"
	TTFTP95    = "ttft_p95_ms"
	TTFTP99    = "ttft_p99_ms"
	TPOTMean   = "tpot_mean_ms"
	TPOTP50    = "tpot_p50_ms"
	TPOTP95    = "tpot_p95_ms"
	TPOTP99    = "tpot_p99_ms"
	ITLMean    = "itl_mean_ms"
	ITLP50     = "itl_p50_ms"
	LatMean    = "latency_mean_ms"
	LatP50     = "latency_p50_ms"
	LatP95     = "latency_p95_ms"
	LatP99     = "latency_p99_ms"
	OutTput    = "output_token_throughput"
	ReqTput    = "request_throughput"
	maxDocSize = 512 << 20
)

// Kind names the format of a document ("" when it is none Read knows).
func Kind(data []byte) string {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return ""
	}
	if trimmed[0] != '{' {
		return ""
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		// JSON Lines: a first line that is an AIPerf record.
		line, _, _ := bytes.Cut(trimmed, []byte("\n"))
		var rec struct {
			Metadata map[string]json.RawMessage `json:"metadata"`
			Metrics  map[string]json.RawMessage `json:"metrics"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Metadata != nil {
			return ToolAIPerf + " records"
		}
		return ""
	}
	var schema string
	_ = json.Unmarshal(probe["schema_version"], &schema)
	switch {
	case schema == ScreenSchema:
		return ToolScreen
	case strings.HasPrefix(schema, "infercrane.screen-evidence/"):
		return "infercrane evidence"
	case probe["completed"] != nil && (probe["mean_ttft_ms"] != nil || probe["median_ttft_ms"] != nil || probe["duration"] != nil):
		return ToolVLLMBench
	case probe["benchmarks"] != nil:
		return ToolGuideLLM
	case probe["time_to_first_token"] != nil || probe["request_latency"] != nil || probe["records"] != nil:
		return ToolAIPerf
	case probe["metadata"] != nil && probe["metrics"] != nil:
		return ToolAIPerf + " records"
	}
	return ""
}

// Read reads the document at path. It returns one result per load point
// the document holds, or an error that names what is missing and the flag
// that supplies it.
func Read(path string, h Hints) ([]Result, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxDocSize {
		return nil, fmt.Errorf("%s: %d bytes is larger than a benchmark result can be (%d)", path, st.Size(), maxDocSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(filepath.Base(path), data, h)
}

// Parse is Read of a document's bytes; name is its file name.
func Parse(name string, data []byte, h Hints) ([]Result, error) {
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	var rs []Result
	var err error
	switch kind := Kind(data); kind {
	case ToolVLLMBench:
		var r Result
		r, err = parseVLLMBench(data)
		rs = []Result{r}
	case ToolAIPerf:
		var r Result
		r, err = parseAIPerf(data)
		rs = []Result{r}
	case ToolAIPerf + " records":
		var r Result
		r, err = parseAIPerfRecords(data)
		rs = []Result{r}
	case ToolGuideLLM:
		rs, err = parseGuideLLM(data)
	case ToolScreen:
		rs, err = parseScreen(data)
	case "infercrane evidence":
		return nil, fmt.Errorf("%s is InferCrane evidence, not another tool's result", name)
	default:
		return nil, fmt.Errorf("%s is none of the result formats calibrate reads: vllm bench serve --save-result JSON, AIPerf's profile_export_aiperf.json or profile_export.jsonl, GuideLLM's report JSON, an InferCrane screen document (%s), or InferCrane evidence", name, ScreenSchema)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i := range rs {
		r := &rs[i]
		r.File, r.Digest = name, digest
		if err := r.complete(h); err != nil {
			where := name
			if r.Label != "" {
				where += " (" + r.Label + ")"
			}
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return rs, nil
}

// complete fills what the hints supply and refuses a result whose
// conditions are still unknown.
func (r *Result) complete(h Hints) error {
	if r.GPU == "" && h.GPU != "" {
		r.GPU = h.GPU
	}
	if r.Engine == "" && h.Engine != "" {
		e, v, err := ParseEngine(h.Engine)
		if err != nil {
			return err
		}
		r.Engine, r.EngineVersion = e, v
	}
	if r.ToolVersion == "" {
		r.ToolVersion = h.ToolVersion
	}
	if r.Model == "" {
		r.Model = h.Model
	}
	if r.GPUCount < 1 {
		r.GPUCount = 1
	}
	if r.Runs < 1 {
		r.Runs = 1
	}
	var missing []string
	if r.Model == "" {
		missing = append(missing, "the model (no model id in the document); give -model ID")
	}
	if r.GPU == "" {
		missing = append(missing, "the GPU ("+gpuWhere(r.Tool)+"); give -gpu NAME, e.g. -gpu H100")
	}
	if r.Engine == "" || r.EngineVersion == "" {
		missing = append(missing, "the serving engine and its version ("+engineWhere(r.Tool)+"); give -engine ENGINE==VERSION, e.g. -engine vllm==0.11.0")
	}
	if r.InputTokens < 1 || r.OutputTokens < 1 {
		missing = append(missing, "the request lengths (no prompt and output token counts)")
	}
	if r.Concurrency < 1 && r.RequestRate <= 0 {
		missing = append(missing, "the load (neither a concurrency nor a request rate)")
	}
	if r.Requests < 1 {
		missing = append(missing, "the number of requests")
	}
	if len(r.Metrics) == 0 {
		missing = append(missing, "any latency or throughput figure")
	}
	if len(missing) > 0 {
		return fmt.Errorf("cannot tell the conditions it was measured under: %s", strings.Join(missing, "; "))
	}
	return nil
}

func gpuWhere(tool string) string {
	switch tool {
	case ToolVLLMBench:
		return "vllm bench records it only as --metadata gpu=NAME"
	case ToolAIPerf, ToolAIPerf + " records":
		return "AIPerf records it only with --gpu-telemetry"
	}
	return "the document does not record it"
}

func engineWhere(tool string) string {
	if tool == ToolVLLMBench {
		return "vllm bench records it only as --metadata vllm=VERSION"
	}
	return "the document does not record it"
}

// ParseEngine reads "vllm==0.11.0" (or "vllm 0.11.0", "vllm@0.11.0").
func ParseEngine(s string) (engine, version string, err error) {
	s = strings.TrimSpace(s)
	for _, sep := range []string{"==", "@", " ", "/"} {
		if e, v, ok := strings.Cut(s, sep); ok && strings.TrimSpace(e) != "" && strings.TrimSpace(v) != "" {
			return strings.ToLower(strings.TrimSpace(e)), strings.TrimPrefix(strings.TrimSpace(v), "v"), nil
		}
	}
	return "", "", fmt.Errorf("engine %q is not ENGINE==VERSION (e.g. vllm==0.11.0)", s)
}

// gpuNames maps the GPU names tools and drivers report ("NVIDIA H100 80GB
// HBM3", "NVIDIA A100-SXM4-40GB", "a100-40gb") to catalog names.
var gpuNames = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`(?i)h200`), "H200"},
	{regexp.MustCompile(`(?i)b200`), "B200"},
	{regexp.MustCompile(`(?i)h100`), "H100"},
	{regexp.MustCompile(`(?i)a100.*80`), "A100-80GB"},
	{regexp.MustCompile(`(?i)a100`), "A100-40GB"},
	{regexp.MustCompile(`(?i)l40s`), "L40S"},
	{regexp.MustCompile(`(?i)(^|[^a-z0-9])l4($|[^0-9a-z])`), "L4"},
	{regexp.MustCompile(`(?i)a10g?($|[^0-9])`), "A10"},
	{regexp.MustCompile(`(?i)(^|[^a-z0-9])t4($|[^0-9])`), "T4"},
}

// GPUName maps a reported GPU name to a catalog name ("" if none).
func GPUName(s string) string {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "!"))
	if s == "" {
		return ""
	}
	for _, g := range gpuNames {
		if g.re.MatchString(s) {
			return g.name
		}
	}
	return ""
}

// num reads a JSON number, a numeric string or "inf".
func num(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, !math.IsNaN(f)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.EqualFold(strings.TrimSpace(s), "inf") {
			return math.Inf(1), true
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return v, !math.IsNaN(v)
		}
	}
	return 0, false
}

func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	return ""
}

// put stores a positive finite figure.
func put(m map[string]float64, name string, v float64, ok bool) {
	if ok && v > 0 && !math.IsInf(v, 0) {
		m[name] = v
	}
}

func round(v float64) int { return int(math.Round(v)) }

// Percentile is the q-th percentile of sorted values with linear
// interpolation between closest ranks (numpy's default, InferCrane's
// definition).
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// failedNote is the note on a result whose tool counted requests as not
// completed (Result.Failed): how many, and that the figures are the
// completed ones'.
func failedNote(tool, failed string, completed int) string {
	return fmt.Sprintf("%s counted %s beside the %d completed ones: the figures are the completed requests' (a request cut off when the benchmark ended counts as incomplete)", tool, failed, completed)
}
