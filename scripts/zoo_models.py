"""The held-out zoo's steps (suites/zoo/heldout.toml) as callables: each model built from its public zoo's code with
random weights (torchvision's and timm's builders, a Hugging Face transformers class from a config), its inputs made
once, and the step a zero-argument function (`build_step`). Used by scripts/predict_accuracy.py (--zoo) and
tests/test_zoo.py (the list's freeze and, on the CPU, tiny versions of the steps).

    python scripts/zoo_models.py [--split dev|test] [--tiny] [--device cpu]   # build and run each step once
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "suites" / "zoo" / "heldout.toml"
FROZEN = ROOT / "suites" / "zoo" / "FROZEN"
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
SPLITS = ("dev", "test")
# --tiny: every step at a size a CPU runs in well under a second (the harness's own test), the model's structure
# kept (its layers' kinds), its widths and depths cut.
TINY_CONFIG = {"n_layer": 1, "n_embd": 64, "n_head": 4, "num_hidden_layers": 1, "hidden_size": 64,
               "num_attention_heads": 4, "intermediate_size": 128, "num_layers": 1, "num_decoder_layers": 1,
               "d_model": 64, "d_ff": 128, "num_heads": 4, "d_kv": 16, "encoder_layers": 1,
               "encoder_attention_heads": 4, "encoder_ffn_dim": 128, "head_dim": 16, "num_key_value_heads": 2}
TINY_SIZES = {"batch": 2, "image": 64, "seq": 32, "decoder_seq": 8, "context": 32, "frames": 4}


def load(path: Path = ZOO) -> list[dict[str, Any]]:
    """The zoo's steps, in file order."""
    from roofline.core.tomlfile import read_toml

    return list(read_toml(path, "the held-out zoo")["step"])


def digest(path: Path = ZOO) -> str:
    """The sha256 of the zoo file: the freeze (suites/zoo/FROZEN) records it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def frozen() -> tuple[str, str]:
    """(date, sha256) the zoo was frozen with."""
    date, sha = FROZEN.read_text().split()[:2]
    return date, sha


def _tiny(entry: dict[str, Any]) -> dict[str, Any]:
    fixed_size = entry.get("group") == "vit" or "deit" in entry["model"]  # a transformer's patch grid is its own
    e = {**entry, **{k: v for k, v in TINY_SIZES.items() if k in entry and not (k == "image" and fixed_size)}}
    if "config" in entry:
        cfg = {k: (TINY_CONFIG.get(k, v)) for k, v in entry["config"].items()}
        for key in ("vocab_size",):
            if key in cfg:
                cfg[key] = 512
        for key in ("num_local_experts", "num_experts"):
            if key in cfg:
                cfg[key] = 4
        if "num_experts_per_tok" in cfg:
            cfg["num_experts_per_tok"] = 2
        if "sliding_window" in cfg:
            cfg["sliding_window"] = 16
        if "max_source_positions" in cfg:
            cfg["max_source_positions"] = TINY_SIZES["seq"] // 2
        cfg.update(pad_token_id=None, bos_token_id=None, eos_token_id=None)  # the published ids exceed a tiny vocab
        if cfg.get("num_key_value_heads") and cfg.get("num_attention_heads"):
            cfg["num_key_value_heads"] = min(cfg["num_key_value_heads"], cfg["num_attention_heads"])
        e["config"] = cfg
    return e


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, DTYPES[name])


def _vision_model(entry: dict[str, Any]) -> Any:
    if entry["source"] == "timm":
        import timm

        return timm.create_model(entry["model"], pretrained=False)
    import torchvision

    where, _, name = entry["model"].rpartition(".")
    module = importlib.import_module(f"torchvision.models{'.' + where if where else ''}")
    kwargs: dict[str, Any] = {"weights": None}
    if where == "segmentation":
        kwargs.update(weights_backbone=None, aux_loss=False)
    assert torchvision  # the import registers the models
    return getattr(module, name)(**kwargs)


def _vision(entry: dict[str, Any], device: str) -> Callable[[], None]:
    import torch

    dtype = _torch_dtype(entry["dtype"])
    torch.manual_seed(0)
    model = _vision_model(entry).to(device, dtype)
    shape = (entry["batch"], 3, entry["frames"], entry["image"], entry["image"]) if "frames" in entry else \
        (entry["batch"], 3, entry["image"], entry["image"])
    x = torch.randn(shape, device=device, dtype=dtype)
    if entry.get("channels_last") and x.dim() == 4:
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    target = torch.randint(0, 1000, (entry["batch"],), device=device)
    return _step(entry, model, lambda: model(x), lambda: torch.nn.functional.cross_entropy(model(x).float(), target))


def _step(entry: dict[str, Any], model: Any, forward: Callable[[], Any], loss: Callable[[], Any]) -> Callable[[], None]:
    """The entry's step: a forward without grad (inference), or the loss's backward and an optimizer step."""
    import torch

    if entry["kind"] == "training":
        model.train()
        opt = _optimizer(entry, model)

        def train() -> None:
            loss().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return train
    model.eval()

    def infer() -> None:
        with torch.no_grad():
            forward()
    return infer


def _optimizer(entry: dict[str, Any], model: Any) -> Any:
    """SGD with momentum for a torchvision CNN trained in fp32 (as its reference recipes), fused AdamW otherwise."""
    import torch

    params = list(model.parameters())
    if entry["source"] == "torchvision" and entry["dtype"] == "fp32":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)
    return torch.optim.AdamW(params, lr=1e-4, fused=params[0].is_cuda)


def _hf_class(name: str) -> Any:
    import transformers

    if hasattr(transformers, name):
        return getattr(transformers, name)
    if name == "WhisperEncoder":
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        return WhisperEncoder
    raise ValueError(f"no transformers class {name}")


def _transformers(entry: dict[str, Any], device: str) -> Callable[[], None]:
    import torch

    cls = _hf_class(entry["model"])
    config = cls.config_class(**entry.get("config", {}))
    config._attn_implementation = "sdpa"
    dtype = _torch_dtype(entry["dtype"])
    torch.manual_seed(0)
    model = cls(config).to(device, dtype)
    kind, batch = entry["kind"], entry["batch"]
    if entry["model"] == "WhisperEncoder":
        feats = torch.randn(batch, config.num_mel_bins, entry["seq"], device=device, dtype=dtype)
        model.eval()

        def encode() -> None:
            with torch.no_grad():
                model(feats)
        return encode
    vocab = config.vocab_size
    if kind == "decode":
        return _decode(model, vocab, batch, entry["context"], device)
    ids = torch.randint(0, vocab, (batch, entry["seq"]), device=device)
    extra = {}
    if "decoder_seq" in entry:
        extra["decoder_input_ids"] = torch.randint(0, vocab, (batch, entry["decoder_seq"]), device=device)
    return _step(entry, model, lambda: model(input_ids=ids, use_cache=False, **extra),
                 lambda: model(input_ids=ids, labels=ids, **extra).loss)


def _decode(model: Any, vocab: int, batch: int, context: int, device: str) -> Callable[[], None]:
    """One token a call on a KV cache filled with `context` tokens: the cache grows by one a call and stays
    contiguous, as a server decodes."""
    import torch
    from transformers import DynamicCache

    model.eval()
    ids = torch.randint(0, vocab, (batch, context), device=device)
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, use_cache=True)
    nxt = torch.randint(0, vocab, (batch, 1), device=device)

    def step() -> None:
        with torch.no_grad():
            model(input_ids=nxt, past_key_values=cache, use_cache=True)
    return step


BUILDERS: dict[str, Callable[[dict[str, Any], str], Callable[[], None]]] = {
    "torchvision": _vision, "timm": _vision, "transformers": _transformers}


def build_step(entry: dict[str, Any], device: str = "cuda", tiny: bool = False) -> Callable[[], None]:
    """The step of one zoo entry on `device` (`tiny`: at a CPU-test size)."""
    return BUILDERS[entry["source"]](_tiny(entry) if tiny else entry, device)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=SPLITS)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    failed = 0
    for entry in load():
        if a.split and entry["split"] != a.split:
            continue
        try:
            build_step(entry, a.device, a.tiny)()
            print(f"ok   {entry['name']}", flush=True)
        except Exception as exc:  # one step's failure must not hide the others'
            failed += 1
            print(f"FAIL {entry['name']}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
