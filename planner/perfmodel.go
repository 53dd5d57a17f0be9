package planner

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/arch"
	"github.com/infercrane/infercrane/planner/load"
	"github.com/infercrane/infercrane/planner/perf"
)

// resolvePerf resolves the lane's runtime settings and performance model.
// A runtime arg that cannot be parsed or an engine that would refuse to
// start is kept in l.perfErr for preflight.
func resolvePerf(l *lanePlan) {
	if !l.hwOK {
		return
	}
	in := l.Inputs
	rb := in.Runtime
	if l.blocks.runtime == nil {
		rb = engine.Runtime{} // no block: every setting the engine version's default
	}
	// The engine runs with the context it enforces (the model's
	// max_context, --max-model-len, else the model's positions, as vLLM
	// defaults it): its budget without chunked prefill and its start-up
	// check of the KV cache follow from it.
	maxLen := engineMaxModelLen(l)
	rs, err := perf.ResolveRuntime(rb, l.hw.GPU, l.hw.Count, maxLen)
	if err != nil {
		l.perfErr = err
		return
	}
	l.settings = &rs
	others := max(rs.PipelineParallel, 1) * max(rs.DataParallel, 1) // the parallel sizes besides tensor parallelism
	if need := rs.GPUs(); need > max(l.hw.Count, 1) {
		what := fmt.Sprintf("tensor parallel size %d", rs.TensorParallel)
		if rs.PipelineParallel > 1 {
			what += fmt.Sprintf(" times pipeline parallel size %d", rs.PipelineParallel)
		}
		if rs.DataParallel > 1 {
			what += fmt.Sprintf(" times data parallel size %d", rs.DataParallel)
		}
		fix := "a smaller --tensor-parallel-size"
		if others > 1 {
			fix = "smaller parallel sizes"
		}
		if others > 1 && rs.Sources["tensor_parallel_size"] == "gpu count" && l.hw.Count%others == 0 {
			// The executors pass --tensor-parallel-size as the gpu count
			// unless the runtime's args set it.
			fix = fmt.Sprintf("--tensor-parallel-size %d in the runtime's args (the executors pass the gpu count, %d, unless the args set it)", l.hw.Count/others, l.hw.Count)
		}
		l.perfErr = fmt.Errorf("%s needs %d GPUs, and the gpu block gives %d; set count = %d in the gpu block or %s", what, need, max(l.hw.Count, 1), need, fix)
		return
	}
	var c arch.Config // a model without a config.json: no checkpoint quantization
	if p := l.blocks.config.pinned; p != nil {
		c = p.Config
	}
	prec, err := perf.ResolvePrecision(c, in.RuntimeDtype, rs, l.hw.GPU)
	if err != nil {
		l.perfErr = err
		return
	}
	if v := arch.Methods[prec.Quantization].MinVersion; v != "" && orDefault(in.RuntimeEngine, "vllm") == "vllm" && !perf.VersionAtLeast(in.RuntimeVersion, v) {
		l.perfErr = fmt.Errorf("quantization %q needs %s %s or newer; the runtime pins %s", prec.Quantization, orDefault(in.RuntimeEngine, "vllm"), v, in.RuntimeVersion)
		return
	}
	l.hw = l.hw.WithPrecision(prec)
	if len(l.missing) > 0 {
		return // the engine's settings are known, its performance is not
	}
	if err := l.arch.CheckTensorParallel(rs.TensorParallel); err != nil {
		l.perfErr = err
		return
	}
	rs.Assume(&l.hw.Assume, l.hw.GPU)
	hw := l.hw
	hw.Count, hw.Stages = rs.TensorParallel, rs.PipelineParallel
	srv, err := perf.NewLane(l.arch, hw, rs.Engine(), maxLen)
	var kv *perf.KVTooSmallError
	if errors.As(err, &kv) && in.Capabilities.Simulated && !contextStated(in) {
		// The simulated engine serves the screen's requests whatever
		// vLLM's default would do; preflight says what a real server
		// would need.
		l.unstartedAt = kv.Holds
		srv, err = perf.NewLane(l.arch, hw, rs.Engine(), 0)
	}
	if err != nil {
		l.perfErr = err
		return
	}
	srv.Runtime = &rs
	l.Perf = &srv
}

// estimateKey identifies a virtual-time estimate: lanes with equal keys
// (the same model, hardware, engine and load in several screens) share one.
// It is the SHA-256 of the JSON of these inputs (encoded into the hash: a
// plan of 10,000 lanes kept 25 MB of keys).
func estimateKey(p *perf.Lane, l perf.Load, workload string, runs int) [sha256.Size]byte {
	l.Sizes, l.WarmupSizes = nil, nil
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(struct {
		M perf.ModelArch
		H perf.Hardware
		E perf.EngineConfig
		L perf.Load
		W string
		R int
	}{p.Model, p.Hardware, p.Engine, l, workload, runs})
	return [sha256.Size]byte(h.Sum(nil))
}

// PerfLoad is the load the estimator simulated for the lane's run 1 (see
// laneLoad): what the load generator sends, as the performance model
// takes it.
func (l *Lane) PerfLoad() perf.Load {
	ld, _ := laneLoad(l.Inputs, l.Perf != nil && l.Perf.Engine.PrefixCaching)
	return ld
}

// laneLoad is the load generator's side of a lane's runs (run 1's seed):
// the shape's fixed sizes or, for a drawn workload, the sequence of sizes
// the load generator will send (planner/load, the same draws), each with
// the prompt prefix an engine with prefix caching finds cached. A
// session's later turns are follow-ups: the virtual closed loop sends each
// on its session's stream once the turn before it is answered, with the
// conversation so far (earlier prompts and answers) as its cached prefix.
func laneLoad(in LaneInputs, prefixCaching bool) (perf.Load, string) {
	l := perf.Load{
		InputTokens: in.InputTokens, OutputTokens: in.OutputTokens,
		Concurrency: in.Concurrency, RequestRate: in.RequestRate, Arrival: in.Arrival, Burstiness: in.Burstiness,
		Requests: in.Requests, Warmup: in.Warmup, Seed: in.Seed,
		Curve: in.ArrivalCurve, CurveStepSeconds: in.ArrivalCurveStepSeconds,
	}
	w := in.Workload
	if !w.Active() {
		return l, ""
	}
	key, _ := json.Marshal(w)
	seq := w.Sequence(in.Seed, in.Requests, in.InputTokens, in.OutputTokens)
	warm := w.Warmup(in.Seed, in.Warmup, in.InputTokens, in.OutputTokens)
	var warmCached, cached []int
	if prefixCaching {
		warmCached, cached = load.CachedTokens(warm, seq, w.BlockSize)
	}
	// Prefix streams: a group's (the same in warm-up and measured
	// requests), and a conversation's, which a turn that lost its history
	// to clipping starts afresh.
	streams := uint64(0)
	sizes := func(rs []load.Request, cached []int) []perf.RequestSize {
		out := make([]perf.RequestSize, len(rs))
		for i, r := range rs {
			out[i] = perf.RequestSize{Input: r.Input, Output: r.Output, FollowUp: r.Turn > 0}
			if cached != nil {
				out[i].Cached = cached[i]
			}
			switch {
			case r.Group >= 0:
				out[i].Prefix, out[i].PrefixTokens = 1<<40+uint64(r.Group), r.Shared
			case w.Session != nil:
				if r.Turn == 0 || r.History == 0 {
					streams++
				}
				out[i].Prefix, out[i].PrefixTokens = 2<<40+streams, r.Input+r.Output
			}
		}
		return out
	}
	l.Sizes = sizes(seq, cached)
	if in.Warmup > 0 {
		l.WarmupSizes = sizes(warm, warmCached)
	}
	if prefixCaching {
		key = append(key, " prefix-caching"...)
	}
	return l, string(key)
}
