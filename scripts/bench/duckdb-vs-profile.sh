#!/usr/bin/env bash
# Side-by-side full-scan profile: `infercrane profile trace --all` against DuckDB's
# equivalent query (scripts/bench/duckdb_profile.py) on the same generated file, with
# the same thread count (1 and 2). RUNS interleaved rounds (InferCrane, DuckDB,
# InferCrane, ...) so a busy neighbour slows both alike; prints, per size and thread
# count, the median rows/s of each with its spread (min..max), the median of the
# per-round ratios infercrane / DuckDB (above 1.0: InferCrane is faster) with its
# spread, the same ratio of CPU time (user + system, every thread: DuckDB's query
# alone, InferCrane's whole process), which a busy neighbour moves less than wall
# time, the load average, and whether both counted the same samples.
#
# Cache: ${INFERCRANE_CACHE:-$HOME/.cache/infercrane}; DuckDB $DUCKDB_VERSION from PyPI in
# a venv of its own there (first run downloads ~20 MB), the bench trace next to it.
# Env: ROWS (sizes, default "20000000"; the issue's goal is also 100000000),
# ROWS_PER_GROUP (100000), THREADS ("1 2"), RUNS (5).
# On a shared machine run it under the heavy lock: flock /tmp/infercrane-heavy.lock make bench-duckdb
set -euo pipefail

DUCKDB_VERSION=2.0.0
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${INFERCRANE_CACHE:-$HOME/.cache/infercrane}
sizes=${ROWS:-20000000}
per=${ROWS_PER_GROUP:-100000}
threads=${THREADS:-1 2}
runs=${RUNS:-5}
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

py=$duckvenv/bin/python
now() { "$py" -c 'import time; print(time.time())'; }
for rows in $sizes; do
  trace=$cache/bench/trace-$rows-$per.parquet
  if [ ! -f "$trace" ]; then
    log "writing $trace ($rows rows, row groups of $per)"
    "$bin" profile synth --rows "$rows" --rows-per-group "$per" --seed 11 "$trace.tmp" >&2
    mv "$trace.tmp" "$trace"
  fi
  for t in $threads; do
    rounds=$cache/bench/rounds-$rows-$t.jsonl
    : >"$rounds"
    for r in $(seq "$runs"); do
      s=$(now)
      GOMAXPROCS=$t /usr/bin/time -f '%U %S' -o "$cache/bench/cpu" "$bin" profile trace "$trace" --all --workers "$t" --out "$cache/bench/profile.json" >/dev/null
      took=$("$py" -c "print($(now) - $s)")
      cpu=$(tail -1 "$cache/bench/cpu")
      d=$("$py" "$here/duckdb_profile.py" "$trace" "$t" 1)
      "$py" - "$took" "$d" "$cache/bench/profile.json" "$(cut -d' ' -f1-3 /proc/loadavg)" "$cpu" >>"$rounds" <<'PY'
import json, sys
took, duck, prof, load = float(sys.argv[1]), json.loads(sys.argv[2]), json.load(open(sys.argv[3])), sys.argv[4]
cpu = sum(float(x) for x in sys.argv[5].split())
d = prof["distributions"]
ours = {"input_n": d["input_tokens"]["samples"], "output_n": d["output_tokens"]["samples"],
        "cached_n": d["cached_tokens"]["samples"], "duration_n": d["duration_ms"]["samples"], "ttft_n": d["ttft_ms"]["samples"]}
print(json.dumps({"ours_s": took, "duck_s": duck["seconds"], "ours_cpu_s": cpu, "duck_cpu_s": duck["cpu_seconds"], "same_counts": ours == duck["counts"],
                  "ours": ours, "duck": duck["counts"], "duckdb": duck["duckdb"], "load": load}))
PY
      log "rows=$rows threads=$t round $r: $(tail -1 "$rounds")"
    done
    "$py" - "$rows" "$t" "$rounds" <<'PY'
import json, statistics, sys
rows, t = int(sys.argv[1]), int(sys.argv[2])
rs = [json.loads(l) for l in open(sys.argv[3])]
ours = [rows / r["ours_s"] for r in rs]
duck = [rows / r["duck_s"] for r in rs]
ratio = [r["duck_s"] / r["ours_s"] for r in rs]
cpu = [r["duck_cpu_s"] / r["ours_cpu_s"] for r in rs]
m = statistics.median
print(f"rows={rows} threads={t} rounds={len(rs)} duckdb={rs[0]['duckdb']}  "
      f"infercrane {m(ours):,.0f} rows/s ({min(ours):,.0f}..{max(ours):,.0f})  "
      f"duckdb {m(duck):,.0f} rows/s ({min(duck):,.0f}..{max(duck):,.0f})  "
      f"ratio median {m(ratio):.2f} ({min(ratio):.2f}..{max(ratio):.2f})  "
      f"CPU-time ratio median {m(cpu):.2f} ({min(cpu):.2f}..{max(cpu):.2f})  "
      f"same sample counts: {all(r['same_counts'] for r in rs)}  load {rs[0]['load']} .. {rs[-1]['load']}")
PY
  done
done
