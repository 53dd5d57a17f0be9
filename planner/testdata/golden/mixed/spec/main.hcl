# Two screens: an unpinned trace whose lanes wait for profiling, a model
# outside the catalog with architecture attributes, a GPU with overridden
# efficiency and price, and the built-in simulated executor.
trace "chutes" {
  source = "s3://harvardsys-datasets/2026_chutes_anonymized/chutes_trace.parquet"
  sample {
    row_groups     = 3
    rows_per_group = 50000
  }
}

model "custom" {
  id          = "example/Custom-1.5B"
  max_context = 16384
  params      = 1500000000
  layers      = 28
  hidden      = 2048
  heads       = 16
  kv_heads    = 8
}

model "llama8" {
  id          = "meta-llama/Llama-3.1-8B-Instruct"
  revision    = "0e9e39f249a16976918f6564b8830bc894c89659"
  max_context = 16384
}

gpu "h100" {
  type              = "H100"
  prefill_mfu       = 0.5
  decode_efficiency = 0.7
  price_per_second  = 0.0012
}

gpu "a10" {
  type = "A10"
}

runtime "vllm" {
  engine = "vllm"
  dtype  = "bfloat16"
}

executor "modal" {
  type = "modal"
}

shape "from_trace" {
  input_tokens      = trace.chutes.input_tokens.p50
  output_tokens     = trace.chutes.output_tokens.p50
  template_headroom = 512
  concurrency       = 8
  requests          = 32
}

shape "batch" {
  input_tokens      = 2048
  output_tokens     = 512
  template_headroom = 512
  concurrency       = 32
  requests          = 64
}

screen "gpus" {
  models   = [model.custom, model.llama8]
  shapes   = [shape.batch, shape.from_trace]
  gpus     = [gpu.h100, gpu.a10]
  runtime  = runtime.vllm
  executor = executor.modal
  runs     = 3
  seed     = 5
}

screen "simulated" {
  models = [model.llama8]
  shapes = [shape.batch]
  gpus   = [gpu.h100]
  runs   = 5
  seed   = 5
}
