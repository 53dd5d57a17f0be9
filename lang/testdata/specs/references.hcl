# References to undeclared blocks suggest the closest name.
model "qwen06" {
  id = "Qwen/Qwen3-0.6B"
}

model "qwen17" {
  id = "Qwen/Qwen3-1.7B"
}

gpu "l40s" {
  type = "L40" # ERROR: Did you mean "L40S"
}

executor "remote" {
  type = "modall" # ERROR: Unknown executor type
}

shape "s" {
  input_tokens  = var.prompt # ERROR: Reference to undeclared variable
  output_tokens = local.out # ERROR: No local value named "out"
  concurrency   = 1
  requests      = 1
}

screen "x" {
  models   = [model.qwen6, model.qwen17] # ERROR: Did you mean "qwen06"?
  shapes   = [model.qwen17] # ERROR: shapes expects shape references like shape.NAME, but this is model.qwen17
  gpus     = [gpu.l40s, gpu.l40s] # ERROR: Duplicate gpu in gpus
  baseline = model.qwen06 # ERROR: not one of this screen's models
  runs     = foo.bar # ERROR: There is nothing named "foo"
}

screen "empty" { # ERROR: A screen needs gpus
  models = [model.qwen17]
  shapes = [] # ERROR: shapes must list at least one shape
}

# A screen comparing runtimes lists each once, and only runtimes.
runtime "vllm" {
  engine = "vllm"
}

runtime "vllm_nocache" {
  engine = "vllm"
  args   = ["--no-enable-prefix-caching"]
}

shape "ok" {
  input_tokens  = 8
  output_tokens = 8
  concurrency   = 1
  requests      = 1
}

screen "runtimes" {
  models   = [model.qwen06]
  shapes   = [shape.ok]
  gpus     = [gpu.l40s]
  runtimes = [runtime.vllm, runtime.vllm_nocache, runtime.vllm] # ERROR: Duplicate runtime in runtimes
}

screen "runtimes_bad" {
  models   = [model.qwen06]
  shapes   = [shape.ok]
  gpus     = [gpu.l40s]
  runtimes = [runtime.vllm, runtime.vlm, gpu.l40s] # ERROR: Did you mean "vllm"?
}

screen "runtimes_kind" {
  models   = [model.qwen06]
  shapes   = [shape.ok]
  gpus     = [gpu.l40s]
  runtimes = [runtime.vllm, gpu.l40s] # ERROR: runtimes expects runtime references like runtime.NAME, but this is gpu.l40s
}

screen "runtimes_both" {
  models   = [model.qwen06]
  shapes   = [shape.ok]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  runtimes = [runtime.vllm, runtime.vllm_nocache] # ERROR: Both runtime and runtimes
}

screen "runtimes_empty" {
  models   = [model.qwen06]
  shapes   = [shape.ok]
  gpus     = [gpu.l40s]
  runtimes = [] # ERROR: runtimes must list at least one runtime
}
