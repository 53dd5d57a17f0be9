#!/usr/bin/env bash
# Builds infercrane from a checkout of its repository (INFERCRANE_SRC,
# default: the current directory) into BIN (default: $RUNNER_TEMP/infercrane-bin,
# else ./infercrane-bin), static and stripped as `make build` does, and puts
# BIN first on the PATH of the workflow's later steps (GITHUB_PATH). The
# module is not published, so `go install ...@version` cannot fetch it: the
# workflows check out InferCrane's repository at a pinned commit instead.
# INFERCRANE_BUILD_FLAGS replaces the release flags (-trimpath -ldflags "-s -w").
# usage: install.sh [BIN]
set -euo pipefail
src=${INFERCRANE_SRC:-.}
bin=${1:-${RUNNER_TEMP:-$PWD}/infercrane-bin}
if [ ! -f "$src/cmd/infercrane/main.go" ]; then
  echo "install.sh: $src is not a checkout of InferCrane (no cmd/infercrane/main.go); check it out and set INFERCRANE_SRC to it" >&2
  exit 1
fi
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
flags=(-trimpath -ldflags "-s -w")
if [ -n "${INFERCRANE_BUILD_FLAGS+set}" ]; then read -r -a flags <<< "$INFERCRANE_BUILD_FLAGS"; fi
(cd "$src" && CGO_ENABLED=${CGO_ENABLED:-0} go build "${flags[@]}" -o "$bin/" ./cmd/infercrane)
if [ -n "${GITHUB_PATH:-}" ]; then echo "$bin" >> "$GITHUB_PATH"; fi
"$bin/infercrane" version
