# Syntax errors point at the offending token.
model "m" {
  id = "Qwen/Qwen3-0.6B"
  max_context = 8192 8192 # ERROR: Missing newline after argument
}
