"""docs/profile.md's recipe over the model zoos: `with fake_mode(): model = build(...)`, then the forward profiled
analytically, for every torchvision builder (classification, segmentation, detection, video, optical flow) and
fifteen of timm's most used architectures. Each builds and profiles, or refuses in one line what it cannot do
without data. Skipped where torchvision or timm is not installed (CI has neither); the recipe's own checks run
everywhere (tests/test_analytic_safety.py).

Guards against `fake_mode()` building without the constants and initialiser stand-ins an analytic profile's build
has (capture/fake.py): a drop-path rate's `.tolist()` or trunc_normal_'s `mask.any()` then fails
(DataDependentOutputException; issue 48: 33 of 80 torchvision classification builders, 8 of 15 timm models)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
import torch

import roofline
from roofline.capture import fake_mode
from roofline.core.errors import RooflineError

TIMM = ("resnet50", "vit_base_patch16_224", "convnext_tiny", "efficientnet_b0", "deit_small_patch16_224",
        "swin_tiny_patch4_window7_224", "regnety_016", "mobilenetv3_large_100", "levit_128s", "mixer_b16_224",
        "poolformer_s12", "resnext50_32x4d", "densenet121", "inception_v3", "beit_base_patch16_224")
GROUPS = ("classification", "segmentation", "detection", "video", "optical_flow")
# Detection models select boxes by their scores (`nonzero` of a threshold, NMS): a count no run without data
# has. They refuse in one line.
DATA_DEPENDENT = "detection"


def _torchvision_builders() -> list[tuple[str, str]]:
    if importlib.util.find_spec("torchvision") is None:
        return []
    import torchvision

    out = []
    for group in GROUPS:
        module = torchvision.models if group == "classification" else getattr(torchvision.models, group)
        out += [(group, name) for name in torchvision.models.list_models(module=module)]
    return out


def _input(group: str, name: str) -> tuple[Any, ...]:
    """The forward's arguments: a 224 x 224 image (299 for Inception), 16 frames for video models (112 x 112,
    224 for those that need it), a list of images for detection, two frames for optical flow."""
    if group == "video":
        side = 224 if name.startswith(("mvit", "swin3d", "s3d")) else 112
        return (torch.randn(1, 3, 16, side, side),)
    if group == "detection":
        return ([torch.randn(3, 320, 320)],)
    if group == "optical_flow":
        return torch.randn(1, 3, 128, 128), torch.randn(1, 3, 128, 128)
    side = 299 if "inception" in name else 224
    return (torch.randn(1, 3, side, side),)


def _profile_recipe(build: Any, group: str, name: str) -> Any:
    with fake_mode():
        model = build().eval()
        args = _input(group, name)

    def forward() -> Any:
        with torch.no_grad():
            return model(*args)

    return roofline.profile(forward, time=False, gpu="h100")


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None, reason="torchvision is not installed")
@pytest.mark.parametrize(("group", "name"), _torchvision_builders() or [("none", "none")])
def test_every_torchvision_builder_builds_and_profiles_without_data(group: str, name: str) -> None:
    import torchvision

    extra = {"weights_backbone": None} if group in ("segmentation", "detection") else {}
    build = lambda: torchvision.models.get_model(name, weights=None, **extra)  # noqa: E731
    if group == DATA_DEPENDENT:
        with pytest.raises(RooflineError, match=r"needs tensor values.*nonzero") as exc:
            _profile_recipe(build, group, name)
        assert "\n" not in str(exc.value)
        return
    prof = _profile_recipe(build, group, name)
    assert prof.summary.flops and prof.summary.flops > 0


@pytest.mark.skipif(importlib.util.find_spec("timm") is None, reason="timm is not installed")
@pytest.mark.parametrize("name", TIMM)
def test_timm_models_build_and_profile_without_data(name: str) -> None:
    import timm

    prof = _profile_recipe(lambda: timm.create_model(name, pretrained=False), "classification", name)
    assert prof.summary.flops and prof.summary.flops > 0
