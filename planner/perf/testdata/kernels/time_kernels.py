"""Times the kernels the performance model costs, on the GPU it runs on.

This is how testdata/kernels/h200-*.csv were measured (docs/performance-model.md,
"Kernel timings on an H200"): PyTorch's bf16 matrix multiplies (cuBLAS, what
vLLM's unquantized linear layers call), its flash attention, and plain copies
and reductions for the memory's bandwidth. Every timing replays a CUDA graph
(vLLM captures its decode steps in graphs too, so no launch overhead counts)
and takes the median of several replays timed with CUDA events.

A layer's four matrix multiplies (QKV, attention output, MLP gate-up, down)
are timed over enough distinct copies of the layer's weights that they
cannot sit in the L2 cache between replays, and reported per layer, in
Vidur's format (gpu,model,tp,tokens,layer_params_per_gpu,measured_ms), so
the same test reads both.

Usage: python3 time_kernels.py OUTDIR [--gpu NAME] [--budget SECONDS] [--cpu]
(--cpu runs tiny shapes on the CPU to check the script itself).
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

# name: hidden, heads, kv_heads, head_dim, mlp_width (the models' config.json)
MODELS = {
    "Llama-2-7b-hf": (4096, 32, 32, 128, 11008),
    "Meta-Llama-3-8B": (4096, 32, 8, 128, 14336),
    "Qwen3-0.6B": (1024, 16, 8, 128, 3072),
    "Qwen3-8B": (4096, 32, 8, 128, 12288),
    "Qwen3-32B": (5120, 64, 8, 128, 25600),
    "Meta-Llama-3-70B": (8192, 64, 8, 128, 28672),
}
LINEAR_RUNS = [
    ("Llama-2-7b-hf", 1), ("Llama-2-7b-hf", 2), ("Llama-2-7b-hf", 4),
    ("Meta-Llama-3-8B", 1), ("Qwen3-0.6B", 1), ("Qwen3-8B", 1), ("Qwen3-32B", 1),
    ("Meta-Llama-3-70B", 1), ("Meta-Llama-3-70B", 2), ("Meta-Llama-3-70B", 4), ("Meta-Llama-3-70B", 8),
]
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]


class Timer:
    """Times fn: CUDA graph replays and events on a GPU, wall clock on the CPU."""

    def __init__(self, cuda):
        self.cuda = cuda

    def median_ms(self, fn, reps=10, warm=3):
        if not self.cuda:
            fn()
            ts = []
            for _ in range(3):
                t = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t) * 1000)
            return statistics.median(ts)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(warm):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        for _ in range(warm):
            g.replay()
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        del g
        return statistics.median(ts)


def command_line(budget=False):
    """Parses OUTDIR [--gpu NAME] [--cpu] (and --budget SECONDS), makes
    OUTDIR, and returns the arguments, whether to time on CUDA, the
    device's name and a Timer."""
    p = argparse.ArgumentParser()
    p.add_argument("outdir")
    p.add_argument("--gpu", default="h200")
    p.add_argument("--cpu", action="store_true")
    if budget:
        p.add_argument("--budget", type=float, default=240)
    a = p.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    cuda = not a.cpu
    return a, cuda, "cuda" if cuda else "cpu", Timer(cuda)


def layer_shapes(model, tp):
    hidden, heads, kv, hd, width = MODELS[model]
    return [
        (hidden, (heads + 2 * kv) * hd // tp),  # QKV: in, out
        (heads * hd // tp, hidden),  # attention output
        (hidden, 2 * width // tp),  # MLP gate and up
        (width // tp, hidden),  # MLP down
    ]


def time_linear(timer, dev, out, gpu, runs, tokens, deadline, min_bytes):
    w = csv.writer(out)
    w.writerow(["gpu", "model", "tp", "tokens", "layer_params_per_gpu", "measured_ms"])
    for model, tp in runs:
        shapes = layer_shapes(model, tp)
        params = sum(i * o for i, o in shapes)
        copies = max(2, -(-min_bytes // (2 * params)))
        weights = [[torch.randn(o, i, device=dev, dtype=torch.bfloat16) * 0.02 for i, o in shapes] for _ in range(copies)]
        for n in tokens:
            if time.time() > deadline:
                print("linear: out of time at", model, tp, n, flush=True)
                return
            xs = [torch.randn(n, i, device=dev, dtype=torch.bfloat16) for i, _ in shapes]

            def run():
                for layer in weights:
                    for x, wt in zip(xs, layer):
                        F.linear(x, wt)

            ms = timer.median_ms(run) / copies
            w.writerow([gpu, model, tp, n, params, f"{ms:.5f}"])
        out.flush()
        print(f"linear: {model} tp{tp}: {copies} copies of {params/1e6:.1f}M done", flush=True)
        del weights
        if timer.cuda:
            torch.cuda.empty_cache()


def attention(q, k, v, causal):
    """PyTorch's flash attention (FlashAttention 2) where it runs, else its default."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    except RuntimeError:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def time_decode_attention(timer, dev, out, gpu, batches, contexts, deadline):
    """Decode attention of Llama 3 8B's heads (32 queries over 8 KV heads of 128):
    one query token a sequence, its group's queries packed as FlashAttention
    packs grouped-query attention, over context tokens of KV cache."""
    w = csv.writer(out)
    w.writerow(["gpu", "batch", "context", "heads", "kv_heads", "head_dim", "measured_ms"])
    heads, kv, hd = 32, 8, 128
    for b in batches:
        for ctx in contexts:
            if time.time() > deadline:
                return
            q = torch.randn(b, kv, heads // kv, hd, device=dev, dtype=torch.bfloat16)
            k = torch.randn(b, kv, ctx, hd, device=dev, dtype=torch.bfloat16)
            v = torch.randn(b, kv, ctx, hd, device=dev, dtype=torch.bfloat16)
            ms = timer.median_ms(lambda: attention(q, k, v, False))
            w.writerow([gpu, b, ctx, heads, kv, hd, f"{ms:.5f}"])
            del q, k, v
    out.flush()


def time_prefill_attention(timer, dev, out, gpu, lengths, deadline):
    """Causal attention of one prompt of n tokens, 32 heads of 128."""
    w = csv.writer(out)
    w.writerow(["gpu", "tokens", "heads", "head_dim", "measured_ms"])
    heads, hd = 32, 128
    for n in lengths:
        if time.time() > deadline:
            return
        q, k, v = (torch.randn(1, heads, n, hd, device=dev, dtype=torch.bfloat16) for _ in range(3))
        ms = timer.median_ms(lambda: attention(q, k, v, True))
        w.writerow([gpu, n, heads, hd, f"{ms:.5f}"])
        del q, k, v
    out.flush()


def time_bandwidth(timer, dev, out, gpu, sizes):
    """A copy (bytes read and written) and a sum (bytes read) of n bytes."""
    w = csv.writer(out)
    w.writerow(["gpu", "op", "bytes", "measured_ms"])
    for size in sizes:
        a = torch.empty(size // 2, device=dev, dtype=torch.bfloat16).normal_()
        b = torch.empty_like(a)
        r = torch.empty((), device=dev, dtype=torch.float32)
        w.writerow([gpu, "copy", size, f"{timer.median_ms(lambda: b.copy_(a)):.5f}"])
        w.writerow([gpu, "sum", size, f"{timer.median_ms(lambda: torch.sum(a, dim=0, dtype=torch.float32, out=r)):.5f}"])
        del a, b
    out.flush()


def main():
    a, cuda, dev, timer = command_line(budget=True)
    start = time.time()
    deadline = start + a.budget
    with open(os.path.join(a.outdir, "env.txt"), "w") as env:
        env.write(f"torch {torch.__version__} python {sys.version.split()[0]}\n")
        if cuda:
            env.write(f"device {torch.cuda.get_device_name()} sms {torch.cuda.get_device_properties(0).multi_processor_count}\n")
            env.write(f"cuda {torch.version.cuda} cudnn {torch.backends.cudnn.version()}\n")
            try:
                env.write(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit",
                                          "--format=csv"], capture_output=True, text=True, timeout=30).stdout)
            except Exception as e:  # noqa: BLE001 - the timings matter more than this line
                env.write(f"nvidia-smi: {e}\n")
    if cuda:
        runs, tokens, min_bytes = LINEAR_RUNS, TOKENS, 1 << 30
        batches, contexts, lengths = [8, 32, 128], [512, 2048, 8192, 32768], [512, 1024, 2048, 4096, 8192, 16384]
        sizes = [1 << 28, 1 << 30, 4 << 30]
    else:
        runs, tokens, min_bytes = [("Qwen3-0.6B", 1)], [1, 64], 1 << 20
        batches, contexts, lengths, sizes = [1, 2], [64], [64], [1 << 20]
    with open(os.path.join(a.outdir, "bandwidth.csv"), "w", newline="") as f:
        time_bandwidth(timer, dev, f, a.gpu, sizes)
    print(f"bandwidth done at {time.time()-start:.0f}s", flush=True)
    with open(os.path.join(a.outdir, "linear-layers.csv"), "w", newline="") as f:
        time_linear(timer, dev, f, a.gpu, runs, tokens, start + 0.7 * a.budget, min_bytes)
    print(f"linear done at {time.time()-start:.0f}s", flush=True)
    with open(os.path.join(a.outdir, "attention-decode.csv"), "w", newline="") as f:
        time_decode_attention(timer, dev, f, a.gpu, batches, contexts, deadline)
    with open(os.path.join(a.outdir, "attention-prefill.csv"), "w", newline="") as f:
        time_prefill_attention(timer, dev, f, a.gpu, lengths, deadline)
    print(f"all done at {time.time()-start:.0f}s", flush=True)


if __name__ == "__main__":
    main()
