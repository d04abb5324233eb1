"""Hugging Face's masks known without data (capture/hf_masks.py): an analytic profile of a model whose mask is
too large to be a constant (build.MASK_NUMEL booleans) counts the scores the mask function keeps, the same
whatever use_cache, as by hand. One layer, 4 heads of 8 (2 key/value heads), hidden 32: attention counts
4 x 8 = 32 FLOPs (QK^T and PV) per kept score and head."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import roofline
from roofline.capture.build import MASK_NUMEL
from roofline.capture.hf_masks import evaluate

SEQ = 8200  # 8200^2 = 67,240,000 scores > MASK_NUMEL = 67,108,864: the mask is no constant
HEADS, HEAD_DIM = 4, 8


def _transformers() -> Any:
    return pytest.importorskip("transformers")


def _attention(name: str, use_cache: bool, window: int | None = None, pads: int | None = None
               ) -> tuple[float, str | None, str]:
    """(FLOPs, mask label, note) of the one SDPA call of a 1-layer model built and run inside an analytic profile."""
    transformers = _transformers()
    extra = {"sliding_window": window} if window else {}
    cfg = getattr(transformers, f"{name}Config")(vocab_size=64, hidden_size=32, intermediate_size=48,
                                                 num_hidden_layers=1, num_attention_heads=HEADS,
                                                 num_key_value_heads=2, max_position_embeddings=16384, **extra)
    cfg._attn_implementation = "sdpa"

    def program() -> None:
        model = getattr(transformers, f"{name}ForCausalLM")(cfg).eval()
        ids = torch.randint(0, 64, (1, SEQ))
        padding = None if pads is None else torch.cat(  # the first `pads` tokens padded; made inside: a constant
            [torch.zeros(1, pads, dtype=torch.long), torch.ones(1, SEQ - pads, dtype=torch.long)], 1)
        with torch.no_grad():
            model(ids, attention_mask=padding, use_cache=use_cache)

    prof = roofline.profile(program, time=False, gpu="h100")
    (attn,) = [p for p in prof.calls if p.call.op == "aten::scaled_dot_product_attention"]
    return attn.cost.flops, attn.cost.mask, attn.cost.note


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_sliding_window_past_the_constant_limit(use_cache: bool) -> None:
    """Mistral, window 64 over 8200 tokens: rows see 1, 2, ..., 64 keys, then 8136 rows 64 keys:
    64 x 65 / 2 + 8136 x 64 = 2080 + 520704 = 522784 scores a head; x 4 heads x 32 = 66,916,352 FLOPs."""
    assert SEQ * SEQ > MASK_NUMEL
    flops, mask, note = _attention("Mistral", use_cache, window=64)
    assert flops == HEADS * 4 * HEAD_DIM * (64 * 65 // 2 + (SEQ - 64) * 64) == 66_916_352
    assert mask == "sliding window 64 (causal)" and "from the mask function transformers built" in note


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_causal_llama_past_the_constant_limit(use_cache: bool) -> None:
    """Llama over 8200 tokens: SDPA gets is_causal with a cache or without (without one Hugging Face checks the
    position ids, an arange's constant, for packed sequences, and finds none, as the real run does: it built a
    mask tensor while every fake tensor read as traced); 8200 x 8201 / 2 = 33,624,100 scores a head, x 4 heads x
    32 = 4,303,884,800 FLOPs (the full square would be 8,605,120,000)."""
    flops, mask, note = _attention("Llama", use_cache)
    assert flops == HEADS * 4 * HEAD_DIM * SEQ * (SEQ + 1) // 2 == 4_303_884_800
    assert mask is None and "causal: the kept scores" in note  # no mask tensor: SDPA's is_causal


def test_an_analytic_llama_runs_the_ops_its_real_run_does() -> None:
    """A GQA Llama's prefill, analytic and run for real on the CPU: the same aten ops as many times, but for SDPA,
    recorded as the composite op analytically and as its CPU kernel for real. Before the masking gate read
    constants, the analytic run built a 4-D mask (cumsum, le, eq, bitwise_and, ...) and repeated the keys for
    GQA (a clone a layer) where the real run did neither: 3.5% of an H100's predicted Llama prefill."""
    transformers = _transformers()
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                   num_attention_heads=HEADS, num_key_value_heads=2, max_position_embeddings=256)
    cfg._attn_implementation = "sdpa"
    model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 64, (1, 48))

    def step() -> None:
        with torch.no_grad():
            model(input_ids=ids, use_cache=False)

    def counts(prof: Any) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in prof.records:
            op = "sdpa" if "scaled_dot_product" in r.op else r.op
            out[op] = out.get(op, 0) + (r.count or 1)
        return out

    analytic = counts(roofline.profile(step, time=False, gpu="h100"))
    real = counts(roofline.profile(step, device="cpu"))
    assert analytic == real and analytic["sdpa"] == 2 and "aten::clone" not in analytic


def test_causal_with_left_padding_past_the_constant_limit() -> None:
    """The 2-D attention mask pads the first 200 tokens: query i >= 200 sees keys 200..i, i - 199 of them:
    1 + 2 + ... + 8000 = 32,004,000 scores a head; the 200 padded queries see none. x 4 x 32 = 4,096,512,000."""
    flops, mask, _ = _attention("Llama", True, pads=200)
    assert flops == HEADS * 4 * HEAD_DIM * 8000 * 8001 // 2 == 4_096_512_000
    assert mask == "causal + padding"


def test_a_fake_padding_mask_reads_as_none_and_another_fake_tensor_as_unknown() -> None:
    """A 2-D padding mask without data (fake, not a constant) is read as if no token were padding, and the
    pattern says so; a mask function holding another tensor without data (a packed-sequence function's) leaves
    the pattern unknown: None, no guess."""
    mu = _transformers().masking_utils
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.ones(1, 16, dtype=torch.bool)
    bound = {"batch_size": 1, "q_length": 16, "kv_length": 16, "mask_function": mu.causal_mask_function,
             "attention_mask": fake}
    assumed = evaluate(mu.sdpa_mask, bound)
    assert assumed is not None and assumed.label == "causal" and assumed.kept == 136 / 256  # 16 x 17 / 2 of 256
    assert assumed.source.endswith("assuming no padding (its attention mask has no data)")
    real = evaluate(mu.sdpa_mask, {**bound, "attention_mask": torch.ones(1, 16, dtype=torch.bool)})
    assert real is not None and real.label == "causal" and real.kept == 136 / 256
    assert "assuming" not in real.source
    held = mu.and_masks(mu.causal_mask_function, mu.padding_mask_function(fake))
    assert evaluate(mu.sdpa_mask, {**bound, "mask_function": held, "attention_mask": None}) is None


def test_word_stats_read_as_key_by_key() -> None:
    """The 8-keys-a-word reading (masks._word_stats) gives each row's first and last kept key and count as the
    key-by-key argmax and sum do, on random masks with empty and full rows."""
    from roofline.capture.masks import _word_stats

    torch.manual_seed(0)
    for keys in (8, 16, 64, 136):
        m = torch.rand(3, 5, keys) < 0.3
        m[0, 0], m[1, 2] = False, True
        k = m.to(torch.uint8)
        by_key = (k.argmax(-1), keys - 1 - k.flip(-1).argmax(-1), k.sum(-1))
        assert all(torch.equal(a, b) for a, b in zip(_word_stats(m), by_key, strict=True)), keys


def test_a_script_that_imports_transformers_inside_the_profile(tmp_path: Any) -> None:
    """`roofline profile SCRIPT` starts the profile before the script imports transformers: the builders are
    wrapped when masking_utils is imported (an import hook), so the window counts as above (66,916,352 FLOPs)
    and not as the full square (8,606,720,000, what it counted before 2026-12-02). A fresh interpreter, where
    transformers is not imported yet."""
    _transformers()
    script = tmp_path / "mistral_late.py"
    script.write_text(
        "import torch\nimport transformers\n"
        "cfg = transformers.MistralConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,"
        f" num_attention_heads={HEADS}, num_key_value_heads=2, max_position_embeddings=16384, sliding_window=64)\n"
        "cfg._attn_implementation = 'sdpa'\n"
        "model = transformers.MistralForCausalLM(cfg).eval()\n"
        f"with torch.no_grad():\n    model(torch.randint(0, 64, (1, {SEQ})), use_cache=False)\n")
    out = tmp_path / "out.json"
    root = Path(roofline.__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "roofline", "profile", str(script), "--no-time", "--gpu", "h100",
                           "-o", str(out)], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    (attn,) = [r for r in json.loads(out.read_text())["records"] if r["op"] == "aten::scaled_dot_product_attention"]
    assert attn["flops"] == HEADS * 4 * HEAD_DIM * (64 * 65 // 2 + (SEQ - 64) * 64) == 66_916_352
