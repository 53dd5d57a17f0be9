# Gate conditions must be true or false: a condition of another type can
# never be judged. (Without the report's metric list, lane.* is of unknown
# type here; lang/gate_test.go checks lane.failed alone with the list.)
gate "string" {
  condition     = "yes" # ERROR: this one is the string "yes"
  error_message = "x"
}

gate "number" {
  condition     = 1 + 1 # ERROR: this one is a number
  error_message = "x"
}

gate "string_true" {
  condition     = "true" # ERROR: Invalid gate condition
  error_message = "x"
}

gate "list" {
  condition     = [true] # ERROR: Invalid gate condition
  error_message = "x"
}

gate "fine" {
  condition     = lane.failed == 0 && (lane.ttft_p95_ms < 500 ? true : false)
  error_message = "x"
}
