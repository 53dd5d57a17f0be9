"""Times a layer's four matrix multiplies in FP8 against BF16, on the GPU it runs on.

The FP8 half of time_kernels.py (docs/performance-model.md, "Kernel timings
on an H200"): the same layers multiplied by torch._scaled_mm with e4m3
weights and activations, one scale a row of the activations and a column of
the weights (per-token and per-channel, what vLLM's FP8 W8A8 checkpoints
use) and fast accumulation, and by F.linear in BF16, each over distinct
copies of the weights (1 GB or more) in a CUDA graph. The activations'
quantisation is not timed (vLLM fuses it into one kernel before each
multiply).

Usage: python3 time_fp8.py OUTDIR [--gpu NAME] [--cpu]
"""

import csv
import os

import torch
import torch.nn.functional as F

from time_kernels import command_line, layer_shapes

RUNS = [("Meta-Llama-3-8B", 1), ("Qwen3-32B", 1), ("Meta-Llama-3-70B", 1), ("Meta-Llama-3-70B", 2),
        ("Meta-Llama-3-70B", 4), ("Meta-Llama-3-70B", 8)]
TOKENS = [1, 16, 64, 256, 512, 1024, 2048, 4096, 8192]


def main():
    a, cuda, dev, timer = command_line()
    runs, tokens, min_bytes = (RUNS, TOKENS, 1 << 30) if cuda else (RUNS[:1], [1, 16], 1 << 20)
    fp8 = torch.float8_e4m3fn
    with open(os.path.join(a.outdir, "fp8-linear-layers.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "model", "tp", "tokens", "layer_params_per_gpu", "dtype", "measured_ms"])
        for model, tp in runs:
            shapes = layer_shapes(model, tp)
            params = sum(i * o for i, o in shapes)
            copies = max(2, -(-min_bytes // params))
            ws = [[(torch.randn(o, i, device=dev) * 0.02).to(fp8) for i, o in shapes] for _ in range(copies)]
            wscales = [torch.rand(1, o, device=dev, dtype=torch.float32) + 0.5 for _, o in shapes]
            for n in tokens:
                xs = [(torch.randn(n, i, device=dev)).to(fp8) for i, _ in shapes]
                xscales = [torch.rand(n, 1, device=dev, dtype=torch.float32) + 0.5 for _ in shapes]

                def run():
                    for layer in ws:
                        for x, wt, sx, sw in zip(xs, layer, xscales, wscales):
                            torch._scaled_mm(x, wt.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16, use_fast_accum=True)

                try:
                    ms = timer.median_ms(run) / copies
                    w.writerow([a.gpu, model, tp, n, params, "fp8", f"{ms:.5f}"])
                except RuntimeError as e:  # the CPU check has no FP8 multiplies
                    print("fp8:", model, tp, n, str(e).splitlines()[0], flush=True)
            del ws
            bws = [[torch.randn(o, i, device=dev, dtype=torch.bfloat16) for i, o in shapes] for _ in range(max(2, copies // 2))]
            for n in tokens:
                xs = [torch.randn(n, i, device=dev, dtype=torch.bfloat16) for i, _ in shapes]

                def run16():
                    for layer in bws:
                        for x, wt in zip(xs, layer):
                            F.linear(x, wt)

                ms = timer.median_ms(run16) / len(bws)
                w.writerow([a.gpu, model, tp, n, params, "bf16", f"{ms:.5f}"])
            del bws
            f.flush()
            if cuda:
                torch.cuda.empty_cache()
            print("fp8 and bf16:", model, tp, "done", flush=True)


if __name__ == "__main__":
    main()
