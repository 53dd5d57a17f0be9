# Unknown block types and arguments, invalid and duplicate names.
modle "qwen06" { # ERROR: Unsupported block type
  id = "Qwen/Qwen3-0.6B"
}

model "qwen06" {
  id       = "Qwen/Qwen3-0.6B"
  revison  = "abc" # ERROR: Did you mean "revision"?
}

model "qwen06" { # ERROR: Duplicate model "qwen06"
  id = "Qwen/Qwen3-0.6B"
}

gpu "l40s" {
  type = "L40S"
}

shape "s" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  slo {
    ttft_ms = 100
    p99     = 3 # ERROR: Unsupported argument
  }
}

screen "x" {
  models = [model.qwen06]
  shapes = [shape.s]
  gpus   = [gpu.l40s]
  colour = "red" # ERROR: An argument named "colour" is not expected here
}
