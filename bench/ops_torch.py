#!/usr/bin/env python3
"""PyTorch twin of meganeura-bench-ops: the same ops, sizes and names, timed on the GPU.

    python3 bench/ops_torch.py OUT.json [--quick]

Each op runs 10 times to warm up, then 50 times, each timed with CUDA events around the op
alone (eager mode; f32 matmul without TF32, like meganeura's exact-f32 path). Writes
{name: median_us}. bench/summarize.py joins it with meganeura's JSON into one table.
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F


def cases(quick):
    n = 1 << 20 if quick else 1 << 24
    R = C = 1024 if quick else 4096
    dev = "cuda"
    r = lambda *s: torch.randn(*s, device=dev)
    yield f"exp/{n}", lambda x: torch.exp(x), [r(n)]
    yield f"gelu/{n}", lambda x: F.gelu(x), [r(n)]
    yield f"add/{R}x{C}", lambda a, b: a + b, [r(R, C), r(R, C)]
    yield f"add_broadcast/{R}x{C}+{C}", lambda a, b: a + b, [r(R, C), r(C)]
    for s in [256] if quick else [256, 1024, 2048, 4096]:
        yield f"matmul/{s}x{s}x{s}", torch.matmul, [r(s, s), r(s, s)]
    yield "matmul/128x576x1536", torch.matmul, [r(128, 576), r(576, 1536)]
    yield f"sum_last/{R}x{C}", lambda x: x.sum(-1), [r(R, C)]
    yield f"softmax/{R}x{C}", lambda x: torch.softmax(x, -1), [r(R, C)]
    yield f"rms_norm/{R}x{C}", lambda x, w: F.rms_norm(x, (C,), w, 1e-6), [r(R, C), r(C)]
    yield f"layer_norm/{R}x{C}", lambda x, w, b: F.layer_norm(x, (C,), w, b), [r(R, C), r(C), r(C)]
    vocab, D, tokens = 49152, 576, 1024 if quick else 4096
    rows = 8192 if quick else vocab
    ids = torch.randint(0, rows, (tokens,), device=dev)
    yield f"embedding/{rows}x{D}[{tokens}]", lambda t, i: F.embedding(i, t), [r(rows, D), ids]
    ce = 64 if quick else 1024
    labels = torch.randint(0, vocab, (ce,), device=dev)
    yield f"cross_entropy/{ce}x{vocab}", F.cross_entropy, [r(ce, vocab), labels]
    T = 1024 if quick else 8192
    yield f"transpose/{T}x{T}", lambda x: x.t().contiguous(), [r(T, T)]
    yield f"concat/2x{R}x{C // 2}", lambda a, b: torch.cat([a, b], 1), [r(R, C // 2), r(R, C // 2)]
    yield f"cast_f32_f16/{R}x{C}", lambda x: x.half(), [r(R, C)]
    for s in [128] if quick else [128, 1024, 4096]:
        sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        yield f"attention_causal/9on3x{s}x64", sdpa, [r(1, 9, s, 64), r(1, 3, s, 64), r(1, 3, s, 64)]
    convs = [(4, 3, 224, 64, 7, 2), (4, 64, 56, 64, 3, 1)]  # ResNet-50's, as bench/ops_bench.cpp lists them
    if not quick:
        convs += [(4, 64, 56, 64, 1, 1), (4, 64, 56, 256, 1, 1), (4, 256, 56, 64, 1, 1), (4, 256, 56, 128, 1, 1),
                  (4, 128, 56, 128, 3, 2), (4, 128, 28, 512, 1, 1), (4, 256, 56, 512, 1, 2), (4, 512, 28, 128, 1, 1),
                  (4, 128, 28, 128, 3, 1), (4, 512, 28, 256, 1, 1), (4, 256, 28, 256, 3, 2), (4, 256, 14, 1024, 1, 1),
                  (4, 512, 28, 1024, 1, 2), (4, 1024, 14, 256, 1, 1), (4, 256, 14, 256, 3, 1),
                  (4, 1024, 14, 512, 1, 1), (4, 512, 14, 512, 3, 2), (4, 512, 7, 2048, 1, 1),
                  (4, 1024, 14, 2048, 1, 2), (4, 2048, 7, 512, 1, 1), (4, 512, 7, 512, 3, 1)]
    for n, c, hw, out, k, stride in convs:
        conv = lambda x, w, s=stride, p=k // 2: F.conv2d(x, w, stride=s, padding=p)
        yield f"conv2d/{n}x{c}x{hw}x{hw}_{k}x{k}s{stride}x{out}", conv, [r(n, c, hw, hw), r(out, c, k, k)]


def median_us(fn, args, warmup=10, reps=50):
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "ops": {}}
    with torch.no_grad():
        for name, fn, args in cases("--quick" in sys.argv):
            out["ops"][name] = median_us(fn, args)
            print(f"{name:40s} {out['ops'][name]:10.2f} us", flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
