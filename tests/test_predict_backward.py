"""Backward passes in the predictor, each a family of its own (attention's: the forward's points where a database
has none; the embedding's: a memory pass then), and the whole tiles attention's kernels score
(`padded_pairs_ratio`), on synthetic databases with known answers."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import roofline
from roofline.analysis.families import family_of, work_factor
from roofline.analysis.predict import Predictor
from roofline.analysis.predict_features import ATTENTION_TILE, padded_pairs_ratio
from roofline.ceilings.opdb import OpDB, Point
from roofline.ceilings.specs import gpu_ceilings, resolve
from roofline.core.dtypes import get_dtype
from roofline.core.record import analytic_record
from roofline.ops import make

H200 = gpu_ceilings(resolve("h200"))
BF16 = get_dtype("bf16")


def attention_point(eff: float, **params: object) -> Point:
    """A catalog attention point whose measured time is its roofline time / `eff`."""
    op = make("attention", **params)
    rec = analytic_record(op, BF16, H200)
    family = "attention_backward" if params.get("backward") else "attention"
    return Point(family=family, op="attention", dtype="bf16", params=op.params(), variant="flash",
                 flops=rec.flops, bytes=rec.bytes, roofline_time_s=rec.roofline_time_s,
                 time_s=rec.roofline_time_s / eff)


def db_of(*points: Point) -> OpDB:
    return OpDB(device={"kind": "gpu", "id": "h200-sxm", "name": "NVIDIA H200"}, points=list(points))


def test_the_padded_ratio_counts_whole_tiles() -> None:
    assert ATTENTION_TILE == 128
    assert padded_pairs_ratio({"seq": 512}) == 1.0  # whole tiles
    assert padded_pairs_ratio({"seq": 197}) == pytest.approx(256**2 / 197**2)  # ViT-B/16's 197 tokens
    # causal 128 x 128: one whole tile for the 128 x 129 / 2 scores the mask keeps
    assert padded_pairs_ratio({"seq": 128, "causal": True}) == pytest.approx(128 * 128 / (128 * 129 / 2))
    # causal 256: tiles (0,0), (1,0), (1,1) for 256 x 257 / 2 scores
    assert padded_pairs_ratio({"seq": 256, "causal": True}) == pytest.approx(3 * 128 * 128 / (256 * 257 / 2))
    # 2 query tiles of a 200-token block against 300 keys bottom-right: rows 0-127 see keys up to 227 (2 key
    # tiles), rows 128-199 all 300 (3 tiles)
    kept = 200 * 100 + 200 * 201 / 2
    assert padded_pairs_ratio({"seq": 200, "kv_seq": 300, "causal": True}) == pytest.approx(5 * 128 * 128 / kept)
    assert work_factor("gemm", {"seq": 197}) == 1.0  # only attention's families
    assert work_factor("attention", None) == 1.0  # a rule's record has no shape: none


def test_a_partly_filled_tile_is_predicted_from_the_efficiency_of_the_work_done() -> None:
    # every point runs its padded work at 60% of the roof; a 197-token query is predicted at 256 x 256's work:
    # time = roofline time x (256/197)^2 / 0.6, where the raw efficiency of the points (0.6) would say 1 / 0.6
    shape = dict(heads=32, head_dim=64)
    pts = [attention_point(0.6, batch=b, seq=s, **shape) for b in (1, 4, 16) for s in (128, 512, 2048)]
    p = Predictor(db_of(*pts), "h200-sxm")
    rec = analytic_record(make("attention", batch=4, seq=197, **shape), BF16, H200)
    got = p.predict(rec)
    assert got is not None and got.family == "attention"
    assert got.time_s == pytest.approx(rec.roofline_time_s * (256 / 197) ** 2 / 0.6, rel=1e-9)


def test_a_backward_is_its_own_family_and_the_forwards_where_the_database_has_none() -> None:
    shape = dict(batch=4, heads=32, seq=512, head_dim=64)
    rec = analytic_record(make("attention", backward=True, **shape), BF16, H200)
    assert family_of(rec) == "attention_backward"
    forward = [attention_point(0.7, **{**shape, "batch": b}) for b in (1, 4, 16)]
    got = Predictor(db_of(*forward), "h200-sxm").predict(rec)
    assert got is not None and got.family == "attention" and "no attention_backward points: the forward's" in got.source
    backward = [attention_point(0.35, backward=True, **{**shape, "batch": b}) for b in (1, 4, 16)]
    got = Predictor(db_of(*forward, *backward), "h200-sxm").predict(rec)
    assert got is not None and got.family == "attention_backward"
    assert got.time_s == pytest.approx(rec.roofline_time_s / 0.35, rel=1e-9)  # its own exact point
    assert "forward" not in got.source


def test_a_profiles_sdpa_backward_is_the_catalogs_attention_backward() -> None:
    # a training step's SDPA backward (a causal square, is_causal): the catalog's attention --backward, its
    # FLOPs torch's five products over the kept scores, its bytes Q, O, dO, K, V, the LSE and dQ, dK, dV
    q = torch.randn(2, 4, 64, 32, requires_grad=True)
    prof = roofline.profile(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward(),
                            time=False, gpu="h200", warmup=0)
    # named as the H200 runs it (fp32: the memory-efficient kernel, capture/gpu_terms.py), not the host's _for_cpu
    (bwd,) = [r for r in prof.records if r.op == "aten::_scaled_dot_product_efficient_attention_backward"]
    op = make("attention", batch=2, heads=4, seq=64, head_dim=32, causal=True, backward=True)
    assert bwd.flops_source == "catalog:attention" and bwd.params == op.params()
    assert bwd.flops == op.flops() == 2 * 4 * (64 * 65 // 2) * 2 * (3 * 32 + 2 * 32)
    assert family_of(bwd) == "attention_backward"


def test_an_embeddings_backward_is_the_catalogs_and_a_memory_pass_without_its_points() -> None:
    # a training step's embedding backward (on the H200, 2026-12-02: 152 us where a memory pass of its bytes
    # predicted 18): the catalog's embedding --backward, its bytes the rule's (dY, the int64 indices, the table)
    emb = torch.nn.Embedding(50, 8)
    idx = torch.randint(0, 50, (3, 7))
    grad = torch.ones(3, 7, 8)  # dense (a sum's gradient would be one element expanded)
    prof = roofline.profile(lambda: emb(idx).backward(grad), time=False, gpu="h200", warmup=0)
    (bwd,) = [r for r in prof.records if r.op == "aten::embedding_dense_backward"]
    op = make("embedding", tokens=21, vocab=50, dim=8, backward=True)
    assert bwd.flops_source == "catalog:embedding" and bwd.params == op.params() and bwd.flops == 21 * 8
    assert bwd.bytes_read == 21 * 8 * 4 + 21 * 8 and bwd.bytes_written == 50 * 8 * 4
    assert family_of(bwd) == "embedding_backward"
    ew = [Point(family="elementwise", op="add", dtype="fp32", params={"numel": n}, flops=n, bytes=12.0 * n,
                roofline_time_s=12.0 * n / 4.8e12, time_s=12.0 * n / 4.8e12 / 0.5) for n in (2**10, 2**14, 2**18)]
    got = Predictor(db_of(*ew), "h200-sxm").predict(bwd)
    assert got is not None and got.family == "elementwise"
    assert "no embedding_backward points: as a memory pass" in got.source
    own = [Point(family="embedding_backward", op="embedding", dtype="fp32", params=op.params(), flops=bwd.flops,
                 bytes=bwd.bytes, roofline_time_s=bwd.roofline_time_s, time_s=bwd.roofline_time_s / 0.1)]
    got = Predictor(db_of(*ew, *own), "h200-sxm").predict(bwd)
    assert got is not None and got.family == "embedding_backward"
    assert got.time_s == pytest.approx(bwd.roofline_time_s / 0.1, rel=1e-9)


def test_a_fused_adamw_step_is_the_catalogs_adamw_its_gradients_not_written() -> None:
    # a training step's fused AdamW (on the H200, 2026-12-02: 624 us where a memory pass predicted 515): the
    # catalog's adamw, its gradients (mutable in torch's schema) read, not written back
    m = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.LayerNorm(32))
    opt = torch.optim.AdamW(m.parameters(), fused=True)
    m(torch.randn(8, 64)).sum().backward()
    prof = roofline.profile(lambda: opt.step(), time=False, gpu="h200", warmup=0)
    (step,) = [r for r in prof.records if r.op == "aten::_fused_adamw_"]
    n = 64 * 32 + 3 * 32
    op = make("adamw", numel=n, tensors=4)
    assert step.flops_source == "catalog:adamw" and step.params == op.params() and step.flops == 12 * n
    assert step.bytes_read == 4 * n * 4 + 4 * 4 and step.bytes_written == 3 * n * 4  # p, m, v written; g not
    assert family_of(step) == "optimizer"
