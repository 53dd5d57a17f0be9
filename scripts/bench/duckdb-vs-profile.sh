#!/usr/bin/env bash
# Side-by-side full-scan profile: `infercrane profile trace --all` against DuckDB's
# equivalent query (scripts/bench/duckdb_profile.py) on the same generated file, with
# the same thread count (1 and 2), best of RUNS each. Prints rows/s and the ratio
# infercrane / DuckDB (above 1.0: InferCrane is faster).
#
# Cache: ${INFERCRANE_CACHE:-$HOME/.cache/infercrane}; DuckDB $DUCKDB_VERSION from PyPI in
# a venv of its own there (first run downloads ~20 MB), the bench trace next to it.
# Env: ROWS (default 10000000), ROWS_PER_GROUP (100000), THREADS ("1 2"), RUNS (3).
set -euo pipefail

DUCKDB_VERSION=2.0.0
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${INFERCRANE_CACHE:-$HOME/.cache/infercrane}
rows=${ROWS:-10000000}
per=${ROWS_PER_GROUP:-100000}
threads=${THREADS:-1 2}
runs=${RUNS:-3}
log() { echo "bench-duckdb: $*" >&2; }

mkdir -p "$cache"
duckvenv=$cache/duckdb-$DUCKDB_VERSION
if [ ! -f "$duckvenv/.ready" ]; then
  log "installing duckdb==$DUCKDB_VERSION into $duckvenv"
  rm -rf "$duckvenv"
  python3 -m venv "$duckvenv"
  "$duckvenv/bin/pip" install --quiet "duckdb==$DUCKDB_VERSION" >&2
  touch "$duckvenv/.ready"
fi

bin=$cache/bench/infercrane
mkdir -p "$cache/bench"
(cd "$root" && go build -o "$bin" ./cmd/infercrane)
trace=$cache/bench/trace-$rows-$per.parquet
if [ ! -f "$trace" ]; then
  log "writing $trace ($rows rows, row groups of $per)"
  "$bin" profile synth --rows "$rows" --rows-per-group "$per" --seed 11 "$trace.tmp" >&2
  mv "$trace.tmp" "$trace"
fi

py=$duckvenv/bin/python
now() { "$py" -c 'import time; print(time.time())'; }
calc() { "$py" -c "print($1)"; }
lt() { [ "$(calc "int($1 < $2)")" = 1 ]; }
# Runs alternate (InferCrane, DuckDB, InferCrane, ...) so a busy neighbour slows both alike;
# the best of RUNS is kept for each.
for t in $threads; do
  ours= theirs= duck=
  for _ in $(seq "$runs"); do
    s=$(now)
    GOMAXPROCS=$t "$bin" profile trace "$trace" --all --workers "$t" --out "$cache/bench/profile.json" >/dev/null
    took=$(calc "$(now) - $s")
    if [ -z "$ours" ] || lt "$took" "$ours"; then ours=$took; fi
    d=$("$duckvenv/bin/python" "$here/duckdb_profile.py" "$trace" "$t" 1)
    dt=$(echo "$d" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
    if [ -z "$theirs" ] || lt "$dt" "$theirs"; then theirs=$dt duck=$d; fi
  done
  printf 'threads=%s  infercrane %.0f rows/s (%.2f s)  duckdb %.0f rows/s (%.2f s)  ratio %.2f\n' \
    "$t" "$(calc "$rows / $ours")" "$ours" "$(calc "$rows / $theirs")" "$theirs" "$(calc "$theirs / $ours")"
  log "duckdb: $duck"
done
