# Two Qwen3 models on one L40S each, on Modal, with shapes taken from the
# public Chutes serving trace (HarvardMadSys/chutes_workload, CC-BY-4.0).

infercrane {
  required_version = ">= 0.1"
}

variable "runs" {
  type        = number
  default     = 2
  description = "Repeated runs per lane; 5 or more is decision grade."

  validation {
    condition     = var.runs >= 1
    error_message = "runs must be at least 1."
  }
}

locals {
  max_context = 8192
  headroom    = 512
}

trace "chutes" {
  source    = "s3://harvardsys-datasets/2026_chutes_anonymized/chutes_trace.parquet"
  region    = "us-east-1"
  anonymous = true

  sample {
    row_groups     = 3
    rows_per_group = 50000
  }

  # The pinned profile; plan refuses a profile whose digest differs.
  profile     = "profiles/chutes.json"
  digest      = "sha256:fc88149b14f24e73c49b841df7e32db2be2a2e3e10c7cfbd834b1617310d5c7e"
  max_context = local.max_context
}

model "qwen06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = local.max_context
}

model "qwen17" {
  id          = "Qwen/Qwen3-1.7B"
  revision    = "70d244cc86ccca08cf5af4e1e306ecf908b1ad5e"
  max_context = local.max_context
}

gpu "l40s" {
  type = "L40S"
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  dtype   = "bfloat16"
  args    = ["--max-model-len", tostring(local.max_context)]
}

# The same engine with prefix caching off: the other side of the
# prefix-reuse comparison below (vLLM's V1 engine caches by default).
runtime "vllm_no_prefix_cache" {
  engine  = "vllm"
  version = "0.22.1"
  dtype   = "bfloat16"
  args    = ["--max-model-len", tostring(local.max_context), "--no-enable-prefix-caching"]
}

executor "modal" {
  type    = "modal"
  timeout = "30m"
}

shape "interactive" {
  input_tokens      = trace.chutes.input_tokens.p50
  output_tokens     = trace.chutes.output_tokens.p50
  concurrency       = 8
  requests          = 32
  template_headroom = local.headroom
}

shape "decode_heavy" {
  input_tokens      = trace.chutes.input_tokens.p50
  output_tokens     = trace.chutes.output_tokens.p95
  concurrency       = 4
  requests          = 32
  template_headroom = local.headroom
}

# Prefix reuse as the trace has it: each prompt shares a fraction of its
# tokens with earlier prompts of its group, drawn from the trace's bimodal
# cache-hit distribution (median 1.8%, p90 99.4%).
shape "prefix_reuse" {
  input_tokens      = trace.chutes.input_tokens.p50
  output_tokens     = trace.chutes.output_tokens.p50
  concurrency       = 8
  requests          = 64
  template_headroom = local.headroom

  prefix {
    groups    = 8
    hit_ratio = trace.chutes.cache_hit_fraction
  }
}

gate "clean" {
  condition     = lane.failed == 0
  error_message = "Every request must succeed."
  min_runs      = 2
}

screen "qwen_l40s" {
  models   = [model.qwen06, model.qwen17]
  shapes   = [shape.interactive, shape.decode_heavy]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  executor = executor.modal
  runs     = var.runs
  seed     = 17
  baseline = model.qwen17
  gates    = [gate.clean]

  selection_boundary = "Performance-only screening; quality is not measured."
}

# Prefix caching on and off for the trace's reuse: two lanes of one screen,
# one per runtime. The report compares them (TTFT and the other key metrics,
# with the hit ratio each server reached) against the first runtime.
screen "prefix_cache" {
  models   = [model.qwen06]
  shapes   = [shape.prefix_reuse]
  gpus     = [gpu.l40s]
  runtimes = [runtime.vllm, runtime.vllm_no_prefix_cache]
  executor = executor.modal
  runs     = var.runs
  seed     = 17
  gates    = [gate.clean]

  selection_boundary = "Performance-only screening; quality is not measured."
}
