# Capacity at SLO: how much load do Qwen3-0.6B and Qwen3-1.7B each carry on an
# L4 and on an L40S within a chat SLO, and what does a million output tokens
# cost there? Every lane is a capacity search: apply starts at the knee the
# plan predicts, brackets it and bisects in log space until the bracket is
# within 5%, journaling every point. The evidence has each lane's capacity
# with its bracket, the load curves, where each objective broke, $ per
# million output tokens at capacity and the cost-capacity Pareto frontier.
#
#   infercrane plan examples/capacity-qwen       # predicted knees, expected points and their cost
#   infercrane apply -auto-approve examples/capacity-qwen
#
# The screen runs on the simulated engine in real time (each point lasts a
# minute: expect about 10 minutes for the 4 lanes). Set executor =
# executor.modal in the screen to measure on Modal's GPUs instead; the plan
# then prices every expected point and bounds the search's cost.

infercrane {
  required_version = ">= 0.1"
}

model "qwen06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 8192
}

model "qwen17" {
  id          = "Qwen/Qwen3-1.7B"
  revision    = "70d244cc86ccca08cf5af4e1e306ecf908b1ad5e"
  max_context = 8192
}

gpu "l4" {
  type = "L4"
}

gpu "l40s" {
  type = "L40S"
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  dtype   = "bfloat16"
  args    = ["--max-model-len", "8192"]
}

executor "sim" {
  type = "sim"
}

executor "modal" {
  type    = "modal"
  timeout = "60m"
}

search "chat_slo" {
  vary       = "request_rate"
  range      = [0.5, 64]
  goodput    = 0.95
  tolerance  = 0.05
  max_points = 8
  requests   = 200
  duration   = "60s" # each point lasts a minute, so its queue reaches steady state

  slo {
    ttft_p95_ms = 1000
    tpot_p95_ms = 50
  }
}

shape "chat" {
  input_tokens      = 1024
  output_tokens     = 256
  template_headroom = 512
  concurrency       = 1
  requests          = 1
  search            = search.chat_slo
}

gate "carries_load" {
  condition     = lane.capacity_rps >= 5
  error_message = "The lane must carry at least 5 req/s within the SLO."
}

gate "affordable" {
  condition     = lane.usd_per_mtok <= 0.40
  error_message = "A million output tokens must cost at most $0.40 at capacity."
}

screen "capacity" {
  models   = [model.qwen06, model.qwen17]
  shapes   = [shape.chat]
  gpus     = [gpu.l4, gpu.l40s]
  runtime  = runtime.vllm
  executor = executor.sim
  seed     = 7
  gates    = [gate.carries_load, gate.affordable]

  selection_boundary = "Capacity at a chat SLO (p95 TTFT 1 s, p95 TPOT 50 ms, 95% goodput) for fixed 1024/256-token requests; quality is not measured."
}
