# Sourced by scripts/integration/run.sh (make integration) and scripts/fidelity/run.sh
# (make fidelity): one way to prepare the pinned vLLM CPU environment.
#
# vllm_env WHO runs setup-vllm.sh and exports its KEY=VALUE lines. It returns 0 when
# ready, 10 when vLLM cannot be installed on this machine (the caller skips, loudly),
# and setup's own exit status (after saying so on stderr) when the setup failed.
vllm_env() {
  local envlines rc=0
  envlines=$(bash scripts/integration/setup-vllm.sh) || rc=$?
  if [ "$rc" -eq 0 ]; then
    while IFS='=' read -r k v; do export "$k=$v"; done <<< "$envlines"
  elif [ "$rc" -ne 10 ]; then
    echo "$1: setup failed (exit $rc)" >&2
  fi
  return "$rc"
}
