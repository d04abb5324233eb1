"""A vision transformer for image classification: a timm model (ViT-B/16 by default), random weights.

    roofline profile examples/vit.py -- --preset full                         # ViT-B/16, 64 x 224x224
    roofline profile examples/vit.py -- --preset full --model vit_large_patch16_224
    roofline profile examples/vit.py --gpu b200 --no-time -- --preset full    # analytic: nothing runs
    python examples/vit.py --preset tiny                                      # plain run, no profile

Inference on a batch of random images. Any name `timm.create_model` knows works with `--model`; it is built
with `pretrained=False` (nothing is downloaded). timm's attention calls PyTorch's SDPA. An image size other
than 224 is passed as `img_size` (ViT-style models take it; the position embedding is sized to match).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the shared helper beside this script
import _common

NATIVE_SIZE = 224  # the image size of the default models' configs: no img_size passed for it


Preset = _common.ImagePreset

PRESETS = {
    "tiny": Preset("vit_tiny_patch16_224", batch=1, image_size=96),
    "full": Preset("vit_base_patch16_224", batch=64, image_size=224),
}


def build(name: str, image_size: int, where: _common.Setup) -> torch.nn.Module:
    """timm's `name` with random weights for `image_size` images, on `where.device` in `where.dtype`, eval
    mode."""
    timm = _common.require("timm")
    kwargs = {} if image_size == NATIVE_SIZE else {"img_size": image_size}
    return _common.build(lambda: timm.create_model(name, pretrained=False, **kwargs), where)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    where = _common.setup(args)
    name, batch, size = _common.image_input(args, where, PRESETS)

    model = build(name, size, where)
    images = torch.randn(batch, 3, size, size, dtype=where.dtype, device=where.device)

    def step() -> Any:
        return model(images)

    out, seconds = _common.forward(step, "forward", where, args.warmup)
    _common.report(name, model, f"images {tuple(images.shape)} -> {tuple(out.shape)}", where, seconds)


def arguments() -> argparse.ArgumentParser:
    p = _common.parser(__doc__, PRESETS, "--image-size")
    p.add_argument("--model", help="a timm model name (default: the preset's: vit_tiny_patch16_224 tiny, "
                                   "vit_base_patch16_224 full)")
    return p


if __name__ == "__main__":
    main()
