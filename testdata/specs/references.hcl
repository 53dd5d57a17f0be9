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
