#!/usr/bin/env python3
"""PyTorch twin of meganeura-bench-vision: torchvision's ResNet or the benchmark's diffusion UNet
(--model sd_unet, the module of tools/fixtures/make_sd_unet_fixtures.py) with the same weights and
inputs, one JSON line per variant and mode on stdout (progress on stderr).

    python3 bench/vision_torch.py [--model resnet50] [--batch 4] [--size 224] [--runs 30] [--warmup 5]
        [--modes inference,train] [--variants eager,compile,cudagraphs]

Variants: eager; compile (torch.compile, default mode); cudagraphs (torch.compile
mode="reduce-overhead"). f32 weights, channels-first, cuDNN with TF32 (PyTorch's default for
convolutions) and TF32 matmuls. inference: model.eval() under no_grad; train: model.train(),
cross-entropy (sd_unet: MSE against the target), backward, SGD (lr 0, foreach) and zero_grad; the compile variants compile the
model, forward and backward. Timing as bench/model_torch.py:
wall_ms around a call and a synchronize, gpu_ms from CUDA events, compile_s the warm-up's excess.
"""
import argparse
import json
import pathlib
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools" / "fixtures"))
from make_resnet_fixtures import fill, uniform  # noqa: E402  the test fixture's weights and images
from make_sd_unet_fixtures import SdUnet  # noqa: E402

VARIANTS = {"eager": None, "compile": "default", "cudagraphs": "reduce-overhead"}


def log(*a):
    print("vision_torch:", *a, file=sys.stderr, flush=True)


def model_and_inputs(a, dev):
    """The model with the fixture's weights, its input and its loss function."""
    unet = a.model == "sd_unet"
    model = (SdUnet() if unet else getattr(torchvision.models, a.model)()).to(dev)
    fill(model, dev)
    channels = 4 if unet else 3
    n = a.batch * channels * a.size * a.size
    shape = (a.batch, channels, a.size, a.size)
    inputs = (2 * uniform(1000, n, dev)).float().reshape(shape)
    if unet:
        target = (2 * uniform(1001, n, dev)).float().reshape(shape)
        return model, inputs, lambda out: F.mse_loss(out, target)
    labels = torch.arange(a.batch, device=dev) % 1000
    return model, inputs, lambda out: F.cross_entropy(out, labels)


def run(a, variant, mode):
    dev = torch.device("cuda")
    model, images, loss_of = model_and_inputs(a, dev)
    train = mode == "train"
    model.train(train)
    opt = torch.optim.SGD(model.parameters(), lr=0.0, foreach=True)

    # The compile variants compile the model (its forward and, in training, its backward); the
    # loss, backward call and optimizer step run around it, as bench/model_torch.py does.
    net = model if VARIANTS[variant] is None else torch.compile(model, mode=VARIANTS[variant])

    def fn():
        if variant == "cudagraphs":
            torch.compiler.cudagraph_mark_step_begin()  # the previous call's outputs may be overwritten
        if not train:
            with torch.no_grad():
                return net(images).clone()
        logits = net(images)
        loss_of(logits).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)  # cudagraph outputs must not be kept as .grad
        return logits.detach().clone()

    t0 = time.perf_counter()
    for _ in range(a.warmup):
        out = fn()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    wall, gpu = [], []
    for _ in range(a.runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t = time.perf_counter()
        start.record()
        out = fn()
        end.record()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t) * 1e3)
        gpu.append(start.elapsed_time(end))
    return {"compile_s": max(0.0, warm_s - a.warmup * statistics.median(wall) / 1e3),
            "wall_ms": statistics.median(wall), "wall_min_ms": min(wall),
            "gpu_ms": statistics.median(gpu), "gpu_min_ms": min(gpu),
            "checksum": out.abs().sum().item()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--modes", default="inference,train")
    p.add_argument("--variants", default="eager,compile,cudagraphs")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    device = torch.cuda.get_device_name()
    for variant in a.variants.split(","):
        for mode in a.modes.split(","):
            line = {"impl": "torch-" + variant, "model": a.model, "mode": mode, "device": device,
                    "batch": a.batch, "size": a.size}
            log(variant, mode, "...")
            try:
                line.update(run(a, variant, mode))
            except Exception as e:  # a failing variant reports and the others go on
                traceback.print_exc()
                line["error"] = f"{type(e).__name__}: {e}"
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
