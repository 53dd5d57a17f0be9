# Wrong types and whole numbers.
model "m" {
  id          = "Qwen/Qwen3-0.6B"
  max_context = "lots" # ERROR: Incorrect attribute value type
}

gpu "g" {
  type  = "H100"
  count = 1.5 # ERROR: count must be a whole number, got 1.5; round it in the expression, e.g. count = floor(...)
}

runtime "r" {
  engine                 = "vllm"
  args                   = "--seed 1" # ERROR: list of string required
  gpu_memory_utilization = 1.2 # ERROR: gpu_memory_utilization must be in (0, 1]
  dtype                  = "bf16" # ERROR: got "bf16"
}

shape "s" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = "eight" # ERROR: concurrency must be a number, and "eight" is a string
  requests      = 32
  streaming     = "maybe" # ERROR: Incorrect attribute value type
  api           = "chatt" # ERROR: Did you mean "chat"?
}

screen "x" {
  models = [model.m]
  shapes = [shape.s]
  gpus   = [gpu.g]
  runtime = runtime.r
}
