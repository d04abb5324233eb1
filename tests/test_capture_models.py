"""The model zoos counted right: mixture-of-experts grouped GEMMs and their router's ops, attention masks read
for what they are, the fused fast paths of nn.MultiheadAttention and nn.TransformerEncoderLayer, and every
elementwise op torch does not tag pointwise (a walk over torch's aten ops lists any still without a count)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import roofline.capture.formulas_models as fm
from roofline.capture import fake_mode, profile
from roofline.capture.cost import cost_of
from roofline.capture.masks import read_mask
from roofline.capture.trace import OpCall, TensorMeta, op_info


def _costs(prof: object, op: str) -> list:  # type: ignore[type-arg]
    return [p.cost for p in prof.calls if p.call.op == op]  # type: ignore[attr-defined]


def _records(prof: object, op: str) -> list:  # type: ignore[type-arg]
    return [r for r in prof.records if r.op == op]  # type: ignore[attr-defined]


# -- grouped GEMMs ------------------------------------------------------------------------------------------------

def test_grouped_mm_counts_the_rows_each_expert_got() -> None:
    """a (10, 8) x b (3 experts, 8, 16), offsets 2, 5, 10: groups of 2, 3 and 5 rows."""
    a, b = torch.randn(10, 8), torch.randn(3, 8, 16)
    with profile(name="moe") as prof:
        F.grouped_mm(a, b, offs=torch.tensor([2, 5, 10], dtype=torch.int32))
    (rec,) = _records(prof, "aten::_grouped_mm")
    assert rec.flops == 2 * 10 * 8 * 16  # 2 per multiply-add over the 2 + 3 + 5 rows: 2560
    assert rec.flops_source == "rule:grouped gemm" and "(2, 3, 5)" in rec.model_note
    assert "from the offsets' values" in rec.model_note
    assert rec.bytes_read == 10 * 8 * 4 + 3 * 8 * 16 * 4 + 3 * 4  # a, the 3 experts' weights, the offsets: 1868
    assert rec.bytes_written == 10 * 16 * 4


def test_grouped_mm_skips_rows_past_the_last_offset_and_empty_experts() -> None:
    """Offsets 4, 4, 7 over 10 rows: expert 1 gets none (its weights unread), rows 7..9 are skipped (EP sentinels)."""
    a, b = torch.randn(10, 8), torch.randn(3, 8, 16)
    with profile(name="moe") as prof:
        F.grouped_mm(a, b, offs=torch.tensor([4, 4, 7], dtype=torch.int32))
    (rec,) = _records(prof, "aten::_grouped_mm")
    assert rec.flops == 2 * 7 * 8 * 16  # 4 + 0 + 3 rows: 1792
    assert "(4, 0, 3; 1 empty)" in rec.model_note and "7 of 10 rows" in rec.model_note
    assert rec.bytes_read == 7 * 8 * 4 + 2 * 8 * 16 * 4 + 3 * 4  # 7 rows of a, 2 experts' weights, offsets: 1260


def test_grouped_mm_forms() -> None:
    """3-D x 3-D batched, 2-D x 2-D (groups of K: the experts' weight gradients), 3-D x 2-D (groups of N)."""
    a3, b3 = torch.randn(3, 4, 8), torch.randn(3, 8, 16)
    a2, b2 = torch.randn(4, 12), torch.randn(12, 16)
    bn = torch.randn(48, 8).t()  # (8, 48): groups of 16 columns
    with profile(name="forms") as prof:
        F.grouped_mm(a3, b3)
        F.grouped_mm(a2, b2, offs=torch.tensor([4, 8, 12], dtype=torch.int32))
        F.grouped_mm(a3, bn, offs=torch.tensor([16, 32, 48], dtype=torch.int32))
    batched, over_k, over_n = _records(prof, "aten::_grouped_mm")
    assert batched.flops == 2 * 3 * 4 * 16 * 8 and batched.flops_source == "catalog:gemm"  # 3072
    assert batched.params["batch"] == 3
    assert over_k.flops == 2 * 4 * 16 * 12 and over_k.output_shapes == [[3, 4, 16]]  # 3 groups of K = 4: 1536
    assert over_n.flops == 2 * 4 * 8 * 48 and over_n.output_shapes == [[4, 48]]  # 3 groups of N = 16: 3072


def test_grouped_mm_without_data_assumes_a_routing_and_says_which() -> None:
    """Analytic: 32 rows over 4 experts, balanced (8 each) by default; shares 1, 1, 0, 0 leave two experts idle:
    the same FLOPs, half the weights read. The offsets have no values (an empty tensor: a router's output
    without data); offsets the program wrote (`torch.tensor([8, 16, 24, 32])`) would be read as with data."""
    with fake_mode():
        a = torch.randn(32, 16, dtype=torch.bfloat16)
        b = torch.randn(4, 16, 32, dtype=torch.bfloat16)
        offs = torch.empty(4, dtype=torch.int32)

    def run() -> None:
        F.grouped_mm(a, b, offs=offs)

    (balanced,) = _records(profile(run, time=False, gpu="h100"), "aten::_grouped_mm")
    assert fm.ROUTING == "balanced" and "routing assumed balanced" in balanced.model_note
    assert "(8, 8, 8, 8)" in balanced.model_note
    with fm.routing([1, 1, 0, 0]):
        (skewed,) = _records(profile(run, time=False, gpu="h100"), "aten::_grouped_mm")
    assert fm.ROUTING == "balanced"  # restored
    assert balanced.flops == skewed.flops == 2 * 32 * 16 * 32  # every row routed: 32768
    assert "(16, 16, 0, 0; 2 empty)" in skewed.model_note
    weights = 16 * 32 * 2  # one expert's bf16 weights: 1024 bytes
    assert balanced.bytes_read - skewed.bytes_read == 2 * weights
    with fm.routing([1, 1]):  # two shares for four experts: the formula says why it cannot count
        (wrong,) = _records(profile(run, time=False, gpu="h100"), "aten::_grouped_mm")
    assert wrong.flops is None


def test_group_sizes() -> None:
    assert fm.group_sizes((2, 5, 10), 10, 3) == ([2.0, 3.0, 5.0], "from the offsets' values")
    assert fm.group_sizes(None, 10, 4)[0] == [2.5] * 4
    with fm.routing([3, 1]):
        assert fm.group_sizes(None, 8, 2)[0] == [6.0, 2.0]


# -- transformers' MoE models -------------------------------------------------------------------------------------


def _transformers() -> object:
    return pytest.importorskip("transformers", reason="the MoE model checks need transformers")

SMALL = dict(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=64)
TOKENS = 2 * 8  # batch 2 x 8 positions
TOP_K = 2


def _expert_flops(prof: object, modules: str) -> float:
    """The FLOPs of the matrix products inside the routed experts' module (grouped GEMMs, bmm or mm's)."""
    return sum(r.flops * r.count for r in prof.records  # type: ignore[attr-defined]
               if r.module.startswith(modules) and r.flops_source in ("rule:grouped gemm", "catalog:gemm"))


def _mixtral() -> object:
    transformers = _transformers()
    cfg = transformers.MixtralConfig(**SMALL, intermediate_size=48, num_local_experts=4,
                                     num_experts_per_tok=TOP_K)
    return transformers.MixtralForCausalLM(cfg).eval()  # type: ignore[attr-defined]


@pytest.mark.parametrize("impl", ["grouped_mm", "batched_mm", "eager"])
def test_mixtral_expert_flops_are_twice_the_active_expert_params_per_token(impl: str) -> None:
    """Each token runs top-2 of 4 experts; an expert is 3 x H x I = 3 x 32 x 48 = 4608 parameters (gate, up, down):
    2 x 4608 x 2 x 16 tokens = 294912 FLOPs, whichever way transformers runs the experts."""
    torch.manual_seed(0)
    model = _mixtral()
    model.set_experts_implementation(impl)  # type: ignore[attr-defined]
    x = torch.randint(0, 64, (2, 8))
    with torch.no_grad():
        prof = profile(lambda: model(x), warmup=0)  # type: ignore[operator]
    per_expert = 3 * 32 * 48
    assert _expert_flops(prof, "model.layers.0.mlp.experts") == 2 * per_expert * TOP_K * TOKENS
    assert prof.summary["without_formula"] == []  # the router's topk, sort, histc, floor_divide counted too


def test_mixtral_analytic_expert_flops_with_balanced_routing() -> None:
    torch.manual_seed(0)
    model = _mixtral().to(torch.bfloat16)  # type: ignore[attr-defined]
    x = torch.randint(0, 64, (2, 8))
    with torch.no_grad():
        prof = profile(lambda: model(x), time=False, gpu="h100")  # type: ignore[operator]
    assert _expert_flops(prof, "model.layers.0.mlp.experts") == 2 * 3 * 32 * 48 * TOP_K * TOKENS
    assert all("routing assumed balanced" in r.model_note for r in _records(prof, "aten::_grouped_mm"))
    assert prof.summary["without_formula"] == []


@pytest.mark.parametrize("name", ["Qwen2Moe", "DeepseekV3"])
def test_moe_models_count_their_routed_experts(name: str) -> None:
    """Routed experts of I = 24: 3 x 32 x 24 = 2304 parameters each, top-2 per token: 2 x 2304 x 2 x 16 = 147456
    FLOPs (the shared experts apart, plain matrix products)."""
    transformers = _transformers()
    extra = {"Qwen2Moe": dict(num_experts=4, shared_expert_intermediate_size=40, decoder_sparse_step=1),
             "DeepseekV3": dict(n_routed_experts=4, n_shared_experts=1, n_group=2, topk_group=1,
                                first_k_dense_replace=0, q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=8,
                                qk_nope_head_dim=8, v_head_dim=8, num_key_value_heads=4)}[name]
    cfg = getattr(transformers, f"{name}Config")(**{**SMALL, **extra}, intermediate_size=48,
                                                   moe_intermediate_size=24, num_experts_per_tok=TOP_K)
    torch.manual_seed(0)
    model = getattr(transformers, f"{name}ForCausalLM")(cfg).eval()
    x = torch.randint(0, 64, (2, 8))
    with torch.no_grad():
        prof = profile(lambda: model(x), warmup=0)
    assert _expert_flops(prof, "model.layers.0.mlp.experts") == 2 * 3 * 32 * 24 * TOP_K * TOKENS
    assert prof.summary["without_formula"] == []


@pytest.mark.parametrize(("name", "window", "padded", "flops"), [
    ("Llama", None, True, 4 * (136 + 66) * 2 * 16),  # causal 136 of 256 per head; 5 left pads: 1 + ... + 11 = 66
    ("Mistral", 4, False, 2 * 4 * 58 * 2 * 16),  # a window of 4 over 16: 58 scores per head
    ("Mistral", 4, True, 4 * (58 + 38) * 2 * 16)])  # after 5 pads, rows see 1, 2, 3, then 8 rows 4 keys: 38
def test_transformers_masks_are_read(name: str, window: int | None, padded: bool, flops: int) -> None:
    """A batch of 2 x 16 tokens, 4 heads of 8: the mask tensor Hugging Face builds is read and its kept scores
    counted, 2 x (8 + 8) FLOPs each (the second sequence left-padded by 5 where `padded`)."""
    transformers = _transformers()
    extra = {"sliding_window": window} if window else {}
    cfg = getattr(transformers, f"{name}Config")(**{**SMALL, "num_hidden_layers": 1}, intermediate_size=48, **extra)
    torch.manual_seed(0)
    model = getattr(transformers, f"{name}ForCausalLM")(cfg).eval()
    x = torch.randint(0, 64, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, :5] = 0
    with torch.no_grad():
        prof = profile(lambda: model(x, attention_mask=mask if padded else None), warmup=0)
    (cost,) = _costs(prof, "aten::_scaled_dot_product_flash_attention_for_cpu")
    assert cost.flops == flops
    assert cost.mask == {(None, True): "causal + padding", (4, False): "sliding window 4 (causal)",
                         (4, True): "sliding window 4 (causal) + padding"}[(window, padded)]


# -- the router's ops --------------------------------------------------------------------------------------------

def test_router_ops_have_counts() -> None:
    logits = torch.randn(16, 4)
    ids = torch.randint(0, 4, (32,))
    with profile(name="router") as prof:
        torch.topk(logits, 2, dim=-1)
        torch.sort(ids)
        torch.histc(ids.float(), bins=4, min=0, max=3)
        torch.bincount(ids, minlength=4)
        torch.floor_divide(ids, 2)
        torch.polar(torch.ones(8, 4), torch.zeros(8, 4))
        torch.zeros(4).scatter_add_(0, ids[:8] % 4, torch.ones(8))
        torch.zeros(4, 3).index_add_(0, ids[:8] % 4, torch.ones(8, 3))
    flops = {r.op: r.flops for r in prof.records}
    assert flops["aten::topk"] == 16 * 4  # 1 compare per input element
    assert flops["aten::sort"] == 32 * 5  # ceil(log2 32) = 5 compares per element
    assert flops["aten::histc"] == 3 * 32  # shift, scale, add
    assert flops["aten::bincount"] == 32
    assert flops["aten::floor_divide"] == 32  # the scalar wrapped as a 0-d tensor
    assert flops["aten::polar"] == 4 * 32  # cos, sin, 2 multiplies per element
    assert flops["aten::scatter_add_"] == 8 and flops["aten::index_add_"] == 8 * 3
    assert prof.summary["without_formula"] == []


# -- attention masks -----------------------------------------------------------------------------------------------

S = 16
POS = torch.arange(S)
CAUSAL = POS[None, :] <= POS[:, None]


def test_masks_read_for_what_they_are() -> None:
    window = CAUSAL & (POS[:, None] - POS[None, :] < 4)
    p = read_mask(window)
    assert p is not None and p.label == "sliding window 4 (causal)"
    assert p.kept == (1 + 2 + 3 + 4 * 13) / 256  # rows 0-2 see 1, 2, 3 keys, the other 13 rows 4: 58 of 256
    band = (POS[:, None] - POS[None, :]).abs() < 3
    assert read_mask(band).label == "sliding window 5 (both sides)"  # type: ignore[union-attr]
    blocks = (POS[:, None] // 4) == (POS[None, :] // 4)
    assert read_mask(blocks).label == "block-diagonal (4 blocks)"  # type: ignore[union-attr]
    assert read_mask(blocks & CAUSAL).label == "block-causal (4 blocks)"  # type: ignore[union-attr]
    decode = torch.arange(8)[None, :] <= torch.arange(4)[:, None] + 4  # 4 new queries after 4 cached keys
    assert read_mask(decode).label == "causal (bottom-right)"  # type: ignore[union-attr]
    left = CAUSAL.clone()
    left[:, :3] = False  # 3 left-padding positions
    assert read_mask(left).label == "causal + padding"  # type: ignore[union-attr]
    assert read_mask(left & window).label == "sliding window 4 (causal) + padding"  # type: ignore[union-attr]
    assert read_mask(torch.ones(S, S, dtype=torch.bool)).kind == "none"  # type: ignore[union-attr]
    assert read_mask(torch.rand(S, S, generator=torch.Generator().manual_seed(0)) > 0.5).kind == "other"  # type: ignore[union-attr]
    # additive masks: -inf, the dtype's minimum (Hugging Face), -10000 (older code) all mask; a bias does not
    for value in (float("-inf"), torch.finfo(torch.float32).min, -1e4):
        assert read_mask(torch.zeros(S, S).masked_fill(~CAUSAL, value)).kind == "causal"  # type: ignore[union-attr]
    alibi = -(POS[:, None] - POS[None, :]).abs().float()
    assert read_mask(alibi).kind == "none"  # type: ignore[union-attr]
    # an expanded mask is read once per distinct slice; without data nothing is read
    assert read_mask(CAUSAL[None, None].expand(8, 32, S, S)).kind == "causal"  # type: ignore[union-attr]
    assert read_mask(torch.ones(S, S, dtype=torch.bool, device="meta")) is None


def _sdpa(mask: torch.Tensor, batch: int = 1) -> tuple[object, object]:
    q = torch.randn(batch, 2, S, 8)
    with profile(name="masked") as prof:
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    (cost,) = _costs(prof, "aten::_scaled_dot_product_flash_attention_for_cpu")
    assert prof.summary["attention_masked_flops"] == cost.masked_flops  # the summary's total
    assert prof.summary["attention_masked_calls"] == 0  # the calls whose mask was not read
    (rec,) = _records(prof, "aten::_scaled_dot_product_flash_attention_for_cpu")
    return cost, rec


def test_a_causal_mask_tensor_counts_as_is_causal() -> None:
    """2 heads x 16 x 17 / 2 = 272 scores (the triangle with its diagonal) x 2 x (8 + 8) = 8704 FLOPs, as
    is_causal; the kernel computes the whole square: (512 x 32 + 512 x 5) - (272 x 32 + 272 x 5) = 8880 FLOPs on
    masked scores (240 of 512, 47%)."""
    cost, rec = _sdpa(CAUSAL)
    q = torch.randn(1, 2, S, 8)
    with profile(name="causal") as prof:
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    (causal,) = prof.records
    assert rec.flops == causal.flops == 2 * 136 * 2 * 16 == 8704  # type: ignore[attr-defined]
    assert rec.extra_flops == causal.extra_flops == 5 * 272  # type: ignore[attr-defined]
    assert cost.mask == "causal" and not cost.explicit_mask  # type: ignore[attr-defined]
    assert cost.masked_flops == (512 * 32 + 512 * 5) - (272 * 32 + 272 * 5) == 8880  # type: ignore[attr-defined]
    assert "47% of its score work" in rec.model_note and "is_causal=True" in rec.model_note  # type: ignore[attr-defined]


def test_a_sliding_window_of_4_over_16() -> None:
    """58 of 256 scores kept per head (test_masks_read_for_what_they_are): 2 x 58 x 32 = 3712 FLOPs, softmax 580."""
    cost, rec = _sdpa(CAUSAL & (POS[:, None] - POS[None, :] < 4))
    assert rec.flops == 2 * 58 * 32 and rec.extra_flops == 2 * 58 * 5  # type: ignore[attr-defined]
    assert cost.mask == "sliding window 4 (causal)"  # type: ignore[attr-defined]
    assert cost.masked_flops == 2 * (256 - 58) * (32 + 5)  # type: ignore[attr-defined]
    assert "window support" in rec.model_note  # type: ignore[attr-defined]


def test_a_padding_mask() -> None:
    """Two sequences, 12 and 16 keys valid: (12 + 16) x 16 queries x 2 heads = 896 scores x 32 = 28672 FLOPs."""
    lengths = torch.tensor([12, 16])
    mask = POS[None, None, None, :] < lengths[:, None, None, None]  # (2, 1, 1, 16): broadcast over queries
    cost, rec = _sdpa(mask, batch=2)
    assert rec.flops == (12 + 16) * 16 * 2 * 32  # type: ignore[attr-defined]
    assert cost.mask == "padding" and "unpadded" in rec.model_note  # type: ignore[attr-defined]


def test_a_block_diagonal_mask() -> None:
    """Four packed sequences of 4: 4 x 16 = 64 of 256 scores per head: 2 x 64 x 32 = 4096 FLOPs."""
    cost, rec = _sdpa((POS[:, None] // 4) == (POS[None, :] // 4))
    assert rec.flops == 2 * 64 * 32  # type: ignore[attr-defined]
    assert cost.mask == "block-diagonal (4 blocks)" and "block support" in rec.model_note  # type: ignore[attr-defined]


def test_masked_backward_counts_the_kept_scores() -> None:
    """SDPA's backward on the CPU takes the mask too: torch's five products over the 136 causal scores per head
    (16 x 17 / 2), 2 heads x 136 x 2 x (3 x 8 + 2 x 8) = 21760 FLOPs."""
    q = torch.randn(1, 2, S, 8, requires_grad=True)
    prof = profile(lambda: F.scaled_dot_product_attention(q, q, q, attn_mask=CAUSAL).sum().backward(), warmup=0)
    (bwd,) = _costs(prof, "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
    assert bwd.flops == 2 * 136 * 2 * (3 * 8 + 2 * 8) and bwd.mask == "causal"


def test_analytic_masks_unknown_without_data_read_with_it() -> None:
    with fake_mode():  # a mask without values (uninitialised: one computed from data the run does not have);
        q = torch.randn(1, 2, S, 8)  # torch.ones(S, S).tril() here would be a constant, read as with data
        fake = torch.empty(S, S, dtype=torch.bool)
    unknown = profile(lambda: F.scaled_dot_product_attention(q, q, q, attn_mask=fake), time=False, gpu="h100")
    (cost,) = _costs(unknown, "aten::scaled_dot_product_attention")
    assert cost.explicit_mask and cost.mask == "unknown" and cost.flops == 2 * 256 * 32  # the full square
    real = profile(lambda: F.scaled_dot_product_attention(q, q, q, attn_mask=CAUSAL), time=False, gpu="h100")
    (cost,) = _costs(real, "aten::scaled_dot_product_attention")
    assert cost.mask == "causal" and cost.flops == 2 * 136 * 32  # a mask made with data is read: 16 x 17 / 2


# -- fused fast paths --------------------------------------------------------------------------------------------

def _totals(prof: object) -> tuple[float, float]:
    """(matrix-product FLOPs, all FLOPs: the products and the elementwise work)."""
    s = prof.summary  # type: ignore[attr-defined]
    return s["flops_matmul"], s["flops"] + s["extra_flops"]


@pytest.mark.parametrize(("norm_first", "activation"), [(False, "relu"), (True, "gelu")])
@pytest.mark.parametrize("masked", [False, True])
def test_fused_encoder_layer_counts_as_its_decomposed_path(norm_first: bool, activation: str, masked: bool) -> None:
    """E 16, 4 heads, FF 32, 2 x 6 tokens: products 2 x 12 x 16 x (48 + 16 + 32 + 32) = 49152 and attention
    2 x 4 x 36 x 16 = 4608 (2688 causal: 6 x 7 / 2 = 21 of the 36 scores): 53760 (51840).
    The train-mode path (dropout 0) runs them unfused."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation=activation, batch_first=True,
                                             norm_first=norm_first)
    x = torch.randn(2, 6, 16)
    mask = torch.ones(6, 6, dtype=torch.bool).triu(1) if masked else None  # True: not attended (causal)
    layer.eval()
    with torch.inference_mode():
        fused = profile(lambda: layer(x, src_mask=mask), warmup=0)
    (rec,) = _records(fused, "aten::_transformer_encoder_layer_fwd")
    assert rec.flops == (51840 if masked else 53760) and rec.flops_source == "rule:fused encoder layer"
    layer.train()
    unfused = profile(lambda: layer(x, src_mask=mask), warmup=0)
    assert not _records(unfused, "aten::_transformer_encoder_layer_fwd")
    assert _totals(fused) == _totals(unfused)
    if masked:
        (cost,) = _costs(fused, "aten::_transformer_encoder_layer_fwd")
        assert cost.mask == "causal" and cost.masked_flops > 0


@pytest.mark.parametrize("need_weights", [False, True])
def test_fused_multi_head_attention_counts_as_its_decomposed_path(need_weights: bool) -> None:
    """Products 2 x 12 x 16 x 64 = 24576 and attention 4608: 29184 either way; with the weights returned the
    math path also scales the queries (192) and averages the weights over heads (288)."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    x = torch.randn(2, 6, 16)
    mha.eval()
    with torch.inference_mode():
        fused = profile(lambda: mha(x, x, x, need_weights=need_weights), warmup=0)
    (rec,) = _records(fused, "aten::_native_multi_head_attention")
    assert rec.flops == 29184
    mha.train()
    unfused = profile(lambda: mha(x, x, x, need_weights=need_weights), warmup=0)
    assert _totals(fused) == _totals(unfused)


def test_fused_encoder_with_a_padding_mask_counts_each_sequence() -> None:
    """nn.TransformerEncoder's padding-free path (nested tensors): sequences of 4 and 6 tokens. Per layer: products
    2 x 10 x 16 x 128 = 40960 (10 real tokens, not 12) and attention 4 heads x (16 + 36) x 16 = 3328: 44288."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    x = torch.randn(2, 6, 16)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[0, 4:] = True
    with torch.inference_mode(), pytest.warns(UserWarning, match="nested"):
        prof = profile(lambda: encoder(x, src_key_padding_mask=padding), warmup=0)
    recs = _records(prof, "aten::_transformer_encoder_layer_fwd")
    assert [r.flops for r in recs] == [44288, 44288] and "4, 6 tokens" in recs[0].model_note
    assert prof.summary["without_formula"] == []


def test_fused_ops_analytic() -> None:
    """The fused ops called under the fake mode (an analytic run) count as in a timed one."""
    mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 6, 16)

    def run() -> None:
        torch._native_multi_head_attention(x, x, x, 16, 4, mha.in_proj_weight, mha.in_proj_bias,
                                           mha.out_proj.weight, mha.out_proj.bias, need_weights=False)

    with torch.inference_mode():
        (timed,) = profile(run, warmup=0).records
        (analytic,) = profile(run, time=False, gpu="h100").records
    assert timed.flops == analytic.flops == 29184 and timed.extra_flops == analytic.extra_flops


# -- elementwise ops torch does not tag -----------------------------------------------------------------------------

def test_untagged_activations_and_in_place_twins() -> None:
    x = torch.randn(4, 8)
    with profile(name="acts") as prof:
        F.hardswish(x)
        F.hardswish(x.clone(), inplace=True)
        F.mish(x.clone(), inplace=True)
        F.threshold(x.clone(), 0.1, 0.0, inplace=True)
        x.clone().abs_()
        F.prelu(x, torch.full((8,), 0.25))
        F.logsigmoid(x)
        x.masked_fill(x > 0, torch.tensor(0.0))
        torch.ops.aten.gelu_(x.clone())
    flops = {r.op: r.flops for r in prof.records}
    assert flops["aten::hardswish"] == flops["aten::hardswish_"] == 4 * 32  # 4 per element (registry)
    assert flops["aten::mish_"] == 6 * 32 and flops["aten::threshold_"] == 32 and flops["aten::abs_"] == 32
    assert flops["aten::_prelu_kernel"] == 2 * 32  # compare, multiply
    assert flops["aten::log_sigmoid_forward"] == 6 * 32  # abs, neg, exp, log1p, min, sub (as torch computes it)
    assert flops["aten::masked_fill.Tensor"] == 32 and flops["aten::gelu_"] == 5 * 32  # the catalog's gelu
    assert prof.summary["without_formula"] == []
    (rec,) = _records(prof, "aten::abs_")
    assert rec.bytes_read == rec.bytes_written == 32 * 4  # in place: read once, written once


def test_in_place_views_are_skipped() -> None:
    for op in (torch.ops.aten.as_strided_.default, torch.ops.aten.unsqueeze_.default, torch.ops.aten.t_.default,
               torch.ops.aten.transpose_.default, torch.ops.aten.squeeze_.dim):
        assert op_info(op).skip, op
    x = torch.randn(4, 8)
    with profile(name="views") as prof:
        x.t_().unsqueeze_(0).squeeze_(0).transpose_(0, 1).swapdims_(0, 1)
    assert prof.records == []


# Elementwise-shaped ops deliberately left without a count here, with the reason.
LEFT_OUT = {
    "aten::_fft_r2c": "a spectral transform, not elementwise: it needs an N log N formula of its own",
    "aten::lift": "no kernel (functionalization's wrapper, like lift_fresh): belongs with trace.NO_KERNEL",
    "aten::resize_as": "an allocation, like resize_as_ (trace.NO_KERNEL)",
    "aten::_functional_assert_async.msg": "a host-side check of one value, no elementwise work",
    "aten::_cholesky_solve_helper": "linear algebra, not elementwise",
    "aten::_pdist_backward": "a backward op (capture/formulas_training.py's family)",
}
# Backward and training-step ops (capture/formulas_training.py's family: losses, pooling and activation
# backwards, dropout).
TRAINING = ("_backward", "_masked_scale")

# Stand-ins for the scalar arguments a walked op requires.
STAND_INS = {"number": 0.5, "float": 0.5, "int": 1, "bool": False, "SymInt": 1, "List[int]": [1],
             "Optional[List[int]]": [1], "str": "none"}


def _meta(shape: tuple[int, ...]) -> TensorMeta:
    return TensorMeta(shape, "fp32", "cpu", 1, 0, tuple(math.prod(shape[i + 1:]) for i in range(len(shape))), 4,
                      4 * 10**6)


def _shape_preserving(op: object) -> list[str] | None:
    """The tensor arguments of an op that maps 1-3 tensors of one shape to one tensor of that shape (run on the
    meta device to find out; inputs after the first tried as float, bool and int); None for any other op."""
    schema = op._schema  # type: ignore[attr-defined]
    tensors = [a for a in schema.arguments if str(a.type) == "Tensor"]
    if not 1 <= len(tensors) <= 3 or len(schema.returns) != 1 or str(schema.returns[0].type) != "Tensor":
        return None
    if any("Tensor" in str(a.type) and a not in tensors for a in schema.arguments) or \
            any(getattr(a, "is_out", False) for a in schema.arguments):
        return None
    scalars = {}
    for a in schema.arguments:
        if a in tensors or a.has_default_value():
            continue
        if str(a.type) not in STAND_INS:
            return None
        scalars[a.name] = STAND_INS[str(a.type)]
    for dtype in (torch.float32, torch.bool, torch.int64):
        try:
            out = op(**{a.name: torch.empty(4, 8, device="meta", dtype=torch.float32 if i == 0 else dtype)  # type: ignore[operator]
                        for i, a in enumerate(tensors)}, **scalars)
        except Exception:  # an op the stand-ins do not fit: not walked
            continue
        return [a.name for a in tensors] if isinstance(out, torch.Tensor) and tuple(out.shape) == (4, 8) else None
    return None


def _walked() -> list[tuple[object, list[str]]]:
    """Every aten overload that launches a kernel (not decomposed by the trace, not a view) and is elementwise-
    shaped (_shape_preserving)."""
    out = []
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        for overload in getattr(packet, "overloads", lambda: [])():
            op = getattr(packet, overload)
            try:
                if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
                    continue  # the trace records its decomposition
            except RuntimeError:  # a TorchScript builtin with no dispatcher entry
                continue
            if op_info(op).skip or (names := _shape_preserving(op)) is None:
                continue
            out.append((op, names))
    return out


def test_every_elementwise_op_of_torch_gets_a_count() -> None:
    """Each elementwise-shaped aten op, called on (4, 8) tensors, gets FLOPs (and so bytes), or is left out above
    with its reason."""
    missing = []
    walked = _walked()
    assert len(walked) > 300  # the walk sees torch's elementwise ops (438 in torch 2.13)
    for op, names in walked:
        info = op_info(op)
        t = _meta((4, 8))
        args = {n: t for n in names}
        call = OpCall(0, info.name, "", None, tuple(t for _ in names), (_meta((4, 8)),), args, (), {}, None,
                      frozenset(), frozenset(), info.tags, packet=op.overloadpacket)  # type: ignore[attr-defined]
        if cost_of(call).flops is None and info.name not in LEFT_OUT and not info.name.split(".")[0].endswith(
                TRAINING):
            missing.append(info.name)
    assert missing == []


def test_in_place_twins_count_as_their_pointwise_op() -> None:
    """Every in-place overload (`abs_`) whose out-of-place twin (`abs`) torch tags pointwise counts its FLOPs."""
    twins = 0
    for name in dir(torch.ops.aten):
        if not name.endswith("_") or name.endswith("__") or not hasattr(torch.ops.aten, name[:-1]):
            continue
        inplace, base = getattr(torch.ops.aten, name), getattr(torch.ops.aten, name[:-1])
        for overload in inplace.overloads():
            if overload not in base.overloads() or torch.Tag.pointwise not in getattr(base, overload).tags:
                continue
            if torch._C._dispatch_has_kernel_for_dispatch_key(getattr(inplace, overload).name(),
                                                              "CompositeImplicitAutograd"):
                continue  # relu6_: the trace records its decomposition
            info, twin = op_info(getattr(inplace, overload)), op_info(getattr(base, overload))
            t = _meta((4, 8))
            args = {"self": t, "other": t}
            calls = [OpCall(0, i.name, "", None, (t, t), (t,), args, (), {}, None, frozenset(), frozenset(), i.tags)
                     for i in (info, twin)]
            mine, theirs = (cost_of(c) for c in calls)
            assert mine.flops == theirs.flops is not None, info.name
            twins += 1
    assert twins > 100  # 121 in torch 2.13 (the composite ones aside), 23 of them not tagged pointwise
