"""One use case places operators for every front end (roofline.session): the command line's `analyze` and `run`,
`roofline.analyze`, the `roofline(op=...)` fixture and `compare` give the same record for the same operator, and
whether an op ran inside a model's sequence is said by a profile alone.

The databases here are synthetic, their answers known by hand: elementwise fp32 points at a quarter of their roof
after an L2 flush (efficiency 0.25, so a prediction is 4x the bound) and at half of it with a warm L2 (2x); a norm
family timed after a flush only (0.5: 2x); and an L2 write-back measured as in tests/test_l2_drain.py (an op after
another that wrote 16 MiB would pay 1.25 us more). Their points carry parameters no catalog operator takes, so no
point is judged stale against today's formulas."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from helpers import run as cli
from test_l2_drain import readings
from test_pytest_plugin import run

import roofline
from roofline.analysis.families import family_of
from roofline.ceilings import opdb
from roofline.core.notes import Note, without
from roofline.measuring.target import ANALYTIC_ONLY

pytest_plugins = ["pytester"]

for _name in ("torch", "roofline.analysis.advice", "roofline.ci.judge", "roofline.measuring.kernels.families",
              "roofline.measuring.runner", "roofline.ops", "roofline.ops.collectives"):
    importlib.import_module(_name)

FLUSHED_EFF, WARM_EFF, NORM_EFF = 0.25, 0.5, 0.5


def synthetic_db(path: Path, device: dict[str, str], drain: bool = False) -> Path:
    """Points from 1e-9 s to 1 s of roofline time at constant efficiencies (every query lands inside the box)."""
    db = opdb.OpDB(device=device, path=path, l2_drain=readings() if drain else None)
    for k in range(10):
        roof_s = 10.0 ** (-9 + k)
        for dtype in ("fp32", "fp16"):
            for l2, eff in (("flushed", FLUSHED_EFF), ("warm", WARM_EFF)):
                db.points.append(opdb.Point(family="elementwise", op="add", dtype=dtype, params={"roof": roof_s},
                                            flops=1e6, bytes=12e6, roofline_time_s=roof_s, time_s=roof_s / eff, l2=l2))
            db.points.append(opdb.Point(family="norm", op="rmsnorm", dtype=dtype, params={"roof": roof_s},
                                        flops=1e6, bytes=8e6, roofline_time_s=roof_s, time_s=roof_s / NORM_EFF))
    opdb.write(db)
    return path


CPU = {"kind": "cpu", "id": "cpu", "name": "test CPU"}
H200 = {"kind": "gpu", "id": "h200-sxm", "name": "NVIDIA H200"}

WARM_FIXTURE = """
def test_add_warm(roofline):
    rec = roofline(op="add", numel=4096, dtype="fp32", warm_l2=True)
    assert rec.timing.l2_flush is False

def test_add_flushed(roofline):
    roofline(op="add", numel=4096, dtype="fp32")
"""


def test_the_fixture_predicts_a_warm_l2_from_the_warm_points(pytester: pytest.Pytester) -> None:
    # the fixture built its predictor once, flushed: `roofline(op=..., warm_l2=True)` read 4x the bound where
    # `roofline.analyze(..., warm_l2=True)` says 2x on the same database
    synthetic_db(pytester.path / "cpu-ops.json", CPU)
    pytester.makepyfile(test_warm=WARM_FIXTURE)
    run(pytester, "--roofline-save", "out.json", "--roofline-db", "cpu-ops.json").assert_outcomes(passed=2)
    doc = json.loads((pytester.path / "out.json").read_text())
    by_test = {r["params"]["test"].split("::")[1]: r for r in doc["records"]}
    warm, flushed = by_test["test_add_warm"], by_test["test_add_flushed"]
    assert warm["predicted_time_s"] == pytest.approx(warm["roofline_time_s"] / WARM_EFF)
    assert flushed["predicted_time_s"] == pytest.approx(flushed["roofline_time_s"] / FLUSHED_EFF)
    assert warm["prediction_kind"] == flushed["prediction_kind"] == "db"
    assert warm["prediction_family"] == "elementwise"
    # the API, on the same database, agrees (analytic: the CPU's roof, not timed)
    api = roofline.analyze("add", numel=4096, dtype="fp32", device="cpu", time=False, warm_l2=True,
                           db=pytester.path / "cpu-ops.json")
    assert api.predicted_time_s == pytest.approx(api.roofline_time_s / WARM_EFF)


SUITE = """
[[entry]]
op = "add"
params = { numel = 16777216 }
dtype = "fp16"

[[entry]]
op = "rmsnorm"
params = { rows = 4096, cols = 4096 }
dtype = "fp16"
"""


def test_a_suite_timed_with_a_warm_l2_pays_no_write_back_of_an_unrelated_entry(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `run SUITE --warm-l2 --db X` charged the second entry the write-back of "the op before" (the first entry,
    # timed alone): a warm predictor stood in for "inside a model's sequence"
    db = synthetic_db(tmp_path / "h200.json", H200, drain=True)
    suite = tmp_path / "s.toml"
    suite.write_text(SUITE)
    code, out, err = cli(capsys, "run", str(suite), "--gpu", "h200", "--no-time", "--warm-l2", "--db", str(db),
                         "--json")
    assert code == 0, err
    add, norm = json.loads(out)["records"]
    assert add["bytes_written"] >= 16 * 2**20  # a writer the drain would have charged the next entry for
    assert "write-back" not in norm["prediction_source"]
    assert norm["predicted_time_s"] == pytest.approx(norm["roofline_time_s"] / NORM_EFF)
    assert add["predicted_time_s"] == pytest.approx(add["roofline_time_s"] / WARM_EFF)  # warm points, no blend


def test_only_a_profile_is_a_sequence_and_it_pays_the_write_back(tmp_path: Path) -> None:
    # the same database under a model: an upcast (a family without warm points: it borrows the elementwise pass)
    # after an add that wrote 16 MiB pays the write-back, as the profile's predictor is in sequence
    import torch

    db = synthetic_db(tmp_path / "h200.json", H200, drain=True)
    x = torch.zeros(4096, 2048, dtype=torch.float16)
    prof = roofline.profile(lambda: (x + x).float(), time=False, gpu="h200", db=db)
    add, cast = prof.records
    assert add.bytes_written == 16 * 2**20 and family_of(cast) == "cast"  # predicted from the elementwise points
    assert "write-back" in cast.prediction_source and "write-back" not in add.prediction_source


def test_every_front_end_gives_the_same_record(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """analyze (CLI), roofline.analyze (API), run (a suite of one entry) and compare's row for one GPU: the same
    record and prediction from the same database."""
    db = synthetic_db(tmp_path / "h200.json", H200)
    _, out, _ = cli(capsys, "analyze", "add", "--numel", "16777216", "--dtype", "fp16", "--gpu", "h200", "--no-time",
                    "--db", str(db), "--json")
    (from_cli,) = json.loads(out)["records"]
    from_api = roofline.analyze("add", numel=16777216, dtype="fp16", gpu="h200", time=False, db=db).to_dict()
    suite = tmp_path / "s.toml"
    suite.write_text(SUITE.split("\n\n")[0] + "\n")
    _, out, _ = cli(capsys, "run", str(suite), "--gpu", "h200", "--no-time", "--db", str(db), "--json")
    (from_run,) = json.loads(out)["records"]
    for k in ("suite_entry", "threshold"):
        from_run.pop(k, None)
    assert from_cli == from_api == from_run
    from roofline.analysis.compare import compare_op
    from roofline.ops import make

    row = compare_op(make("add", numel=16777216), "fp16", ["h200"], use_measured=False,
                     dbs={"h200-sxm": opdb.read(db)}).row("h200")
    assert row.record is not None and row.record.predicted_time_s == pytest.approx(from_cli["predicted_time_s"])


def test_the_targets_notes_are_left_out_of_a_view_by_their_code() -> None:
    rec = roofline.analyze("gemm", m=256, gpu="a100")  # timing asked for, another GPU's roof: analytic only
    said = [n for n in rec.notes if isinstance(n, Note)]
    assert [n.code for n in said] == [ANALYTIC_ONLY]
    assert without(rec.notes, said) == rec.notes[:-1]
    assert without(["same words, no code", *said], [Note(ANALYTIC_ONLY, "other words")]) == ["same words, no code"]
