"""DuckDB's equivalent of `infercrane profile trace --all` on one Parquet file.

The same six columns, the same filters and the same four percentiles per
distribution (exact quantile_disc, as DuckDB computes them), on THREADS threads.
Prints one JSON line: rows, seconds (best of RUNS), the process's CPU time in
that run (cpu_seconds, every thread's, the query alone), rows_per_s and the counts.
"""
import json
import sys
import time

import duckdb

path, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
Q = "[0.5, 0.9, 0.95, 0.99]"
QUERY = f"""
SELECT count(*) AS rows,
  count(*) FILTER (WHERE it > 0) AS input_n,
  quantile_disc(it, {Q}) FILTER (WHERE it > 0) AS input_p,
  count(*) FILTER (WHERE ot > 0) AS output_n,
  quantile_disc(ot, {Q}) FILTER (WHERE ot > 0) AS output_p,
  count(*) FILTER (WHERE it > 0 AND ct >= 0) AS cached_n,
  quantile_disc(ct, {Q}) FILTER (WHERE it > 0 AND ct >= 0) AS cached_p,
  quantile_disc(least(1.0, ct / it), {Q}) FILTER (WHERE it > 0 AND ct >= 0) AS ratio_p,
  count(*) FILTER (WHERE d > 0 AND d < 300000000) AS duration_n,
  quantile_disc(d / 1000.0, {Q}) FILTER (WHERE d > 0 AND d < 300000000) AS duration_p,
  count(*) FILTER (WHERE ttft > 0 AND ttft < 300) AS ttft_n,
  quantile_disc(ttft::DOUBLE * 1000, {Q}) FILTER (WHERE ttft > 0 AND ttft < 300) AS ttft_p
FROM (SELECT it, ot, ct, ttft, epoch_us(completed_at) - epoch_us(started_at) AS d
      FROM read_parquet(?))
"""

con = duckdb.connect()
con.execute(f"SET threads = {threads}")
best, cpu, row = None, None, None
for _ in range(runs):
    start, cpu0 = time.perf_counter(), time.process_time()
    row = con.execute(QUERY, [path]).fetchone()
    took, used = time.perf_counter() - start, time.process_time() - cpu0
    if best is None or took < best:
        best, cpu = took, used
cols = [d[0] for d in con.description]
res = dict(zip(cols, row))
print(json.dumps({
    "duckdb": duckdb.__version__, "threads": threads, "rows": res["rows"], "seconds": best, "cpu_seconds": cpu,
    "rows_per_s": res["rows"] / best,
    "counts": {k: v for k, v in res.items() if k.endswith("_n")},
    "percentiles": {k: v for k, v in res.items() if k.endswith("_p")},
}))
