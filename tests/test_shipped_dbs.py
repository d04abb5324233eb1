"""The operator databases the package ships (roofline/_opdata): an analytic run on any machine predicts from the
GPU's own when there is one, says which (its GPU, date, driver and held-out accuracy), and a label that is missing
or a database of the wrong GPU is a packaging error, refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run

from roofline.analysis.predict import predictor_for
from roofline.ceilings import opdb
from roofline.core.errors import RooflineError


def test_each_shipped_database_reads_and_is_labelled() -> None:
    labels = opdb.shipped_labels()
    assert set(labels) == {"h100-sxm", "h200-sxm"}
    for spec in labels:
        db = opdb.shipped(spec)
        assert db is not None and db.device_id == spec and db.held_out == labels[spec]
        assert db.device.get("driver") and db.created and len(db.points) > 1000


def test_an_analytic_run_predicts_from_the_gpus_shipped_database(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", "gemm", "--m", "4096", "--dtype", "bf16", "--gpu", "h100", "--no-time",
                         "--json")
    assert code == 0, err
    (rec,) = json.loads(out)["records"]
    assert rec["prediction_kind"] == "db" and rec["prediction_family"] == "gemm"
    assert rec["predicted_time_s"] > rec["roofline_time_s"]  # no real GEMM reaches the datasheet peak
    assert "the shipped database (NVIDIA H100 80GB HBM3, swept 2026-12-06, driver 580.159.04; held out:" \
        in rec["prediction_source"]
    assert "shipped database" in predictor_for("h100-sxm").name
    # a GPU the package ships none for: the bound, said so
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--gpu", "a100", "--no-time", "--json")
    assert json.loads(out)["records"][0]["prediction_kind"] == "bound"


def test_a_measured_database_in_the_cache_comes_before_the_shipped_one(tmp_path: Path) -> None:
    mine = opdb.OpDB(device={"kind": "gpu", "id": "h100-sxm", "name": "NVIDIA H100 80GB HBM3"},
                     path=opdb.default_path("h100-sxm"), created="2026-12-07T00:00:00Z")
    mine.path.parent.mkdir(parents=True)
    opdb.write(mine)
    got = opdb.load_for("h100-sxm")
    assert got is not None and got.held_out is None and got.path == mine.path


def test_a_shipped_database_without_its_label_or_of_another_gpu_is_refused(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = tmp_path / "roofline" / "_opdata"
    shipped.mkdir(parents=True)
    source = opdb.shipped("h200-sxm")
    assert source is not None and source.path is not None
    (shipped / "h100-sxm.json.gz").write_bytes(source.path.read_bytes())  # the H200's points as the H100's
    (shipped / opdb.LABELS).write_text('[h100-sxm]\nheld_out = "x"\n')
    monkeypatch.setattr(opdb, "SHIPPED", ("_nothing", str(shipped)))
    monkeypatch.setattr(opdb, "data_dir", lambda packaged, checkout: Path(checkout))
    with pytest.raises(RooflineError, match="holds h200-sxm's points"):
        opdb.shipped("h100-sxm")
    (shipped / opdb.LABELS).write_text('[h100-sxm]\nheld_out = ""\n')
    with pytest.raises(RooflineError, match="needs held_out"):
        opdb.shipped_labels()


def test_a_transfer_between_shipped_gpus_says_its_measured_error(capsys: pytest.CaptureFixture[str]) -> None:
    # the H200's database on the H100's roof: its step error on the H100's stored profiles is in held_out.toml
    # (docs/results/predict/transfer-2026-12-07.json: 12.2%), and the prediction repeats it
    h200 = opdb.shipped("h200-sxm")
    assert h200 is not None and h200.path is not None
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--dtype", "bf16", "--gpu", "h100", "--no-time",
                       "--db", str(h200.path), "--json")
    source = json.loads(out)["records"][0]["prediction_source"]
    assert code == 0 and "transferred (measured on NVIDIA H200, applied to h100-sxm; measured on the H100: step " \
        "median |error| 12.2%" in source
    assert json.loads(out)["records"][0]["prediction_kind"] == "transfer"
