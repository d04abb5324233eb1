"""The operator database (ceilings/opdb.py) as a data file, and `roofline calibrate --ops` building one on the CPU
by a real (tiny) sweep, which then predicts a small MLP's profile. The CPU figures are printed, never asserted as
times (the machine is shared)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import run, write

from roofline.ceilings import opdb
from roofline.core.errors import RooflineError, UsageError
from roofline.core.tomlfile import read_toml
from roofline.measuring.opsweep import SWEEPS, axis_levels, default_suite, load_plan, plan

ROOT = Path(__file__).resolve().parents[1]

H200 = {"kind": "gpu", "id": "h200-sxm", "name": "NVIDIA H200", "driver": "580.1", "torch": "2.11.0"}


def a_db(path: Path, device: dict | None = None) -> Path:
    db = opdb.OpDB(device=dict(device or H200), created="2026-12-01T00:00:00Z", suite="test", path=path)
    db.points.append(opdb.Point(family="gemm", op="gemm", dtype="bf16", params={"m": 64}, flops=2 * 64**3,
                                bytes=3 * 64 * 64 * 2, roofline_time_s=1e-6, time_s=4e-6, samples_s=(4e-6, 5e-6)))
    opdb.write(db)
    return path


def test_a_database_round_trips(tmp_path: Path) -> None:
    p = a_db(tmp_path / "db.json")
    db = opdb.read(p)
    assert db.device == H200 and db.suite == "test" and db.updated
    assert db.points[0].efficiency == pytest.approx(0.25)  # 1 us roof / 4 us measured
    assert db.points[0].samples_s == (4e-6, 5e-6)
    assert json.loads(p.read_text())["format"] == opdb.FORMAT


def test_a_gzipped_database_is_read_and_a_broken_one_is_one_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # the package ships its databases gzipped (roofline/_opdata): --db takes them as they are; a sweep writes plain JSON
    import gzip

    plain = a_db(tmp_path / "db.json")
    packed = tmp_path / "db.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert opdb.read(packed).points == opdb.read(plain).points
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "64", "--gpu", "h200", "--no-time", "--dtype", "bf16",
                       "--db", str(packed), "--json")
    assert code == 0 and "gemm bf16: 1 of 1 points" in json.loads(out)["records"][0]["prediction_source"]
    for name, data in (("cut.json.gz", packed.read_bytes()[:-20]), ("plain.json.gz", plain.read_bytes())):
        broken = tmp_path / name
        broken.write_bytes(data)
        code, out, err = run(capsys, "analyze", "gemm", "--m", "64", "--gpu", "h200", "--no-time", "--db",
                             str(broken))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "not a whole gzip file" in err
    with pytest.raises(UsageError, match="a sweep writes its database as plain JSON"):
        opdb.open_for_sweep(H200, packed, "ops")


@pytest.mark.parametrize("damage, says", [
    (lambda t: t[: len(t) // 2], "corrupt or truncated JSON"),
    (lambda t: t.replace('"roofline-ops-db"', '"something-else"'), "not an operator database"),
    (lambda t: t.replace('"time_s": 4e-06', '"time_s": -1'), "point 1: time_s must be a positive number"),
    (lambda t: t.replace('"family": "gemm",', ''), "point 1 has no 'family'"),
    (lambda t: t.replace('"version": 1', '"version": 7'), "version 7"),
])
def test_a_damaged_database_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], damage,
                                                says: str) -> None:  # type: ignore[no-untyped-def]
    p = a_db(tmp_path / "db.json")
    p.write_text(damage(p.read_text()))
    with pytest.raises(UsageError, match=says):
        opdb.read(p)
    code, out, err = run(capsys, "analyze", "gemm", "--m", "64", "--gpu", "h200", "--no-time", "--db", str(p))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err


def test_another_gpus_database_is_refused_unless_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    h100 = {**H200, "id": "h100-sxm", "name": "NVIDIA H100"}
    named = a_db(tmp_path / "h100.json", h100)
    db = opdb.load_for("h200-sxm", named)  # named: applied, as a transfer
    assert db is not None and db.transferred == "measured on NVIDIA H100, applied to h200-sxm"
    shipped = opdb.load_for("h200-sxm")  # no default file: the one the package ships for the H200, labelled
    assert shipped is not None and shipped.device_id == "h200-sxm" and shipped.held_out
    assert opdb.load_for("a100-sxm4-80gb") is None  # none in the cache, none shipped: none
    default = opdb.default_path("h200-sxm")
    default.parent.mkdir(parents=True)
    default.write_text(named.read_text())  # the H100's points under the H200's name
    with pytest.raises(UsageError, match="measured on NVIDIA H100, not h200-sxm; name it with --db"):
        opdb.load_for("h200-sxm")
    code, out, err = run(capsys, "analyze", "gemm", "--m", "64", "--gpu", "h200", "--no-time", "--dtype", "bf16",
                         "--db", str(named), "--json")
    assert code == 0
    rec = json.loads(out)["records"][0]
    assert "transferred (measured on NVIDIA H100, applied to h200-sxm)" in rec["prediction_source"]
    assert "transferred" in err
    with pytest.raises(UsageError, match="a sweep adds only to its own device's database"):
        opdb.open_for_sweep({"kind": "cpu", "id": "cpu", "name": "a CPU"}, named, "ops")


def test_kept_samples_stride_through_the_run() -> None:
    assert opdb.kept_samples([1.0, 2.0]) == (1.0, 2.0)
    kept = opdb.kept_samples([float(i) for i in range(100)], 4)
    assert kept == (0.0, 33.0, 66.0, 99.0)  # round(i x 99 / 3)


def test_the_sweep_runs_coarse_first_and_every_family_early() -> None:
    assert axis_levels(5) == [0, 2, 1, 2, 0]  # ends, then the middle, then the quarters
    assert axis_levels(1) == [0]
    sweep = {"sweep": {"cpu_dtypes": ["fp32"]},
             "family": [{"op": "gemm", "cpu": {"m": [16, 32, 64, 128, 256]}},
                        {"op": "add", "cpu": {"numel": [1024, 4096, 16384]}},
                        {"op": "conv2d", "same": {"width": "height"}, "cpu": {"height": [8]}}]}
    pts = plan(sweep, "cpu")
    assert [p.level for p in pts] == sorted(p.level for p in pts)
    assert [(p.op, p.params.get("m") or p.params.get("numel") or p.params["height"]) for p in pts[:5]] == [
        ("gemm", 16), ("add", 1024), ("conv2d", 8), ("gemm", 256), ("add", 16384)]  # level 0, families interleaved
    assert next(p for p in pts if p.op == "conv2d").params["width"] == 8
    assert plan(sweep, "gpu") == []  # no gpu grid in this file
    with pytest.raises(UsageError, match="all_reduce has no prediction family"):
        plan({"family": [{"op": "all_reduce", "cpu": {"bytes": [1024]}}]}, "cpu")
    with pytest.raises(UsageError, match="no \\[\\[family\\]\\]"):
        plan({"sweep": {}}, "cpu")


def test_the_default_sweep_is_package_data(tmp_path: Path) -> None:
    # pyproject.toml installs the sweep folder as the package `roofline._sweepdata`, with its TOML files
    pyproject = read_toml(ROOT / "pyproject.toml", "pyproject.toml", UsageError)["tool"]["setuptools"]
    packaged, checkout = SWEEPS
    assert f"roofline.{packaged}" in pyproject["packages"]
    assert pyproject["package-dir"][f"roofline.{packaged}"] == checkout
    assert "*.toml" in pyproject["package-data"][f"roofline.{packaged}"]
    # an installed package's layout (site-packages/roofline/_sweepdata/ops.toml, no source tree beside it):
    # the same lookup finds the packaged file
    site = tmp_path / "site-packages" / "roofline"
    (site / packaged).mkdir(parents=True)
    installed = site / packaged / "ops.toml"
    installed.write_text((ROOT / checkout / "ops.toml").read_text())
    assert default_suite(site) == installed
    name, points = load_plan(default_suite(site), "cpu")
    assert name and points  # the packaged file is the whole sweep, with a CPU grid
    assert default_suite() == ROOT / checkout / "ops.toml"  # a checkout: the source tree's file


TINY = """
[sweep]
name = "tiny"
cpu_dtypes = ["fp32"]
[[family]]
op = "gemm"
cpu = { m = [8, 32, 128], n = [32, 64], k = [32] }
[[family]]
op = "gelu"
cpu = { numel = [1024, 8192, 65536] }
[[family]]
op = "add"
cpu = { numel = [1024, 65536] }
"""


def test_a_tiny_cpu_sweep_builds_a_database_that_predicts_an_mlp(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    import roofline

    suite, db = write(tmp_path / "tiny.toml", TINY), tmp_path / "cpu.json"
    code, out, err = run(capsys, "calibrate", "--ops", "--suite", str(suite), "--device", "cpu", "--budget", "60s",
                         "--db", str(db), "--json")
    assert code == 0, err
    first = json.loads(out)
    assert first["measured"] == 11 and first["left"] == 0  # 3 x 2 x 1 gemm + 3 gelu + 2 add
    assert first["device"]["kind"] == "cpu" and "level 0" in err  # progress on stderr
    code, out, err = run(capsys, "calibrate", "--ops", "--suite", str(suite), "--device", "cpu", "--budget", "60s",
                         "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["measured"] == 0 and json.loads(out)["already_there"] == 11  # resumed
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64))
    x = torch.randn(32, 64)
    prof = roofline.profile(lambda: mlp(x), device="cpu", warmup=1, db=db)
    addmm = [r for r in prof.records if r.op == "aten::addmm"]
    assert addmm and all(r.prediction_source.startswith("gemm fp32: ") for r in addmm)
    assert all(r.predicted_low_s <= r.predicted_time_s <= r.predicted_high_s for r in addmm)
    step = prof.summary["prediction"]
    assert step["calls_from_db"] >= 3 and step["measured_kernel_time_s"] == prof.summary["kernel_time_s"]
    from helpers import rendered

    from roofline.analysis.profile_view import profile_view
    from roofline.report.profile import header, top_table

    view = profile_view(prof.document())
    head = rendered(header(view), 80)
    assert max(len(line) for line in head.splitlines()) <= 80
    assert "predicted kernels" in head and "the prediction (" in " ".join(head.split())  # measured / predicted
    assert "pred" in rendered(top_table(view), 80)  # the predicted column beside the measured one
    with capsys.disabled():  # the figures, for the reader: not asserted (a shared CPU's times move)
        print(f"\nMLP on the CPU: predicted {step['predicted_kernel_time_s'] * 1e6:.0f} us "
              f"({step['predicted_kernel_low_s'] * 1e6:.0f}-{step['predicted_kernel_high_s'] * 1e6:.0f}), "
              f"bound {step['bound_time_s'] * 1e6:.0f} us, measured {step['measured_kernel_time_s'] * 1e6:.0f} us")


def test_the_budget_must_be_positive_and_belongs_to_ops(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0", "-1m", "ten"):
        code, _, err = run(capsys, "calibrate", "--ops", "--budget", bad)
        assert code == 2 and "--budget" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "calibrate", "--db", "x.json")
    assert code == 2 and "--db is an option of --ops" in err
    # the ceilings' options were ignored by --ops in silence (-o wrote no file)
    for extra in (["-o", "x.json"], ["--quick"], ["--replace"], ["--force"], ["--threads", "2"]):
        code, _, err = run(capsys, "calibrate", "--ops", "--budget", "1s", *extra)
        assert code == 2 and "is not an option of --ops" in err and len(err.strip().splitlines()) == 1, extra


def test_a_budget_can_be_compound() -> None:
    """Issue 30: `calibrate --ops --budget 1h2m` said "'1h2m' is not a duration"; a budget is one or more parts,
    summed: 1h2m = 3600 + 2*60 = 3720 s, 2m30s = 2*60 + 30 = 150 s."""
    from roofline.core.errors import UsageError
    from roofline.core.validate import duration_arg

    assert [duration_arg("", "budget", t) for t in ("1h2m", "2m30s", "1h 30min", "10m", "1.5h", "45")] == [
        3720.0, 150.0, 5400.0, 600.0, 5400.0, 45.0]
    for bad in ("1h2", "m5", "2m-30s"):
        with pytest.raises(UsageError, match="is not a duration"):
            duration_arg("", "budget", bad)


def test_an_unwritable_database_is_refused_before_the_sweep(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # it used to sweep the whole budget and fail at the end, when writing
    blocker = write(tmp_path / "a-file", "x")
    suite = write(tmp_path / "tiny.toml", TINY)
    code, _, err = run(capsys, "calibrate", "--ops", "--suite", str(suite), "--device", "cpu", "--budget", "60s",
                       "--db", str(blocker / "cpu.json"))
    assert code == 1 and "cannot write" in err and "level 0" not in err  # no point was started


def test_a_warm_point_is_its_own_point_and_the_warm_view_falls_back_on_flushed_twins(tmp_path: Path) -> None:
    # A memory-bound family is timed twice on a GPU: after an L2 flush and with a warm L2 (where it fits). The
    # warm point keeps its own key (a sweep resumes each), serialises `l2` (a flushed one writes none: a database
    # of flushed points reads as before), and the warm view takes each shape's warm point, else its flushed one
    base = dict(family="norm", op="rmsnorm", dtype="bf16", flops=1e6, bytes=1e6, roofline_time_s=1e-6)
    small = opdb.Point(params={"rows": 16}, time_s=4e-6, **base)
    small_warm = opdb.Point(params={"rows": 16}, time_s=2e-6, l2=opdb.WARM, **base)
    large = opdb.Point(params={"rows": 65536}, time_s=8e-6, **base)  # too large for the L2: no warm twin
    db = opdb.OpDB(device=dict(H200), points=[small, large, small_warm], path=tmp_path / "db.json")
    assert small.key() != small_warm.key() and "l2" not in small.to_dict() and small_warm.to_dict()["l2"] == "warm"
    assert small.key() == opdb.point_key("rmsnorm", None, "bf16", {"rows": 16})  # the key flushed points always had
    opdb.write(db)
    back = opdb.read(tmp_path / "db.json")
    assert [p.l2 for p in back.points] == ["flushed", "flushed", "warm"]
    assert back.families()[("norm", "bf16")] == [small, large]
    assert back.families(opdb.WARM)[("norm", "bf16")] == [small_warm, large]
    bad = json.loads((tmp_path / "db.json").read_text())
    bad["points"][2]["l2"] = "hot"
    (tmp_path / "db.json").write_text(json.dumps(bad))
    with pytest.raises(UsageError, match="point 3: l2 must be one of flushed, warm, got 'hot'"):
        opdb.read(tmp_path / "db.json")


def test_a_warm_l2_family_plans_a_warm_twin_of_each_point_on_a_gpu_only() -> None:
    # norms are declared warm_l2 in the family registry (analysis/families.py), GEMMs are not
    sweep = {"sweep": {"gpu_dtypes": ["bf16"], "cpu_dtypes": ["fp32"]},
             "family": [{"op": "rmsnorm", "gpu": {"rows": [16, 4096]}, "cpu": {"rows": [16]}},
                        {"op": "gemm", "gpu": {"m": [64]}, "cpu": {"m": [64]}}]}
    gpu = plan(sweep, "gpu")
    assert sorted((p.op, p.params.get("rows") or p.params["m"], p.l2) for p in gpu) == [
        ("gemm", 64, "flushed"), ("rmsnorm", 16, "flushed"), ("rmsnorm", 16, "warm"), ("rmsnorm", 4096, "flushed"),
        ("rmsnorm", 4096, "warm")]
    assert len({p.key() for p in gpu}) == 5  # a warm twin is its own point
    assert {p.l2 for p in plan(sweep, "cpu")} == {"flushed"}  # a CPU is timed without a flush anyway
    with pytest.raises(UsageError, match="family 1: warm_l2 is the prediction family's"):  # declared once
        plan({"family": [{"op": "rmsnorm", "warm_l2": True, "gpu": {"rows": [16]}}]}, "gpu")


def test_a_sweep_that_breaks_the_device_stops_in_one_line_and_keeps_its_points(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # on the H200 (2026-12-02) one point's failure left the CUDA context unusable and the sweep went on to mark
    # 617 points 'failed': a failure the device does not survive (opsweep.gpu_still_works) stops the sweep
    import roofline.measuring.opsweep as opsweep

    real = opsweep._time_point
    calls = {"n": 0}

    def breaking(p, target):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 4:
            raise RooflineError("the GPU stopped running kernels at gelu fp32 numel=4096 (RuntimeError: illegal "
                                "memory access)")
        return real(p, target)

    monkeypatch.setattr(opsweep, "_time_point", breaking)
    suite, db = write(tmp_path / "tiny.toml", TINY), tmp_path / "cpu.json"
    code, _out, err = run(capsys, "calibrate", "--ops", "--suite", str(suite), "--device", "cpu", "--budget", "60s",
                         "--db", str(db))
    assert code != 0 and "Traceback" not in err
    line = [ln for ln in err.splitlines() if "stopped running kernels" in ln]
    assert len(line) == 1 and "the 3 points measured before it are kept in" in line[0], err
    assert len(opdb.read(db).points) == 3  # written before the error


DRAIN_READINGS = {"op": "add", "op_bytes": 2**25, "samples": [{"written_bytes": 0, "times_s": [1e-5]},
                                                                 {"written_bytes": 2**24, "times_s": [1.2e-5]}]}


def _stand_in_gpu(monkeypatch: pytest.MonkeyPatch, seen: list[Any]) -> Any:
    """An H200 target with its builder, memory check and timers stood in for (no GPU here): `seen` gets the options
    each point's timer was given, and "l2_drain" for each measurement of the L2's write-back; every sample reads
    50 us."""
    import roofline.measuring.kernels as kernels
    import roofline.measuring.l2_drain as l2_drain
    import roofline.measuring.runner as runner
    import roofline.measuring.timing_cuda as timing_cuda
    from roofline.ceilings.specs import gpu_ceilings, resolve
    from roofline.measuring.kernels.registry import Built
    from roofline.measuring.target import Target
    from roofline.measuring.timing import Measurement

    def fake_time_cuda(fn, opts, device, l2):  # type: ignore[no-untyped-def]
        seen.append(opts)
        return Measurement(samples_s=[50e-6] * 10, method=f"{opts.method}+burst", warmup_calls=3, estimate_s=50e-6,
                           l2_flush=not opts.warm_l2)

    monkeypatch.setattr(timing_cuda, "time_cuda", fake_time_cuda)
    monkeypatch.setattr(kernels, "build", lambda op, dtype, device: Built(fn=lambda: None, impl="stand-in"))
    monkeypatch.setattr(runner, "available_bytes", lambda device: 2**40)
    monkeypatch.setattr(l2_drain, "measure_l2_drain", lambda device, l2: seen.append("l2_drain") or DRAIN_READINGS)
    spec = resolve("h200")
    return Target(ceilings=gpu_ceilings(spec), time_device="cuda:0", device_info={}, spec=spec)


def test_a_gpu_point_is_timed_by_its_kernels_timestamps_as_a_profile_is(monkeypatch: pytest.MonkeyPatch) -> None:
    # a profile's kernel times are CUPTI's; the event timer `analyze` uses past 20 us frames an operator ~1-1.6 us
    # longer (docs/timing.md), so a sweep point of any length is timed by its kernels' timestamps
    from roofline.measuring.opsweep import SWEEP_CUDA_METHOD, PlannedPoint, _time_point

    seen: list[Any] = []
    target = _stand_in_gpu(monkeypatch, seen)
    for l2 in (opdb.FLUSHED, opdb.WARM):  # a 50 us GEMM, over the event timer's threshold, flushed and warm
        pt, why = _time_point(PlannedPoint("gemm", "bf16", {"m": 1024, "n": 1024, "k": 1024}, 0, "gemm", l2), target)
        assert why is None and pt is not None and pt.method == "cupti+burst"
    assert SWEEP_CUDA_METHOD == "cupti" and [o.method for o in seen] == ["cupti", "cupti"]
    assert [o.warm_l2 for o in seen] == [False, True]


def test_a_sweep_times_again_the_points_an_older_sweep_timed_by_events(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    # the H200's databases of 2026-12-02 hold 1165 points over 20 us timed by events around graph replays: a sweep
    # resuming one drops them and times them again; its own (cupti) points stay, and a CPU's points are left be
    from roofline.measuring.opsweep import PlannedPoint, _time_point, sweep

    seen: list[Any] = []
    target = _stand_in_gpu(monkeypatch, seen)
    plan_ = [PlannedPoint("gemm", "bf16", {"m": m, "n": 1024, "k": 1024}, 0, "gemm") for m in (256, 512, 1024)]
    old = []
    for p, method in zip(plan_, ("cupti+burst", "graph+burst", "graph-loop+burst"), strict=True):
        pt, _ = _time_point(p, target)
        assert pt is not None
        old.append(dataclasses.replace(pt, method=method, time_s=99e-6))
    db = opdb.OpDB(device={"id": "h200-sxm", "kind": "gpu", "name": "NVIDIA H200"}, points=list(old),
                   path=tmp_path / "h200.json")
    seen.clear()
    result = sweep(plan_, target, db, budget_s=60.0)
    assert (result.retimed, result.measured, result.skipped_known) == (2, 2, 1)
    assert seen[0] == "l2_drain" and db.l2_drain == DRAIN_READINGS  # measured once, first
    seen.pop(0)
    assert len(seen) == 2 and sorted(p.method or "" for p in db.points) == ["cupti+burst"] * 3
    assert sorted(p.time_s for p in db.points) == pytest.approx([50e-6, 50e-6, 99e-6])  # the kept one is as stored
    assert len(opdb.read(tmp_path / "h200.json").points) == 3  # written
    seen.clear()
    sweep(plan_, target, db, budget_s=60.0)  # resumed: nothing left, the write-back already measured
    assert seen == [] and opdb.read(tmp_path / "h200.json").l2_drain == DRAIN_READINGS


def test_a_database_says_how_many_points_its_cut_sweep_left(tmp_path: Path) -> None:
    # an H100's first sweep (2026-12-06) stopped at level 0 with 549 points, and its predictions were +16% to +263%:
    # the database keeps how many of its sweep file's points the last sweep did not reach, and the predictor's
    # name says so until a sweep finishes (this CPU sweep's clock stands in: each reading 1 s later)
    from roofline.analysis.predict import Predictor
    from roofline.measuring.opsweep import load_plan, sweep
    from roofline.measuring.target import resolve_target

    target = resolve_target(device="cpu", time=True)
    _, points = load_plan(write(tmp_path / "tiny.toml", TINY), "cpu")
    db = opdb.OpDB(device={"id": "cpu", "kind": "cpu", "name": "cpu"}, path=tmp_path / "cpu.json")
    ticks = iter(range(1000))
    cut = sweep(points, target, db, budget_s=4.0, clock=lambda: float(next(ticks)))
    assert cut.left > 0 and db.unswept == cut.left == len(points) - cut.measured
    stored = opdb.read(tmp_path / "cpu.json")
    assert stored.unswept == cut.left and json.loads((tmp_path / "cpu.json").read_text())["unswept"] == cut.left
    name = Predictor(stored, "cpu").name  # as a profile's header prints it: within 80 columns
    assert f"its sweep left {cut.left} unmeasured" in name and len(f"predicted from {name}") <= 80
    whole = sweep(points, target, stored, budget_s=1e9)
    assert whole.left == 0 and stored.unswept == 0 and "its sweep left" not in Predictor(stored, "cpu").name
    assert "unswept" not in json.loads((tmp_path / "cpu.json").read_text())  # a whole database reads as before
    (tmp_path / "bad.json").write_text(json.dumps({**json.loads((tmp_path / "cpu.json").read_text()),
                                                   "unswept": -1}))
    with pytest.raises(UsageError, match="unswept must be a whole number"):
        opdb.read(tmp_path / "bad.json")
