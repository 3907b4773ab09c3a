#!/usr/bin/env python3
"""Prints a markdown table from meganeura-bench-ops JSON output (--benchmark_out=FILE).

    python3 bench/summarize.py ops.json

Columns: GPU time median (of per-step GPU time over all iterations), GB/s and GFLOP/s derived
from it, wall-clock median of step(). With --benchmark_repetitions, the median row is used.
"""
import json
import sys


def fmt(v, digits=1):
    if v is None:
        return "–"
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}" if v >= 1 else f"{v:.3g}"


def main(path):
    with open(path) as f:
        data = json.load(f)
    ctx = data.get("context", {})
    rows = data.get("benchmarks", [])
    has_median = {r["run_name"] for r in rows if r.get("aggregate_name") == "median"}
    if ctx.get("meganeura_device"):
        print(f"Device: {ctx['meganeura_device']}  ")
    print(f"Sizes: {ctx.get('meganeura_sizes', '?')}, {ctx.get('date', '')}\n")
    print("| op | GPU median (µs) | GB/s | GFLOP/s | wall median (µs) | dispatches |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        name = r.get("run_name", r["name"])
        if r.get("run_type") == "aggregate" and r.get("aggregate_name") != "median":
            continue
        if r.get("run_type") != "aggregate" and name in has_median:
            continue
        name = name.removesuffix("/manual_time")
        if r.get("error_occurred"):
            print(f"| {name} | error: {r.get('error_message', '')} | | | | |")
            continue
        gpu = r.get("gpu_median_us")
        print(f"| {name} | {fmt(gpu, 2)} | {fmt(r.get('GB/s'))} | {fmt(r.get('GFLOP/s'))} | "
              f"{fmt(r.get('wall_median_us'), 2)} | {fmt(r.get('dispatches'), 0)} |")
        if r.get("label"):
            print(f"|  ↳ {r['label']} | | | | | |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
