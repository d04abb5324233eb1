"""Zoo validation, analytic (issue 29): every torchvision classification model, 22 timm models of different
families and eight Hugging Face models built from tiny configs, each built AND run inside an analytic
`roofline.profile` (time=False, gpu=h200: the build needs no data), on the CPU.

For each model the profile's matrix-product FLOPs (summary flops_matmul) are compared with a reference:
- FlopCounterMode's, where it is right: dense vision models (on the meta device, or real on the CPU where the
  build needs values; nn.MultiheadAttention's fused fast path off, which FlopCounterMode does not count),
  BERT and T5 (attention as full matmuls, as they run it);
- the closed form where it is not (grouped-query SDPA, masks, mixture-of-experts):
  2 x tokens x (the matrix weights + the active experts' share: top_k / experts of the expert weights)
  + per layer 4 x batch x query heads x head dim x the (query, key) pairs the mask keeps (causal: S(S+1)/2;
  a window W: the sum of min(i + 1, W)) + the rotary embedding's product, 2 x batch x seq x d_rot / 2.
A model is exact (ratio 1 to 1e-9), within 0.5% or off; a failure keeps its one-line reason. Every op that ran
without a formula is listed. Writes zoo.json and zoo.md under --out.

    PYTHONPATH=.:SITE python scripts/zoo_validation.py --out /tmp/zoo [--family torchvision,timm,hf] [--limit N]

SITE: a folder with torchvision and timm (pip install --target SITE --no-deps torchvision timm): on a CPU
torch the PyPI torchvision is a CUDA build whose C extension does not load, and whose import then fails on two
op schemas it registers unguarded; `import_torchvision` defines those two so the models import (they are
detection ops no classification model calls). Progress on stderr.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import roofline

TOLERANCE = 0.005  # the bound on |ours / reference - 1|
EXACT = 1e-9
GPU = "h200"  # the roofs the analytic profile is placed on (the FLOPs do not depend on them)
TIMM = ("resnet50", "vit_small_patch16_224", "deit_tiny_patch16_224", "swin_tiny_patch4_window7_224",
        "convnext_tiny", "efficientnet_b0", "mobilenetv3_large_100", "regnety_016", "densenet121", "inception_v3",
        "mixer_b16_224", "resmlp_12_224", "cait_xxs24_224", "levit_128", "pvt_v2_b0", "poolformer_s12",
        "maxvit_tiny_tf_224", "mobilevit_s", "ghostnet_100", "dla34", "eva02_tiny_patch14_224", "fastvit_t8")


def import_torchvision() -> Any:
    """torchvision, its two unguarded op schemas defined first when its C extension does not load (docstring)."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        raise ImportError("torchvision is not installed (see the docstring)")
    try:
        ctypes.CDLL(os.path.join(os.path.dirname(spec.origin), "_C.so"))
    except OSError:
        if "_TORCHVISION_LIB" not in globals():
            lib = torch.library.Library("torchvision", "DEF")
            for op in ("nms", "qnms"):
                lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            globals()["_TORCHVISION_LIB"] = lib  # kept alive for the process
    import torchvision

    return torchvision


# -- references ---------------------------------------------------------------------------------------------
def flop_counter(build: Callable[[], torch.nn.Module], inputs: Callable[[str], Any]) -> tuple[float, str]:
    """FlopCounterMode's total for one forward: on the meta device, else real on the CPU."""

    fast = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)  # FlopCounterMode does not count the fused MHA fast path
    try:
        return _flop_counter(build, inputs)
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)


def _flop_counter(build: Callable[[], torch.nn.Module], inputs: Callable[[str], Any]) -> tuple[float, str]:
    """On meta, else real on the CPU; under no_grad, else with grad on (FlopCounterMode's ModuleTracker fails on
    CaiT's class-attention under no_grad: "Expected gradient function to be set")."""
    from torch.utils.flop_counter import FlopCounterMode

    tries = [(d, g) for g in (False, True) for d in ("meta", "cpu")]
    for n, (device, grad) in enumerate(tries):
        try:
            with torch.device(device):
                model = build().eval()
            args = inputs(device)
            with FlopCounterMode(display=False) as counter, torch.set_grad_enabled(grad):
                model(**args) if isinstance(args, dict) else model(args)
            return float(counter.get_total_flops()), f"FlopCounterMode ({device}{', grad on' if grad else ''})"
        except (RuntimeError, NotImplementedError, TypeError, ValueError, AssertionError):
            if n == len(tries) - 1:
                raise
    raise AssertionError("unreachable")


def closed_form(model: torch.nn.Module, cfg: Any, batch: int, seq: int) -> float:
    """2 x tokens x (matrix weights + active expert weights) + attention as masked (module docstring)."""
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    dense = experts = 0.0
    seen: set[int] = set()
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        if p.dim() == 2 and id(p) not in embeddings:
            dense += p.numel()
        elif p.dim() == 3:  # fused expert weights (experts, out, in)
            experts += p.numel() / p.shape[0] * cfg.num_experts_per_tok
    head = model.get_output_embeddings()
    if head is not None and id(head.weight) in embeddings:  # tied to the embedding: the head still multiplies
        dense += head.weight.numel()
    tokens = batch * seq
    heads = cfg.num_attention_heads
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    window = getattr(cfg, "sliding_window", None)
    every = "sliding_attention" if window and getattr(cfg, "use_sliding_window", True) else "full_attention"
    types = getattr(cfg, "layer_types", None) or [every] * cfg.num_hidden_layers  # Mistral: a window on every layer
    attention = 0.0
    for kind in types:
        w = window if kind == "sliding_attention" and window else seq
        pairs = sum(min(i + 1, w) for i in range(seq))
        attention += 4 * batch * heads * d * pairs
    # the rotary embedding's one product per forward: inv_freq (batch, d_rot / 2, 1) @ positions (batch, 1, seq)
    rotary = sum(2 * batch * b.numel() * seq for n, b in model.named_buffers()
                 if n.split(".")[-1] == "inv_freq")  # not original_inv_freq, its copy
    return 2 * tokens * (dense + experts) + attention + rotary


# -- the zoo ------------------------------------------------------------------------------------------------
def image(device: str, size: int = 224) -> torch.Tensor:
    return torch.randn(1, 3, size, size, device=device)


def vision_models(families: set[str], limit: int | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if "torchvision" in families:
        tv = import_torchvision()
        for name in tv.models.list_models(module=tv.models):
            size = 299 if name == "inception_v3" else 224
            out.append({"name": name, "family": "torchvision", "reference": "flop_counter",
                        "build": (lambda n=name: tv.models.get_model(n, weights=None)),
                        "inputs": (lambda dev, s=size: image(dev, s))})
    if "timm" in families:
        import_torchvision()
        import timm

        for name in TIMM:
            out.append({"name": name, "family": "timm", "reference": "flop_counter",
                        "build": (lambda n=name: timm.create_model(n, pretrained=False)),
                        "inputs": None})
    return out[:limit] if limit else out


TINY = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512)
SEQ = 64


def hf_models() -> list[dict[str, Any]]:
    import transformers as tf

    def decoder(name: str, cls: str, cfg_cls: str, dtype: torch.dtype = torch.float32, **extra: Any) -> dict[str, Any]:
        def config() -> Any:
            cfg = getattr(tf, cfg_cls)(**{**TINY, **extra})
            cfg._attn_implementation = "sdpa"
            return cfg

        return {"name": name, "family": "hf", "reference": "closed_form", "config": config,
                "build": lambda: getattr(tf, cls)(config()).to(dtype),
                "inputs": lambda dev: {"input_ids": torch.randint(0, 256, (1, SEQ), device=dev)}}

    bf16 = torch.bfloat16  # transformers' grouped-GEMM expert path (torch._grouped_mm) takes bf16 only
    moe = dict(num_local_experts=4, num_experts_per_tok=2)
    qmoe = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=64,
                decoder_sparse_step=1, mlp_only_layers=[])
    bert = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                max_position_embeddings=512)
    t5 = dict(vocab_size=256, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4)

    def plain(name: str, cls: str, cfg_cls: str, kw: dict[str, Any], inputs: Callable[[str], Any]) -> dict[str, Any]:
        def config() -> Any:
            cfg = getattr(tf, cfg_cls)(**kw)
            cfg._attn_implementation = "sdpa" if cfg_cls == "BertConfig" else "eager"
            return cfg

        return {"name": name, "family": "hf", "reference": "flop_counter", "config": config,
                "build": lambda: getattr(tf, cls)(config()), "inputs": inputs}

    return [
        decoder("llama (GQA)", "LlamaForCausalLM", "LlamaConfig"),
        decoder("mistral (window 16 < 64)", "MistralForCausalLM", "MistralConfig", sliding_window=16),
        decoder("qwen2 (window 16, all layers)", "Qwen2ForCausalLM", "Qwen2Config", use_sliding_window=True,
                sliding_window=16, max_window_layers=0),
        decoder("mixtral (MoE top-2 of 4)", "MixtralForCausalLM", "MixtralConfig", bf16, **moe),
        decoder("qwen2-moe (top-2 of 4 + shared)", "Qwen2MoeForCausalLM", "Qwen2MoeConfig", bf16, **qmoe),
        decoder("olmoe (top-2 of 4)", "OlmoeForCausalLM", "OlmoeConfig", bf16, num_experts=4, num_experts_per_tok=2),
        plain("bert (encoder)", "BertModel", "BertConfig", bert,
              lambda dev: {"input_ids": torch.randint(0, 256, (1, SEQ), device=dev)}),
        plain("t5 (encoder-decoder)", "T5Model", "T5Config", t5,
              lambda dev: {"input_ids": torch.randint(0, 256, (1, SEQ), device=dev),
                           "decoder_input_ids": torch.randint(0, 256, (1, 16), device=dev)}),
    ]


def timm_inputs(model: torch.nn.Module) -> Callable[[str], torch.Tensor]:
    size = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))
    return lambda dev: torch.randn(1, *size, device=dev)


# -- one model ----------------------------------------------------------------------------------------------
def run_one(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": entry["name"], "family": entry["family"]}
    start = time.perf_counter()
    try:
        inputs = entry["inputs"]
        if inputs is None:  # timm: the input size from the model's config (a meta build reads it)
            with torch.device("meta"):
                inputs = timm_inputs(entry["build"]())
        # the build and the forward, both inside the analytic profile; a with block keeps the model it binds (the
        # objects a profiled function reaches are put back as they were after an analytic run)
        with roofline.profile(time=False, gpu=GPU, name=entry["name"]) as prof:
            model = entry["build"]().eval()
            args = inputs("cpu")
            with torch.no_grad():
                model(**args) if isinstance(args, dict) else model(args)
        s = prof.summary
        out.update(flops=s["flops_matmul"], calls=s["calls"], build_calls=s["build_calls"],
                   without_formula=[m["op"] for m in s["without_formula"]],
                   coverage=s["analytic_coverage"], lower_bound=s["lower_bound"])
        if entry["reference"] == "closed_form":
            cfg = entry["config"]()
            ref, how = closed_form(model, cfg, 1, SEQ), "closed form"
        else:
            ref, how = flop_counter(entry["build"], inputs)
        ratio = out["flops"] / ref if ref else math.nan
        out.update(reference=ref, reference_kind=how, ratio=ratio,
                   status="exact" if abs(ratio - 1) <= EXACT else "within" if abs(ratio - 1) <= TOLERANCE else "off")
    except Exception as exc:
        first = str(exc).splitlines()[0][:160] if str(exc) else ""
        out.update(status="failed", reason=f"{type(exc).__name__}: {first}")
    out["seconds"] = time.perf_counter() - start
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | family | status | ours / reference | reference | build calls left out | coverage (time) | "
             "ops without formula |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cov = (r.get("coverage") or {}).get("time")
        lines.append(f"| {r['name']} | {r['family']} | {r['status']} | "
                     f"{r['ratio']:.6f} | {r.get('reference_kind', '')} | {r.get('build_calls', '')} | "
                     f"{'' if cov is None else f'{cov:.3f}'} | {', '.join(r.get('without_formula') or [])} |"
                     if r["status"] != "failed" else
                     f"| {r['name']} | {r['family']} | failed | | {r.get('reason', '')} | | | |")
    return "\n".join(lines) + "\n"


def counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by = {k: sum(1 for r in rows if r["status"] == k) for k in ("exact", "within", "off", "failed")}
    return {"models": len(rows), **by, "within_0.5%": by["exact"] + by["within"],
            "with_ops_without_formula": sum(1 for r in rows if r.get("without_formula"))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for zoo.json and zoo.md")
    p.add_argument("--family", default="torchvision,timm,hf", help="comma-separated: torchvision, timm, hf")
    p.add_argument("--limit", type=int, default=None, help="at most this many vision models (a quick run)")
    p.add_argument("--only", default=None, help="only models whose name contains one of these (comma-separated)")
    a = p.parse_args(argv)
    families = set(a.family.split(","))
    if importlib.util.find_spec("torchvision") is not None:
        import_torchvision()  # before transformers imports it (docstring)
    entries = vision_models(families, a.limit) + (hf_models() if "hf" in families else [])
    if a.only:
        entries = [e for e in entries if any(part in e["name"] for part in a.only.split(","))]
    rows = []
    for i, entry in enumerate(entries, 1):
        row = run_one(entry)
        rows.append(row)
        said = row.get("reason") or f"{row['ratio']:.6f}"
        print(f"[{i}/{len(entries)}] {row['name']}: {row['status']} {said} ({row['seconds']:.1f} s)", file=sys.stderr)
    a.out.mkdir(parents=True, exist_ok=True)
    summary = {"date": time.strftime("%Y-%m-%d"), "torch": torch.__version__, "counts": counts(rows), "models": rows}
    (a.out / "zoo.json").write_text(json.dumps(summary, indent=1, default=str))
    (a.out / "zoo.md").write_text(markdown(rows))
    print(json.dumps(summary["counts"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
