# The smallest real check of the modal executor: one small model on one L4
# GPU on Modal, one short shape, one run. It costs a few cents (an L4 is
# $0.000222 per second; the sandbox lives a few minutes, mostly starting
# vLLM) and proves the whole path against Modal itself: the image, the GPU,
# /health, the load generator inside the sandbox, the records coming back,
# and teardown.

infercrane {
  required_version = ">= 0.1"
}

model "qwen06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}

gpu "l4" {
  type = "L4"
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  dtype   = "bfloat16"
}

executor "modal" {
  type           = "modal"
  timeout        = "15m" # Modal stops the sandbox after this, whatever happens here
  idle_timeout   = "5m"
  health_timeout = "10m" # image pull, weights download and vLLM start-up
  volume         = "infercrane-hf-cache"
}

shape "smoke" {
  input_tokens      = 256
  output_tokens     = 64
  template_headroom = 128
  concurrency       = 4
  requests          = 16
}

screen "modal_smoke" {
  models   = [model.qwen06]
  shapes   = [shape.smoke]
  gpus     = [gpu.l4]
  runtime  = runtime.vllm
  executor = executor.modal
  runs     = 1
  seed     = 17

  selection_boundary = "A smoke test of the modal executor, not a screen: one run is not decision grade."
}
