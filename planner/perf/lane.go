package perf

import (
	"fmt"
	"math"
)

// Lane is everything the performance model needs about one lane, resolved
// once by the planner after every override (the model block's architecture
// attributes, the gpu block's efficiency factors and price, the runtime's
// dtype, memory utilisation and engine settings, a calibration). The plan
// carries it in each lane, so the estimator (in virtual time) and the
// simulated engine (in real time) run the same scheduler on the same
// numbers and no later package re-derives them from the spec or the
// catalog.
type Lane struct {
	// Model is the architecture with the model block's overrides applied.
	Model ModelArch `json:"model"`
	// Hardware is the deployment's GPUs with the resolved assumptions.
	Hardware Hardware `json:"hardware"`
	// Engine is the serving engine's scheduler settings with the KV cache
	// sized for the hardware.
	Engine EngineConfig `json:"engine"`
	// Runtime says where each engine setting came from (the runtime
	// block, its args, the engine version's defaults); nil outside plans.
	Runtime *RuntimeSettings `json:"runtime,omitempty"`
	// StartRisk, when set, says why the engine may refuse to start: one
	// request of max model len fits the KV cache only if the engine's
	// memory besides weights and KV cache (activation peak, CUDA context)
	// is under the catalog's activation reserve (NewLane).
	StartRisk string `json:"start_risk,omitempty"`
}

// NewLane resolves a lane's performance model: it sizes the KV cache from the hardware
// when engine.KVBlocks is zero, and refuses settings the engine would
// refuse at start-up (a cache smaller than one context of maxModelLen,
// a zero budget or batch cap).
//
// vLLM checks at start-up that one request of max model len fits the KV
// cache it profiled, whose size depends on its measured activation peak
// and non-torch memory; the catalog's reserve for them (1.5 GB) is an
// estimate that published profiles put between under 0.28 GiB (GPUStack's
// Qwen3-32B start on one H100 at vLLM 0.11's default context) and 3.05
// GiB (vLLM PR 10511, Llama 3 8B on an H100). A KV cache sized from the
// hardware that holds one such request only without the reserve is
// therefore not refused: the lane plans with StartRisk set, and with the
// smallest cache the engine starts with (one such request), since its
// figures are those of a server that started.
//
// The reserve is at least the engine's start-up profile of its sampler
// (SamplerProfileGB), which grows with the vocabulary and the batch cap.
func NewLane(arch ModelArch, hw Hardware, engine EngineConfig, maxModelLen int) (Lane, error) {
	engine.BlockSize = engine.blockSize()
	if hw.Stages > 1 {
		// A step is a cycle of Stages micro-batches, each with the
		// runtime's budget (Hardware.Stages).
		engine.MaxBatchedTokens *= hw.Stages
	}
	if !engine.FullLengthKV && arch.SlidingWindow > 0 && arch.SlidingLayers > 0 && arch.SlidingLayers <= arch.Layers && engine.SlidingWindow == 0 {
		engine.SlidingWindow, engine.SlidingLayers, engine.KVLayers = arch.SlidingWindow, arch.SlidingLayers, arch.Layers
	}
	hw.Assume.ActivationReserveGB = max(hw.Assume.ActivationReserveGB, SamplerProfileGB(arch, engine.MaxNumSeqs))
	sized := engine.KVBlocks == 0
	if sized {
		engine.KVBlocks = int(KVCapacityTokens(arch, hw)) / engine.BlockSize
	}
	s := Lane{Model: arch, Hardware: hw, Engine: engine}
	seqs := ""
	if src := s.ReserveSource(); src != "" {
		seqs = fmt.Sprintf("; the reserve is %s, which a lower --max-num-seqs shrinks", src)
	}
	bare := hw
	bare.Assume.ActivationReserveGB = 0
	switch need := engine.KVTokens(maxModelLen); {
	case engine.MaxNumSeqs < 1 || engine.MaxBatchedTokens < 1:
		return s, fmt.Errorf("max num seqs (%d) and max num batched tokens (%d) must be at least 1", engine.MaxNumSeqs, engine.MaxBatchedTokens)
	case float64(engine.KVBlocks*engine.BlockSize) < need && sized && KVCapacityTokens(arch, bare) >= need:
		s.StartRisk = fmt.Sprintf("the KV cache of %s on %dx %s holds %d tokens after the %.1f GB activation reserve, fewer than max model len %d needs (%.0f), which fit only if the engine's activation peak and CUDA context take under %.2f GB: vLLM may refuse to start; lower --max-model-len or raise --gpu-memory-utilization to be sure%s",
			arch.ID, max(hw.Count, 1), hw.GPU.Name, engine.KVBlocks*engine.BlockSize, hw.Assume.ActivationReserveGB, maxModelLen, need,
			(KVCapacityTokens(arch, bare)-need)*arch.KVBytesPerTokenPerGPU(hw)/1e9, seqs)
		// The estimate is that of a server that started, and one that
		// started profiled a KV cache of at least one request of max model
		// len: the lane plans with that cache.
		s.Engine.KVBlocks = int(math.Ceil(need / float64(engine.BlockSize)))
	case float64(engine.KVBlocks*engine.BlockSize) < need:
		return s, &KVTooSmallError{Holds: engine.KVBlocks * engine.BlockSize, MaxModelLen: maxModelLen,
			msg: fmt.Sprintf("the KV cache of %s on %dx %s holds %d tokens, fewer than max model len %d needs (%.0f); lower --max-model-len, raise --gpu-memory-utilization or use a larger GPU%s",
				arch.ID, max(hw.Count, 1), hw.GPU.Name, engine.KVBlocks*engine.BlockSize, maxModelLen, need, seqs)}
	case !engine.ChunkedPrefill && engine.MaxBatchedTokens < maxModelLen:
		return s, fmt.Errorf("without chunked prefill max num batched tokens (%d) must be at least max model len (%d), or no long prompt could ever be prefilled; raise --max-num-batched-tokens or enable chunked prefill", engine.MaxBatchedTokens, maxModelLen)
	}
	return s, nil
}

// KVTooSmallError is NewLane's refusal of a KV cache that cannot hold one
// request of max model len, which vLLM refuses at start-up.
type KVTooSmallError struct {
	// Holds is the cache's size in tokens; MaxModelLen the context it
	// could not hold.
	Holds, MaxModelLen int
	msg                string
}

func (e *KVTooSmallError) Error() string { return e.msg }

// ReserveSource says where the lane's activation reserve comes from when
// it is the engine's start-up profile of its sampler (SamplerProfileGB)
// rather than the catalog's figure; "" otherwise.
func (s *Lane) ReserveSource() string {
	p := SamplerProfileGB(s.Model, s.Engine.MaxNumSeqs)
	if p <= 0 || p != s.Hardware.Assume.ActivationReserveGB {
		return ""
	}
	return fmt.Sprintf("the sampler's start-up profile: %d sequences x %d vocabulary entries", s.Engine.MaxNumSeqs, s.Model.Vocab)
}

// StepSeconds is the duration of step st on the server: its tokens'
// matrix multiplies, the query-key pairs its attention computes
// (Step.Attended) and the KV cache it reads (stepCost).
func (s *Lane) StepSeconds(st *Step) float64 {
	tokens := st.PrefillTokens + st.DecodeSeqs
	if tokens <= 0 {
		return 0
	}
	return s.Model.stepCost(s.Hardware, tokens, len(st.Seqs)).at(st.KVTokens, st.Attended)
}

// DecodeStep is a step that decodes a token for each of concurrency
// requests (0: as many as the engine batches) holding ctx tokens of
// context each, at most the engine's batch and what its KV cache holds:
// the step's sequences and its parts (StepPartsOf).
func (s *Lane) DecodeStep(concurrency, ctx int) (int, StepParts) {
	ctx = max(ctx, 1)
	seqs := min(s.Engine.MaxNumSeqs, max(s.Engine.KVBlocks*s.Engine.BlockSize/ctx, 1))
	if concurrency > 0 {
		seqs = min(seqs, concurrency)
	}
	return seqs, StepPartsOf(s.Model, s.Hardware, 0, 0, seqs, float64(seqs*ctx))
}

// PrefillChunk is a step that prefills one prompt of input tokens, at
// most the step's token budget: the chunk's tokens and the step's parts
// (StepPartsOf).
func (s *Lane) PrefillChunk(input int) (int, StepParts) {
	chunk := min(max(input, 1), s.Engine.MaxBatchedTokens)
	return chunk, StepPartsOf(s.Model, s.Hardware, chunk, 1, 0, float64(chunk))
}

// FrontEndBusySeconds is the time the front end (one API server process)
// spends on request q: its way in (the request overhead) and the
// streaming of its output (FrontEndTokenUs a token). The front end serves
// requests one at a time (Engine.Arrive), so a burst enters the engine at
// its pace; 0 when Assumptions.FrontEndTokenUs is 0 (the front end is
// not a queue).
func (s *Lane) FrontEndBusySeconds(q *Seq) float64 {
	tok := s.Hardware.Assume.FrontEndTokenUs
	if tok <= 0 {
		return 0
	}
	return s.RequestOverheadSeconds() + float64(q.Output)*tok/1e6
}

// FrontEndAdmitSeconds is a batching front end's time to admit one
// request (Assumptions.FrontEndAdmitUs; 0: the front end does not batch).
// Such a front end (vLLM before 0.8) admits the requests sent while it is
// busy one after another and hands them to the engine together when its
// busy period ends (Engine.Arrive): a burst of n requests enters the
// engine n admissions after it was sent, in one step's queue.
func (s *Lane) FrontEndAdmitSeconds() float64 { return s.Hardware.Assume.FrontEndAdmitUs / 1e6 }

// RequestOverheadSeconds is the fixed time between a request's send and
// its entering the engine (HTTP, chat template, tokenisation); when the
// engine takes it into a step is Engine's rule.
func (s *Lane) RequestOverheadSeconds() float64 { return s.Hardware.Assume.RequestOverheadMs / 1000 }

// RequestDelaySeconds is the time between the send of request n (Seq.Index:
// its number in its run, as the load generator numbers it) and its
// entering the engine: the
// overhead (RequestOverheadSeconds, the median delay) spread by the
// front end's and the host's timing noise, an exponential of mean
// Assumptions.RequestJitterMs shifted by its median so the median delay
// stays the overhead (never below 0; no spread when the jitter is 0, the
// catalog's value). The draws come from the golden-ratio sequence instead
// of random numbers, so a run's delays are close to the distribution's
// quantiles, and both clocks give request n the same one.
func (s *Lane) RequestDelaySeconds(n int) float64 {
	d := s.RequestOverheadSeconds()
	if jitter := s.Hardware.Assume.RequestJitterMs / 1000; jitter > 0 {
		u := math.Mod(float64(n+1)*goldenFraction, 1)
		d += jitter * (-math.Log(1-u) - math.Ln2)
	}
	return math.Max(d, 0)
}

// goldenFraction is the golden ratio's fractional part: its multiples
// modulo 1 spread over [0, 1) as evenly as any sequence can.
const goldenFraction = 0.6180339887498949
