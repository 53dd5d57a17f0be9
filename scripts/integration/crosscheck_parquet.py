#!/usr/bin/env python3
"""Cross-check an InferCrane evidence document against its per-request Parquet file with DuckDB.

For every lane (campaign) the Parquet file must hold the same number of measured requests and
successes, and DuckDB's own percentile (quantile_cont: linear interpolation, like numpy and
InferCrane) of TTFT and latency over all successful requests must equal the evidence's pooled
p50/p95/p99. Usage: crosscheck_parquet.py EVIDENCE.json RECORDS.parquet
"""
import json
import math
import sys

import duckdb


def main() -> int:
    ev_path, pq_path = sys.argv[1], sys.argv[2]
    with open(ev_path, encoding="utf-8") as f:
        ev = json.load(f)
    bad = 0
    checked = 0
    for model in ev["models"]:
        for c in model["campaigns"]:
            lane = c["lane"]
            n, ok = duckdb.execute(
                "select count(*), count(*) filter (where error_class is null) from read_parquet(?) "
                "where lane = ? and not warmup", [pq_path, lane]).fetchone()
            agg = c["aggregate"]
            if n != agg["requests"] or ok != agg["succeeded"]:
                print(f"{lane}: parquet has {n} requests, {ok} succeeded; evidence says {agg['requests']}, {agg['succeeded']}")
                bad += 1
            for metric in ("ttft_ms", "latency_ms"):
                for q in (50, 95, 99):
                    (got,) = duckdb.execute(
                        f"select quantile_cont({metric}, {q / 100}) from read_parquet(?) "
                        "where lane = ? and not warmup and error_class is null", [pq_path, lane]).fetchone()
                    key = f"{metric[:-3]}_p{q}_ms"
                    want = c["pooled"].get(key)
                    checked += 1
                    if want is None or not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
                        print(f"{lane}: DuckDB pooled {key} = {got}, evidence = {want}")
                        bad += 1
    print(f"crosscheck: {checked} pooled percentiles and the request counts of every lane compared, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
