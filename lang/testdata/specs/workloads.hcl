# Shapes that draw lengths, share prefixes or hold sessions.
model "qwen06" {
  id = "Qwen/Qwen3-0.6B"
}

gpu "l40s" {
  type = "L40S"
}

shape "both" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  lengths {
    input = { p50 = 10, p90 = 20, p95 = 30, p99 = 40 } # ERROR: Two lengths for input_tokens
  }
}

shape "bad_dist" {
  concurrency = 1
  requests    = 1
  lengths {
    input  = { p50 = 100, p90 = 50, p95 = 60, p99 = 70 } # ERROR: must not decrease
    output = 7 # ERROR: want an object with p50, p90, p95 and p99
  }
}

shape "bad_quantiles" {
  concurrency = 1
  requests    = 1
  lengths {
    input  = { p50 = 100, p90 = 200, p95 = 300, p99 = 400, quantiles = [{ q = 0.5, v = 90 }] } # ERROR: but the percentile there is 100
    output = { p50 = 10, p90 = 20, p95 = 30, p99 = 40, quantiles = [{ q = 0.25, v = 8 }, { q = 0.1, v = 4 }] } # ERROR: list quantiles in increasing q
  }
}

shape "bad_quantile_values" {
  concurrency = 1
  requests    = 1
  lengths {
    input  = { p50 = 100, p90 = 200, p95 = 300, p99 = 400, quantiles = [{ q = 0.75, v = 250 }] } # ERROR: quantiles and percentiles must not decrease together
    output = { p50 = 10, p90 = 20, p95 = 30, p99 = 40, quantiles = [{ q = 1, v = 50 }] } # ERROR: it must be strictly between 0 and 1
  }
}

shape "bad_lognormal" {
  input_tokens = 100
  concurrency  = 1
  requests     = 1
  lengths {
    output = lognormal(300, 100) # ERROR: the p95 must be at least the median
  }
}

shape "empty_lengths" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  lengths { # ERROR: Empty lengths block
  }
}

shape "prefix_both" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  prefix { # ERROR: Set shared_tokens or hit_ratio
    groups        = 2
    shared_tokens = 50
    hit_ratio     = { p50 = 0.1, p90 = 0.5, p95 = 0.9, p99 = 1 }
  }
}

shape "prefix_bad" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  prefix {
    groups    = 0 # ERROR: groups must be greater than 0
    hit_ratio = { p50 = 0.1, p90 = 0.5, p95 = 0.9, p99 = 2 } # ERROR: a fraction is between 0 and 1
    share     = 3 # ERROR: Unsupported argument
  }
}

shape "session_short" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  session {
    turns = 1 # ERROR: turns must be at least 2
  }
}

shape "session_and_prefix" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 4
  prefix {
    groups        = 2
    shared_tokens = 50
  }
  session { # ERROR: prefix and session together
    turns = 2
  }
  session { # ERROR: Duplicate session block
    turns = 3
  }
}

shape "curve_closed" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  arrival_curve { # ERROR: arrival_curve without request_rate
    rates        = [1, 2]
    step_seconds = 10
  }
}

shape "curve_bad" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  request_rate  = 2
  arrival_curve {
    rates        = [0, 0] # ERROR: at least one above 0
    step_seconds = 0 # ERROR: step_seconds must be at least 0.001
  }
}

shape "session_open" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 2
  request_rate  = 2
  session { # ERROR: session with request_rate
    turns = 2
  }
}

shape "prefix_longer_than_prompt" {
  input_tokens  = 512
  output_tokens = 10
  concurrency   = 1
  requests      = 4
  prefix {
    groups        = 2
    shared_tokens = 1024 # ERROR: shared_tokens (1024) must be below input_tokens (512)
  }
}

shape "prefix_whole_prompt" {
  input_tokens  = 512
  output_tokens = 10
  concurrency   = 1
  requests      = 4
  prefix {
    groups        = 2
    shared_tokens = 512 # ERROR: Set shared_tokens to at most 511
  }
}

shape "prefix_fits" {
  input_tokens  = 512
  output_tokens = 10
  concurrency   = 1
  requests      = 4
  prefix {
    groups        = 2
    shared_tokens = 511
  }
}

shape "session_completions" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 4
  api           = "completions" # ERROR: Set api = "chat" (the default), or remove the session block
  session {
    turns = 2
  }
}

shape "lengths_unknown_key" {
  concurrency = 1
  requests    = 1
  lengths {
    input  = { p50 = 5, p90 = 200, p95 = 300, p99 = 400, p75 = 3 } # ERROR: the object has p75, which a distribution does not take; it takes p50, p90, p95, p99
    output = { p50 = 5, p90 = 6, p95 = 7, p99 = 8, samples = 100 }
  }
}

shape "hit_ratio_unknown_key" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  prefix {
    groups    = 2
    hit_ratio = { p50 = 0.1, p90 = 0.5, p95 = 0.9, p99 = 1, p995 = 1 } # ERROR: Did you mean "p95"
  }
}

shape "session_longer_than_run" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 1
  requests      = 3 # ERROR: requests (3) is fewer than the session's turns (5)
  session {
    turns = 5
  }
}

shape "curve_too_fine" {
  input_tokens   = 100
  output_tokens  = 10
  concurrency    = 1
  requests       = 1
  request_rate   = 2
  warmup_seconds = 0.0005 # ERROR: warmup_seconds must be at least 0.001
  arrival_curve {
    rates        = [1, 2]
    step_seconds = 0.0004 # ERROR: step_seconds must be at least 0.001
  }
}

screen "x" {
  models = [model.qwen06]
  shapes = [shape.both, shape.bad_dist, shape.bad_lognormal, shape.empty_lengths, shape.prefix_both, shape.prefix_bad, shape.session_short, shape.session_and_prefix, shape.curve_closed, shape.curve_bad, shape.session_open, shape.prefix_longer_than_prompt, shape.prefix_whole_prompt, shape.prefix_fits, shape.session_completions, shape.lengths_unknown_key, shape.hit_ratio_unknown_key, shape.session_longer_than_run, shape.curve_too_fine]
  gpus   = [gpu.l40s]
}
