"""The L2 write-back a model's op pays for its predecessor's dirty lines: the model derived from raw readings
(analysis/l2_drain.py), the database's field and its validation (ceilings/opdb.py), and where the predictor charges
it (analysis/predict.with_drain). The readings are synthetic, their answers known by hand: an add of 32 MiB in and
out taking 10 us after a clean L2 (6.7 TB/s), paying half of what was written before it, up to 8 MiB."""

from __future__ import annotations

import dataclasses
import json

import pytest

from roofline.analysis.l2_drain import drain_model
from roofline.analysis.predict import Predictor, predicted
from roofline.ceilings import opdb
from roofline.ceilings.opdb import OpDB, Point
from roofline.core.errors import UsageError

MIB = 2**20
OP_BYTES = 32 * MIB
BASE_S = 10e-6
BW = 2 * OP_BYTES / BASE_S
KEEP, CAP = 0.5, 8 * MIB


def readings(keep: float = KEEP, cap: float = CAP) -> dict:
    """An add timed after W MiB written elsewhere: the clean 10 us plus min(keep W, cap) at its own bandwidth."""
    samples = []
    for w_mib in (0, 2, 4, 8, 12, 16, 24, 32, 64):
        t = BASE_S + min(keep * w_mib * MIB, cap) / BW
        samples.append({"written_bytes": w_mib * MIB, "times_s": [t * 0.99, t, t * 1.01]})
    return {"op": "add", "op_bytes": OP_BYTES, "samples": samples}


def test_the_drain_is_a_line_through_zero_up_to_a_cap() -> None:
    d = drain_model(readings())
    assert d is not None
    assert d.keep == pytest.approx(KEEP, rel=1e-6)
    assert d.cap_bytes == pytest.approx(CAP, rel=1e-6)
    assert d.bytes_per_s == pytest.approx(BW, rel=1e-6)
    assert d.seconds(4 * MIB) == pytest.approx(2 * MIB / BW, rel=1e-6)  # below the cap: half of it
    assert d.seconds(100 * MIB) == pytest.approx(CAP / BW, rel=1e-6)  # past it: the cap
    assert d.seconds(0) == 0.0


def test_no_readings_or_writes_that_cost_nothing_give_no_drain() -> None:
    assert drain_model(None) is None
    assert drain_model(readings(keep=0.0, cap=0.0)) is None


def db_with(*points: Point, drain: dict | None = None) -> OpDB:
    return OpDB(device={"kind": "gpu", "id": "h200-sxm", "name": "NVIDIA H200"}, points=list(points), l2_drain=drain)


def test_the_readings_round_trip_through_the_file_and_bad_ones_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "db.json"
    db = db_with(drain=readings())
    db.path = path
    opdb.write(db)
    assert opdb.read(path).l2_drain == readings()
    doc = json.loads(path.read_text())
    for bad, says in ((dict(doc["l2_drain"], samples=doc["l2_drain"]["samples"][1:]), "clean start"),
                      (dict(doc["l2_drain"], op_bytes=0), "op_bytes"),
                      ({"samples": [{"written_bytes": -1, "times_s": [1e-5]}], "op_bytes": 1}, "written_bytes"),
                      ({"samples": [{"written_bytes": 0, "times_s": []}], "op_bytes": 1}, "times_s")):
        path.write_text(json.dumps(dict(doc, l2_drain=bad)))
        with pytest.raises(UsageError, match=says):
            opdb.read(path)


@dataclasses.dataclass
class Rec:
    """A profile's record as the predictor reads it: op, its roofline numbers, what it wrote."""

    op: str
    roofline_time_s: float
    bound: str
    bytes_written: float
    dtype: str = "bf16"
    arithmetic_intensity: float = 1.0
    flops_source: str | None = None
    tensor_cores: bool = True
    params: dict | None = None
    predicted_time_s: float | None = None
    predicted_low_s: float | None = None
    predicted_high_s: float | None = None
    prediction_source: str | None = None
    prediction_family: str | None = None
    prediction_kind: str | None = None


def family_point(family: str, op: str, roof_s: float, eff: float, intensity: float, l2: str = "flushed") -> Point:
    return Point(family=family, op=op, dtype="bf16", params={"roof": roof_s}, flops=intensity * 1e6, bytes=1e6,
                 roofline_time_s=roof_s, time_s=roof_s / eff, l2=l2)


def test_a_models_memory_bound_op_of_a_family_without_warm_points_pays_its_predecessors_write_back() -> None:
    # decode attention (memory-bound, no warm points) after an op that wrote 16 MiB: + min(0.5 x 16, 8) MiB at
    # 6.7 TB/s = 1.25 us; a compute-bound GEMM after the same writer: nothing (written back under its math); an
    # elementwise op (a family with warm points, whose blend charges its own writes): nothing; ops alone: nothing
    pts = [family_point("decode_attention", "decode_attention", r, 0.5, 1.0) for r in (1e-6, 1e-5, 1e-4)]
    pts += [family_point("gemm", "gemm", r, 0.8, 500.0) for r in (1e-6, 1e-5, 1e-4)]
    pts += [family_point("elementwise", "add", r, 0.7, 0.2, l2) for r in (1e-6, 1e-5, 1e-4)
            for l2 in ("flushed", "warm")]
    writer = Rec("add", 1e-5, "memory", 16 * MIB, arithmetic_intensity=0.2)
    after = [Rec("decode_attention", 1e-5, "memory", 1e3), Rec("gemm", 1e-5, "compute", 1e3, arithmetic_intensity=500),
             Rec("add", 1e-5, "memory", 1e3, arithmetic_intensity=0.2)]
    extra = min(KEEP * 16 * MIB, CAP) / BW
    for follower, charged in zip(after, (True, False, False), strict=True):
        seq = [writer, follower]
        plain = predicted(seq, Predictor(db_with(*pts), "h200-sxm", "warm", in_sequence=True))[1]
        drained = predicted(seq, Predictor(db_with(*pts, drain=readings()), "h200-sxm", "warm", in_sequence=True))[1]
        alone = predicted(seq, Predictor(db_with(*pts, drain=readings()), "h200-sxm"))[1]
        assert drained.predicted_time_s == pytest.approx(plain.predicted_time_s + (extra if charged else 0.0))
        assert drained.predicted_high_s == pytest.approx(plain.predicted_high_s + (extra if charged else 0.0))
        assert ("write-back" in drained.prediction_source) == charged, follower.op
        assert "write-back" not in alone.prediction_source  # an op timed alone (analyze, run) pays none
    first = predicted([after[0]], Predictor(db_with(*pts, drain=readings()), "h200-sxm", "warm", in_sequence=True))[0]
    assert "write-back" not in first.prediction_source  # nothing ran before it
