#!/usr/bin/env bash
# Installs AIPerf (pinned, with every dependency pinned in requirements-aiperf.lock)
# into a cached virtual environment. Prints AIPERF_BIN=... on stdout; everything else
# goes to stderr. Exit 10 when it cannot be installed here (the harness then runs
# without AIPerf and says so).
# Cache: ${INFERCRANE_CACHE:-$HOME/.cache/infercrane}. Download (first run): ~1.2 GB from PyPI.
set -euo pipefail
AIPERF_VERSION=0.13.0
here=$(cd "$(dirname "$0")" && pwd)
cache=${INFERCRANE_CACHE:-$HOME/.cache/infercrane}
venv=$cache/aiperf-$AIPERF_VERSION
lockhash=$(sha256sum < "$here/requirements-aiperf.lock" | cut -c1-16)
log() { echo "setup-aiperf: $*" >&2; }
command -v python3 >/dev/null || { log "python3 is not installed"; exit 10; }
if [ ! -f "$venv/.ready-$lockhash" ]; then
  log "installing aiperf $AIPERF_VERSION into $venv (first run: a few minutes, ~1.2 GB)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps -r "$here/requirements-aiperf.lock" >&2 \
    || { log "pip could not install the pinned AIPerf requirements"; exit 10; }
  "$venv/bin/aiperf" --version >&2 || { log "aiperf does not run after install"; exit 10; }
  touch "$venv/.ready-$lockhash"
fi
echo "AIPERF_BIN=$venv/bin/aiperf"
