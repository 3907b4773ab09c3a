#!/usr/bin/env python3
"""The model benchmark's table: JSON lines of meganeura-bench-model and bench/model_torch.py
(one or several files, e.g. from separate device calls) joined into one markdown table.

    python3 bench/model_table.py models.jsonl [more.jsonl ...] [--config DIR/config.json]
        [--md models.md] [--svg models.svg]

Rows: model x mode. Cells: GPU / wall ms (median) per implementation; "PyTorch ÷ ours" divides
PyTorch's fastest variant by meganeura (above 1: meganeura is faster). The floor (with --config
and a known GPU) is max(FLOPs / peak, bytes / bandwidth): see floor_note. The last column
compares meganeura's sample and checksum with PyTorch eager's (same weights and tokens).
"""
import argparse
import json
import math
import sys

IMPLS = ["meganeura", "torch-eager", "torch-compile", "torch-cudagraphs"]
MODES = ["inference", "prefill", "decode", "train"]
# Dense TF32 tensor-core peak (what PyTorch's f32 matmuls use with TF32 on) and HBM bandwidth,
# from NVIDIA's data sheets; the first name that is a substring of the GPU's name wins.
GPUS = [
    ("H200", 494.7e12, 4.8e12),
    ("H100 PCIe", 378.0e12, 2.0e12),
    ("H100", 494.7e12, 3.35e12),  # SXM: "NVIDIA H100 80GB HBM3"
]
FLOOR_NOTE = ("floor = max(FLOPs / peak, bytes / bandwidth) with the data-sheet dense TF32 tensor-core peak "
              "and HBM bandwidth ({gpu}: {peak:.0f} TFLOP/s, {bw:.2f} TB/s); FLOPs = 2·(matmul parameters)·tokens + "
              "causal attention (training: 3× the forward); bytes = the f32 weights read once (decode: plus the "
              "KV cache; training: 6 passes over the weights: forward, backward, gradient, SGD read/read/write). "
              "Activations and launch costs are left out, so no implementation can reach it.")


def read_lines(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for n, text in enumerate(f, 1):
                text = text.strip()
                if not text.startswith("{"):
                    continue
                try:
                    rows.append(json.loads(text))
                except json.JSONDecodeError as e:
                    print(f"model_table: {path}:{n}: skipped ({e})", file=sys.stderr)
    return rows


def gpu_spec(names):
    for name in names:
        for key, peak, bw in GPUS:
            if key in name:
                return key, peak, bw
    return None


def model_counts(c):
    """(matmul parameters, all parameters) of a Llama config.json."""
    hidden, inter, layers, vocab = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    heads, kv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    hd = c.get("head_dim") or hidden // heads
    per_layer = 2 * hidden * heads * hd + 2 * hidden * kv * hd + 3 * hidden * inter
    matmul = layers * per_layer + vocab * hidden  # lm_head (tied or not)
    total = matmul + (0 if c.get("tie_word_embeddings") else vocab * hidden) + (2 * layers + 1) * hidden
    return matmul, total


def work(c, mode, seq, position, batch=1):
    """(FLOPs, bytes) of one mode's timed unit (decode: one token attending to position + 1 slots;
    inference, prefill and train: `batch` sequences of `seq` tokens)."""
    matmul, total = model_counts(c)
    heads, layers = c["num_attention_heads"], c["num_hidden_layers"]
    hd = c.get("head_dim") or c["hidden_size"] // heads
    kv = c.get("num_key_value_heads", heads)
    attention = 2 * seq * seq * heads * hd * layers  # causal: half of QKᵀ and PV
    forward = batch * (2 * matmul * seq + attention)
    if mode == "inference":
        return forward, 4 * total
    if mode == "prefill":  # the lm_head for the last token only
        lm_head = c["vocab_size"] * c["hidden_size"]
        return batch * (2 * (matmul - lm_head) * seq + 2 * lm_head + attention), 4 * total
    if mode == "train":
        return 3 * forward, 6 * 4 * total
    slots = position + 1
    return 2 * matmul + 4 * slots * heads * hd * layers, 4 * total + 2 * layers * kv * hd * slots * 4


def fmt(v, digits=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def agreement(ours, ref):
    """meganeura vs PyTorch: max |Δ| of the samples, relative Δ of the checksums (and losses)."""
    if not ours or not ref or "error" in ours or "error" in ref:
        return "–"
    if ours.get("position") is not None and ref.get("position") is not None and ours["position"] != ref["position"]:
        return f"positions differ ({ours['position']} vs {ref['position']})"
    parts = []
    a, b = ours.get("sample") or [], ref.get("sample") or []
    if a and len(a) == len(b):
        parts.append(f"sample max abs Δ {max(abs(x - y) for x, y in zip(a, b)):.2g}")
    for key in ("checksum", "loss"):
        x, y = ours.get(key), ref.get(key)
        if x is not None and y is not None:
            parts.append(f"{key} rel Δ {abs(x - y) / max(abs(y), 1e-30):.2g}")
    return ", ".join(parts) or "–"


def cell(r):
    if r is None:
        return "–"
    if "error" in r:
        return "error"
    return f"{fmt(r.get('gpu_ms'))} / {fmt(r.get('wall_ms'))}"


def build(rows, config):
    """Table rows as dicts, in model and mode order."""
    by = {}
    for r in rows:  # a later line for the same model, mode and impl replaces an earlier one
        by.setdefault((r.get("model"), r.get("mode")), {})[r.get("impl")] = r
        if r.get("mode") == "decode" and r.get("prefill_ms") is not None:  # the decode's prompt, wall only
            p = {k: r[k] for k in ("impl", "model", "seq", "device") if k in r}
            p.update(mode="prefill", wall_ms=r["prefill_ms"], wall_min_ms=r.get("prefill_min_ms"))
            by.setdefault((r.get("model"), "prefill"), {})[r.get("impl")] = p
    spec = gpu_spec([r.get("device", "") for r in rows])
    out = []
    models = list(dict.fromkeys(m for m, _ in by))
    for model in models:
        for mode in MODES + sorted({m for k, m in by if k == model and m not in MODES}):
            impls = by.get((model, mode))
            if not impls:
                continue
            ours = impls.get("meganeura")
            ok = lambda r: r is not None and "error" not in r  # noqa: E731
            torch_rows = [impls.get(i) for i in IMPLS[1:] if ok(impls.get(i))]
            best = {k: min((r[k] for r in torch_rows if r.get(k)), default=None) for k in ("wall_ms", "gpu_ms")}
            ratio = {k: best[k] / ours[k] if ok(ours) and best[k] and ours.get(k) else None for k in best}
            floor = None
            if config and spec:
                any_row = next(r for r in impls.values())
                seq = any_row.get("seq", 128)
                position = next((r["position"] for r in impls.values() if r.get("position") is not None), seq)
                batch = 1 if mode == "decode" else any_row.get("batch", 1)
                flops, nbytes = work(config, mode, seq, position, batch)
                floor = max(flops / spec[1], nbytes / spec[2]) * 1e3
            out.append({"model": model, "mode": mode, "impls": impls, "ratio": ratio, "floor": floor,
                        "agree": agreement(ours, impls.get("torch-eager"))})
    return out, spec


def markdown(table, spec, rows):
    lines = []
    devices = sorted({r["device"] for r in rows if r.get("device")})
    versions = sorted({r["torch"] for r in rows if r.get("torch")})
    batches = sorted({int(r["batch"]) for r in rows if r.get("batch") and r.get("mode") != "decode"}) or [1]
    lines.append(f"Devices: {', '.join(devices) or '?'}; PyTorch {', '.join(versions) or '–'}; "
                 f"batch {', '.join(map(str, batches))} (decode: 1), "
                 f"seq {', '.join(sorted({str(r['seq']) for r in rows if r.get('seq')}))}; decode in ms per token.  ")
    lines.append("Cells: GPU / wall ms (median). PyTorch ÷ ours: PyTorch's fastest variant over meganeura, "
                 "wall (GPU); above 1, meganeura is faster. prefill: the decode mode's prompt, wall only (PyTorch's "
                 "compile variants run it eager).\n")
    head = ["model", "mode"] + [f"{i} (ms)" for i in IMPLS] + ["PyTorch ÷ ours", "floor (ms)",
                                                                 "compile s (" + " / ".join(IMPLS) + ")",
                                                                 "dispatches", "meganeura vs torch-eager"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * 2 + "---:|" * (len(IMPLS) + 4) + "---|")
    for t in table:
        impls = t["impls"]
        compile_s = " / ".join(fmt(impls[i].get("compile_s"), 2) if impls.get(i) and "error" not in impls[i] else "–"
                               for i in IMPLS)
        ours = impls.get("meganeura") or {}
        ratio = f"{fmt(t['ratio']['wall_ms'], 2)} ({fmt(t['ratio']['gpu_ms'], 2)})"
        lines.append("| " + " | ".join([t["model"], t["mode"]] + [cell(impls.get(i)) for i in IMPLS] +
                                       [ratio, fmt(t["floor"]), compile_s, fmt(ours.get("dispatches")), t["agree"]])
                     + " |")
    errors = [r for r in rows if "error" in r]
    if errors:
        lines.append("\nErrors:\n")
        lines += [f"- {r.get('impl')} {r.get('model')} {r.get('mode')}: {r['error']}" for r in errors]
    notes = sorted({f"{r['impl']} {r['mode']}: {r['note']}" for r in rows if r.get("note") and "error" not in r})
    lines.append("\nNotes:\n")
    lines.append("- GPU ms: meganeura, the sum of its dispatches' timestamps (a separate profiled session); "
                 "PyTorch, CUDA events around the call (gaps between kernels included). Wall ms: host call to "
                 "result ready, the comparable figure.")
    if spec:
        lines.append("- " + FLOOR_NOTE.format(gpu=spec[0], peak=spec[1] / 1e12, bw=spec[2] / 1e12))
    else:
        lines.append("- floor: needs --config and an H100/H200 in the devices' names")
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


COLORS = {"meganeura": "#1f77b4", "torch-eager": "#ff7f0e", "torch-compile": "#2ca02c", "torch-cudagraphs": "#d62728"}


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(table):
    """Horizontal bars, one panel per model and mode, each scaled to its own slowest bar: wall time
    dark, GPU time light beneath it; the dashed line is the floor."""
    width, left, bar, gap = 760, 150, 11, 4
    panel_h = 28 + len(IMPLS) * (2 * bar + gap) + 10
    height = 40 + panel_h * len(table)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           '<text x="10" y="20" font-size="14">Model benchmark: wall (dark) and GPU (light) ms, median; '
           'dashed: floor</text>']
    y = 40
    for t in table:
        values = [r.get(k) for r in t["impls"].values() if "error" not in r for k in ("wall_ms", "gpu_ms")]
        top = max([v for v in values if v] + [t["floor"] or 0, 1e-9])
        scale = (width - left - 90) / top
        out.append(f'<text x="10" y="{y + 14}" font-size="12" font-weight="bold">{esc(t["model"])} {esc(t["mode"])}'
                   f'{" (ms per token)" if t["mode"] == "decode" else ""}</text>')
        yy = y + 24
        for impl in IMPLS:
            r = t["impls"].get(impl)
            out.append(f'<text x="{left - 6}" y="{yy + bar + 2}" text-anchor="end">{impl}</text>')
            if r is None or "error" in r:
                out.append(f'<text x="{left + 4}" y="{yy + bar}" fill="#888">{"error" if r else "not run"}</text>')
            else:
                for k, opacity, dy in (("wall_ms", 1.0, 0), ("gpu_ms", 0.45, bar)):
                    v = r.get(k)
                    if v:
                        out.append(f'<rect x="{left}" y="{yy + dy}" width="{v * scale:.1f}" height="{bar - 1}" '
                                   f'fill="{COLORS[impl]}" fill-opacity="{opacity}"/>')
                        out.append(f'<text x="{left + v * scale + 4:.1f}" y="{yy + dy + bar - 2}">{fmt(v)}</text>')
            yy += 2 * bar + gap
        if t["floor"]:
            x = left + t["floor"] * scale
            out.append(f'<line x1="{x:.1f}" y1="{y + 20}" x2="{x:.1f}" y2="{yy}" stroke="black" stroke-dasharray="3,3"/>')
        y += panel_h
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--config", help="the model's config.json, for the floor")
    ap.add_argument("--md", help="also write the markdown here")
    ap.add_argument("--svg", help="write a bar chart here")
    a = ap.parse_args()
    rows = read_lines(a.jsonl)
    if not rows:
        sys.exit("model_table: no JSON lines in " + ", ".join(a.jsonl))
    config = None
    if a.config:
        with open(a.config) as f:
            config = json.load(f)
    table, spec = build(rows, config)
    text = markdown(table, spec, rows)
    print(text, end="")
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg(table))


if __name__ == "__main__":
    main()
