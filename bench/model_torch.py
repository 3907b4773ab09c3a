#!/usr/bin/env python3
"""PyTorch twin of meganeura-bench-model: the same Llama directory, tokens and modes, one JSON
line per variant and mode on stdout (progress and errors on stderr).

    python3 bench/model_torch.py --model DIR [--name NAME] [--batch 1] [--seq 128] [--runs 30] [--warmup 5]
        [--modes inference,decode,train] [--variants eager,compile,cudagraphs] [--lr 1e-4]

Variants: eager; compile (torch.compile, default mode); cudagraphs (torch.compile
mode="reduce-overhead"). f32 weights (LlamaForCausalLM.from_pretrained(dtype=float32)), SDPA
attention, TF32 matmuls on. Each variant and mode loads the model afresh.

wall_ms: perf_counter around one call and torch.cuda.synchronize(). gpu_ms: CUDA events around
the same call (first kernel's start to last kernel's end, gaps included). compile_s: the warm-up
calls' wall time beyond what as many warm calls take (dynamo, inductor, autotuning, CUDA-graph
recording; for eager, first-call costs such as cuBLAS initialisation).

Modes, as in meganeura-bench-model:
  inference  logits of all positions, reduced in the timed call to the last row, each row's sum
             and each row's sum of |x| (meganeura reads back the same three).
  decode     prefill the prompt (logits of its last token only), then one token per call; eager
             uses DynamicCache, the compile variants a StaticCache with only the decode step
             compiled (their prefill runs eager).
  train      forward with labels=input_ids (Hugging Face shifts them), backward, SGD step (eager
             foreach), zero_grad; the compile variants compile the model (forward and backward).
A mode that fails prints a line with "error" and the script goes on.
"""
import argparse
import json
import statistics
import sys
import time
import traceback

import torch

VARIANTS = {"eager": None, "compile": "default", "cudagraphs": "reduce-overhead"}


def log(*a):
    print("model_torch:", *a, file=sys.stderr, flush=True)


def token(i, vocab):
    """The token at position i, the same as meganeura-bench-model's."""
    return (i * 7919 + 13) % vocab


def enable_tf32():
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):  # PyTorch 2.9 on; the allow_tf32 flags are deprecated there
        matmul.fp32_precision = "tf32"
        torch.backends.cudnn.conv.fp32_precision = "tf32"
    else:
        matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


def load_model(model_dir, device):
    from transformers import LlamaForCausalLM
    try:
        model = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    except TypeError:  # transformers before 4.56 calls it torch_dtype
        model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32, attn_implementation="sdpa")
    return model.to(device=device, dtype=torch.float32)


def median_min(v):
    return {"ms": statistics.median(v), "min_ms": min(v)} if v else {"ms": None, "min_ms": None}


def timed(fn, warmup, runs):
    """Calls fn warmup + runs times; returns the last result and the timings (ms)."""
    warm = []
    for _ in range(warmup):
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        warm.append((time.perf_counter() - t0) * 1e3)
    walls, gpus = [], []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        out = fn()
        end.record()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - t0) * 1e3)
        gpus.append(start.elapsed_time(end))
    wall = median_min(walls)
    compile_s = max(0.0, (sum(warm) - len(warm) * wall["ms"]) / 1e3) if warm else None
    return out, {"compile_s": compile_s, "wall_ms": wall["ms"], "wall_min_ms": wall["min_ms"],
                 "gpu_ms": median_min(gpus)["ms"], "gpu_min_ms": median_min(gpus)["min_ms"]}


def compiled(fn, variant):
    return fn if VARIANTS[variant] is None else torch.compile(fn, mode=VARIANTS[variant])


def mark_step(variant):
    # CUDA-graph trees reuse their output memory on the next replay: say where a step begins.
    if variant == "cudagraphs":
        torch.compiler.cudagraph_mark_step_begin()


def run_inference(model, a, variant, ids):
    model.eval()

    def forward(x):
        logits = model(input_ids=x, use_cache=False).logits
        return logits[0, -1], logits.sum(-1), logits.abs().sum(-1)

    f = compiled(forward, variant)

    def step():
        mark_step(variant)
        with torch.no_grad():
            return f(ids)

    (last, row_sum, row_abs), r = timed(step, a.warmup, a.runs)
    r.update(sample=last[:4].tolist(), checksum=row_abs.sum().item(), sum=row_sum.sum().item(),
             note="sample: logits[0, -1, :4]; checksum: sum |logits| over all positions")
    return r


def new_cache(model, variant, max_len):
    if variant == "eager":
        from transformers import DynamicCache
        return DynamicCache()
    from transformers import StaticCache
    try:  # transformers 5: the layers take device and dtype from the first update
        return StaticCache(config=model.config, max_cache_len=max_len)
    except TypeError:  # transformers 4
        return StaticCache(config=model.config, max_batch_size=1, max_cache_len=max_len, device=model.device,
                           dtype=model.dtype)


def run_decode(model, a, variant, ids):
    model.eval()
    vocab, seq, dev = model.config.vocab_size, a.seq, ids.device
    warmup = max(a.warmup, 3) if variant != "eager" else a.warmup  # compiling and recording take a few calls
    steps = warmup + a.runs
    toks = torch.tensor([token(seq + i, vocab) for i in range(steps)], device=dev)
    tok, pos = torch.zeros(1, 1, dtype=torch.long, device=dev), torch.zeros(1, dtype=torch.long, device=dev)
    state = {"cache": None}

    def prefill():
        if state["cache"] is not None and variant != "eager":
            state["cache"].reset()
        else:
            state["cache"] = new_cache(model, variant, seq + steps + 1)
        with torch.no_grad():
            positions = torch.arange(seq, device=dev)
            return model(input_ids=ids, past_key_values=state["cache"], position_ids=positions[None],
                         cache_position=positions, use_cache=True, logits_to_keep=1).logits

    def decode_one(t, p, cache):
        return model(input_ids=t, past_key_values=cache, position_ids=p[None], cache_position=p,
                     use_cache=True).logits[0, -1]

    f = compiled(decode_one, variant)
    _, pre = timed(prefill, a.warmup, a.runs)
    prefill()
    i = {"n": 0}

    def step():
        n = i["n"]
        tok.copy_(toks[n].view(1, 1))
        pos.fill_(seq + n)
        i["n"] = n + 1
        mark_step(variant)
        with torch.no_grad():
            return f(tok, pos, state["cache"])

    logits, r = timed(step, warmup, a.runs)
    # With more warm-up steps than meganeura's, the last logits sit at a later position: say which.
    r.update(prefill_ms=pre["wall_ms"], prefill_min_ms=pre["wall_min_ms"], sample=logits[:4].tolist(),
             checksum=logits.abs().sum().item(), position=seq + i["n"] - 1,
             note=("ms per token; DynamicCache" if variant == "eager" else
                   "ms per token; StaticCache, decode step compiled, prefill eager"))
    return r


def run_train(model, a, variant, ids):
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    m = compiled(model, variant)
    norm = model.model.norm.weight
    first = {}

    def step():
        mark_step(variant)
        loss = m(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        if not first:  # step 1 sees the checkpoint's weights, as meganeura's first step does
            first.update(loss=loss.item(), grad=norm.grad.detach().float().cpu())
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach().clone()

    loss, r = timed(step, max(a.warmup, 3 if variant != "eager" else 1), a.runs)
    r.update(loss=first["loss"], loss_last=loss.item(), sample=first["grad"][:4].tolist(),
             checksum=first["grad"].abs().sum().item(), lr=a.lr,
             note="SGD; loss: step 1; sample: grad of model.norm.weight[:4] at step 1, checksum: sum |that grad|")
    return r


MODES = {"inference": run_inference, "decode": run_decode, "train": run_train}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--name")
    ap.add_argument("--batch", type=int, default=1, help="rows for inference and train (decode: 1)")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--modes", default="inference,decode,train")
    ap.add_argument("--variants", default="eager,compile,cudagraphs")
    ap.add_argument("--lr", type=float, default=1e-4)
    a = ap.parse_args()
    name = a.name or a.model.rstrip("/").split("/")[-1]
    enable_tf32()
    dev = torch.device("cuda")
    device = torch.cuda.get_device_name()
    failures = 0
    for variant in a.variants.split(","):
        for mode in a.modes.split(","):
            line = {"impl": f"torch-{variant}", "model": name, "mode": mode, "device": device,
                    "batch": 1 if mode == "decode" else a.batch,
                    "seq": a.seq, "runs": a.runs, "torch": torch.__version__}
            model = None
            try:
                if variant not in VARIANTS or mode not in MODES:
                    raise ValueError(f"unknown variant {variant!r} or mode {mode!r}")
                log(f"{variant} {mode} ...")
                t0 = time.perf_counter()
                model = load_model(a.model, dev)
                line["load_s"] = time.perf_counter() - t0
                vocab = model.config.vocab_size
                rows = 1 if mode == "decode" else a.batch  # row r continues row r - 1, as meganeura's
                ids = torch.tensor([[token(r * a.seq + i, vocab) for i in range(a.seq)] for r in range(rows)],
                                   device=dev)
                line.update(MODES[mode](model, a, variant, ids))
            except Exception as e:  # noqa: BLE001 - report it, go on with the next mode
                failures += 1
                traceback.print_exc(file=sys.stderr)
                line["error"] = f"{type(e).__name__}: {e}"[:500]
            print(json.dumps(line), flush=True)
            del model
            torch._dynamo.reset()
            torch.cuda.empty_cache()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
