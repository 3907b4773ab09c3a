#!/usr/bin/env python3
"""Prints a markdown table from meganeura-bench-ops JSON output (--benchmark_out=FILE).

    python3 bench/summarize.py ops.json [torch.json]

Columns: GPU time median (of per-step GPU time over all iterations), GB/s and GFLOP/s derived
from it, wall-clock median of step(). With --benchmark_repetitions, the median row is used.
With torch.json (from bench/ops_torch.py, same run, same GPU) it adds PyTorch's median and the
ratio PyTorch time / meganeura time (above 1: meganeura is faster).
"""
import json
import sys


def fmt(v, digits=1):
    if v is None:
        return "–"
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}" if v >= 1 else f"{v:.3g}"


def main(path, torch_path=None):
    with open(path) as f:
        data = json.load(f)
    torch_ops = {}
    if torch_path:
        with open(torch_path) as f:
            t = json.load(f)
        torch_ops = t["ops"]
        print(f"PyTorch {t['torch']} on {t['device']} (eager, f32, no TF32)  ")
    ctx = data.get("context", {})
    rows = data.get("benchmarks", [])
    has_median = {r["run_name"] for r in rows if r.get("aggregate_name") == "median"}
    if ctx.get("meganeura_device"):
        print(f"Device: {ctx['meganeura_device']}  ")
    print(f"Sizes: {ctx.get('meganeura_sizes', '?')}, {ctx.get('date', '')}\n")
    print("| op | GPU median (µs) | GB/s | GFLOP/s | wall median (µs) | dispatches | PyTorch (µs) | PyTorch / ours |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        name = r.get("run_name", r["name"])
        if r.get("run_type") == "aggregate" and r.get("aggregate_name") != "median":
            continue
        if r.get("run_type") != "aggregate" and name in has_median:
            continue
        name = name.removesuffix("/manual_time")
        if r.get("error_occurred"):
            print(f"| {name} | error: {r.get('error_message', '')} | | | | | | |")
            continue
        gpu = r.get("gpu_median_us")
        pt = torch_ops.get(name)
        ratio = pt / gpu if pt and gpu else None
        print(f"| {name} | {fmt(gpu, 2)} | {fmt(r.get('GB/s'))} | {fmt(r.get('GFLOP/s'))} | "
              f"{fmt(r.get('wall_median_us'), 2)} | {fmt(r.get('dispatches'), 0)} | {fmt(pt, 2)} | {fmt(ratio, 2)} |")
        if r.get("label"):
            print(f"|  ↳ {r['label']} | | | | | | | |")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:])
