# Real vLLM (CPU build) on a tiny random-weight Qwen3 model, started and stopped by the
# `local` executor. `make integration` creates the model and the vLLM environment and runs:
#
#   INFERCRANE_VAR_model_dir=$TINY_MODEL PATH=$VLLM_VENV/bin:$PATH \
#     infercrane apply -auto-approve examples/local-vllm-cpu
#
# The weights are random, so the text is gibberish; the tokenizer and chat template are
# Qwen3's real ones, so token counts are exactly what Qwen3 would see.

infercrane {
  required_version = ">= 0.1"
}

variable "model_dir" {
  type        = string
  description = "Directory of the tiny model made by scripts/integration/make_tiny_model.py."
}

variable "runs" {
  type    = number
  default = 2
}

model "tiny_qwen3" {
  id          = var.model_dir
  max_context = 1024
  # Architecture of the tiny model, for the estimator (the catalog does not know it).
  params   = 19710848
  layers   = 2
  hidden   = 128
  heads    = 2
  kv_heads = 1
  head_dim = 64
  vocab    = 151680
}

gpu "cpu" {
  type = "CPU"
}

runtime "vllm_cpu" {
  engine       = "vllm"
  version      = "0.32.0"
  dtype        = "float32"
  max_num_seqs = 8
  # -O0 and --enforce-eager skip torch.compile: start-up in about a minute instead of many.
  args = ["--served-model-name", "tiny-qwen3", "-O0", "--enforce-eager"]
}

executor "local" {
  type              = "local"
  served_model_name = "tiny-qwen3"
  health_timeout    = "20m"
  stop_timeout      = "30s"
  env = {
    VLLM_TARGET_DEVICE     = "cpu"
    VLLM_CPU_KVCACHE_SPACE = "1"
    HF_HUB_OFFLINE         = "1"
    TRANSFORMERS_OFFLINE   = "1"
    VLLM_NO_USAGE_STATS    = "1"
    DO_NOT_TRACK           = "1"
  }
}

shape "short" {
  input_tokens      = 64
  output_tokens     = 16
  template_headroom = 32
  concurrency       = 2
  requests          = 4
}

shape "long" {
  input_tokens      = 384
  output_tokens     = 32
  template_headroom = 32
  concurrency       = 4
  requests          = 8
}

gate "clean" {
  condition     = lane.failed == 0
  error_message = "Every request must succeed."
}

screen "vllm_cpu" {
  models   = [model.tiny_qwen3]
  shapes   = [shape.short, shape.long]
  gpus     = [gpu.cpu]
  runtime  = runtime.vllm_cpu
  executor = executor.local
  runs     = var.runs
  seed     = 17
  gates    = [gate.clean]

  selection_boundary = "Integration check of InferCrane against real vLLM on CPU with random weights; the numbers say nothing about any real model or GPU."
}
