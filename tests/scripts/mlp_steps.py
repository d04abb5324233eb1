"""A script the profile-document tests run (`roofline plot` and `roofline check` on profiles): an MLP of
`--layers` blocks (64 -> 256 -> 64 with a ReLU between), warmed up outside the region, then `--steps`
forwards, each inside `roofline.region("step")`: the region is entered N times and each op called N times,
so both have N samples."""

import argparse

import torch

import roofline

parser = argparse.ArgumentParser()
parser.add_argument("--layers", type=int, default=2)
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--batch", type=int, default=8)
args = parser.parse_args()


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 256)
        self.fc2 = torch.nn.Linear(256, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


model = torch.nn.Sequential(*(Block() for _ in range(args.layers))).eval()
x = torch.randn(args.batch, 64)
with torch.inference_mode():
    model(x)  # warm-up, outside the region
    for _ in range(args.steps):
        with roofline.region("step"):
            model(x)
print("mlp_steps done")
