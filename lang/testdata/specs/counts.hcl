# Counts must be positive; requests must cover concurrency.
model "m" {
  id = "Qwen/Qwen3-0.6B"
}

gpu "g" {
  type  = "L4"
  count = 0 # ERROR: count must be greater than 0
}

shape "zero" {
  input_tokens  = 0 # ERROR: input_tokens must be greater than 0
  output_tokens = -5 # ERROR: output_tokens must be greater than 0
  concurrency   = 0 # ERROR: concurrency must be greater than 0
  requests      = 4
  warmup        = -1 # ERROR: warmup must be 0 or more
}

shape "starved" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 8
  requests      = 4 # ERROR: requests (4) is smaller than concurrency (8)
}

shape "open" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 8
  requests      = 8
  arrival       = "poisson" # ERROR: arrival without request_rate
  burstiness    = 2 # ERROR: burstiness without gamma arrivals
}

shape "missing" { # ERROR: The argument "output_tokens" is required
  input_tokens = 100
  concurrency  = 1
  requests     = 1
}

screen "x" {
  models = [model.m]
  shapes = [shape.zero, shape.starved, shape.open, shape.missing]
  gpus   = [gpu.g]
  runs   = 0 # ERROR: runs must be greater than 0
}
