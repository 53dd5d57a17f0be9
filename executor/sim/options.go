package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/perf"
)

// Timing modes of the simulated engine.
const (
	// TimingConstant gives every request exactly Options.TTFT, then one
	// token every Options.ITL, whatever the load: the ground truth the load
	// generator is tested against.
	TimingConstant = "constant"
	// TimingModel runs a continuous-batching scheduler whose step time comes
	// from the planner's roofline model (planner.StepSeconds) for Options.ModelID
	// on Options.GPU.
	TimingModel = "model"
)

// Options configures a simulated engine. The zero value of a field means its
// documented default, except TTFT and ITL, where zero means no delay.
type Options struct {
	// Model is the served model name (/v1/models, the "model" of requests);
	// default ModelID, or "sim" when that is empty too.
	Model string
	// MaxModelLen is the context window, prompt plus output; default 8192.
	MaxModelLen int
	// ContextOverflow is ContextClamp (default: vLLM 0.32 lowers max_tokens
	// to the room the prompt leaves and answers 200) or ContextReject (older
	// vLLM: HTTP 400 when prompt plus max_tokens exceeds MaxModelLen).
	ContextOverflow string
	// Version is what /version reports and system_fingerprint carries;
	// default DefaultVersion.
	Version string
	// Timing is TimingConstant (default) or TimingModel.
	Timing string
	// TTFT and ITL are the constant mode's time to first token and
	// inter-token latency.
	TTFT, ITL time.Duration
	// ModelID names the architecture in the planner's catalog (model mode), e.g.
	// "Qwen/Qwen3-0.6B".
	ModelID string
	// GPU is the planner's catalog GPU (model mode), e.g. "L40S"; GPUCount GPUs
	// serve with tensor parallelism (default 1).
	GPU      string
	GPUCount int
	// Runtime is the deployment's runtime. Model mode reads its limits:
	// MaxNumSeqs caps the running batch (default 256), MaxBatchedTokens is
	// the token budget of one step (default 8192) and GPUMemoryUtil, the
	// fraction of device memory the engine may use (default 0.9), sizes
	// the KV cache.
	engine.Runtime
	// MaxWaiting caps the waiting queue in model mode; a request that finds
	// it full is answered 503. Zero means unlimited.
	MaxWaiting int
	// Seed makes generated text and fault draws deterministic.
	Seed int64
	// Faults injects failures for tests.
	Faults Faults
	// MaxBodyBytes bounds a request body (default 4 MiB, far above any
	// prompt a context window holds); a larger one is answered 413 after
	// at most that many bytes were read.
	MaxBodyBytes int64
	// ReadHeaderTimeout bounds reading a request's headers (default 10s)
	// and BodyTimeout its body (default 30s): a client that trickles
	// either is cut off (slow-loris), 408 for a body.
	ReadHeaderTimeout, BodyTimeout time.Duration
	// Speedup divides simulated time in model mode so tests run fast
	// (default 1: real time).
	Speedup float64
	// Server is the resolved performance model of model mode: the model's
	// architecture, the hardware with its assumptions after every override
	// and calibration, and the engine settings (chunked prefill, prefix
	// caching, KV cache size). The sim executor passes the plan's, so the
	// engine reproduces the plan's estimate. When set it replaces ModelID's
	// and GPU's catalog defaults, GPUCount, MaxNumSeqs, MaxBatchedTokens and
	// GPUMemoryUtil.
	Server *perf.Lane
	// PrefixCaching reuses the KV of cached prompt prefixes in whole blocks
	// of BlockSize tokens (default 16), keeping at most PrefixCacheBlocks
	// blocks (0: unbounded), as vLLM's --enable-prefix-caching does.
	PrefixCaching     bool
	BlockSize         int
	PrefixCacheBlocks int
	// PromptTokensDetails reports usage.prompt_tokens_details.cached_tokens
	// (vLLM's --enable-prompt-tokens-details); off, the details are null.
	PromptTokensDetails bool
}

// Faults describes injected failures. Request numbers count the generation
// requests the engine received, from 1.
type Faults struct {
	// FailRate is the fraction of generation requests answered with
	// FailStatus instead of being served (drawn deterministically from Seed).
	FailRate float64
	// FailStatus is 429, 500 or 503 (default 503).
	FailStatus int
	// FailAt answers the request with the given number with the given
	// status, e.g. {3: 429, 7: 500}.
	FailAt map[int]int
	// CutAfter breaks every streamed response after this many tokens (the
	// connection is dropped without [DONE]); zero disables it.
	CutAfter int
	// StallAfter and StallFor pause every stream for StallFor after
	// StallAfter tokens.
	StallAfter int
	StallFor   time.Duration
	// SlowStart keeps /health (and generation) answering 503 for this long
	// after the engine starts, like a server still loading weights.
	SlowStart time.Duration
	// CrashAfter crashes the engine when it receives generation request
	// number CrashAfter+1: every open connection is dropped and the engine
	// serves nothing more (the CLI process exits with status 3).
	CrashAfter int
}

// withDefaults fills defaults and validates, returning errors that say what
// to change.
func (o Options) withDefaults() (Options, error) {
	if o.Timing == "" {
		o.Timing = TimingConstant
	}
	if o.Model == "" {
		o.Model = o.ModelID
	}
	if o.Model == "" {
		o.Model = "sim"
	}
	if o.MaxModelLen == 0 {
		o.MaxModelLen = 8192
	}
	if o.ContextOverflow == "" {
		o.ContextOverflow = ContextClamp
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.GPUCount == 0 {
		o.GPUCount = 1
	}
	if o.MaxNumSeqs == 0 {
		o.MaxNumSeqs = 256
	}
	if o.MaxBatchedTokens == 0 {
		o.MaxBatchedTokens = 8192
	}
	if o.GPUMemoryUtil == 0 {
		o.GPUMemoryUtil = 0.9
	}
	if o.BlockSize == 0 {
		o.BlockSize = 16
	}
	if o.BlockSize < 0 || o.PrefixCacheBlocks < 0 {
		return o, fmt.Errorf("block size %d and prefix cache blocks %d must not be negative", o.BlockSize, o.PrefixCacheBlocks)
	}
	if o.Speedup == 0 {
		o.Speedup = 1
	}
	if o.Faults.FailStatus == 0 {
		o.Faults.FailStatus = 503
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.BodyTimeout == 0 {
		o.BodyTimeout = 30 * time.Second
	}
	if o.MaxBodyBytes < 0 || o.ReadHeaderTimeout < 0 || o.BodyTimeout < 0 {
		return o, fmt.Errorf("max body bytes, read header timeout and body timeout must not be negative")
	}
	switch {
	case o.Timing != TimingConstant && o.Timing != TimingModel:
		return o, fmt.Errorf("timing %q is not known; use %q or %q", o.Timing, TimingConstant, TimingModel)
	case o.ContextOverflow != ContextClamp && o.ContextOverflow != ContextReject:
		return o, fmt.Errorf("context overflow policy %q is not known; use %q (vLLM 0.32: shorten max_tokens) or %q (older vLLM: answer 400)", o.ContextOverflow, ContextClamp, ContextReject)
	case o.MaxModelLen < 2:
		return o, fmt.Errorf("max model len %d is too small; use at least 2", o.MaxModelLen)
	case o.TTFT < 0 || o.ITL < 0:
		return o, fmt.Errorf("ttft and itl must not be negative")
	case o.GPUCount < 0 || o.MaxNumSeqs < 0 || o.MaxBatchedTokens < 0 || o.MaxWaiting < 0:
		return o, fmt.Errorf("gpu count, max num seqs, max batched tokens and max waiting must not be negative")
	case o.GPUMemoryUtil <= 0 || o.GPUMemoryUtil > 1:
		return o, fmt.Errorf("gpu memory utilization %g must be in (0, 1]", o.GPUMemoryUtil)
	case o.Speedup <= 0:
		return o, fmt.Errorf("speedup %g must be positive", o.Speedup)
	case o.Faults.FailRate < 0 || o.Faults.FailRate > 1:
		return o, fmt.Errorf("fail rate %g must be in [0, 1]", o.Faults.FailRate)
	case o.Faults.CutAfter < 0 || o.Faults.StallAfter < 0 || o.Faults.StallFor < 0 || o.Faults.SlowStart < 0 || o.Faults.CrashAfter < 0:
		return o, fmt.Errorf("fault counts and durations must not be negative")
	}
	if err := checkFailStatus(o.Faults.FailStatus); err != nil {
		return o, err
	}
	for n, st := range o.Faults.FailAt {
		if n < 1 {
			return o, fmt.Errorf("fail-at request number %d must be at least 1", n)
		}
		if err := checkFailStatus(st); err != nil {
			return o, err
		}
	}
	if o.Timing == TimingModel {
		if o.MaxBatchedTokens < 1 || o.MaxNumSeqs < 1 {
			return o, fmt.Errorf("model mode needs max num seqs and max batched tokens of at least 1")
		}
		if _, err := o.server(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Validate reports whether NewEngine would accept the options, with an error
// that names what to change.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

func checkFailStatus(st int) error {
	switch st {
	case 429, 500, 503:
		return nil
	}
	return fmt.Errorf("injected failure status %d is not supported; use 429, 500 or 503", st)
}

// server resolves model mode's performance model: Options.Server when
// set, else ModelID and GPU through the planner's catalog with its default
// assumptions and the engine settings of the options (chunked prefill on,
// as vLLM's v1 engine), refusing what vLLM refuses at start-up.
func (o Options) server() (perf.Lane, error) {
	if o.Server != nil {
		s := *o.Server // NewLane sizes a KV cache of 0 blocks from the hardware
		return perf.NewLane(s.Model, s.Hardware, s.Engine, o.MaxModelLen)
	}
	m, ok := perf.LookupModel(o.ModelID)
	if !ok {
		return perf.Lane{}, fmt.Errorf("model mode needs a catalog model id, got %q; known: %s", o.ModelID, strings.Join(perf.ModelIDs(), ", "))
	}
	if m.MaxPositions > 0 && o.MaxModelLen > m.MaxPositions {
		return perf.Lane{}, fmt.Errorf("max model len %d exceeds %s's %d positions; lower --max-model-len", o.MaxModelLen, m.ID, m.MaxPositions)
	}
	g, ok := perf.LookupGPU(o.GPU)
	if !ok {
		return perf.Lane{}, fmt.Errorf("model mode needs a catalog GPU, got %q; known: %s", o.GPU, strings.Join(perf.GPUNames(), ", "))
	}
	a := perf.DefaultAssumptions(g)
	a.GPUMemoryUtilization = o.GPUMemoryUtil
	hw := perf.Hardware{GPU: g, Count: max(o.GPUCount, 1), BytesPerElem: 2, Assume: a}
	return perf.NewLane(m, hw, perf.EngineConfig{MaxNumSeqs: o.MaxNumSeqs, MaxBatchedTokens: o.MaxBatchedTokens, ChunkedPrefill: true,
		PrefixCaching: o.PrefixCaching, BlockSize: o.BlockSize}, o.MaxModelLen)
}
