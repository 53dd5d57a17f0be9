# Cycles are reported by name.
locals {
  a = local.b + 1 # ERROR: local.a and local.b refer to each other (local.a -> local.b -> local.a)
  b = local.a * 2
  c = local.c # ERROR: local.c refers to itself
}

model "m" {
  id          = "Qwen/Qwen3-0.6B"
  max_context = local.b
}
