"""A script the `profile --counters` GPU tests run: on CUDA in bf16, Linear 1024 -> 4096, ReLU, Linear 4096 -> 1024
on a batch of 512 (every GEMM dimension a multiple of 128, so the GEMMs' tensor-pipe FLOPs are exactly
2 x M x N x K), warmed up outside the region, then `--steps` forwards each inside `roofline.region("step")`
(`--no-region`: no region, the whole run is profiled)."""

import argparse
import contextlib

import torch

import roofline

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--no-region", action="store_true")
args = parser.parse_args()

model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024))
model = model.to("cuda", torch.bfloat16).eval()
x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
with torch.inference_mode():
    model(x)  # warm-up, outside the region
    for _ in range(args.steps):
        with contextlib.nullcontext() if args.no_region else roofline.region("step"):
            model(x)
    torch.cuda.synchronize()
print("gpu_mlp_steps done")
