#!/usr/bin/env python3
"""Tensor-core accuracy on the GPU machine: every gradient, the logits and the loss of one
training step of small random Llama models, meganeura at each matmul precision against PyTorch
in f32 (torch.set_float32_matmul_precision("highest")), beside PyTorch's own TF32 ("high") and
bf16 ("medium") against the same reference. Error of a tensor: max |ours - theirs| / max |theirs|.

    python3 bench/accuracy.py --bin build-gpu/bench/meganeura-grad-dump [--bin-label new] \
        [--extra-bin OLD_BINARY --extra-label old] [--out DIR]

Shapes cover head dims 32/64/80/128, grouped-query ratios 1/3/4, init std 0.002/0.02/0.2,
sequences 1/100/256, tied and untied embeddings, one whose attention runs on the tensor cores
(32 heads at 256 tokens), and one whose MLP operands reach 1e5 and more (the MLP's norm weights
1e5: gate/up read 1e5, down reads ~1e9, beyond f16's 65504 either way). Sequence 1 has no next
token, hence no loss: it checks the logits. Writes
accuracy.jsonl (one line per model and implementation) and prints a markdown table last.
"""
import argparse
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file
from transformers import LlamaConfig, LlamaForCausalLM

# name, head_dim, heads, kv_heads, hidden, intermediate, std, seq, tied, norm_weight
SHAPES = [
    ("hd64-gqa3-std0.02-seq100-tied", 64, 9, 3, 576, 1536, 0.02, 100, True, 1.0),
    ("hd32-gqa1-std0.2-seq256-untied", 32, 4, 4, 128, 384, 0.2, 256, False, 1.0),
    ("hd80-gqa4-std0.002-seq256-tied", 80, 8, 2, 640, 1280, 0.002, 256, True, 1.0),
    ("hd128-gqa4-std0.02-seq1-untied", 128, 8, 2, 1024, 2048, 0.02, 1, False, 1.0),
    ("hd128-gqa1-std0.05-seq100-untied", 128, 4, 4, 512, 1024, 0.05, 100, False, 1.0),
    ("hd64-gqa4-std0.02-seq256-coop-attention", 64, 32, 8, 2048, 2048, 0.02, 256, True, 1.0),
    ("hd64-gqa3-std0.02-seq100-mlp-operands-1e5", 64, 9, 3, 576, 1536, 0.02, 100, True, 1e5),
]
VOCAB, LAYERS = 2048, 2


def make_model(shape, root):
    name, hd, heads, kv, hidden, inter, std, seq, tied, norm_weight = shape
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=LAYERS,
                         num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                         max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=10000.0,
                         tie_word_embeddings=tied, hidden_act="silu", initializer_range=std,
                         bos_token_id=0, eos_token_id=0, attn_implementation="eager")
    model = LlamaForCausalLM(config).float()
    with torch.no_grad():
        for layer in model.model.layers:  # operands of the MLP's products scaled by norm_weight
            layer.post_attention_layernorm.weight.fill_(norm_weight)
    path = os.path.join(root, name)
    model.save_pretrained(path, safe_serialization=True)
    return model, path, seq


def torch_step(model, seq, precision):
    torch.set_float32_matmul_precision(precision)
    torch.backends.cuda.matmul.allow_tf32 = precision != "highest"
    torch.backends.cudnn.allow_tf32 = precision != "highest"
    model = model.cuda()
    model.zero_grad(set_to_none=True)
    ids = torch.tensor([[(7 * i + 3) % VOCAB for i in range(seq)]], device="cuda")
    out = model(input_ids=ids, labels=ids if seq > 1 else None)
    loss = out.loss if seq > 1 else out.logits.new_zeros(())
    if seq > 1:
        loss.backward()
    else:  # one token: no next-token loss; meganeura's mean over no labels is 0 and so are its gradients
        pass
    result = {"logits": out.logits.detach().float().cpu()[0], "loss": loss.detach().float().cpu().reshape(1)}
    for n, p in model.named_parameters():
        result["grad." + n] = (p.grad if p.grad is not None else torch.zeros_like(p)).detach().float().cpu()
    torch.set_float32_matmul_precision("highest")
    return result


def ours(binary, path, seq, precision, out_dir, steps=1):
    out = os.path.join(out_dir, "grads.safetensors")
    env = dict(os.environ)
    if precision:
        env["MEGANEURA_MATMUL_PRECISION"] = precision
    cmd = [binary, "--model", path, "--seq", str(seq), "--out", out]
    if steps > 1:
        cmd += ["--steps", str(steps)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()[-300:]
    got = load_file(out)
    got["logits"] = got["logits"].reshape(seq, VOCAB)
    return got, None


def errors(got, ref):
    rows = {}
    for name, want in ref.items():
        if name not in got:
            rows[name] = float("nan")
            continue
        g = got[name].reshape(want.shape).double()
        w = want.double()
        denom = w.abs().max().item()
        diff = (g - w).abs().max().item()
        rows[name] = diff / denom if denom > 0 else diff
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--bin-label", default="meganeura")
    ap.add_argument("--extra-bin", help="another build's meganeura-grad-dump (run with its default precision)")
    ap.add_argument("--extra-label", default="before")
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--models", default="/tmp/accuracy-models")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.models, exist_ok=True)
    # "high, step 3": the third step on the same inputs, whose products stage at the exponents
    # the steps before left (every training step but the first does).
    runs = [(f"{a.bin_label} {p}", a.bin, p, 1) for p in ("highest", "high", "medium")]
    runs.append((f"{a.bin_label} high, step 3", a.bin, "high", 3))
    if a.extra_bin:
        runs.append((f"{a.extra_label} default", a.extra_bin, None, 1))
    lines, table = [], []
    for shape in SHAPES:
        model, path, seq = make_model(shape, a.models)
        ref = torch_step(model, seq, "highest")
        results = {f"torch {p}": (torch_step(model, seq, p), None) for p in ("high", "medium")}
        for label, binary, precision, steps in runs:
            results[label] = ours(binary, path, seq, precision, a.out, steps)
        for label, (got, err) in results.items():
            if got is None:
                table.append((shape[0], label, "failed: " + err, "", "", ""))
                continue
            e = errors(got, ref)
            grads = {k: v for k, v in e.items() if k.startswith("grad.")}
            worst = max(grads, key=lambda k: grads[k])
            line = {"model": shape[0], "impl": label, "logits": e["logits"], "loss": e["loss"],
                    "worst_grad": grads[worst], "worst_grad_tensor": worst[5:], "grads": grads}
            lines.append(line)
            table.append((shape[0], label, f"{e['logits']:.2e}", f"{e['loss']:.2e}", f"{grads[worst]:.2e}", worst[5:]))
            print(json.dumps({k: v for k, v in line.items() if k != "grads"}), flush=True)
    with open(os.path.join(a.out, "accuracy.jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    print("\n| model | implementation | logits | loss | worst gradient | in |")
    print("|---|---|---:|---:|---:|---|")
    for row in table:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main())
