"""A convolutional network for image classification: a torchvision model (ResNet-50 by default), random weights.

    roofline profile examples/cnn.py -- --preset full                           # ResNet-50, 32 x 224x224
    roofline profile examples/cnn.py -- --preset full --model convnext_tiny     # another torchvision model
    roofline profile examples/cnn.py --gpu b200 --no-time -- --preset full      # analytic: nothing runs
    python examples/cnn.py --preset tiny                                        # plain run, no profile

Inference on a batch of random images. On CUDA (and in the analytic run, which models a GPU) the model and
the images are channels_last, the layout cuDNN's fastest bf16/fp16 convolutions use. Any name that
`torchvision.models.get_model` knows works with `--model`; it is built with `weights=None` (nothing is
downloaded).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the shared helper beside this script
import _common

Preset = _common.ImagePreset

PRESETS = {
    "tiny": Preset("resnet18", batch=1, image_size=64),
    "full": Preset("resnet50", batch=32, image_size=224),
}


def build(name: str, where: _common.Setup, channels_last: bool) -> torch.nn.Module:
    """torchvision's `name` with random weights, on `where.device` in `where.dtype`, eval mode."""
    models = _common.require("torchvision.models")

    def layout(model: torch.nn.Module) -> torch.nn.Module:
        return model.to(memory_format=torch.channels_last) if channels_last else model

    return _common.build(lambda: models.get_model(name, weights=None), where, prepare=layout)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    where = _common.setup(args)
    name, batch, size = _common.image_input(args, where, PRESETS)
    channels_last = args.channels_last if args.channels_last is not None else (where.cuda or where.analytic)

    model = build(name, where, channels_last)
    images = torch.randn(batch, 3, size, size, dtype=where.dtype, device=where.device)
    if channels_last:
        images = images.contiguous(memory_format=torch.channels_last)

    def step() -> Any:
        return model(images)

    out, seconds = _common.forward(step, "forward", where, args.warmup)
    memory = "channels_last" if channels_last else "contiguous"
    shapes = f"images {tuple(images.shape)} {memory} -> {tuple(out.shape)}"
    _common.report(name, model, shapes, where, seconds)


def arguments() -> argparse.ArgumentParser:
    p = _common.parser(__doc__, PRESETS, "--image-size")
    p.add_argument("--model", help="a torchvision.models name (default: the preset's: resnet18 tiny, resnet50 full)")
    p.add_argument("--channels-last", action=argparse.BooleanOptionalAction, default=None,
                   help="channels_last model and images (default: on for cuda and the analytic run)")
    return p


if __name__ == "__main__":
    main()
