"""`roofline check RESULTS --against-prediction`: a run judged against its predicted intervals (ci/predicted.py),
on a synthetic database whose prediction is known: every gemm bf16 point at 50% of the roof, so a GEMM is
predicted at twice its roofline time with no spread."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run

from roofline.ceilings import opdb
from roofline.ceilings.specs import gpu_ceilings, resolve
from roofline.core.document import Document, write_document
from roofline.core.dtypes import get_dtype
from roofline.core.model import Ceilings
from roofline.core.record import analytic_record, with_time
from roofline.ops import make

H200 = gpu_ceilings(resolve("h200"))
A100 = gpu_ceilings(resolve("a100"))  # a GPU no database ships for


def _db(path: Path) -> Path:
    db = opdb.OpDB(device={"kind": "gpu", "id": "h200-sxm", "name": "NVIDIA H200"}, path=path)
    for m in (512, 1024, 2048, 4096, 8192, 16384):
        r = analytic_record(make("gemm", m=m), get_dtype("bf16"), H200)
        db.points.append(opdb.Point("gemm", "gemm", "bf16", {"m": m}, r.flops, r.bytes, r.roofline_time_s,
                                    2 * r.roofline_time_s))
    opdb.write(db)
    return path


def _run(tmp_path: Path, slowdowns: list[float], roof: Ceilings = H200) -> Path:
    recs = []
    for m, slow in zip((1024, 4096), slowdowns, strict=False):
        r = analytic_record(make("gemm", m=m), get_dtype("bf16"), roof)
        recs.append(with_time(r, slow * r.roofline_time_s))
    path = tmp_path / f"run-{'-'.join(map(str, slowdowns))}.json"
    write_document(Document(device={"kind": "gpu", "name": "NVIDIA H200"}, records=recs), path, force=True)
    return path


def test_a_record_slower_than_its_interval_fails_and_one_inside_passes(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path / "db.json")
    # m=1024 measured at 2x its roof (the prediction); m=4096 at 4x: 100% slower than kernels of its kind
    code, out, err = run(capsys, "check", str(_run(tmp_path, [2.0, 4.0])), "--against-prediction", "--db", str(db))
    assert code == 1, err
    words = " ".join(out.split())  # the verdict column wraps
    assert "1 of 2 judged records slower" in words and "runs 100% slower" in words
    code, out, _ = run(capsys, "check", str(_run(tmp_path, [2.0, 2.05])), "--against-prediction", "--db", str(db))
    assert code == 0 and "within" in out  # 2.5% above the (zero-width) interval: inside the 5% margin
    code, out, _ = run(capsys, "check", str(_run(tmp_path, [2.0, 2.05])), "--against-prediction", "--db", str(db),
                       "--fail-on", "median:1%")
    assert code == 1  # the margin is --fail-on's median threshold


def test_nothing_to_judge_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", str(_run(tmp_path, [2.0, 4.0], A100)), "--against-prediction")
    assert code == 2 and "no record has a prediction from an operator database for a100-sxm4-80gb" in err
    code, _, err = run(capsys, "check", str(_run(tmp_path, [2.0])))
    assert code == 2 and "--baseline is required" in err
    # a database named that predicts none of them (gemm bf16 points only, an fp32 run): it said "or name one with
    # --db" to a user who had; now it says why the named one did not apply
    r = analytic_record(make("gemm", m=1024), get_dtype("fp32"), H200)
    fp32 = tmp_path / "fp32.json"
    write_document(Document(device={}, records=[with_time(r, 2 * r.roofline_time_s)]), fp32)
    db = _db(tmp_path / "db.json")
    code, _, err = run(capsys, "check", str(fp32), "--against-prediction", "--db", str(db))
    assert code == 2 and f"{db} predicts none of the 1 timed record(s)" in err and "no gemm fp32 points" in err
    assert "name one with --db" not in err


def test_compare_ranks_a_gpu_with_a_database_by_its_prediction_and_says_so(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import json

    db = _db(tmp_path / "db.json")  # every H200 gemm at 50% of the roof: predicted at twice the bound
    # the A100 has no database: the H100's shipped one is left out (a prediction beside bounds), the named one used
    code, out, err = run(capsys, "compare", "gemm", "--m", "4096", "--dtype", "bf16", "--gpu", "h100,h200,a100",
                         "--db", str(db), "--json")
    assert code == 0, err
    rows = {r["gpu"]: r for r in json.loads(out)["gpus"]}
    h200, h100 = rows["h200-sxm"], rows["h100-sxm"]
    assert h200["time_source"] == "predicted" and h200["time_s"] == pytest.approx(2 * h200["roofline_time_s"])
    assert h100["time_source"] == "bound" and h100["time_s"] == h100["roofline_time_s"]
    assert h100["rank"] == 1  # the same peak on both, the H200 predicted at half of it
    assert any("predicted from the operator database on h200-sxm; the roofline bound on h100-sxm" in n
               for n in json.loads(out)["notes"])
    code, _, err = run(capsys, "compare", "gemm", "--m", "4096", "--gpu", "h100,b200", "--db", str(db))
    assert code == 2 and "not among the compared GPUs" in err
    # an op the database has no points of (relu: elementwise) is the bound on the H200 too, and says so
    code, out, err = run(capsys, "compare", "relu", "--numel", "16777216", "--dtype", "bf16", "--gpu", "h200",
                         "--db", str(db), "--json")
    assert code == 0, err
    (relu,) = json.loads(out)["gpus"]
    assert relu["time_source"] == "bound" and relu["time_s"] == relu["roofline_time_s"]
    # and the notes say so: they said "predicted from the operator database on h200-sxm" of this bound
    notes = json.loads(out)["notes"]
    assert not any("predicted from the operator database" in n for n in notes), notes
    assert any(n.startswith("h200-sxm: bound (no elementwise bf16 points in the database)") for n in notes), notes


def test_views_show_the_bound_and_the_prediction_side_by_side(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    import torch
    from helpers import rendered

    import roofline
    from roofline.analysis.profile_view import profile_view
    from roofline.report.profile import header, rollup_table, top_table

    db = _db(tmp_path / "db.json")
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--gpu", "h200", "--no-time", "--dtype", "bf16",
                       "--db", str(db))
    words = " ".join(out.split())
    assert code == 0 and "roofline time │ 139 µs" in words and "predicted time │ 278 µs" in words  # 2x the bound
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "1024,4096", "--gpu", "h200", "--no-time", "--dtype",
                       "bf16", "--db", str(db))
    assert code == 0 and "predicted" in out and "278 µs" in out  # the sweep table's column
    mlp = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024))
    mlp = mlp.to(torch.bfloat16)
    x = torch.randn(1024, 1024, dtype=torch.bfloat16)
    prof = roofline.profile(lambda: mlp(x), time=False, gpu="h200", db=db)
    step = prof.summary["prediction"]
    assert step["calls_from_db"] == 2 and step["calls_on_bound"] >= 1  # two GEMMs; the ReLU: no elementwise points
    view = profile_view(prof.document())
    text = " ".join(rendered(header(view), 80).split())
    assert "predicted kernels" in text and "bound" in text and f"predicted from {db.name}" in text
    assert "roofline step" in text and "predicted step" not in text  # the bound's sum, not called a prediction
    assert "pred" in rendered(top_table(view), 80)
    # the tables' times are the bound's too: the top table said "by predicted time (roofline)" and the roll-up
    # "By op type (predicted)" beside a pred column and a predicted step 250x their sum
    top, rollup = rendered(top_table(view), 80), rendered(rollup_table(view), 80)
    assert "by roofline time" in top and "predicted time" not in top
    assert "By op type (roofline time)" in rollup and "(predicted)" not in rollup
    bare = roofline.profile(lambda: mlp(x), time=False, gpu="a100")  # no database for the A100 anywhere
    text = " ".join(rendered(header(profile_view(bare.document())), 80).split())
    assert "prediction: the bound (no operator database for a100-sxm4-80gb" in text
    # every record carries the bound as its prediction, said so; the top table adds no redundant column
    assert all(r.prediction_source == "bound (no operator database for a100-sxm4-80gb)" and r.predicted_time_s
               == r.roofline_time_s for r in bare.records if r.roofline_time_s)
    top = rendered(top_table(profile_view(bare.document())), 80)
    assert "pred" not in top.replace("predicted", "")


def test_against_prediction_judges_time_and_db_belongs_to_it(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # both used to be ignored in silence: --metric energy judged time, --db without --against-prediction nothing
    db, results = _db(tmp_path / "db.json"), _run(tmp_path, [2.0, 4.0])
    code, _, err = run(capsys, "check", str(results), "--against-prediction", "--db", str(db), "--metric", "energy")
    assert code == 2 and "--against-prediction judges time" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "check", str(results), "--baseline", str(results), "--db", str(db))
    assert code == 2 and "--db is an option of --against-prediction" in err
    # a rule it does not apply (p90) fell back to 5% in silence, and the CI reports were never written
    code, _, err = run(capsys, "check", str(results), "--against-prediction", "--db", str(db), "--fail-on", "p90:50%")
    assert code == 2 and "median threshold alone" in err
    code, _, err = run(capsys, "check", str(results), "--against-prediction", "--db", str(db),
                       "--junit", str(tmp_path / "j.xml"))
    assert code == 2 and "--junit: --against-prediction writes no report files" in err


def test_profile_refuses_a_bad_database_before_the_script_runs(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad, ran = tmp_path / "bad.json", tmp_path / "ran"
    bad.write_text('{"format": "roofline-ops-db"')  # truncated
    script = tmp_path / "s.py"
    script.write_text(f"import pathlib\npathlib.Path({str(ran)!r}).write_text('ran')\n")
    code, _, err = run(capsys, "profile", str(script), "--no-time", "--gpu", "h200", "--db", str(bad))
    assert code == 2 and "bad.json: not an operator database" in err
    assert not ran.exists()  # refused before the script (a timed profile can take minutes)
