# Which of these deserve an 8-GPU node? A dense 8B, a 30B-A3B mixture of
# experts and a 70B, at tensor parallel 4 and 8, with BF16 and FP8 weights,
# on H100 (NVLink) and L40S (PCIe): 24 lanes the plan checks and estimates
# before any GPU time (each deployment's memory fit and what its estimate
# rests on under "Deployments"), then a simulated apply to try the screen:
#
#   infercrane plan examples/architectures
#   infercrane apply -auto-approve examples/architectures
#
# The architectures come from the catalog's pinned config.json files
# (planner/arch/catalog); a model the catalog lacks takes
# config = "path/to/config.json" with config_digest, or the local Hugging
# Face cache at its revision. Pin each model's revision before running on
# real GPUs.

infercrane {
  required_version = ">= 0.1"
}

variable "speedup" {
  type        = number
  default     = 10
  description = "How many times faster than real time the simulated engine runs (the reports scale its figures back)."
}

model "dense8b" {
  id          = "Qwen/Qwen3-8B"
  max_context = 8192
}

model "moe30b" {
  id          = "Qwen/Qwen3-30B-A3B"
  max_context = 8192
}

model "llama70b" {
  id          = "meta-llama/Llama-3.3-70B-Instruct"
  max_context = 8192
}

gpu "h100x4" {
  type  = "H100"
  count = 4
}

gpu "h100x8" {
  type  = "H100"
  count = 8
}

gpu "l40sx4" {
  type  = "L40S"
  count = 4
}

gpu "l40sx8" {
  type  = "L40S"
  count = 8
}

runtime "bf16" {
  engine  = "vllm"
  version = "0.22.1"
  dtype   = "bfloat16"
  args    = ["--max-model-len", "8192"]
}

# FP8 weights (vLLM quantises the BF16 checkpoint at load) and an FP8 KV
# cache: half the bytes of every linear layer and KV element, and the FP8
# tensor peak on Ada and Hopper.
runtime "fp8" {
  engine  = "vllm"
  version = "0.22.1"
  dtype   = "bfloat16"
  args    = ["--max-model-len", "8192", "--quantization", "fp8", "--kv-cache-dtype", "fp8"]
}

# The simulated engine serves each lane from the plan's performance model,
# var.speedup times faster than real time: at 10 the screen applies in
# about a minute and a busy machine still keeps the simulated time.
executor "sim" {
  type    = "sim"
  speedup = var.speedup
}

shape "chat" {
  input_tokens      = 1024
  output_tokens     = 256
  template_headroom = 256
  concurrency       = 32
  requests          = 64
}

gate "clean" {
  condition     = lane.failed == 0
  error_message = "Every request must succeed."
}

screen "architectures" {
  models   = [model.dense8b, model.moe30b, model.llama70b]
  shapes   = [shape.chat]
  gpus     = [gpu.h100x4, gpu.h100x8, gpu.l40sx4, gpu.l40sx8]
  runtimes = [runtime.bf16, runtime.fp8]
  executor = executor.sim
  runs     = 1
  seed     = 28
  gates    = [gate.clean]

  selection_boundary = "Simulated engine: the numbers are the plan's performance model (architecture, precision, tensor parallelism), not a GPU."
}
