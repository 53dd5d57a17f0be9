# The design's example screen with the trace percentiles written in:
# two Qwen3 models on one L40S each, vLLM 0.22.1 on Modal.
locals {
  ctx      = 8192
  headroom = 512
}

model "qwen06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = local.ctx
}

model "qwen17" {
  id          = "Qwen/Qwen3-1.7B"
  revision    = "70d244cc86ccca08cf5af4e1e306ecf908b1ad5e"
  max_context = local.ctx
}

gpu "l40s" {
  type = "L40S"
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  dtype   = "bfloat16"
  args    = ["--max-model-len", tostring(local.ctx)]
}

executor "modal" {
  type    = "modal"
  timeout = "30m"
}

shape "interactive" {
  input_tokens      = 1129
  output_tokens     = 349
  concurrency       = 8
  requests          = 32
  template_headroom = local.headroom
}

shape "decode_heavy" {
  input_tokens      = 1129
  output_tokens     = 2048
  concurrency       = 4
  requests          = 32
  template_headroom = local.headroom
}

screen "qwen_l40s" {
  models   = [model.qwen06, model.qwen17]
  shapes   = [shape.interactive, shape.decode_heavy]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  executor = executor.modal
  runs     = 2
  seed     = 17
  baseline = model.qwen17

  selection_boundary = "Performance-only screening; quality is not measured."
}
