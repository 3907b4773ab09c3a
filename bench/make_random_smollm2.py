#!/usr/bin/env python3
"""A SmolLM2-135M-shaped model directory with random weights, for speed runs on the GPU machine
(no internet there): config.json and model.safetensors from transformers, and a tokenizer.json
(the repository's small trained test tokenizer, its vocabulary padded with added tokens).

    python3 bench/make_random_smollm2.py --out /tmp/smollm2-random [--layers 30] [--dtype bfloat16]

Smaller shapes for smoke runs: --hidden 64 --intermediate 128 --heads 4 --kv-heads 2 --vocab 512.
"""
import argparse
import json
import os

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=30)
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--hidden", type=int, default=576)
    ap.add_argument("--intermediate", type=int, default=1536)
    ap.add_argument("--heads", type=int, default=9)
    ap.add_argument("--kv-heads", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "tokenizer",
                                                        "smollm2_like.tokenizer.json"))
    a = ap.parse_args()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.intermediate,
                         num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
                         head_dim=a.hidden // a.heads, max_position_embeddings=8192,
                         rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True, hidden_act="silu",
                         bos_token_id=0, eos_token_id=0)
    model = LlamaForCausalLM(config).to(getattr(torch, a.dtype))
    model.save_pretrained(a.out, safe_serialization=True)
    # The test tokenizer knows ~2000 ids; the model samples from 49152. Ids past the tokenizer's
    # vocabulary become added tokens "<uN>", so every sampled id decodes.
    with open(a.tokenizer) as f:
        tok = json.load(f)
    known = len(tok["model"]["vocab"])
    tok["added_tokens"] += [{"id": i, "content": f"<u{i}>", "single_word": False, "lstrip": False, "rstrip": False,
                             "normalized": False, "special": False} for i in range(known, config.vocab_size)]
    with open(os.path.join(a.out, "tokenizer.json"), "w") as f:
        json.dump(tok, f)
    print(a.out, sorted(os.listdir(a.out)))


if __name__ == "__main__":
    main()
