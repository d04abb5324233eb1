"""Where the sweep's new coordinates take their values from: the shapes a broad zoo of models produces, the held-out
zoo's models left out (issue 48: values from the distribution of a broad zoo, never from an evaluated model).

    python scripts/zoo_shapes.py OUT.json   # needs torchvision and timm (the [models] extra)

Every torchvision classification, segmentation and video builder, and a list of timm architectures, is built with
random weights on the `meta` device (no memory, no arithmetic) and run once at its default input size, batch 1,
forward hooks recording each layer's configuration: convolutions with groups (depthwise, grouped), LayerNorm and
GroupNorm widths and rows, Linear layers' in and out features (their alignment to 8 elements), pooling windows.
Writes the raw rows and, per kind, quantiles (10, 25, 50, 75, 90%) of each field.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_models import load as load_zoo

TIMM = ("resnet50d", "efficientnet_b1", "mobilenetv3_large_100", "convnext_small", "regnety_032", "ghostnet_100",
        "mnasnet_100", "rexnet_100", "efficientformer_l1", "mobilevit_s", "coatnet_0_rw_224", "convnextv2_tiny",
        "edgenext_small", "repvgg_a2", "tinynet_a", "lcnet_100", "fbnetv3_b", "hrnet_w18_small", "dla34",
        "cspresnet50", "inception_v3", "xception41", "res2net50_26w_4s", "skresnet18",
        "pvt_v2_b1", "twins_svt_small", "cait_xxs24_224", "vit_small_patch16_224", "beit_base_patch16_224",
        "crossvit_tiny_240", "maxvit_tiny_tf_224")
QUANTILES = (0.10, 0.25, 0.50, 0.75, 0.90)


def _held_out_models() -> set[str]:
    return {e["model"].rpartition(".")[2] for e in load_zoo()}


def _builders() -> list[tuple[str, Any, tuple[int, ...]]]:
    import timm
    import torchvision

    held = _held_out_models()
    out: list[tuple[str, Any, tuple[int, ...]]] = []
    for module, shape in ((torchvision.models, (1, 3, 224, 224)),
                          (torchvision.models.segmentation, (1, 3, 256, 256)),
                          (torchvision.models.video, (1, 3, 8, 112, 112))):
        for name in torchvision.models.list_models(module=module):
            if name in held or name.startswith("quantized"):
                continue
            kw: dict[str, Any] = {"weights": None}
            if module is torchvision.models.segmentation:
                kw["weights_backbone"] = None
            if name in ("inception_v3", "googlenet"):
                kw["init_weights"] = False
            out.append((f"torchvision.{name}", lambda n=name, m=module, k=kw: torchvision.models.get_model(n, **k),
                        shape if name != "inception_v3" else (1, 3, 299, 299)))
    for name in TIMM:
        if name in held:
            continue
        out.append((f"timm.{name}", lambda n=name: timm.create_model(n, pretrained=False), None))  # type: ignore[misc]
    return out


def _record(rows: list[dict[str, Any]], model: str) -> Any:
    import torch

    def hook(mod: Any, args: tuple[Any, ...], _out: Any) -> None:
        x = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if x is None:
            return
        if isinstance(mod, (torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose2d)):
            rows.append({"kind": type(mod).__name__, "model": model, "cin": mod.in_channels,
                         "cout": mod.out_channels, "groups": mod.groups, "k": mod.kernel_size[0],
                         "stride": mod.stride[0], "h": int(x.shape[-1]), "batch_rows": int(x.shape[-1] * x.shape[-2])})
        elif isinstance(mod, torch.nn.LayerNorm):
            width = int(mod.normalized_shape[-1])
            rows.append({"kind": "LayerNorm", "model": model, "cols": width, "rows": int(x.numel() // width)})
        elif isinstance(mod, torch.nn.GroupNorm):
            rows.append({"kind": "GroupNorm", "model": model, "channels": mod.num_channels, "groups": mod.num_groups})
        elif isinstance(mod, torch.nn.Linear):
            rows.append({"kind": "Linear", "model": model, "n": mod.out_features, "k": mod.in_features,
                         "rows": int(x.numel() // mod.in_features)})
        elif isinstance(mod, (torch.nn.AvgPool2d, torch.nn.MaxPool2d)):
            k = mod.kernel_size if isinstance(mod.kernel_size, int) else mod.kernel_size[0]
            s = mod.stride if isinstance(mod.stride, int) else mod.stride[0]
            rows.append({"kind": type(mod).__name__, "model": model, "k": k, "stride": s, "h": int(x.shape[-1]),
                         "channels": int(x.shape[1])})
    return hook


def _quantiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {str(q): values[0] for q in QUANTILES} if values else {}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {str(q): cuts[round(q * 100) - 1] for q in QUANTILES}


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    rows: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    for name, build, shape in _builders():
        try:
            with torch.device("meta"):
                model = build().eval()
            cfg = getattr(model, "pretrained_cfg", None) or {}
            size = shape or (1, *cfg.get("input_size", (3, 224, 224)))
            hooks = [m.register_forward_hook(_record(rows, name)) for m in model.modules()]
            with torch.no_grad():
                model(torch.empty(size, device="meta"))
            for h in hooks:
                h.remove()
        except Exception as exc:  # a model the meta device cannot run: named, the others go on
            failed[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
        print(f"{'FAIL' if name in failed else 'ok  '} {name}", file=sys.stderr, flush=True)
    summary: dict[str, Any] = {}
    for kind in sorted({r["kind"] for r in rows}):
        sel = [r for r in rows if r["kind"] == kind]
        fields = [f for f in sel[0] if f not in ("kind", "model")]
        summary[kind] = {"layers": len(sel), "models": len({r["model"] for r in sel}),
                         **{f: _quantiles(sorted(float(r[f]) for r in sel)) for f in fields}}
    dw = [r for r in rows if r["kind"] == "Conv2d" and r["groups"] > 1]
    summary["Conv2d_grouped"] = {"layers": len(dw), "depthwise": sum(r["groups"] == r["cin"] for r in dw),
                                 **{f: _quantiles(sorted(float(r[f]) for r in dw)) for f in ("cin", "groups", "k",
                                                                                             "stride", "h")}}
    lin = [r for r in rows if r["kind"] == "Linear"]
    summary["Linear_misaligned"] = {"layers": len(lin), "n_not_multiple_of_8": sum(r["n"] % 8 != 0 for r in lin),
                                    "k_not_multiple_of_8": sum(r["k"] % 8 != 0 for r in lin),
                                    "n_values": sorted({r["n"] for r in lin if r["n"] % 8})}
    a.out.write_text(json.dumps({"held_out_left_out": sorted(_held_out_models()), "failed": failed,
                                 "summary": summary, "rows": rows}, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
