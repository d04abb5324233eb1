"""scripts/predict_accuracy.py (issue 32's benchmark, stage `predict` of scripts/gpu_check.sh) is ready to run on
the GPU: every `roofline` name it imports exists, and one case goes through its whole chain on the CPU (a timed
profile and an analytic one of a small MLP, both predicted from a database, then the script's per-op figures
and table). The CPU's times are printed by nobody and asserted never; only the figures' arithmetic is."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from helpers import ROOT

from roofline.ceilings import opdb

SCRIPT = ROOT / "scripts" / "predict_accuracy.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("predict_accuracy", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_roofline_import_of_the_script_resolves() -> None:
    # a name moved between modules would only fail on the GPU (scripts/energy_accuracy.py's lesson)
    tree = ast.parse(SCRIPT.read_text())
    found = [(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
             and n.module.startswith("roofline") for a in n.names]
    assert found  # from_database, opdb
    for module, name in found:
        assert hasattr(importlib.import_module(module), name), f"{module}.{name}"
    import roofline

    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id in ("roofline", "opdb")}
    assert {"profile", "read"} <= used
    assert all(hasattr(roofline, a) or hasattr(opdb, a) for a in used), used


def test_the_gpu_stage_runs_the_script_with_its_arguments() -> None:
    stage = (ROOT / "scripts" / "gpu_check" / "predict.sh").read_text()
    assert "scripts/predict_accuracy.py --db" in stage and "calibrate ops --budget" in stage
    assert "[predict]=predict" in (ROOT / "scripts" / "gpu_check.sh").read_text()  # registered in STAGES


def test_one_case_runs_its_whole_chain_on_the_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    script = load_script()
    # a CPU database of fp32 GEMMs at half their roof and elementwise ops at a quarter, spanning 1 ns-1 s of
    # roofline time and intensities 0.1-100 FLOP/byte: the MLP's GEMMs and GELU fall inside it
    db = opdb.OpDB(device={"kind": "cpu", "id": "cpu", "name": "test CPU"}, path=tmp_path / "cpu-ops.json")
    for family, op, eff, intensities in (("gemm", "gemm", 0.5, (1.0, 100.0)), ("elementwise", "gelu", 0.25, (0.1,))):
        for t in (1e-9, 1e-5, 1.0):
            for i in intensities:
                db.points.append(opdb.Point(family=family, op=op, dtype="fp32", params={"t": t, "i": i}, flops=i * 1e6,
                                            bytes=1e6, roofline_time_s=t, time_s=t / eff))
    opdb.write(db)

    def mlp_case() -> object:
        torch.manual_seed(0)
        mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
        x = torch.randn(16, 64)
        return lambda: mlp(x)

    monkeypatch.setattr(script, "DEVICE", "cpu")
    monkeypatch.setitem(script.CASES, "mlp", (mlp_case, (), "main"))
    res = script.run_case("mlp", db.path, "h200", out=tmp_path)
    assert res["predicted_from"] == "analytic profile", res.get("analytic_error")
    step = res["predicted"]
    assert step["calls_from_db"] >= 3 and step["calls_on_bound"] == 0
    assert step["predicted_kernel_low_s"] <= step["predicted_kernel_time_s"] <= step["predicted_kernel_high_s"]
    # efficiencies 0.5 (GEMMs) and 0.25 (GELU): the prediction is 2-4x the bound
    assert 2 * step["bound_time_s"] <= step["predicted_kernel_time_s"] * (1 + 1e-9)
    assert step["predicted_kernel_time_s"] <= 4 * step["bound_time_s"] * (1 + 1e-9)
    assert res["step_error"] == pytest.approx(step["predicted_kernel_time_s"] / res["measured_kernel_s"] - 1)
    assert res["ops"] >= 3 and res["ops_from_db"] >= 3 and len(res["heaviest"]) <= script.HEAVIEST
    text = script.table([res, {"case": "broken", "error": "RuntimeError: x"}])
    assert text.splitlines()[2].startswith("mlp ") and "error: RuntimeError: x" in text

    # the timed profile it kept, re-predicted from the same database without running anything: the same per-op
    # figures, and the step summed from the timed records (the analytic run's are the same ops and shapes)
    again = script.repredict_case("mlp", tmp_path, db.path)
    assert again["predicted_from"] == "mlp.json, re-predicted"
    assert again["measured_kernel_s"] == res["measured_kernel_s"]
    assert again["predicted"]["predicted_kernel_time_s"] == pytest.approx(step["predicted_kernel_time_s"], rel=1e-6)
    assert (again["ops"], again["in_interval"], again["within_20pct"]) == (res["ops"], res["in_interval"],
                                                                         res["within_20pct"])
