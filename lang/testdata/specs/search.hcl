# Capacity search blocks: every attribute is checked where it is written.
search "typos" {
  vary      = "concurency" # ERROR: Did you mean "concurrency"?
  range     = [4, 2] # ERROR: 0 < min < max
  tolerence = 0.1 # ERROR: Did you mean "tolerance"?
  requests  = 10 # ERROR: requests must be at least 20
  slo {
    ttft_p95 = 2000 # ERROR: Unsupported argument
  }
}

search "bounds" {
  vary       = "concurrency"
  range      = [1.5, 64] # ERROR: range must be whole numbers
  duration   = "30s" # ERROR: duration with a concurrency search
  goodput    = 1.5 # ERROR: goodput must be in [0, 1]
  tolerance  = 0 # ERROR: tolerance must be in (0, 1)
  max_points = 1 # ERROR: max_points must be at least 2
  slo {} # ERROR: Empty slo block
}

search "shape" {
  vary     = "request_rate"
  range    = [1, 2, 3] # ERROR: it has 3
  duration = "soon" # ERROR: must be a duration such as "30s"
  slo {
    latency_p95_ms = -1 # ERROR: latency_p95_ms must be greater than 0
  }
  slo { # ERROR: Duplicate slo block
    ttft_p95_ms = 1
  }
}

search "noslo" { # ERROR: Missing slo block
  vary  = "request_rate"
  range = [1, 2]
}

model "m" {
  id = "Qwen/Qwen3-0.6B"
}

gpu "g" {
  type = "L4"
}

shape "s" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  search        = model.m # ERROR: search expects search references like search.NAME
}

screen "x" {
  models = [model.m]
  shapes = [shape.s]
  gpus   = [gpu.g]
  search = search.nope # ERROR: Reference to undeclared search
}

search "rate" {
  vary  = "request_rate"
  range = [1, 8]
  slo {
    ttft_p95_ms = 1000
  }
}

search "streams" {
  vary  = "concurrency"
  range = [1, 8]
  slo {
    ttft_p95_ms = 1000
  }
}

shape "chat_rate" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 40
  search        = search.rate # ERROR: shape "chat_rate" sends sessions, which run closed loop
  session {
    turns = 4
  }
}

shape "chat_streams" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 40
  search        = search.streams
  session {
    turns = 4
  }
}

shape "chat_plain" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 40
  session {
    turns = 4
  }
}

screen "rates" { # ERROR: The screen's search applies to every shape without one of its own
  models = [model.m]
  shapes = [shape.chat_plain, shape.chat_streams]
  gpus   = [gpu.g]
  search = search.rate
}
