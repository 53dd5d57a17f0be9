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
package benchresult

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/infercrane/infercrane/lang/shape"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
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

// parseVLLMBench reads `vllm bench serve --save-result` (and the older
// benchmarks/benchmark_serving.py, whose format it kept). Its TTFT is the
// send to the first streamed chunk, its TPOT (latency - ttft) / (output
// tokens - 1) per request, its ITL every chunk gap, its e2el our latency,
// its output_throughput total output tokens over the whole benchmark's
// duration: InferCrane's definitions (design section 5 follows them).
func parseVLLMBench(data []byte) (Result, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return Result{}, err
	}
	r := Result{Tool: ToolVLLMBench, Metrics: map[string]float64{}}
	r.Model = str(m["model_id"])
	completed, _ := num(m["completed"])
	r.Requests = round(completed)
	if r.Requests < 1 {
		return r, errors.New("vllm bench completed no request")
	}
	if failed, ok := num(m["failed"]); ok && failed > 0 {
		r.Failed = round(failed)
		r.Notes = append(r.Notes, failedNote("vllm bench", fmt.Sprintf("%d failed requests", r.Failed), r.Requests))
	}
	// Conditions recorded as --metadata KEY=VALUE (top-level strings).
	for _, k := range []string{"gpu", "gpu_type", "gpu_name", "hardware", "device", "accelerator"} {
		if g := GPUName(str(m[k])); g != "" {
			r.GPU = g
			break
		}
	}
	for _, k := range []string{"gpu_count", "num_gpus", "tp", "tensor_parallel_size"} {
		if v, ok := num(m[k]); ok && v >= 1 {
			r.GPUCount = round(v)
			break
		}
	}
	for _, k := range []string{"vllm", "vllm_version", "engine_version"} {
		if v := str(m[k]); v != "" {
			r.Engine, r.EngineVersion = "vllm", strings.TrimPrefix(v, "v")
			break
		}
	}
	for _, k := range []string{"engine", "runtime"} {
		if v := str(m[k]); v != "" {
			if e, ver, err := ParseEngine(v); err == nil {
				r.Engine, r.EngineVersion = e, ver
			}
		}
	}
	r.ToolVersion = str(m["vllm_bench_version"])
	// Lengths: the per-request arrays, else the totals' means.
	var ins, outs []int
	_ = json.Unmarshal(m["input_lens"], &ins)
	_ = json.Unmarshal(m["output_lens"], &outs)
	if len(ins) > 0 && len(ins) == len(outs) {
		for i := range ins {
			if ins[i] > 0 && outs[i] > 0 {
				r.Sizes = append(r.Sizes, Size{ins[i], outs[i]})
			}
		}
		var ttfts []float64
		if json.Unmarshal(m["ttfts"], &ttfts) == nil && len(ttfts) == len(ins) {
			for i, t := range ttfts {
				if outs[i] > 0 && t > 0 {
					r.TTFTsMs = append(r.TTFTsMs, 1000*t)
				}
			}
		}
	}
	if in, ok := num(m["total_input_tokens"]); ok && in > 0 {
		r.InputTokens = round(in / completed)
	}
	if out, ok := num(m["total_output_tokens"]); ok && out > 0 {
		r.OutputTokens = round(out / completed)
	}
	if len(r.Sizes) > 0 && (r.InputTokens == 0 || r.OutputTokens == 0) {
		var si, so int
		for _, z := range r.Sizes {
			si += z.Input
			so += z.Output
		}
		r.InputTokens, r.OutputTokens = round(float64(si)/float64(len(r.Sizes))), round(float64(so)/float64(len(r.Sizes)))
	}
	// Load: --request-rate (inf: every prompt at once) under
	// --max-concurrency.
	rate, rateOK := num(m["request_rate"])
	if c, ok := num(m["max_concurrency"]); ok && c >= 1 {
		r.Concurrency = round(c)
	}
	switch {
	case rateOK && !math.IsInf(rate, 1) && rate > 0:
		r.RequestRate = rate
		r.Arrival, r.Burstiness = "poisson", 1
		if b, ok := num(m["burstiness"]); ok && b > 0 && b != 1 {
			r.Arrival, r.Burstiness = "gamma", b
		}
	case rateOK || m["request_rate"] == nil:
		if r.Concurrency < 1 {
			r.Concurrency = r.Requests
			r.Notes = append(r.Notes, "request rate inf without --max-concurrency: every prompt sent at once, modelled as a closed loop of one stream per request")
		}
		r.Concurrency = min(r.Concurrency, r.Requests)
	}
	for _, q := range []struct{ ours, theirs string }{
		{"ttft", "ttft"}, {"tpot", "tpot"}, {"itl", "itl"}, {"latency", "e2el"},
	} {
		mean, ok := num(m["mean_"+q.theirs+"_ms"])
		put(r.Metrics, q.ours+"_mean_ms", mean, ok)
		p50, ok := num(m["p50_"+q.theirs+"_ms"])
		if !ok {
			p50, ok = num(m["median_"+q.theirs+"_ms"])
		}
		put(r.Metrics, q.ours+"_p50_ms", p50, ok)
		for _, p := range []string{"95", "99"} {
			v, ok := num(m["p"+p+"_"+q.theirs+"_ms"])
			put(r.Metrics, q.ours+"_p"+p+"_ms", v, ok)
		}
	}
	delete(r.Metrics, "itl_p95_ms")
	delete(r.Metrics, "itl_p99_ms")
	ot, ok := num(m["output_throughput"])
	put(r.Metrics, OutTput, ot, ok)
	rt, ok := num(m["request_throughput"])
	put(r.Metrics, ReqTput, rt, ok)
	r.Notes = append(r.Notes, "vllm bench's TTFT (send to the first streamed chunk), TPOT, ITL and e2el are InferCrane's ttft, tpot, itl and latency; output_throughput is its output tokens over the benchmark's duration")
	return r, nil
}

// aiperfStat is one AIPerf metric summary.
type aiperfStat struct {
	Unit string   `json:"unit"`
	Avg  *float64 `json:"avg"`
	P50  *float64 `json:"p50"`
	P90  *float64 `json:"p90"`
	P95  *float64 `json:"p95"`
	P99  *float64 `json:"p99"`
	Sum  *float64 `json:"sum"`
}

// toMs is the factor from unit to milliseconds (1 for "" and "ms").
func toMs(unit string) float64 {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s", "sec", "second", "seconds":
		return 1000
	case "us", "µs", "μs", "microseconds":
		return 1e-3
	case "ns", "nanoseconds":
		return 1e-6
	}
	return 1
}

// parseAIPerf reads AIPerf's profile_export_aiperf.json: metric summaries
// at the top level (0.2 and later) or under "records" (0.1). AIPerf's
// "inter_token_latency" is (latency - ttft) / (output tokens - 1), our
// TPOT; its "inter_chunk_latency" our ITL; it counts output tokens by
// re-tokenising the streamed text unless --use-server-token-count.
func parseAIPerf(data []byte) (Result, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Result{}, err
	}
	metrics := top
	if rec, ok := top["records"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(rec, &inner) == nil && len(inner) > 0 {
			metrics = inner
		}
	}
	stat := func(name string) (aiperfStat, bool) {
		var s aiperfStat
		raw, ok := metrics[name]
		if !ok || json.Unmarshal(raw, &s) != nil {
			return s, false
		}
		return s, true
	}
	r := Result{Tool: ToolAIPerf, Metrics: map[string]float64{}}
	r.ToolVersion = str(top["aiperf_version"])
	lat := func(ours, theirs string, percentiles ...string) {
		s, ok := stat(theirs)
		if !ok {
			return
		}
		f := toMs(s.Unit)
		pick := map[string]*float64{"mean": s.Avg, "p50": s.P50, "p95": s.P95, "p99": s.P99}
		for _, p := range percentiles {
			if v := pick[p]; v != nil {
				put(r.Metrics, ours+"_"+p+"_ms", *v*f, true)
			}
		}
	}
	lat("ttft", "time_to_first_token", "mean", "p50", "p95", "p99")
	lat("tpot", "inter_token_latency", "mean", "p50", "p95", "p99")
	lat("itl", "inter_chunk_latency", "mean", "p50")
	lat("latency", "request_latency", "mean", "p50", "p95", "p99")
	if s, ok := stat("output_token_throughput"); ok && s.Avg != nil {
		put(r.Metrics, OutTput, *s.Avg, true)
	}
	if s, ok := stat("request_throughput"); ok && s.Avg != nil {
		put(r.Metrics, ReqTput, *s.Avg, true)
	}
	if s, ok := stat("input_sequence_length"); ok && s.Avg != nil {
		r.InputTokens = round(*s.Avg)
	}
	osl, oslOK := stat("output_sequence_length")
	if oslOK && osl.Avg != nil {
		r.OutputTokens = round(*osl.Avg)
	}
	// The server's own counts (usage, AIPerf 0.13 on) are InferCrane's:
	// the prompt with its chat template, the output as generated.
	if s, ok := stat("usage_prompt_tokens"); ok && s.Avg != nil && *s.Avg > 0 {
		r.InputTokens = round(*s.Avg)
	}
	if s, ok := stat("usage_completion_tokens"); ok && s.Avg != nil && *s.Avg > 0 {
		r.OutputTokens = round(*s.Avg)
		if oslOK && osl.Avg != nil && math.Abs(*osl.Avg / *s.Avg - 1) > 0.01 {
			// Its ITL divides each request's decode time by its own
			// re-tokenised count, and its output throughput counts them.
			delete(r.Metrics, TPOTMean)
			delete(r.Metrics, TPOTP50)
			delete(r.Metrics, TPOTP95)
			delete(r.Metrics, TPOTP99)
			if v, ok := r.Metrics[OutTput]; ok {
				r.Metrics[OutTput] = v * *s.Avg / *osl.Avg
			}
			r.Notes = append(r.Notes, fmt.Sprintf("AIPerf re-tokenised the output to %.2f tokens a request where the server counted %.2f: its inter_token_latency divides by its own count, so the TPOT is left out (profile_export.jsonl gives it with the server's counts), and the output throughput is scaled to the server's count", *osl.Avg, *s.Avg))
		}
	}
	if s, ok := stat("request_count"); ok && s.Avg != nil {
		r.Requests = round(*s.Avg)
	}
	// The load and model from the recorded configuration.
	var cfg struct {
		Endpoint struct {
			ModelNames []string `json:"model_names"`
		} `json:"endpoint"`
		Loadgen map[string]json.RawMessage `json:"loadgen"`
		// AIPerf 0.13: models.items[].name and a list of phases.
		Models struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
		} `json:"models"`
		Phases []map[string]json.RawMessage `json:"phases"`
		Input  struct {
			RandomSeed *int64 `json:"random_seed"`
		} `json:"input"`
	}
	_ = json.Unmarshal(top["input_config"], &cfg)
	r.Seed = cfg.Input.RandomSeed
	if len(cfg.Endpoint.ModelNames) > 0 {
		r.Model = cfg.Endpoint.ModelNames[0]
	} else if len(cfg.Models.Items) > 0 {
		r.Model = cfg.Models.Items[0].Name
	}
	if cfg.Loadgen == nil {
		cfg.Loadgen = map[string]json.RawMessage{}
	}
	for _, ph := range cfg.Phases {
		switch str(ph["kind"]) {
		case "warmup":
			if _, set := cfg.Loadgen["warmup_request_count"]; !set {
				cfg.Loadgen["warmup_request_count"] = ph["requests"]
			}
		case "profiling":
			for ours, theirs := range map[string]string{"concurrency": "concurrency", "request_count": "requests", "request_rate": "rate"} {
				if _, set := cfg.Loadgen[ours]; !set && ph[theirs] != nil {
					cfg.Loadgen[ours] = ph[theirs]
				}
			}
			if v := ph["request_rate"]; v != nil {
				cfg.Loadgen["request_rate"] = v
			}
		}
	}
	if c, ok := num(cfg.Loadgen["concurrency"]); ok && c >= 1 {
		r.Concurrency = round(c)
	}
	if v, ok := num(cfg.Loadgen["request_rate"]); ok && v > 0 && !math.IsInf(v, 1) {
		r.RequestRate, r.Arrival = v, "poisson"
	}
	if v, ok := num(cfg.Loadgen["warmup_request_count"]); ok && v > 0 {
		r.Warmup = round(v)
	}
	if r.Requests == 0 {
		if v, ok := num(cfg.Loadgen["request_count"]); ok && v > 0 {
			r.Requests = round(v)
		}
	}
	r.GPU = aiperfGPU(top["telemetry_data"])
	if r.Model == "" {
		r.Model = str(top["model"])
	}
	r.Notes = append(r.Notes, "AIPerf's time_to_first_token is InferCrane's ttft, its inter_token_latency our tpot, its inter_chunk_latency our itl, its request_latency our latency; its output token counts are its own re-tokenisation of the streamed text unless it ran with --use-server-token-count")
	return r, nil
}

// aiperfGPU is the catalog name of the GPU AIPerf's telemetry saw.
func aiperfGPU(raw json.RawMessage) string {
	var t struct {
		Endpoints map[string]struct {
			GPUs map[string]struct {
				Name string `json:"gpu_name"`
			} `json:"gpus"`
		} `json:"endpoints"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return ""
	}
	for _, e := range t.Endpoints {
		for _, g := range e.GPUs {
			if n := GPUName(g.Name); n != "" {
				return n
			}
		}
	}
	return ""
}

// parseAIPerfRecords reads AIPerf's per-record JSON Lines export
// (profile_export.jsonl): each line a request's metadata, metrics and
// error. It computes the run's figures with InferCrane's definitions and
// percentiles (linear interpolation); the load is not recorded per
// record beyond the number of requests, so the concurrency is the most
// requests in flight at once.
func parseAIPerfRecords(data []byte) (Result, error) {
	r := Result{Tool: ToolAIPerf, Metrics: map[string]float64{}}
	type span struct{ start, end int64 }
	var ttft, tpot, lat []float64
	var spans []span
	var outTok float64
	var inSum, outSum, n, retokenised int
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec struct {
			Metadata struct {
				Phase string `json:"benchmark_phase"`
				Start *int64 `json:"request_start_ns"`
				End   *int64 `json:"request_end_ns"`
			} `json:"metadata"`
			Metrics map[string]struct {
				Value json.RawMessage `json:"value"`
				Unit  string          `json:"unit"`
			} `json:"metrics"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return r, fmt.Errorf("line %d: %v", i+1, err)
		}
		if p := rec.Metadata.Phase; p != "" && p != "profiling" {
			continue
		}
		if len(rec.Error) > 0 && string(rec.Error) != "null" {
			continue
		}
		val := func(name string) (float64, bool) {
			m, ok := rec.Metrics[name]
			if !ok {
				return 0, false
			}
			v, ok := num(m.Value)
			return v * toMs(m.Unit), ok
		}
		raw := func(name string) (float64, bool) {
			m, ok := rec.Metrics[name]
			if !ok {
				return 0, false
			}
			return num(m.Value)
		}
		n++
		if v, ok := val("time_to_first_token"); ok {
			ttft = append(ttft, v)
		}
		tpotRecorded, hasTPOT := val("inter_token_latency")
		if v, ok := val("request_latency"); ok {
			lat = append(lat, v)
		}
		// The server's counts (usage) are InferCrane's; AIPerf's own are
		// its re-tokenisation of the streamed text.
		out, outOK := raw("usage_completion_tokens")
		if !outOK || out < 1 {
			if out, outOK = raw("output_sequence_length"); !outOK {
				out, outOK = raw("output_token_count")
			}
		} else if theirs, ok := raw("output_sequence_length"); ok && theirs != out {
			retokenised++
		}
		if outOK {
			outSum += round(out)
			outTok += out
		}
		if v, ok := raw("usage_prompt_tokens"); ok && v > 0 {
			inSum += round(v)
		} else if v, ok := raw("input_sequence_length"); ok {
			inSum += round(v)
		}
		// TPOT is (latency - ttft) / (output tokens - 1) with the server's
		// count when the record has it.
		l, lok := val("request_latency")
		f, fok := val("time_to_first_token")
		switch {
		case lok && fok && outOK && out > 1:
			tpot = append(tpot, (l-f)/(out-1))
		case hasTPOT:
			tpot = append(tpot, tpotRecorded)
		}
		if s, e := rec.Metadata.Start, rec.Metadata.End; s != nil && e != nil && *e >= *s {
			spans = append(spans, span{*s, *e})
			first, last = min(first, *s), max(last, *e)
		}
	}
	if n == 0 {
		return r, errors.New("no succeeded profiling record")
	}
	r.Requests = n
	r.InputTokens, r.OutputTokens = round(float64(inSum)/float64(n)), round(float64(outSum)/float64(n))
	putSummary(r.Metrics, "ttft", ttft)
	putSummary(r.Metrics, "tpot", tpot)
	putSummary(r.Metrics, "latency", lat)
	r.TTFTsMs = ttft
	if last > first {
		window := float64(last-first) / 1e9
		put(r.Metrics, OutTput, outTok/window, true)
		put(r.Metrics, ReqTput, float64(n)/window, true)
	}
	// The most requests in flight at once.
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(spans))
	for _, s := range spans {
		evs = append(evs, ev{s.start, 1}, ev{s.end, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].d < evs[j].d
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	r.Concurrency = peak
	r.Notes = append(r.Notes, "AIPerf per-record export: figures recomputed from its records with the server's token counts where they are recorded (usage); tpot is (latency - ttft) / (output tokens - 1); the concurrency is the most requests it had in flight at once")
	if retokenised > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("AIPerf's own output count (its re-tokenisation) differs from the server's in %d of %d records; the server's is used", retokenised, n))
	}
	return r, nil
}

// putSummary puts the mean, p50, p95 and p99 of per-request figures v
// (milliseconds; sorted in place) as name_mean_ms and so on; nothing when
// v is empty.
func putSummary(m map[string]float64, name string, v []float64) {
	if len(v) == 0 {
		return
	}
	sort.Float64s(v)
	s := 0.0
	for _, x := range v {
		s += x
	}
	put(m, name+"_mean_ms", s/float64(len(v)), true)
	put(m, name+"_p50_ms", Percentile(v, 50), true)
	put(m, name+"_p95_ms", Percentile(v, 95), true)
	put(m, name+"_p99_ms", Percentile(v, 99), true)
}

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

// guideDist is one of GuideLLM's distribution summaries.
type guideDist struct {
	Count       float64            `json:"count"`
	Mean        *float64           `json:"mean"`
	Median      *float64           `json:"median"`
	TotalSum    *float64           `json:"total_sum"`
	Percentiles map[string]float64 `json:"percentiles"`
}

// guideTotals is a GuideLLM benchmark's requests by outcome.
type guideTotals struct {
	Successful int `json:"successful"`
	Errored    int `json:"errored"`
	Incomplete int `json:"incomplete"`
}

// guideScheduler is GuideLLM 0.8's scheduler_state: the requests it
// created and their outcomes.
type guideScheduler struct {
	Created    int `json:"created_requests"`
	Successful int `json:"successful_requests"`
	Errored    int `json:"errored_requests"`
	Cancelled  int `json:"cancelled_requests"`
}

// failedNote is the note on a result whose tool counted requests as not
// completed (Result.Failed): how many, and that the figures are the
// completed ones'.
func failedNote(tool, failed string, completed int) string {
	return fmt.Sprintf("%s counted %s beside the %d completed ones: the figures are the completed requests' (a request cut off when the benchmark ended counts as incomplete)", tool, failed, completed)
}

// guideMetric is metric name of a GuideLLM benchmark's metrics, the
// distribution over its successful requests; false when the report has
// none or holds something else under the name (GuideLLM 0.8 keeps counts,
// nulls and nested groups beside the distributions).
func guideMetric(metrics map[string]json.RawMessage, name string) (guideDist, bool) {
	var m struct {
		Successful *guideDist `json:"successful"`
	}
	if err := json.Unmarshal(metrics[name], &m); err != nil || m.Successful == nil {
		return guideDist{}, false
	}
	return *m.Successful, true
}

// putGuideDist puts a GuideLLM summary's mean, p50 (its median where it
// gives no percentiles) and p95 and p99 as ours_mean_ms and so on, its
// values times factor (1000 for seconds).
func putGuideDist(m map[string]float64, ours string, d guideDist, factor float64) {
	if v := d.Mean; v != nil {
		put(m, ours+"_mean_ms", *v*factor, true)
	}
	if v, ok := d.Percentiles["p50"]; ok {
		put(m, ours+"_p50_ms", v*factor, true)
	} else if v := d.Median; v != nil {
		put(m, ours+"_p50_ms", *v*factor, true)
	}
	for _, p := range []string{"p95", "p99"} {
		if v, ok := d.Percentiles[p]; ok {
			put(m, ours+"_"+p+"_ms", v*factor, true)
		}
	}
}

// guideRequest is one successful request of a GuideLLM 0.8 report
// (benchmarks[].requests.successful[]): the report keeps every request
// unless the run sampled them (--metrics sample_size).
type guideRequest struct {
	TTFTMs   *float64 `json:"time_to_first_token_ms"`
	ITLMs    *float64 `json:"inter_token_latency_ms"`
	LatencyS *float64 `json:"request_latency"`
	Output   *float64 `json:"output_tokens"`
}

// parseGuideLLM reads GuideLLM's report JSON: one result per benchmark
// (load point), in the layouts of GuideLLM 0.3 and 0.8. GuideLLM's
// inter_token_latency_ms of a request is (latency - ttft) / (output
// tokens - 1), our TPOT; its time_per_output_token_ms divides the whole
// latency (TTFT included) by the output tokens and is not used; its
// request_latency is in seconds. Where the report lists its requests
// (0.8), TTFT, TPOT and latency are summarised from them, since 0.8's
// inter_token_latency_ms summary weighs every token gap (a request of
// many tokens counts many times) where our TPOT weighs every request
// once; otherwise from the report's summaries.
func parseGuideLLM(data []byte) ([]Result, error) {
	var doc struct {
		Metadata   map[string]json.RawMessage `json:"metadata"`
		Benchmarks []struct {
			Duration *float64                   `json:"duration"`
			Config   map[string]json.RawMessage `json:"config"`
			Args     map[string]json.RawMessage `json:"args"`
			Metrics  map[string]json.RawMessage `json:"metrics"`
			Strategy json.RawMessage            `json:"strategy"`
			Worker   map[string]json.RawMessage `json:"worker"`
			Start    *float64                   `json:"start_time"`
			End      *float64                   `json:"end_time"`
			// RequestTotals counts the requests by outcome (0.3; 0.8 has
			// them as metrics.request_totals).
			RequestTotals *guideTotals `json:"request_totals"`
			// Scheduler counts what 0.8's scheduler created and what
			// became of it, cancelled requests included.
			Scheduler *guideScheduler `json:"scheduler_state"`
			Requests  struct {
				Successful []guideRequest `json:"successful"`
			} `json:"requests"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Benchmarks) == 0 {
		return nil, errors.New("the GuideLLM report has no benchmarks")
	}
	version := str(doc.Metadata["guidellm_version"])
	var out []Result
	for i, b := range doc.Benchmarks {
		r := Result{Tool: ToolGuideLLM, ToolVersion: version, Metrics: map[string]float64{}, Label: fmt.Sprintf("benchmark %d", i+1)}
		var backend map[string]json.RawMessage // 0.8: config.backend.model
		_ = json.Unmarshal(b.Config["backend"], &backend)
		for _, src := range []map[string]json.RawMessage{b.Config, b.Args, backend} {
			if r.Model == "" {
				r.Model = str(src["model"])
			}
		}
		if r.Model == "" {
			r.Model = str(b.Worker["backend_model"]) // 0.3: worker.backend_model
		}
		// The strategy (0.3: args.strategy): synchronous, concurrent
		// (streams), constant or poisson (rate), throughput (everything at
		// once).
		strat := b.Strategy
		for _, alt := range []json.RawMessage{b.Config["strategy"], b.Args["strategy"]} {
			if len(strat) == 0 {
				strat = alt
			}
		}
		var s map[string]json.RawMessage
		_ = json.Unmarshal(strat, &s)
		kind := str(s["type_"])
		if kind == "" {
			kind = str(s["type"])
		}
		totals := b.RequestTotals
		if totals == nil {
			var t guideTotals
			if json.Unmarshal(b.Metrics["request_totals"], &t) == nil {
				totals = &t
			}
		}
		switch sc := b.Scheduler; {
		case sc != nil && sc.Created > sc.Successful:
			// The scheduler's own account: every request it created that
			// did not succeed (errored, cancelled or left in flight).
			r.Failed = sc.Created - sc.Successful
			r.Notes = append(r.Notes, failedNote("GuideLLM", fmt.Sprintf("%d not successful of the %d requests its scheduler created (%d errored, %d cancelled)", r.Failed, sc.Created, sc.Errored, sc.Cancelled), sc.Successful))
		case totals != nil && totals.Errored+totals.Incomplete > 0:
			r.Failed = totals.Errored + totals.Incomplete
			r.Notes = append(r.Notes, failedNote("GuideLLM", fmt.Sprintf("%d errored and %d incomplete requests", totals.Errored, totals.Incomplete), totals.Successful))
		}
		ps, pok := guideMetric(b.Metrics, "prompt_token_count")
		os_, ook := guideMetric(b.Metrics, "output_token_count")
		if pok && ook && ps.Mean != nil && os_.Mean != nil {
			r.InputTokens, r.OutputTokens = round(*ps.Mean), round(*os_.Mean)
			r.Requests = round(os_.Count)
		}
		if reqs := b.Requests.Successful; len(reqs) > 0 {
			var ttft, tpot, lat []float64
			for _, q := range reqs {
				if q.TTFTMs != nil {
					ttft = append(ttft, *q.TTFTMs)
				}
				if q.ITLMs != nil && q.Output != nil && *q.Output > 1 {
					tpot = append(tpot, *q.ITLMs)
				}
				if q.LatencyS != nil {
					lat = append(lat, *q.LatencyS*1000)
				}
			}
			putSummary(r.Metrics, "ttft", ttft)
			putSummary(r.Metrics, "tpot", tpot)
			putSummary(r.Metrics, "latency", lat)
			r.TTFTsMs = ttft
			if r.Requests > len(reqs) {
				r.Notes = append(r.Notes, fmt.Sprintf("GuideLLM kept %d of the %d successful requests (sampled): TTFT, TPOT and latency are the sample's", len(reqs), r.Requests))
			}
		} else {
			if d, ok := guideMetric(b.Metrics, "time_to_first_token_ms"); ok {
				putGuideDist(r.Metrics, "ttft", d, 1)
			}
			if d, ok := guideMetric(b.Metrics, "inter_token_latency_ms"); ok {
				putGuideDist(r.Metrics, "tpot", d, 1)
				if r.Requests > 0 && d.Count > float64(r.Requests) {
					r.Notes = append(r.Notes, "the report lists no requests and its inter_token_latency_ms summary weighs every token gap: TPOT is token-weighted, not per request")
				}
			}
			if d, ok := guideMetric(b.Metrics, "request_latency"); ok {
				putGuideDist(r.Metrics, "latency", d, 1000)
			}
		}
		dur := 0.0
		if b.Duration != nil {
			dur = *b.Duration
		} else if b.Start != nil && b.End != nil {
			dur = *b.End - *b.Start
		}
		if ook && os_.TotalSum != nil && dur > 0 {
			put(r.Metrics, OutTput, *os_.TotalSum/dur, true)
		} else if ot, ok := guideMetric(b.Metrics, "output_tokens_per_second"); ok && ot.Mean != nil {
			put(r.Metrics, OutTput, *ot.Mean, true)
		}
		switch kind {
		case "synchronous":
			r.Concurrency = 1
		case "concurrent":
			if v, ok := num(s["streams"]); ok {
				r.Concurrency = round(v)
			}
		case "constant", "poisson", "async":
			if v, ok := num(s["rate"]); ok && v > 0 {
				r.RequestRate = v
				r.Arrival = map[bool]string{true: "poisson", false: "constant"}[kind == "poisson"]
			}
			if v, ok := num(s["max_concurrency"]); ok && v >= 1 {
				r.Concurrency = round(v)
			}
			var burst bool
			if json.Unmarshal(s["initial_burst"], &burst) == nil && burst && r.RequestRate >= 1 {
				r.Notes = append(r.Notes, fmt.Sprintf("GuideLLM sent an initial burst (initial_burst): the first %d requests at once, then %s arrivals at %g a second; a plan's open loop has no such burst", int(r.RequestRate), r.Arrival, r.RequestRate))
			}
		case "throughput":
			r.Concurrency = r.Requests
			if v, ok := num(s["max_concurrency"]); ok && v >= 1 {
				r.Concurrency = round(v)
			}
		}
		r.Label += " (" + kind + ")"
		r.Notes = append(r.Notes, "GuideLLM's time_to_first_token_ms is InferCrane's ttft, its inter_token_latency_ms our tpot (its time_per_output_token_ms includes the first token and is not used), its request_latency (seconds) our latency; output throughput is its output tokens over the benchmark's duration")
		out = append(out, r)
	}
	return out, nil
}

// parseScreen reads an earlier InferCrane screen document: per model its
// runtime ("vllm==0.22.1"), benchmark ("aiperf==0.12.0") and GPU request,
// per campaign the workload, aggregate and runs (either per model or in
// an environment block).
func parseScreen(data []byte) ([]Result, error) {
	type figures map[string]json.RawMessage
	type campaign struct {
		Profile     string  `json:"profile"`
		Recipe      string  `json:"recipe"`
		Concurrency int     `json:"concurrency"`
		Requests    int     `json:"request_count_per_run"`
		ProfileRuns int     `json:"profile_runs"`
		Command     string  `json:"command"`
		Aggregate   figures `json:"aggregate"`
		Runs        []figures
		Workload    struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			Concurrency  int `json:"concurrency"`
			Requests     int `json:"requests_per_run"`
		} `json:"workload"`
	}
	type env struct {
		GPURequest json.RawMessage `json:"gpu_request"`
		GPU        string          `json:"gpu"`
		Runtime    json.RawMessage `json:"runtime"`
		Benchmark  string          `json:"benchmark"`
	}
	var doc struct {
		Environment env `json:"environment"`
		Models      []struct {
			env
			Model     string     `json:"model"`
			Campaigns []campaign `json:"campaigns"`
		} `json:"models"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	gpuOf := func(e env) string {
		var s string
		var list []string
		if json.Unmarshal(e.GPURequest, &s) == nil {
			list = []string{s}
		} else {
			_ = json.Unmarshal(e.GPURequest, &list)
		}
		for _, x := range append(list, e.GPU) {
			if g := GPUName(x); g != "" {
				return g
			}
		}
		return ""
	}
	engineOf := func(e env) (string, string) {
		var s string
		if json.Unmarshal(e.Runtime, &s) == nil {
			if en, v, err := ParseEngine(s); err == nil {
				return en, v
			}
		}
		var o struct{ Engine, Version string }
		if json.Unmarshal(e.Runtime, &o) == nil && o.Engine != "" {
			return o.Engine, o.Version
		}
		return "", ""
	}
	fig := func(f figures) map[string]float64 {
		m := map[string]float64{}
		for _, k := range []string{TTFTP50, TTFTP95, TTFTP99, TPOTP50, TPOTP95, LatP50, LatP95, OutTput, ReqTput} {
			v, ok := num(f[k])
			put(m, k, v, ok)
		}
		return m
	}
	var out []Result
	for _, m := range doc.Models {
		for _, c := range m.Campaigns {
			r := Result{Tool: ToolScreen, Model: m.Model, Metrics: fig(c.Aggregate)}
			r.Label = m.Model + " " + c.Profile
			if r.GPU = gpuOf(m.env); r.GPU == "" {
				r.GPU = gpuOf(doc.Environment)
			}
			if r.Engine, r.EngineVersion = engineOf(m.env); r.Engine == "" {
				r.Engine, r.EngineVersion = engineOf(doc.Environment)
			}
			bench := m.Benchmark
			if bench == "" {
				bench = doc.Environment.Benchmark
			}
			if tool, v, err := ParseEngine(bench); err == nil {
				r.Tool, r.ToolVersion = ToolScreen+" via "+tool, v
			}
			r.InputTokens, r.OutputTokens = c.Workload.InputTokens, c.Workload.OutputTokens
			r.Concurrency = max(c.Concurrency, c.Workload.Concurrency)
			r.Requests = max(c.Requests, c.Workload.Requests)
			r.Warmup = flagValue(c.Command, "--warmup-request-count")
			for _, run := range c.Runs {
				r.RunMetrics = append(r.RunMetrics, fig(run))
			}
			r.Runs = max(len(c.Runs), c.ProfileRuns)
			r.Notes = append(r.Notes, "the screen's figures came from AIPerf's per-record exports: its inter_token_latency is our tpot; percentiles are nearest-rank")
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the screen document has no campaigns")
	}
	return out, nil
}

// flagValue is the integer value of flag in a command line (0 if absent).
func flagValue(command, flag string) int {
	f := strings.Fields(command)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == flag {
			v, _ := strconv.Atoi(f[i+1])
			return v
		}
	}
	return 0
}
