# Evaluation errors suggest the closest attribute or function.
model "qwen06" {
  id          = "Qwen/Qwen3-0.6B"
  max_context = 8192
}

model "other" {
  id          = "x"
  max_context = model.qwen06.maxcontext # ERROR: Did you mean "max_context"? It has: config, config_digest, head_dim, heads
}

locals {
  a = uper("x") # ERROR: There is no function named "uper". Did you mean "upper"?
  b = upper(3, 4) # ERROR: Too many function arguments
  c = 1 + "x" # ERROR: Unsuitable value for right operand
}
