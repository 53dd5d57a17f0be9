#!/usr/bin/env bash
# `make fidelity`: InferCrane's load generator, `vllm bench serve` (from the pinned
# vLLM CPU environment of scripts/integration), AIPerf and GuideLLM (pinned, when they install)
# on the same shapes against the simulated engine (constant timing) and real vLLM on
# CPU; prints the side-by-side tables and fails when InferCrane's figures are more
# than 1% (or 0.5 ms) off the engine's ground truth at 64 streams, or differ from
# vllm bench's on real vLLM by more than their run-to-run spread.
# With VLLM_VENV and TINY_MODEL already set (make integration), setup is skipped.
# FIDELITY_KEEP=DIR keeps every tool's result files under DIR/<test>/<tool>-<n>/
# (the fixtures of executor/benchresult come from there).
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
if [ -z "${VLLM_VENV:-}" ] || [ -z "${TINY_MODEL:-}" ]; then
  . scripts/integration/vllm-env.sh
  rc=0
  vllm_env "make fidelity" || rc=$?
  if [ $rc -eq 10 ]; then
    echo "SKIP: make fidelity: vLLM cannot be installed on this machine (reason above); nothing was measured."
    exit 0
  elif [ $rc -ne 0 ]; then
    exit $rc
  fi
fi
for tool in aiperf guidellm; do
  var=$(echo "$tool" | tr '[:lower:]' '[:upper:]')_BIN
  if [ -z "${!var:-}" ]; then
    set +e
    line=$(bash scripts/fidelity/setup-tool.sh "$tool")
    rc=$?
    set -e
    if [ $rc -eq 0 ]; then
      export "${line?}"
    else
      echo "fidelity: $tool is not available (setup exit $rc); the tables have no $tool rows"
    fi
  fi
done
export FIDELITY_OUT=${FIDELITY_OUT:-$(mktemp -t fidelity.XXXXXX)}
: > "$FIDELITY_OUT"
set +e
go test -tags integration -run '^TestFidelity' -count=1 -v -timeout 40m ./cmd/infercrane/
rc=$?
set -e
echo
echo "== fidelity tables (also in $FIDELITY_OUT) =="
cat "$FIDELITY_OUT"
echo "fidelity: done in $(( $(date +%s) - start ))s (exit $rc)"
exit $rc
