"""Times what a small kernel costs beyond its bytes, on the GPU it runs on.

The second half of time_kernels.py's measurements (docs/performance-model.md,
"Kernel timings on an H200"): single bf16 matrix multiplies of one to 256
rows over weights of 0.5-470 MB, each timed over distinct copies of the
weights (more than 1 GB, so none is read from the L2 cache) in a CUDA graph,
to separate a multiply's fixed time from its reads (t = a + bytes / B); and
the same for a trivial elementwise kernel, an RMS norm and a gated
activation at decode sizes.

Usage: python3 time_floors.py OUTDIR [--gpu NAME] [--cpu]
"""

import csv
import os

import torch
import torch.nn.functional as F

from time_kernels import command_line

# (in, out) of common layers' matrices, 0.5 MB to 470 MB in bf16
SHAPES = [(512, 512), (1024, 1024), (1024, 4096), (2048, 2048), (4096, 1024), (4096, 4096), (4096, 6144),
          (4096, 14336), (14336, 4096), (4096, 28672), (8192, 8192), (8192, 28672), (28672, 8192)]


def main():
    a, cuda, dev, timer = command_line()
    min_bytes = (1 << 30) if cuda else (1 << 22)
    shapes = SHAPES if cuda else SHAPES[:2]
    with open(os.path.join(a.outdir, "gemm-floor.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "in", "out", "tokens", "copies", "weight_bytes", "measured_us"])
        for i, o in shapes:
            copies = max(4, -(-min_bytes // (2 * i * o)))
            ws = [torch.randn(o, i, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
            for n in [1, 16, 64, 256]:
                x = torch.randn(n, i, device=dev, dtype=torch.bfloat16)

                def run():
                    for wt in ws:
                        F.linear(x, wt)

                us = timer.median_ms(run) * 1000 / copies
                w.writerow([a.gpu, i, o, n, copies, 2 * i * o, f"{us:.3f}"])
            del ws
            f.flush()
            print("gemm", i, o, "done", flush=True)
    with open(os.path.join(a.outdir, "small-kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "kernel", "tokens", "width", "kernels", "measured_us"])
        reps = 500 if cuda else 5
        for n, width in [(1, 4096), (64, 4096), (256, 4096), (64, 8192), (1024, 4096)]:
            x = torch.randn(n, width, device=dev, dtype=torch.bfloat16)
            y = torch.randn(n, width, device=dev, dtype=torch.bfloat16)
            g = torch.randn(width, device=dev, dtype=torch.bfloat16)
            gu = torch.randn(n, 2 * width, device=dev, dtype=torch.bfloat16)
            cases = {
                "add": lambda: [x.add_(y) for _ in range(reps)],
                "rms_norm": lambda: [F.rms_norm(x, (width,), g, 1e-6) for _ in range(reps)],
                "silu_mul": lambda: [F.silu(gu[:, :width]) * gu[:, width:] for _ in range(reps)],
            }
            for name, fn in cases.items():
                us = timer.median_ms(fn) * 1000 / reps
                w.writerow([a.gpu, name, n, width, reps, f"{us:.3f}"])
        print("small kernels done", flush=True)


if __name__ == "__main__":
    main()
