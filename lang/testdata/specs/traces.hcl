# Trace settings; only token counts may wait for a profile.
trace "t" {
  source  = "trace.parquet"
  digest  = "sha256:abc" # ERROR: digest must be "sha256:" followed by 64 lowercase hex digits
  sample { # ERROR: A sample block sets exactly one of row_groups
    row_groups = 3
    all        = true
  }
}

trace "u" {
  source  = "trace.parquet"
  profile = "u.json" # WARNING: Profile is not pinned
}

shape "s" {
  input_tokens  = trace.u.input_tokens.p50
  output_tokens = trace.u.shapes.interactive.output_tokens
  concurrency   = trace.u.shapes.interactive.concurrency # ERROR: concurrency depends on trace.u, which is not profiled yet
  requests      = 32
}
