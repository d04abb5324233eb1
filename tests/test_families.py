"""The prediction families, declared once (analysis/families.py): the sweep (measuring/opsweep.py), the store's
points and the predictor (analysis/predict.py) read one declaration per family, and nothing else says which
family is memory-bound, warm, a backward or copies its strided input first."""

from __future__ import annotations

import pytest

from roofline.analysis import families
from roofline.analysis.families import FAMILIES, FAMILY_OF_OP, Family, family, family_of, op_family
from roofline.analysis.predict import Predictor
from roofline.ceilings.opdb import OpDB, Point
from roofline.measuring.opsweep import plan
from roofline.ops.base import load_catalog

H200 = {"kind": "gpu", "id": "h200-sxm", "name": "NVIDIA H200"}


def test_every_catalog_operator_but_the_collectives_has_one_family() -> None:
    catalog = load_catalog()
    collectives = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"}
    assert set(FAMILY_OF_OP) == set(catalog) - collectives
    for op in FAMILY_OF_OP:
        assert sum(op in f.ops and f.forward is None for f in FAMILIES.values()) == 1, op


def test_a_family_or_an_operator_declared_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(families, "FAMILIES", dict(FAMILIES))
    with pytest.raises(RuntimeError, match="registered twice"):
        family("gemm")
    with pytest.raises(RuntimeError, match="already have a prediction family"):
        family("gemm2", ops=("gemm",))


def test_a_backward_pass_has_its_own_family_and_names_its_forward() -> None:
    assert op_family("attention", {"backward": True}) == "attention_backward"
    assert FAMILIES["attention_backward"].forward == "attention"
    assert op_family("attention", {}) == "attention"


def test_the_sweep_times_warm_twins_of_exactly_the_warm_families() -> None:
    from pathlib import Path

    from roofline.core.tomlfile import read_toml

    sweep = read_toml(Path(__file__).resolve().parents[1] / "suites/sweeps/ops.toml", "sweep")
    points = plan(sweep, "gpu")
    warm = {p.family for p in points if p.l2 == "warm"}
    assert warm == {p.family for p in points if FAMILIES[p.family].warm_l2}
    assert {p.family for p in points} <= set(FAMILIES)  # the store's `family` is a declared family


def _points(fam: str, op: str, dtype: str, eff: float) -> list[Point]:
    return [Point(family=fam, op=op, dtype=dtype, params={"roof": r}, flops=1e6, bytes=1e7, roofline_time_s=r,
                  time_s=r / eff) for r in (1e-6, 1e-5, 1e-4)]


class Rec:
    """A record as the predictor reads it (catalog op `op`, fp32, memory-bound)."""

    def __init__(self, op: str, dtype: str = "fp32") -> None:
        self.op, self.dtype, self.params, self.roofline_time_s, self.arithmetic_intensity = op, dtype, {}, 1e-5, 0.1
        self.bound, self.tensor_cores, self.flops_source = "memory", False, None
        self.predicted_time_s = self.predicted_low_s = self.predicted_high_s = self.prediction_source = None


def test_the_predictor_borrows_another_dtype_only_for_a_memory_bound_family(monkeypatch: pytest.MonkeyPatch) -> None:
    # softmax's bf16 points at half the roof predict an fp32 softmax (its bytes bind it: 2x the bound); declared
    # compute-bound, the same points predict nothing for fp32 (the bound, said so)
    db = OpDB(device=H200, points=_points("softmax", "softmax", "bf16", 0.5))
    got = Predictor(db, "h200-sxm").predict(Rec("softmax"))
    assert got is not None and got.time_s == pytest.approx(2e-5) and "borrows bf16" in got.source
    monkeypatch.setitem(FAMILIES, "softmax", Family("softmax", ops=("softmax",), memory_bound=False))
    got = Predictor(db, "h200-sxm").predict(Rec("softmax"))
    assert got is not None and not got.from_db and got.time_s == pytest.approx(1e-5)
    assert family_of(Rec("softmax")) == "softmax"


def test_an_moes_grouped_products_are_predicted_by_the_grouped_gemm_family() -> None:
    # torch._grouped_mm of a tiny Mixtral (4 experts, top 2, 2 x 64 tokens: 256 rows, 64 an expert) profiled
    # analytically on the H200's roof; a database of grouped GEMM points at 30% of their roof predicts each at
    # bound / 0.3 (its shape placed among the points by the groups, rows per group, N and K its inputs recorded)
    pytest.importorskip("transformers", reason="the [models] extra (make models; .ci/run installs it)")
    import torch
    from transformers import MixtralConfig, MixtralForCausalLM

    import roofline
    from roofline.ceilings.specs import gpu_ceilings, resolve
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record
    from roofline.ops import make

    h200 = gpu_ceilings(resolve("h200"))
    pts = []
    for g in (2, 4, 8):
        for m in (16, 64, 256):
            for n, k in ((256, 1024), (1024, 256), (512, 512)):
                r = analytic_record(make("grouped_gemm", groups=g, m=m, n=n, k=k), get_dtype("bf16"), h200)
                pts.append(Point(family="grouped_gemm", op="grouped_gemm", dtype="bf16", params=dict(r.params),
                                 flops=r.flops, bytes=r.bytes, roofline_time_s=r.roofline_time_s,
                                 time_s=r.roofline_time_s / 0.3))
    cfg = MixtralConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=1, num_attention_heads=8,
                        num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, vocab_size=1000)
    model = MixtralForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, 1000, (2, 64))
    with torch.no_grad():
        prof = roofline.profile(lambda: model(ids), time=False, gpu="h200", db=OpDB(device=H200, points=pts))
    grouped = [r for r in prof.records if r.op == "aten::_grouped_mm"]
    assert len(grouped) == 2 and all(family_of(r) == "grouped_gemm" for r in grouped)
    for r in grouped:
        assert r.prediction_kind == "db" and r.predicted_time_s == pytest.approx(r.roofline_time_s / 0.3, rel=1e-6)
