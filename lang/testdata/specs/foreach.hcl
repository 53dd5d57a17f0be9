# for_each on model and shape blocks; each outside for_each; lane outside gates.
model "qwen" {
  for_each = { "0.6b" = "Qwen/Qwen3-0.6B", "1.7b" = "Qwen/Qwen3-1.7B" }
  id       = each.value
}

model "bad" {
  for_each = 3 # ERROR: for_each must be a map, or a set or list of strings; got number
  id       = "x"
}

gpu "g" {
  type = each.key # ERROR: each.key and each.value are only available
}

shape "s" {
  input_tokens  = lane.ttft # ERROR: lane.METRIC is only available in a gate's condition
  output_tokens = 10
  concurrency   = 1
  requests      = 1
}

gate "g" {
  condition     = lane.failed == model.qwen # ERROR: A gate condition may refer to lane.METRIC only
  error_message = "x"
}

screen "x" {
  models   = [model.qwen["0.6b"], model.qwen["3b"]] # ERROR: model.qwen has no instance "3b": its for_each keys are "0.6b" and "1.7b"
  shapes   = [shape.s]
  gpus     = [gpu.g]
  baseline = model.qwen # ERROR: baseline must be one model
}

runtime "vllm" {
  for_each = toset(["cache", "nocache"])
  engine   = "vllm"
  args     = each.key == "nocache" ? ["--no-enable-prefix-caching"] : []
}

screen "one_of_many" {
  models  = [model.qwen["0.6b"]]
  shapes  = [shape.s]
  gpus    = [gpu.g]
  runtime = runtime.vllm # ERROR: list them in runtimes = [...] instead
}

screen "many" {
  models   = [model.qwen["0.6b"]]
  shapes   = [shape.s]
  gpus     = [gpu.g]
  runtimes = [runtime.vllm]
}
