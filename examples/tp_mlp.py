"""A tensor-parallel MLP step (Megatron-style): each layer's fc1 split by columns and fc2 by rows over the ranks,
so every layer ends with one all_reduce of its output. For `roofline profile` inside torchrun:

    torchrun --nproc-per-node 2 -m roofline profile examples/tp_mlp.py -o tp.json     # NCCL, a GPU per rank
    torchrun --nproc-per-node 2 -m roofline profile examples/tp_mlp.py --device cpu   # gloo on the CPU

Plain torch (no extra needed). Outside torchrun it runs as a group of one rank. Each rank builds its shard of
random weights, runs a warm-up step, then the step inside `roofline.region("step")`, and rank 0 prints one line.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist

import roofline

# tokens x model width, layers; the hidden width is 4 x d, split over the ranks
PRESETS = {"tiny": {"batch": 8, "d": 256, "layers": 2}, "full": {"batch": 4096, "d": 8192, "layers": 4}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), help="full on a GPU, tiny on the CPU")
    ap.add_argument("--backend", choices=("nccl", "gloo"), help="nccl on a GPU, gloo on the CPU")
    ap.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()
    cuda = torch.cuda.is_available() and a.backend != "gloo"
    backend = a.backend or ("nccl" if cuda else "gloo")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        if "RANK" in os.environ:  # torchrun
            dist.init_process_group(backend, device_id=device if cuda else None)
        else:
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    ranks, rank = dist.get_world_size(), dist.get_rank()
    cfg = PRESETS[a.preset or ("full" if cuda else "tiny")]
    d, hidden = cfg["d"], 4 * cfg["d"] // ranks
    dtype = torch.bfloat16 if cuda else torch.float32
    torch.manual_seed(rank)
    layers = [(torch.randn(hidden, d, device=device, dtype=dtype) * d**-0.5,
               torch.randn(d, hidden, device=device, dtype=dtype) * (4 * d) ** -0.5) for _ in range(cfg["layers"])]
    x = torch.randn(cfg["batch"], d, device=device, dtype=dtype)

    def step() -> torch.Tensor:
        y = x
        for w1, w2 in layers:
            part = torch.nn.functional.gelu(y @ w1.T) @ w2.T  # this rank's share of the layer's output
            dist.all_reduce(part)  # the shares summed: the layer's output on every rank
            y = y + part
        return y

    with torch.no_grad():
        for _ in range(a.warmup):
            step()
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        with roofline.region("step"):
            step()
        if cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    if rank == 0:
        print(f"tp_mlp: {ranks} rank(s) ({backend}), {cfg['layers']} layers, d={d}, batch {cfg['batch']}, "
              f"{str(dtype).removeprefix('torch.')}: step {elapsed * 1e3:.2f} ms")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
