"""Times a layer's elementwise kernels as vLLM's compiled graphs run them.

The elementwise part of the H200's timings (docs/performance-model.md,
"Kernel timings on an H200"): vLLM's V1 engine compiles its models with
torch.compile (Inductor), which fuses each of a layer's residual add and
RMS norm, rotary embedding of the queries and keys, and gated activation
into a kernel. Each is compiled here the same way (the token count
dynamic, as vLLM compiles it), its kernels counted with PyTorch's profiler,
and timed over distinct copies of its inputs (256 MB or more, past the L2
cache) in a CUDA graph, beside a plain add over the same bytes. Rows give
each function's time and bytes read and written; kernels.csv how many
kernels each launches.

Usage: python3 time_elementwise.py OUTDIR [--gpu NAME] [--cpu]
"""

import csv
import os

import torch

from time_kernels import MODELS, command_line

RUNS = [("Meta-Llama-3-8B", 1), ("Meta-Llama-3-70B", 1), ("Meta-Llama-3-70B", 8)]
TOKENS = [1024, 4096, 8192]


def add_rms_norm(x, residual, weight):
    r = x.float() + residual.float()
    y = r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (y * weight.float()).to(x.dtype), r.to(x.dtype)


def rope(q, k, cos, sin):
    def rot(t):
        t1, t2 = t.float().chunk(2, dim=-1)
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        return torch.cat((t1 * c - t2 * s, t2 * c + t1 * s), dim=-1).to(t.dtype)
    return rot(q), rot(k)


def silu_and_mul(x):
    a, b = x.chunk(2, dim=-1)
    return torch.nn.functional.silu(a.float()).to(x.dtype) * b


def plain_add(x, y):
    return x + y


def main():
    a, cuda, dev, timer = command_line()
    runs, tokens, min_bytes = (RUNS, TOKENS, 256 << 20) if cuda else (RUNS[:1], [64], 1 << 20)
    compiled = {f.__name__: torch.compile(f, dynamic=True) for f in (add_rms_norm, rope, silu_and_mul, plain_add)}
    bf = torch.bfloat16
    counted = {}
    with open(os.path.join(a.outdir, "elementwise-kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "model", "tp", "tokens", "function", "bytes", "measured_ms"])
        for model, tp in runs:
            hidden, heads, kv, hd, width = MODELS[model]
            for n in tokens:
                cases = {
                    "add_rms_norm": (lambda: (torch.randn(n, hidden, device=dev, dtype=bf), torch.randn(n, hidden, device=dev, dtype=bf),
                                              torch.randn(hidden, device=dev, dtype=bf)), 8 * n * hidden),
                    "rope": (lambda: (torch.randn(n, heads // tp, hd, device=dev, dtype=bf), torch.randn(n, kv // tp, hd, device=dev, dtype=bf),
                                      torch.randn(n, hd // 2, device=dev), torch.randn(n, hd // 2, device=dev)),
                             4 * n * (heads + kv) // tp * hd + 4 * n * hd),
                    "silu_and_mul": (lambda: (torch.randn(n, 2 * width // tp, device=dev, dtype=bf),), 6 * n * width // tp),
                    "plain_add": (lambda: (torch.randn(n, hidden, device=dev, dtype=bf), torch.randn(n, hidden, device=dev, dtype=bf)), 6 * n * hidden),
                }
                for name, (make, nbytes) in cases.items():
                    copies = max(1, -(-min_bytes // nbytes))
                    sets = [make() for _ in range(copies)]
                    fn = compiled[name]

                    def run():
                        for s in sets:
                            fn(*s)

                    ms = timer.median_ms(run) / copies
                    w.writerow([a.gpu, model, tp, n, name, nbytes, f"{ms:.5f}"])
                    if name not in counted and cuda:
                        try:
                            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                                fn(*sets[0])
                                torch.cuda.synchronize()
                            counted[name] = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                        except Exception as e:  # noqa: BLE001 - the timings matter more than the count
                            counted[name] = ["profiler failed: " + str(e).splitlines()[0]]
                    del sets
            f.flush()
            print("elementwise:", model, tp, "done", flush=True)
    with open(os.path.join(a.outdir, "elementwise-launches.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["function", "kernels", "names"])
        for name, ks in counted.items():
            w.writerow([name, len(ks), " ".join(ks)])


if __name__ == "__main__":
    main()
