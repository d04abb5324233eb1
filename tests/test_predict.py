"""The predictor (analysis/predict.py, analysis/predict_step.py) on synthetic databases whose answers are known
by hand: interpolation, extrapolation, the intervals, the step's interval arithmetic, and the bound when the
database has no such op."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

import roofline
from roofline.analysis.predict import (
    BOUND,
    EXTRAPOLATION_WIDEN,
    FEW_POINTS_SPREAD,
    FamilyModel,
    Predictor,
    bound_only_note,
    family_of,
    features,
    from_database,
    predicted,
    predictor_for,
    quantile,
)
from roofline.analysis.predict_step import step_prediction, sum_interval
from roofline.ceilings.opdb import OpDB, Point
from roofline.ceilings.specs import gpu_ceilings, resolve
from roofline.core.dtypes import get_dtype
from roofline.core.record import analytic_record, evolve
from roofline.ops import make

H200 = gpu_ceilings(resolve("h200"))


def point(roof_s: float, eff: float, intensity: float = 10.0, family: str = "gemm", dtype: str = "bf16",
          **extra: object) -> Point:
    """A point with roofline time `roof_s`, efficiency `eff` and FLOP/byte `intensity` (bytes 1e6)."""
    return Point(family=family, op="gemm", dtype=dtype, params={"roof": roof_s, "eff": eff, "i": intensity},
                 flops=intensity * 1e6, bytes=1e6, roofline_time_s=roof_s, time_s=roof_s / eff, **extra)


def db_of(*points: Point) -> OpDB:
    return OpDB(device={"kind": "gpu", "id": "h200-sxm", "name": "NVIDIA H200"}, points=list(points))


class Rec:
    """The fields the predictor reads of a record."""

    def __init__(self, roof_s: float | None, intensity: float = 10.0, op: str = "gemm", dtype: str = "bf16",
                 flops_source: str | None = None, bound: str = "compute", tensor_cores: bool = True,
                 params: dict | None = None) -> None:
        self.roofline_time_s, self.arithmetic_intensity, self.op, self.dtype = roof_s, intensity, op, dtype
        self.flops_source, self.bound, self.tensor_cores, self.params = flops_source, bound, tensor_cores, params


def test_an_exact_point_predicts_its_own_time() -> None:
    p = Predictor(db_of(point(1e-4, 0.5), point(1e-3, 0.8), point(1e-2, 0.9)), "h200-sxm")
    got = p.predict(Rec(1e-3))
    assert got is not None and got.points == 1
    assert got.time_s == pytest.approx(1e-3 / 0.8)  # roofline time / the point's efficiency
    assert got.source.startswith("gemm bf16: 1 of 3 points")


def test_between_two_points_the_efficiency_is_their_geometric_mean() -> None:
    # 1e-4 s and 1e-2 s are 2 decades apart; 1e-3 s is 1 decade from each: equal weights, so the efficiency is
    # sqrt(0.25 x 1.0) = 0.5 and the time 1e-3 / 0.5 = 2e-3 s
    p = Predictor(db_of(point(1e-4, 0.25), point(1e-2, 1.0)), "h200-sxm")
    got = p.predict(Rec(1e-3))
    assert got is not None and got.time_s == pytest.approx(2e-3) and got.extrapolated == 0


def test_between_two_points_the_fit_follows_the_line_through_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # at 10^-3.5, a quarter of the way from 1e-4 s (eff 0.25) to 1e-2 s (eff 1.0) in decades: on the line through
    # them in log efficiency, ln eff = 0.75 ln 0.25 (a vanishing ridge: one on the intensity slope, which no point
    # varies, keeps the system solvable); a ridge holds the slope back towards the
    # points' inverse-distance-squared weighted mean (weights 4 and 4/9 at 0.5 and 1.5 decades)
    import roofline.analysis.predict as predict

    db = db_of(point(1e-4, 0.25), point(1e-2, 1.0))
    monkeypatch.setattr(predict, "SLOPE_RIDGE", 1e-12)
    got = Predictor(db, "h200-sxm").predict(Rec(10 ** -3.5))
    assert got is not None and got.time_s == pytest.approx(10 ** -3.5 / 0.25 ** 0.75)
    monkeypatch.setattr(predict, "SLOPE_RIDGE", 1e9)
    flat = Predictor(db, "h200-sxm").predict(Rec(10 ** -3.5))
    assert flat is not None and flat.time_s == pytest.approx(10 ** -3.5 / math.exp(4 * math.log(0.25) / (4 + 4 / 9)))


def test_the_fit_stays_within_its_points_efficiencies(monkeypatch: pytest.MonkeyPatch) -> None:
    # efficiency doubling per decade of size and of intensity: 0.2 at (1e-4 s, 10 FLOP/B), 0.4 one decade up
    # either way; at (1e-3 s, 100 FLOP/B), inside the measured box, the plane through them says 0.8, above every
    # point: the prediction stays at their highest, 0.4
    import roofline.analysis.predict as predict

    monkeypatch.setattr(predict, "SLOPE_RIDGE", 1e-12)
    p = Predictor(db_of(point(1e-4, 0.2, 10.0), point(1e-3, 0.4, 10.0), point(1e-4, 0.4, 100.0)), "h200-sxm")
    got = p.predict(Rec(1e-3, intensity=100.0))
    assert got is not None and got.extrapolated == 0 and got.time_s == pytest.approx(1e-3 / 0.4)


def test_outside_the_measured_box_the_nearest_efficiency_holds_and_the_interval_widens() -> None:
    pts = [point(10.0 ** -k, e) for k, e in ((6, 0.1), (5, 0.3), (4, 0.5), (3, 0.7), (2, 0.9))]
    model = FamilyModel("gemm", "bf16", pts)
    lo, hi = model.spread
    p = Predictor(db_of(*pts), "h200-sxm")
    inside = p.predict(Rec(1e-2))
    out = p.predict(Rec(1.0))  # two decades past the largest point (1e-2 s)
    assert inside is not None and out is not None and out.extrapolated == pytest.approx(2.0)
    assert out.time_s == pytest.approx(1.0 / 0.9)  # clamped onto the 1e-2 s point: its efficiency, 0.9
    widen = 1 + EXTRAPOLATION_WIDEN * 2.0
    assert out.high_s / out.time_s == pytest.approx(math.exp(-lo * widen))
    assert out.time_s / out.low_s == pytest.approx(math.exp(hi * widen))
    assert "extrapolated 2.0 decades" in out.source


def plane_at(q: tuple[float, ...], pts: list[tuple[tuple[float, ...], float]], ridge: float) -> float:
    """The predictor's rule by numpy's least squares (an independent implementation): the intercept at q of the
    plane through (features, log eff) weighted 1 / distance^2, a ridge of `ridge` x the weights' sum on each
    slope, clamped to the points' range."""
    import numpy as np

    x = np.array([f for f, _ in pts]) - np.array(q)
    y = np.array([le for _, le in pts])
    w = 1.0 / (x**2).sum(axis=1)
    a = np.hstack([np.ones((len(pts), 1)), x]) * np.sqrt(w)[:, None]
    damp = np.sqrt(ridge * w.sum()) * np.eye(x.shape[1] + 1)[1:]
    sol = np.linalg.lstsq(np.vstack([a, damp]), np.concatenate([y * np.sqrt(w), np.zeros(x.shape[1])]), rcond=None)
    return float(np.clip(sol[0][0], y.min(), y.max()))


def test_the_interval_is_the_leave_one_out_residual_quantiles() -> None:
    # five points on one line, efficiencies alternating 0.5 and 1.0 in size: each left out is predicted from the
    # other four (fewer than NEIGHBOURS); the spread is those residuals' INTERVAL_QUANTILES (2.5% and 97.5%),
    # computed here by numpy
    import numpy as np

    from roofline.analysis.predict import INTERVAL_QUANTILES, SLOPE_RIDGE

    effs = [0.5, 1.0, 0.5, 1.0, 0.5]
    pts = [point(10.0 ** -(6 - i), e) for i, e in enumerate(effs)]
    model = FamilyModel("gemm", "bf16", pts)
    feats = [((float(-(6 - i)), 1.0), math.log(e)) for i, e in enumerate(effs)]
    residuals = [le - plane_at(f, feats[:i] + feats[i + 1:], SLOPE_RIDGE) for i, (f, le) in enumerate(feats)]
    assert INTERVAL_QUANTILES == (0.025, 0.975)
    lo, hi = (float(np.quantile(residuals, q)) for q in INTERVAL_QUANTILES)
    assert model.spread == pytest.approx((min(lo, 0), max(hi, 0)))
    assert model.spread[0] < 0 < model.spread[1]


def test_a_family_of_constant_efficiency_has_no_spread_and_few_points_a_stated_one() -> None:
    steady = FamilyModel("gemm", "bf16", [point(10.0 ** -k, 0.6) for k in range(2, 8)])
    assert steady.spread == pytest.approx((0.0, 0.0))
    few = FamilyModel("gemm", "bf16", [point(1e-3, 0.6), point(1e-4, 0.5)])
    assert few.spread == (-FEW_POINTS_SPREAD, FEW_POINTS_SPREAD)
    # the source states the interval it got: a factor 1.5 either way, -33% / +50% (it said "+-50%", as the
    # database table printed "-33% / +50%" for the same family)
    got = Predictor(db_of(point(1e-4, 0.5), point(1e-3, 0.8), point(1e-2, 0.9)), "h200-sxm").predict(Rec(1e-3))
    assert got is not None and got.low_s == pytest.approx(got.time_s / 1.5)
    assert got.source.endswith("interval -33% / +50% (few points)")


def test_quantile_matches_linear_interpolation() -> None:
    assert quantile([4.0, 1.0, 3.0, 2.0], 0.5) == pytest.approx(2.5)  # between 2 and 3
    assert quantile([0.0, 10.0], 0.05) == pytest.approx(0.5)


def test_features_are_decades() -> None:
    assert features(1e-3, 100.0) == pytest.approx((-3.0, 2.0))


def test_an_op_family_the_database_lacks_is_the_bound_and_says_so() -> None:
    p = Predictor(db_of(point(1e-3, 0.5)), "h200-sxm")
    rec = analytic_record(make("softmax", rows=4096, cols=4096), get_dtype("bf16"), H200)
    got = p.predict(rec)
    assert got is not None and got.time_s == rec.roofline_time_s and got.points == 0
    assert got.source == f"{BOUND} (no softmax bf16 points in the database)"
    fp32 = p.predict(Rec(1e-3, dtype="fp32"))  # the family, but not its dtype
    assert fp32 is not None and fp32.source.startswith(BOUND)
    none = p.predict(Rec(1e-3, op="aten::_cudnn_rnn", flops_source="rule:rnn", bound="compute"))
    assert none is not None and none.source == f"{BOUND} (no prediction family for aten::_cudnn_rnn)"


def test_without_a_database_every_record_is_predicted_by_the_bound_and_says_so() -> None:
    # issue 32: "every analytic record gets predicted_time_s ... or `bound` when the database has no such op:
    # never silently"; the bound's interval is the bound alone (a floor, not a spread)
    p = Predictor(None, "h200-sxm")
    rec = analytic_record(make("gemm", m=1024), get_dtype("bf16"), H200)
    got = p.predict(rec)
    assert got is not None and got.time_s == got.low_s == got.high_s == rec.roofline_time_s
    assert "no operator database for h200-sxm" in got.source
    (out,) = predicted([rec], p)
    assert out.predicted_time_s == out.predicted_low_s == out.predicted_high_s == rec.roofline_time_s
    assert out.prediction_source == f"{BOUND} (no operator database for h200-sxm)" and not from_database(out)
    assert bound_only_note([out]) == "predicted time: the bound for every record (no operator database for h200-sxm)"
    assert p.predict(Rec(None)) is None  # no formula, no roofline time: nothing to predict


def test_one_record_from_the_database_means_no_bound_only_note() -> None:
    p = Predictor(db_of(point(1e-4, 0.5), point(1e-3, 0.8), point(1e-2, 0.9)), "h200-sxm")
    gemm = analytic_record(make("gemm", m=1024), get_dtype("bf16"), H200)
    relu = analytic_record(make("relu", numel=1 << 20), get_dtype("bf16"), H200)  # no elementwise points: the bound
    out = predicted([gemm, relu], p)
    assert [from_database(r) for r in out] == [True, False]
    assert bound_only_note(out) is None


def test_families_of_catalog_and_profile_records() -> None:
    assert family_of(Rec(1e-3, op="gemv")) == "gemm"
    assert family_of(Rec(1e-3, op="aten::addmm", flops_source="catalog:gemm")) == "gemm"
    assert family_of(Rec(1e-3, op="aten::_scaled_dot_product_flash_attention", flops_source="catalog:attention",
                         params={"seq": 1})) == "decode_attention"  # one query token: a decode kernel
    assert family_of(Rec(1e-3, op="aten::cat", flops_source="rule:copy", bound="memory", tensor_cores=False)) \
        == "elementwise"  # a memory pass
    assert family_of(Rec(1e-3, op="aten::cat", flops_source="catalog:cat", bound="memory")) == "cat"
    # SDPA counted by a rule (a mask tensor, top-left causal) runs the flash kernels, its backward their backward
    for source, family in (("rule:attention", "attention"), ("rule:attention backward", "attention_backward")):
        assert family_of(Rec(1e-3, op="aten::_scaled_dot_product_cudnn_attention", flops_source=source)) == family
    # a loss's log-softmax and a softmax's backward run softmax kernels (a training step's largest fp32 ops: on the
    # H200, 2026-12-02, 415 and 549 us where a memory pass predicted 247 and 370)
    for source in ("rule:log_softmax", "rule:softmax backward"):
        assert family_of(Rec(1e-3, op="aten::_log_softmax", flops_source=source, bound="memory")) == "softmax"
    assert family_of(Rec(1e-3, op="aten::_cudnn_rnn", flops_source="rule:rnn")) is None
    assert family_of(Rec(1e-3, op="all_reduce")) is None  # a collective's time is its links'


def test_sum_interval_adds_within_a_family_and_in_quadrature_across() -> None:
    parts = [("gemm", 10.0, 8.0, 13.0), ("gemm", 10.0, 9.0, 11.0), ("norm", 5.0, 2.0, 9.0)]
    total, low, high = sum_interval(parts)
    # below: gemm 2 + 1 = 3, norm 3 -> sqrt(9 + 9); above: gemm 3 + 1 = 4, norm 4 -> sqrt(16 + 16)
    assert total == 25.0
    assert low == pytest.approx(25 - math.sqrt(18)) and high == pytest.approx(25 + math.sqrt(32))
    with pytest.raises(ValueError):
        sum_interval([("gemm", 1.0, 2.0, 3.0)])  # an interval that does not hold its value


def test_the_step_counts_calls_and_launch_gaps() -> None:
    db = db_of(*(point(10.0 ** -k, 0.5, launch_gap_s=4e-6, kernels=2) for k in range(3, 6)))
    p = Predictor(db, "h200-sxm")
    rec = evolve(analytic_record(make("gemm", m=1024), get_dtype("bf16"), H200), count=3)
    one = p.predict(rec)
    assert one is not None
    step = step_prediction(predicted([rec], p), p)
    assert step.predicted_kernel_time_s == pytest.approx(3 * one.time_s)
    assert step.launch_gap_per_kernel_s == pytest.approx(2e-6)  # 4 us per call over 2 kernels
    assert step.predicted_kernels == 3  # one kernel per call where the profile saw none
    assert step.predicted_step_s == pytest.approx(3 * one.time_s + 3 * 2e-6)
    assert step.calls_from_db == 3 and step.bound_time_s == pytest.approx(3 * rec.roofline_time_s)
    bare = step_prediction([rec], Predictor(None, "h200-sxm"))  # no database: the bound, said in the source
    assert bare.predicted_kernel_time_s == pytest.approx(bare.bound_time_s) and bare.calls_on_bound == 3
    assert "no operator database" in bare.prediction_source


def test_a_record_table_adds_the_prediction_column_only_when_a_database_predicted() -> None:
    from helpers import rendered

    from roofline.report.rows import prediction_rows
    from roofline.report.text import records_table

    recs = [analytic_record(make("gemm", m=m), get_dtype("bf16"), H200) for m in (1024, 4096)]
    bare = predicted(recs, Predictor(None, "h200-sxm"))
    text = rendered(records_table(bare, title="t"))
    assert "predicted" not in text.split("the analytic model alone")[0]  # no column: every prediction is the bound
    assert "predicted time: the bound for every record (no operator database for h200-sxm)" in text
    assert prediction_rows(bare[0]) == [("predicted time", "the roofline time (no operator database for h200-sxm)")]
    p = Predictor(db_of(point(1e-4, 0.5), point(1e-3, 0.8), point(1e-2, 0.9)), "h200-sxm")
    text = rendered(records_table(predicted(recs, p), title="t"))
    assert "predicted" in text.split("the analytic model alone")[0] and "for every record" not in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_below_the_smallest_measured_size_the_smallest_shapes_time_holds() -> None:
    # the launch floor: points of 1e-6 s and 1e-5 s bound that both ran in 2e-6 s and 1.25e-5 s; a 1e-8 s bound
    # takes the smallest point's 2e-6 s (its efficiency, 0.5, would have said 2e-8 s), the interval unwidened
    pts = [point(1e-6, 0.5), point(1e-5, 0.8), point(1e-4, 0.9)]
    p = Predictor(db_of(*pts), "h200-sxm")
    got = p.predict(Rec(1e-8))
    exact = p.predict(Rec(1e-6))
    assert got is not None and exact is not None
    assert got.time_s == pytest.approx(2e-6) and got.extrapolated == 0
    assert got.low_s / got.time_s == pytest.approx(exact.low_s / exact.time_s)
    assert "launch floor" in got.source


def test_a_memory_bound_family_borrows_another_dtypes_points_and_says_so() -> None:
    ew = [point(10.0 ** -k, 0.4, intensity=0.1, family="elementwise") for k in (6, 5, 4)]
    p = Predictor(db_of(*ew, point(1e-3, 0.5)), "h200-sxm")
    rec = analytic_record(make("add", numel=2**20), get_dtype("fp32"), H200)
    got = p.predict(rec)
    assert got is not None and got.from_db and got.time_s == pytest.approx(rec.roofline_time_s / 0.4)
    assert "borrows bf16" in got.source
    gemm32 = p.predict(Rec(1e-3, dtype="fp32"))  # a compute family never borrows: fp32 has its own roof
    assert gemm32 is not None and gemm32.source.startswith(BOUND)


def gemm_point(m: int, n: int, k: int, eff: float) -> Point:
    flops, nbytes = 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n)
    roof = max(flops / 989e12, nbytes / 4.8e12)
    return Point(family="gemm", op="gemm", dtype="bf16", params={"m": m, "n": n, "k": k, "batch": 1},
                 flops=flops, bytes=nbytes, roofline_time_s=roof, time_s=roof / eff)


def test_a_gemm_shape_counts_beside_its_roofline_time_and_intensity() -> None:
    # 4096 x 4096 x 256 and 256 x 4096 x 4096 (m x n x k) have the same FLOPs and bytes, so the same roofline time
    # and intensity, but not the same tile fit; a query of the first shape takes the first's efficiency (0.9),
    # not the mean of the two (base features cannot tell them apart)
    a, b = gemm_point(4096, 4096, 256, 0.9), gemm_point(256, 4096, 4096, 0.3)
    p = Predictor(db_of(a, b), "h200-sxm")
    rec = analytic_record(make("gemm", m=4096, n=4096, k=256), get_dtype("bf16"), H200)
    got = p.predict(rec)
    assert rec.roofline_time_s == pytest.approx(a.roofline_time_s, rel=1e-3)  # same roof as the spec's
    assert got is not None and got.time_s == pytest.approx(rec.roofline_time_s / 0.9, rel=1e-3)
    base = FamilyModel("gemm", "bf16", [a, b]).predict(a.roofline_time_s, a.intensity)[0]
    assert base == pytest.approx(math.sqrt(0.9 * 0.3))


def test_points_swept_with_an_older_formula_are_left_out_and_said() -> None:
    # the H200's 2026-12-02 sweep stored a 1x1 stride-2 convolution with the whole input as its bytes (424 MB);
    # today's formula reads a quarter of it, so that point's efficiency (2.5 against the old bound) is stale
    shape = dict(batch=64, in_channels=1024, height=56, width=56, out_channels=128, kernel_size=1, stride=2,
                 padding=0)
    op = make("conv2d", **shape)
    now = op.traffic(get_dtype("bf16")).total
    old = now + 64 * 1024 * (56 * 56 - 28 * 28) * 2  # the skipped pixels, counted before

    def conv(nbytes: float) -> Point:
        return Point(family="conv", op="conv2d", dtype="bf16", params=op.params(), variant="direct",
                     flops=op.flops(), bytes=nbytes, roofline_time_s=nbytes / 4.8e12, time_s=35.2e-6)

    assert op.params()["stride"] == 2 and old == 424148992  # the stored figure of the H200 point
    p = Predictor(db_of(conv(old), point(1e-3, 0.5)), "h200-sxm")
    assert p.stale == 1 and "1 swept with older formulas left out" in p.name
    assert p.points("conv", "bf16") == []
    fresh = Predictor(db_of(conv(now), point(1e-3, 0.5)), "h200-sxm")
    assert fresh.stale == 0 and len(fresh.points("conv", "bf16")) == 1
    assert fresh.name == "the database (2 points)"


def test_a_memory_bound_family_the_database_lacks_is_a_memory_pass_and_says_so() -> None:
    # a database swept before `reduce` existed: the reduction is predicted from the elementwise points
    ew = [point(10.0 ** -k, 0.4, intensity=0.1, family="elementwise") for k in (6, 5, 4)]
    rec = analytic_record(make("reduce", rows=4096, cols=4096), get_dtype("bf16"), H200)
    got = Predictor(db_of(*ew), "h200-sxm").predict(rec)
    assert got is not None and got.from_db and got.time_s == pytest.approx(rec.roofline_time_s / 0.4)
    assert got.family == "elementwise" and "no reduction points: as a memory pass" in got.source
    alone = Predictor(db_of(point(1e-3, 0.5)), "h200-sxm").predict(rec)  # no memory pass either: the bound
    assert alone is not None and alone.source == f"{BOUND} (no reduction bf16 points in the database)"


def ew_point(numel: int, run: int, eff: float, bcast: bool = False) -> Point:
    """An add of `numel` bf16 elements, its last input read in runs of `run` (0: dense) or a row of `run`
    broadcast (`bcast`), at efficiency `eff`."""
    op = make("add", numel=numel, run=run, bcast=bcast)
    nbytes = op.traffic(get_dtype("bf16")).total
    return Point(family="elementwise", op="add", dtype="bf16", params=op.params(), flops=op.flops(), bytes=nbytes,
                 roofline_time_s=nbytes / 4.8e12, time_s=nbytes / 4.8e12 / eff)


class Strided(Rec):
    """A profile's memory-pass record (aten::clone) of a [b, h, s, d] view of a [b, s, h, d] tensor."""

    def __init__(self, roof_s: float, shape: list[int], strides: list[int]) -> None:
        super().__init__(roof_s, 0.0, op="aten::clone", flops_source="rule:copy", bound="memory",
                         tensor_cores=False, params={})
        self.input_shapes, self.input_strides = [shape], [strides]  # into a row-major output (`.contiguous()`)
        self.output_shapes = [shape]
        self.output_strides = [[math.prod(shape[i + 1:]) for i in range(len(shape))]]


def test_a_strided_input_is_predicted_from_the_strided_points() -> None:
    # dense adds run at 0.8 of the roof, adds reading a transposed view in runs of 64 or 1024 elements at 0.2 and
    # 0.5: a copy of a head split (runs of head_dim = 64) takes the 64-run points' efficiency, a dense one the
    # dense points', whatever the strided points nearby in size
    pts = [ew_point(n, run, eff) for n in (2**20, 2**24) for run, eff in ((0, 0.8), (64, 0.2), (1024, 0.5))]
    p = Predictor(db_of(*pts), "h200-sxm")
    roof = pts[0].roofline_time_s
    b, s, h, d = 4, 2048, 16, 64  # 2^23 elements, between the two sizes
    head_split = p.predict(Strided(roof, [b, h, s, d], [s * h * d, d, h * d, 1]))
    dense = p.predict(Strided(roof, [b, h, s, d], [h * s * d, s * d, d, 1]))
    assert head_split is not None and head_split.time_s == pytest.approx(roof / 0.2, rel=1e-6)
    assert dense is not None and dense.time_s == pytest.approx(roof / 0.8, rel=1e-6)
    assert "extrapolated" not in head_split.source


def test_a_database_without_strided_points_predicts_a_strided_input_as_dense_points_do() -> None:
    # an older database (every elementwise point dense): the run coordinate was never varied, so it neither
    # moves the prediction nor widens the interval as an extrapolation would
    pts = [ew_point(n, 0, eff) for n, eff in ((2**16, 0.3), (2**20, 0.6), (2**24, 0.8), (2**26, 0.85),
                                               (2**28, 0.9))]
    p = Predictor(db_of(*pts), "h200-sxm")
    roof = pts[2].roofline_time_s
    strided = p.predict(Strided(roof, [64, 4096, 64], [64, 4096 * 64, 1]))
    dense = p.predict(Strided(roof, [64, 4096, 64], [4096 * 64, 64, 1]))
    assert strided is not None and dense is not None
    assert (strided.time_s, strided.low_s, strided.high_s) == (dense.time_s, dense.low_s, dense.high_s)
    assert "extrapolated" not in strided.source


def test_a_broadcast_operand_is_predicted_from_the_broadcast_points() -> None:
    # a norm's weight times a [1, 2048, 2048] activation (Llama's RMSNorm, the H200 run of 2026-12-02: 11.3 us
    # against 5.1 predicted from dense adds) takes the broadcast points' efficiency (0.35), not the dense (0.8)
    # nor the transposed (0.5) ones of its run
    pts = [ew_point(n, run, eff, bc) for n in (2**20, 2**24)
           for run, eff, bc in ((0, 0.8, False), (1024, 0.5, False), (1024, 0.35, True))]
    p = Predictor(db_of(*pts), "h200-sxm")
    rec = Rec(pts[0].roofline_time_s, 0.5, op="aten::mul.Tensor", flops_source="catalog:mul", bound="memory",
              tensor_cores=False, params={"numel": 2048 * 2048, "run": 2048, "bcast": True})
    rec.input_shapes, rec.input_strides = [[2048], [1, 2048, 2048]], [[1], [2048 * 2048, 2048, 1]]
    rec.output_shapes, rec.output_strides = [[1, 2048, 2048]], [[2048 * 2048, 2048, 1]]
    got = p.predict(rec)
    assert got is not None and got.time_s == pytest.approx(rec.roofline_time_s / 0.35, rel=0.05)


def test_a_norm_of_a_strided_input_adds_the_copy_torch_makes_first() -> None:
    # torch's layer norm makes a strided input contiguous before it normalises (ViT-B/16's LayerNorms of
    # nn.MultiheadAttention's transposed output on the H200, 2026-12-02: 27 us against 12 predicted): the record's
    # prediction is the norm's plus one copy of its input, predicted from the strided elementwise points
    def norm_point(rows: int) -> Point:
        op = make("layernorm", rows=rows, cols=768)
        nbytes = op.traffic(get_dtype("bf16")).total
        return Point(family="norm", op="layernorm", dtype="bf16", params=op.params(), flops=op.flops(),
                     bytes=nbytes, roofline_time_s=nbytes / 4.8e12, time_s=nbytes / 4.8e12 / 0.3)

    norm = [norm_point(r) for r in (1024, 8192, 65536)]
    ew = [ew_point(n, run, eff) for n in (2**20, 2**24) for run, eff in ((0, 0.8), (1024, 0.4))]
    p = Predictor(db_of(*norm, *ew), "h200-sxm")
    rec = analytic_record(make("layernorm", rows=32 * 197, cols=768), get_dtype("bf16"), H200)
    b, s, d = 32, 197, 768
    plain = p.predict(evolve(rec, input_shapes=[[b, s, d]], input_strides=[[s * d, d, 1]], input_dtypes=["bf16"]))
    strided = p.predict(evolve(rec, input_shapes=[[b, s, d]], input_strides=[[d, b * d, 1]], input_dtypes=["bf16"]))
    assert plain is not None and strided is not None and "copy" not in plain.source
    copy_roof = 2 * b * s * d * 2 / H200.dram_bytes_per_s
    # the copy reads a transposed view in runs of d = 768, between the dense and the 1024-run points on that
    # coordinate but nearest the strided ones: its efficiency is theirs within the inverse-distance weighting
    extra = strided.time_s - plain.time_s
    assert copy_roof / 0.8 < extra <= copy_roof / 0.4 * 1.01
    assert "+ a copy of its strided input" in strided.source and strided.high_s - strided.low_s > 0


def test_a_batch_norm_is_its_own_family_and_a_memory_pass_in_a_database_without_it() -> None:
    # ResNet-50's batch norms on the H200 (2026-12-02) ran 1.7x the elementwise passes they were predicted as:
    # a profile's native_batch_norm of a 4-D input is the catalog's batchnorm, its own sweep family
    x = torch.zeros(2, 3, 5, 5)
    bn = torch.nn.BatchNorm2d(3).eval()
    prof = roofline.profile(lambda: bn(x), time=False, gpu="h200")
    (rec,) = [r for r in prof.records if "batch_norm" in r.op]
    assert rec.flops_source == "catalog:batchnorm" and family_of(rec) == "batchnorm"
    assert rec.flops == 4 * 2 * 3 * 5 * 5 + 2 * 3  # the rule's count before the operator existed
    ew = [point(10.0 ** -k, 0.4, intensity=0.1, family="elementwise") for k in (7, 6, 5)]
    got = Predictor(db_of(*ew), "h200-sxm").predict(rec)
    assert got is not None and got.family == "elementwise" and "no batchnorm points: as a memory pass" in got.source


def test_an_nchw_convolution_is_predicted_from_the_nchw_points() -> None:
    # cuDNN runs other kernels for an NCHW input than for a channels-last one (ViT-B/16's patch embedding of an
    # NCHW batch: 345 us on the H200, 2026-12-02, where channels-last points predicted 22): points of both layouts
    # at the same shapes, a record's layout read from its input's strides
    shape = dict(batch=8, in_channels=3, height=224, width=224, out_channels=768, kernel_size=16, stride=16,
                 padding=0)

    def conv_point(batch: int, nchw: bool, eff: float) -> Point:
        op = make("conv2d", **{**shape, "batch": batch, "nchw": nchw})
        nbytes = op.traffic(get_dtype("bf16")).total
        roof = max(op.flops() / 989e12, nbytes / 4.8e12)
        return Point(family="conv", op="conv2d", dtype="bf16", params=op.params(), variant="direct",
                     flops=op.flops(), bytes=nbytes, roofline_time_s=roof, time_s=roof / eff)

    p = Predictor(db_of(*[conv_point(b, nchw, eff) for b in (1, 8, 64) for nchw, eff in ((False, 0.6), (True, 0.05))]),
                  "h200-sxm")
    rec = analytic_record(make("conv2d", **shape), get_dtype("bf16"), H200)
    n, c, h, w = 8, 3, 224, 224
    nchw = evolve(rec, input_shapes=[[n, c, h, w]], input_strides=[[c * h * w, h * w, w, 1]])
    last = evolve(rec, input_shapes=[[n, c, h, w]], input_strides=[[c * h * w, 1, w * c, c]])
    got_nchw, got_last = p.predict(nchw), p.predict(last)
    assert got_nchw is not None and got_nchw.time_s == pytest.approx(rec.roofline_time_s / 0.05, rel=1e-6)
    assert got_last is not None and got_last.time_s == pytest.approx(rec.roofline_time_s / 0.6, rel=1e-6)
    assert make("conv2d").params().get("nchw") is None  # the default layout adds no parameter to old points


def test_a_convolutions_window_and_stride_count_beside_its_implicit_gemm() -> None:
    # On the H200 (2026-12-02) a 16x16 patch point (3 -> 1024 channels, batch 8: 1568 x 1024 x 768) at 2% of the
    # roof was the nearest of ResNet-50's 1x1 convolution 512 -> 2048 at 7x7, batch 32 (1568 x 2048 x 512), which
    # ran at 40%: the window and the stride are coordinates of their own
    from roofline.analysis.families import shape_features

    one = shape_features("conv", dict(batch=32, in_channels=512, out_channels=2048, height=7, width=7, kernel_size=1))
    patch = shape_features("conv", dict(batch=8, in_channels=3, out_channels=1024, height=224, width=224,
                                        kernel_size=16, stride=16))
    assert one is not None and patch is not None
    assert one[4:] == (0.0, 0.0) and patch[4:] == pytest.approx((math.log10(256), math.log10(256)))


def test_a_max_pool_is_the_catalogs_pool2d_with_its_indices() -> None:
    # ResNet-50's 3x3 stride-2 max pool on the H200 (2026-12-02): 111 us against 31 predicted as a memory pass.
    # A profile's max_pool2d_with_indices is the catalog's pool2d (its own family), FLOPs as the rule counted
    # them (9 compares an output), its argmax indices among the bytes written
    x = torch.zeros(2, 3, 8, 8)
    prof = roofline.profile(lambda: torch.nn.functional.max_pool2d(x, 3, 2, 1, return_indices=True), time=False,
                            gpu="h200")
    (rec,) = [r for r in prof.records if "max_pool2d" in r.op]
    assert rec.flops_source == "catalog:pool2d" and family_of(rec) == "pool"
    assert rec.params["func"] == "max" and rec.params["indices"] is True and rec.flops == 9 * 2 * 3 * 4 * 4
    assert rec.bytes_written == 2 * 3 * 4 * 4 * (4 + 8)  # fp32 values and int64 indices
    assert make("pool2d", batch=2, channels=3, height=8, kernel_size=3, stride=2).traffic(
        get_dtype("fp32")).bytes_written == rec.bytes_written


def test_a_models_ops_are_predicted_from_the_warm_points_and_ops_alone_from_the_flushed() -> None:
    # ResNet-50 at batch 32 on the H200 (2026-12-02): batch norms of 1.6 MB took 7.8 us inside the model where the
    # flushed points predicted 10.4, those of 51 MB (larger than the L2) within 3%: a model's op reads what the
    # op before it left in the L2. A profile's predictor (l2="warm") takes the warm points, `analyze`'s the flushed
    flushed = [point(r, 0.4, 0.5, family="norm") for r in (1e-6, 1e-5, 1e-4)]
    warm = [dataclasses.replace(p, time_s=p.roofline_time_s / 0.8, l2="warm") for p in flushed[:2]]
    db = db_of(*flushed, *warm)
    rec = Rec(1e-6, 0.5, op="rmsnorm", bound="memory", tensor_cores=False)
    alone = Predictor(db, "h200-sxm").predict(rec)
    inside = predictor_for("h200-sxm", db, "warm", in_sequence=True).predict(rec)
    assert alone is not None and alone.time_s == pytest.approx(1e-6 / 0.4) and "warm" not in alone.source
    assert inside is not None and inside.time_s == pytest.approx(1e-6 / 0.8)
    assert "3 points (2 timed with a warm L2)" in inside.source
    big = Predictor(db, "h200-sxm", "warm").predict(Rec(1e-4, 0.5, op="rmsnorm", bound="memory", tensor_cores=False))
    assert big is not None and big.time_s == pytest.approx(1e-4 / 0.4)  # no warm twin: its flushed point
    written = Rec(1e-6, 0.5, op="rmsnorm", bound="memory", tensor_cores=False)
    written.bytes, written.bytes_written = 3e6, 1e6  # a third written: its writes reach HBM as flushed ones do
    blended = predictor_for("h200-sxm", db, "warm", in_sequence=True).predict(written)
    assert blended is not None and blended.time_s == pytest.approx((1e-6 / 0.8) ** (2 / 3) * (1e-6 / 0.4) ** (1 / 3))
    # its interval spans both L2 states (which one a model's op finds is not known): the warm low, the flushed high
    cold = Predictor(db, "h200-sxm").predict(written)
    assert cold is not None and inside.low_s < blended.time_s < cold.high_s
    assert (blended.low_s, blended.high_s) == pytest.approx((inside.low_s, cold.high_s))
    gemm = Predictor(db_of(*flushed, point(1e-5, 0.5)), "h200-sxm", "warm").predict(Rec(1e-5))
    assert gemm is not None and "warm" not in gemm.source  # a family never timed warm: its flushed points
    # an op timed alone with a warm L2 (`analyze --warm-l2`) is its warm points themselves: no blend of its writes
    warm_alone = Predictor(db, "h200-sxm", "warm").predict(written)
    assert warm_alone is not None and warm_alone.time_s == pytest.approx(1e-6 / 0.8)


def test_a_profile_predicts_with_a_warm_l2_and_a_run_with_a_flushed_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    flushed = point(1e-6, 0.4, 0.5, family="elementwise")
    db = db_of(flushed, dataclasses.replace(flushed, time_s=1e-6 / 0.8, l2="warm"))
    db.path = tmp_path / "db.json"
    x = torch.zeros(64, 64)
    prof = roofline.profile(lambda: torch.relu(x), time=False, gpu="h200", db=db)
    (rec,) = [r for r in prof.records if "relu" in r.op]
    assert "timed with a warm L2" in rec.prediction_source
    alone = roofline.analyze("relu", numel=4096, gpu="h200", dtype="fp32", db=db, time=False)
    assert "warm" not in alone.prediction_source


def test_a_training_steps_records_are_predicted_from_the_flushed_points(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the H200's Llama training step (2026-12-02 17:08, re-predicted): -7.3% from the warm blend, -3.1% from the
    # flushed points; a step with a backward phase takes the flushed points for all its records, an inference
    # step the warm ones (warm 0.8 of the roof, flushed 0.4 here)
    flushed = [point(r, 0.4, 0.5, family="norm") for r in (1e-6, 1e-5)]
    db = db_of(*flushed, *[dataclasses.replace(p, time_s=p.roofline_time_s / 0.8, l2="warm") for p in flushed])
    step = predictor_for("h200-sxm", db, "warm", in_sequence=True)
    fwd, bwd = (Rec(1e-6, 0.5, op="rmsnorm", bound="memory", tensor_cores=False) for _ in range(2))
    fwd.phase, bwd.phase = "forward", "backward"  # type: ignore[attr-defined]
    assert step.for_step([fwd]) is step
    training = step.for_step([fwd, bwd])
    got = training.predict(fwd)
    assert got is not None and got.time_s == pytest.approx(1e-6 / 0.4) and "warm" not in got.source
    alone = Predictor(db, "h200-sxm")  # a predictor of flushed points has no other: itself
    assert alone.for_step([bwd]) is alone
    # a profile of a training step (relu forward and backward on the CPU, analytic) takes them: no warm source
    ew = point(1e-6, 0.4, 0.5, family="elementwise")
    edb = db_of(ew, dataclasses.replace(ew, time_s=1e-6 / 0.8, l2="warm"))
    edb.path = tmp_path / "db.json"
    x = torch.zeros(64, 64, requires_grad=True)
    prof = roofline.profile(lambda: torch.relu(x).sum().backward(), time=False, gpu="h200", db=edb)
    assert any(r.phase == "backward" for r in prof.records)
    relus = [r for r in prof.records if "relu" in r.op and r.prediction_source]
    assert relus and all("warm" not in r.prediction_source for r in relus)


def test_a_copy_that_changes_the_dtype_is_a_cast() -> None:
    # a mixed-precision step's bf16 -> fp32 upcast writes twice what it reads: on the H200 (2026-12-02) Llama's
    # RMSNorm upcasts of 8 MB ran 10.4 us where the elementwise passes predicted 5.6; its family is the catalog's
    # cast, whose bytes are the profile's (2 read and 4 written per element)
    x = torch.zeros(64, 64, dtype=torch.bfloat16)
    prof = roofline.profile(lambda: (x.float(), x.clone()), time=False, gpu="h200")
    (up,) = [r for r in prof.records if r.op == "aten::_to_copy"]
    (same,) = [r for r in prof.records if r.op == "aten::clone"]
    assert family_of(up) == "cast" and family_of(same) == "elementwise"  # a same-dtype copy stays a memory pass
    assert (up.bytes_read, up.bytes_written) == (64 * 64 * 2, 64 * 64 * 4)
    cast = make("cast", numel=64 * 64, to="fp32").traffic(get_dtype("bf16"))
    assert (cast.bytes_read, cast.bytes_written) == (up.bytes_read, up.bytes_written)
    p = Predictor(db_of(point(1e-6, 0.5, 0.0, family="elementwise")), "h200-sxm").predict(up)
    assert p is not None and "no cast points: as a memory pass" in p.source  # a database swept before casts


def test_a_column_reduction_is_predicted_from_the_column_points() -> None:
    # torch's column reductions (a bias's gradient over the tokens) run other kernels than its row reductions: on
    # the H200 (2026-12-02) 13.4 us where the row points predicted 3.3. Rows and columns at the same sizes, 50% and
    # 10% of the roof: each query takes its own kind's efficiency (its nearest points are of its kind; the plane's
    # held-back slope towards the other kind's, 2 decades off, moves it by well under 1%)
    def reduce_point(rows: int, dim: str, eff: float) -> Point:
        op = make("reduce", rows=rows, cols=1024, dim=dim)
        rec = analytic_record(op, get_dtype("bf16"), H200)
        return Point(family="reduction", op="reduce", dtype="bf16", params=op.params(), flops=rec.flops,
                     bytes=rec.bytes, roofline_time_s=rec.roofline_time_s, time_s=rec.roofline_time_s / eff)

    kinds = (("last", 0.5), ("first", 0.1))
    pts = [reduce_point(r, dim, eff) for r in (1024, 2048, 4096, 16384, 32768) for dim, eff in kinds]
    p = Predictor(db_of(*pts), "h200-sxm")
    for dim, eff in kinds:
        rec = analytic_record(make("reduce", rows=8192, cols=1024, dim=dim), get_dtype("bf16"), H200)
        got = p.predict(rec)
        assert got is not None and got.family == "reduction"
        assert got.time_s == pytest.approx(rec.roofline_time_s / eff, rel=0.01), dim


def test_a_layernorm_is_predicted_from_layernorm_points_and_its_rows() -> None:
    # torch's LayerNorm and RMS norm kernels run at other efficiencies on the same shapes (H200, 2026-12-02: 24-35%
    # and 40-65%), and a norm's rows set how full the GPU is: here LayerNorms of 1024-16384 rows at 25%, RMS norms
    # of the same shapes at 50%, and LayerNorms of 16 and 64 rows x 8192 (bounds like the 1024-row ones') at 5%.
    # A LayerNorm of 6304 x 768 takes its own kind's, its rows' efficiency, 25% (within the plane's held-back
    # slopes); an RMS norm of it 50%
    def norm_point(op: str, rows: int, cols: int, eff: float) -> Point:
        o = make(op, rows=rows, cols=cols)
        rec = analytic_record(o, get_dtype("bf16"), H200)
        return Point(family="norm", op=op, dtype="bf16", params=o.params(), flops=rec.flops, bytes=rec.bytes,
                     roofline_time_s=rec.roofline_time_s, time_s=rec.roofline_time_s / eff)

    pts = [norm_point(op, rows, 768, eff) for rows in (1024, 4096, 16384)
           for op, eff in (("layernorm", 0.25), ("rmsnorm", 0.5))]
    pts += [norm_point("layernorm", rows, 8192, 0.05) for rows in (16, 64)]
    p = Predictor(db_of(*pts), "h200-sxm")
    for op, eff in (("layernorm", 0.25), ("rmsnorm", 0.5)):
        rec = analytic_record(make(op, rows=6304, cols=768), get_dtype("bf16"), H200)
        got = p.predict(rec)
        assert got is not None and got.family == "norm"
        assert got.time_s == pytest.approx(rec.roofline_time_s / eff, rel=0.02), op


def _gemm_point(m: int, n: int, k: int, eff: float) -> Point:
    """A real catalog GEMM shape (so its FLOPs and bytes are today's) timed at `eff` of its H200 roof."""
    r = analytic_record(make("gemm", m=m, n=n, k=k), get_dtype("bf16"), H200)
    return Point(family="gemm", op="gemm", dtype="bf16", params=dict(r.params), flops=r.flops, bytes=r.bytes,
                 roofline_time_s=r.roofline_time_s, time_s=r.roofline_time_s / eff)


def test_a_gemm_with_an_unaligned_leading_dimension_is_predicted_from_unaligned_points() -> None:
    # aligned points at 80% of the roof, points with n = 8193 (not a multiple of 8) at 10%: an unaligned head
    # (n = 50257) is predicted at 10x its bound, an aligned one of the same size at 1.25x; a profile's transposed
    # operand whose leading dimension is 50257 (the head's weight gradient) is unaligned too, by its strides
    aligned = [_gemm_point(m, n, 4096, 0.8) for m in (512, 2048, 8192) for n in (8192, 32768, 65536)]
    unaligned = [_gemm_point(m, n, 4096, 0.1) for m in (512, 2048, 8192) for n in (8193, 32769, 65537)]
    p = Predictor(db_of(*aligned, *unaligned), "h200-sxm")
    head = analytic_record(make("gemm", m=2048, n=50257, k=4096), get_dtype("bf16"), H200)
    even = analytic_record(make("gemm", m=2048, n=50256, k=4096), get_dtype("bf16"), H200)
    got, ok = p.predict(head), p.predict(even)
    assert got is not None and got.time_s == pytest.approx(head.roofline_time_s / 0.1, rel=1e-6)
    assert ok is not None and ok.time_s == pytest.approx(even.roofline_time_s / 0.8, rel=1e-6)
    grad_w = evolve(analytic_record(make("gemm", m=50256, n=4096, k=2048), get_dtype("bf16"), H200),
                    input_shapes=[[50256, 2048], [2048, 4096]], input_strides=[[1, 50257], [4096, 1]],
                    output_shapes=[[50256, 4096]])
    got = p.predict(grad_w)
    assert got is not None and got.time_s == pytest.approx(grad_w.roofline_time_s / 0.1, rel=0.05)
    # a database without unaligned points (every point aligned): the coordinate teaches nothing, the aligned
    # points predict it and it is not called an extrapolation
    got = Predictor(db_of(*aligned), "h200-sxm").predict(head)
    assert got is not None and got.time_s == pytest.approx(head.roofline_time_s / 0.8, rel=1e-6)
    assert "extrapolated" not in got.source
