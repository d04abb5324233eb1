"""A decoder LLM with grouped-query attention and a causal mask: transformers' Llama, random weights.

    roofline profile examples/llm_gqa.py -- --preset 1b                          # prefill on this GPU
    roofline profile examples/llm_gqa.py -- --preset 8b --mode decode            # one token, 2048 cached
    roofline profile examples/llm_gqa.py --gpu b200 --no-time -- --preset 70b    # analytic: no data
    roofline profile examples/llm_gqa.py --gpu b200 --no-time -- --preset 405b   # fits no single GPU
    python examples/llm_gqa.py --preset tiny                                     # plain run, no profile

Prefill runs `--seq` tokens through the model and keeps the last position's logits (as a server does before
sampling); decode runs one new token per sequence against a DynamicCache already holding `--seq` tokens.
Attention is PyTorch's SDPA (`attn_implementation="sdpa"`). The model is built from a config with random
weights, directly on the device and in the dtype it runs in; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from dataclasses import dataclass
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the shared helper beside this script
import _common


@dataclass(frozen=True)
class Preset:
    """A Llama shape (as in the model's published config.json) and its default input."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    tied: bool  # the output projection shares the embedding's weight
    seq: int
    batch: int = 1

    def parameters(self) -> int:
        """Parameter count: per layer q, k, v, o, gate, up, down and two RMSNorm weights; the embedding, the
        final norm and (untied) the output projection."""
        head_dim = self.hidden // self.heads
        attention = 2 * self.hidden * self.heads * head_dim + 2 * self.hidden * self.kv_heads * head_dim
        layer = attention + 3 * self.hidden * self.intermediate + 2 * self.hidden
        return self.layers * layer + self.vocab * self.hidden * (1 if self.tied else 2) + self.hidden


PRESETS = {
    "tiny": Preset(layers=2, hidden=128, heads=4, kv_heads=2, intermediate=256, vocab=1024, tied=False, seq=64),
    # Llama-3.2-1B, Llama-3-8B, Llama-3-70B and Llama-3.1-405B shapes. 70b's bf16 weights (141 GB) just fit
    # one H200 at batch 1; 405b's (811 GB) fit no single GPU: it is for the analytic run
    "1b": Preset(layers=16, hidden=2048, heads=32, kv_heads=8, intermediate=8192, vocab=128256, tied=True,
                 seq=2048),
    "8b": Preset(layers=32, hidden=4096, heads=32, kv_heads=8, intermediate=14336, vocab=128256, tied=False,
                 seq=2048),
    "70b": Preset(layers=80, hidden=8192, heads=64, kv_heads=8, intermediate=28672, vocab=128256, tied=False,
                  seq=2048),
    "405b": Preset(layers=126, hidden=16384, heads=128, kv_heads=8, intermediate=53248, vocab=128256, tied=False,
                   seq=2048),
}


def build(p: Preset, max_positions: int, where: _common.Setup) -> Any:
    """A LlamaForCausalLM of shape `p`, random weights, on `where.device` in `where.dtype`, eval mode."""
    transformers = _common.require("transformers")
    config = transformers.LlamaConfig(
        vocab_size=p.vocab, hidden_size=p.hidden, intermediate_size=p.intermediate, num_hidden_layers=p.layers,
        num_attention_heads=p.heads, num_key_value_heads=p.kv_heads, tie_word_embeddings=p.tied,
        max_position_embeddings=max(8192, max_positions), attn_implementation="sdpa")
    return _common.build(lambda: transformers.LlamaForCausalLM(config), where, in_dtype=True)


def kv_cache(p: Preset, batch: int, seq: int, where: _common.Setup) -> Any:
    """A DynamicCache holding `seq` random tokens of keys and values in every layer."""
    cache = _common.require("transformers").DynamicCache()
    shape = (batch, p.kv_heads, seq, p.hidden // p.heads)
    for layer in range(p.layers):
        keys = torch.randn(shape, dtype=where.dtype, device=where.device)
        values = torch.randn(shape, dtype=where.dtype, device=where.device)
        cache.update(keys, values, layer)
    return cache


def call_kwargs(model: Any, cache: Any) -> dict[str, Any]:
    """Keyword arguments of the forward across transformers versions: the logits of the last position only
    (`logits_to_keep`, earlier `num_logits_to_keep`) and the cache (`cache`, earlier `past_key_values`)."""
    accepted = inspect.signature(model.forward).parameters
    kwargs: dict[str, Any] = {"use_cache": True}
    keep = next((name for name in ("logits_to_keep", "num_logits_to_keep") if name in accepted), None)
    if keep is not None:
        kwargs[keep] = 1
    if cache is not None:
        kwargs["cache" if "cache" in accepted else "past_key_values"] = cache
    return kwargs


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    where = _common.setup(args)
    name = _common.preset_name(args, where, "1b")
    p = PRESETS[name]
    batch, seq = args.batch or p.batch, args.seq or p.seq
    if batch < 1 or seq < 1:
        raise SystemExit("--batch and --seq must be >= 1")
    itemsize = torch.empty(0, dtype=where.dtype).element_size()
    cached = 2 * p.layers * batch * p.kv_heads * seq * (p.hidden // p.heads) if args.mode == "decode" else 0
    _common.check_fits((p.parameters() + cached) * itemsize, where,
                       "profile it analytically: roofline profile examples/llm_gqa.py --gpu b200 --no-time -- "
                       f"--preset {name}")

    model = build(p, seq + 1, where)
    if args.mode == "prefill":
        ids = torch.randint(0, p.vocab, (batch, seq), device=where.device)
        cache = None
    else:
        ids = torch.randint(0, p.vocab, (batch, 1), device=where.device)
        with _common.no_autograd(where):
            cache = kv_cache(p, batch, seq, where)
    kwargs = call_kwargs(model, cache)

    def step() -> Any:
        return model(ids, **kwargs).logits

    # each decode step appends its token to the cache: drop it, so the profiled step sees `seq` cached tokens
    rewind = (lambda: cache.crop(-1)) if cache is not None else None
    logits, seconds = _common.forward(step, args.mode, where, args.warmup, between=rewind)
    shapes = f"tokens {tuple(ids.shape)}" + (f" + cache {seq}" if cache is not None else "")
    _common.report(f"llama {name} {args.mode}", model, f"{shapes} -> logits {tuple(logits.shape)}", where, seconds)


def arguments() -> argparse.ArgumentParser:
    p = _common.parser(__doc__, PRESETS, "--seq")
    p.add_argument("--mode", choices=["prefill", "decode"], default="prefill",
                   help="prefill: --seq tokens at once; decode: one token against a cache of --seq tokens")
    return p


if __name__ == "__main__":
    main()
