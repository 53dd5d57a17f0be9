#!/usr/bin/env bash
# `make integration`: InferCrane against real vLLM (CPU build) on a tiny local model.
# Skips (exit 0, loudly) only when setup-vllm.sh says the install is impossible on this machine.
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
# Signed evidence against an independent DSSE/in-toto implementation (needs
# no vLLM, so it runs even where vLLM cannot be installed).
bash scripts/integration/dsse.sh
# The S3 state backend against moto's S3 server (needs no vLLM either).
bash scripts/integration/s3.sh
. scripts/integration/vllm-env.sh
rc=0
vllm_env "make integration" || rc=$?
if [ $rc -eq 10 ]; then
  echo "SKIP: make integration: vLLM cannot be installed on this machine (reason above); nothing was tested against real vLLM."
  exit 0
elif [ $rc -ne 0 ]; then
  exit $rc
fi
echo "integration: $VLLM_VERSIONS (setup $(( $(date +%s) - start ))s)"

go test -tags integration -run '^TestIntegration' -count=1 -v -timeout 60m ./cmd/infercrane/
# The fidelity harness (make fidelity) reuses the environment set up above.
bash scripts/fidelity/run.sh
echo "integration: done in $(( $(date +%s) - start ))s"
