"""A script `roofline profile` runs in the tests: a 2-layer MLP, warmed up outside the region, one forward
inside `roofline.region("step")`. `--fail` raises inside the model, `--exit N` ends with sys.exit(N),
`--no-region` marks no region."""

import argparse
import contextlib
import sys

import torch

import roofline

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--fail", action="store_true")
parser.add_argument("--exit", type=int, default=None)
parser.add_argument("--no-region", action="store_true")
args = parser.parse_args()


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 256)
        self.fc2 = torch.nn.Linear(256, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if args.fail:
            raise ValueError("the model failed on purpose")
        return self.fc2(torch.relu(self.fc1(x)))


model = MLP().eval()
x = torch.randn(args.batch, 64)
with torch.inference_mode():
    model(x)  # warm-up, outside the region
    with contextlib.nullcontext() if args.no_region else roofline.region("step"):
        model(x)
print("tiny_mlp done")
if args.exit is not None:
    sys.exit(args.exit)
