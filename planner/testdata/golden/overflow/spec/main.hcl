# input_tokens counts the prompt as the calibrated load generator sends it
# (chat template included), so long_prefill, which fills the 8192-token
# window exactly, fits; too_long does not (6000 + 2300 > 8192), whatever its
# template_headroom (counted only for uncalibrated endpoint lanes). Plan
# reports it before any GPU time is spent.
model "qwen06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 8192
}

gpu "l40s" {
  type = "L40S"
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  args    = ["--max-model-len", "8192"]
}

executor "modal" {
  type = "modal"
}

shape "long_prefill" {
  input_tokens      = 7680
  output_tokens     = 512
  template_headroom = 0
  concurrency       = 4
  requests          = 32
}

shape "too_long" {
  input_tokens      = 6000
  output_tokens     = 2300
  template_headroom = 512
  concurrency       = 4
  requests          = 32
}

screen "overflow" {
  models   = [model.qwen06]
  shapes   = [shape.long_prefill, shape.too_long]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  executor = executor.modal
  runs     = 5
  seed     = 1
}
