# Quickstart: one small model on the simulated engine (executor "sim",
# built in, no GPU needed). Runs in seconds:
#
#   infercrane validate examples/quickstart
#   infercrane apply -auto-approve examples/quickstart

infercrane {
  required_version = ">= 0.1"
}

variable "runs" {
  type        = number
  default     = 3
  description = "Repeated runs per lane."

  validation {
    condition     = var.runs >= 1 && var.runs <= 20
    error_message = "runs must be between 1 and 20."
  }
}

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
  dtype   = "bfloat16"
}

shape "chat" {
  input_tokens      = 512
  output_tokens     = 128
  template_headroom = 256
  concurrency       = 4
  requests          = 16
}

gate "clean" {
  condition     = lane.failed == 0
  error_message = "Every request must succeed."
}

screen "quickstart" {
  models  = [model.qwen06]
  shapes  = [shape.chat]
  gpus    = [gpu.l40s]
  runtime = runtime.vllm
  runs    = var.runs
  seed    = 1
  gates   = [gate.clean]

  selection_boundary = "Simulated engine: numbers come from the roofline model, not a GPU."
}
