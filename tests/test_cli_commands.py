"""The CLI wiring of run, check, baseline update, plot, occupancy, compare and calibrate (CPU paths)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import ROOT, SUITES, run, write

from roofline.measuring.calibrate import QUICK_CPU_PLAN

SMOKE = str(SUITES / "smoke.toml")


def test_run_check_and_baseline(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from roofline.measuring import kernels

    a, b, base = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "base.json"
    assert run(capsys, "run", SMOKE, "-o", str(a))[0] == 0
    doc = json.loads(a.read_text())
    assert len(doc["records"]) == 8 and all(r["time_s"] > 0 for r in doc["records"])
    assert all("advice" in r for r in doc["records"])
    assert all("threshold" not in r for r in doc["records"])  # smoke.toml sets no per-entry threshold
    assert doc["device"]["suite"] == "smoke" and doc["device"]["time_device"] == "cpu"
    assert doc["device"]["torch_version"] and doc["device"]["ceilings"]["device_id"] == "cpu"
    code, out, _ = run(capsys, "baseline", "update", str(a), "--baseline", str(base))
    assert code == 0 and base.read_bytes() == a.read_bytes()
    before = base.read_bytes()
    # the same document against itself: nothing changed, exit 0, baseline untouched
    code, out, _ = run(capsys, "check", str(a), "--baseline", str(base), "--markdown", str(tmp_path / "r.md"),
                       "--junit", str(tmp_path / "j.xml"))
    assert code == 0 and "passed" in out
    assert base.read_bytes() == before
    assert (tmp_path / "r.md").read_text().strip() and (tmp_path / "j.xml").read_text().startswith("<?xml")
    # a run with entry 3's kernel (relu) slowed by scripts/inject_slowdown.py: 3x its own time is far past any
    # CPU noise
    spec = importlib.util.spec_from_file_location("inject_slowdown", ROOT / "scripts" / "inject_slowdown.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(kernels, "build", script.slowing(kernels.build, 3, 3.0))
    code, _, _ = run(capsys, "run", SMOKE, "-o", str(b))
    assert code == 0
    slowed = json.loads(b.read_text())["records"][2]
    assert slowed["op"] == "relu" and slowed["impl"].endswith("+ injected 300% slowdown (test only)")
    code, out, _ = run(capsys, "check", str(b), "--baseline", str(base))
    assert code == 1 and "worse" in out
    assert base.read_bytes() == before


def test_suite_entry_threshold_reaches_the_record(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    suite = write(tmp_path / "s.toml", '[[entry]]\nop = "relu"\nparams = { numel = 4096 }\nthreshold = "median:12%"\n')
    out = tmp_path / "r.json"
    assert run(capsys, "run", str(suite), "-o", str(out))[0] == 0
    assert json.loads(out.read_text())["records"][0]["threshold"] == "median:12%"


def test_check_bad_inputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.json", '{"schema_version": 1, "records": [')
    code, _, err = run(capsys, "check", str(bad), "--baseline", str(bad))
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "check", str(bad), "--baseline", str(bad), "--fail-on", "median:lots")
    assert code == 2


def test_run_bad_suite(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    s = write(tmp_path / "s.toml", '[[entry]]\nop = "gemm"\nparams = { m = -1 }\n')
    code, _, err = run(capsys, "run", str(s))
    assert code == 2 and "entry 1" in err and "--m must be >= 1" in err
    code, _, err = run(capsys, "run", str(tmp_path / "missing.toml"))
    assert code == 2 and "no such suite file" in err


def test_plot_from_analytic_results(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    res = tmp_path / "r.json"
    assert run(capsys, "run", SMOKE, "--gpu", "h200", "--no-time", "-o", str(res))[0] == 0
    for ext in ("png", "svg", "pdf"):
        code, _, err = run(capsys, "plot", str(res), "-o", str(tmp_path / f"c.{ext}"))
        assert code == 0, err
        assert (tmp_path / f"c.{ext}").stat().st_size > 1000
    code, _, err = run(capsys, "plot", str(res), "-o", str(tmp_path / "c.png"))
    assert code == 1 and "--force" in err  # never overwritten without being asked
    code, out, _ = run(capsys, "plot", str(res), "--terminal")
    # the chart's legend lists smoke.toml's bf16 GEMM (4096^3: 2*4096^3 FLOP / (3*4096^2*2 B) = 1365.3 FLOP/B)
    assert code == 0 and re.search(r"^\s+[A-Z]\s+gemm bf16\s+AI 1,365\s", out, re.MULTILINE)
    code, _, err = run(capsys, "plot", str(res))
    assert code == 2 and "--terminal" in err


def test_analyze_plot_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--gpu", "h100", "--no-time", "--plot", "-")
    assert code == 0
    # The record table names "gemm" too; these come from the terminal chart alone: its x-axis title and its
    # point legend, intensity 2*4096^3 FLOP / (3*4096^2*2 B) = 1365.3 FLOP/B.
    assert "arithmetic intensity (FLOP/byte)" in out
    assert re.search(r"^\s+A\s+gemm fp16\s+AI 1,365\s", out, re.MULTILINE)


def test_occupancy_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # 65536 registers / (64 x 32) = 32 warps per SM: 4 blocks of 8 warps, 50% (CUDA occupancy calculator)
    code, out, _ = run(capsys, "occupancy", "--gpu", "a100", "--threads-per-block", "256",
                       "--registers-per-thread", "64", "--shared-memory-per-block", "0", "--json")
    assert code == 0
    o = json.loads(out)["occupancy"]
    assert o["active_blocks_per_sm"] == 4 and o["active_warps_per_sm"] == 32
    code, out, _ = run(capsys, "occupancy", "--gpu", "h100", "-T", "128", "-R", "32", "-S", "48KB",
                       "--sweep", "registers", "--plot", str(tmp_path / "occ.png"))
    assert code == 0 and (tmp_path / "occ.png").exists()
    code, _, err = run(capsys, "occupancy", "--gpu", "h100", "-S", "lots")
    assert code == 2 and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "occupancy", "--gpu", "h100", "-T", "2048")
    assert code == 2


def test_compare_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compare", "gemm", "--m", "4096", "--dtype", "fp8", "--gpus", "h100,a100", "--json")
    assert code == 0
    doc = json.loads(out)
    assert "unsupported" in json.dumps(doc)  # fp8 on an A100 is unsupported, not zero
    code, out, _ = run(capsys, "compare", "suite", str(SUITES / "llm-decode.toml"), "--gpus", "h100,h200",
                       "--prices", str(ROOT / "examples" / "prices.toml"))
    assert code == 0 and "h200" in out


def test_calibrate_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    # --replace: on a busy machine a quick calibration that measures below the seeded store (conftest) would
    # keep the stored roof (test_cpu_roofs.py tests that); this test is about what --quick measures
    code, out, _ = run(capsys, "calibrate", "--device", "cpu", "--quick", "--json", "--replace")
    assert code == 0
    doc = json.loads(out)
    assert doc["compute_flops_per_s"]["cpu_fp32"] > 0 and doc["memory_bytes_per_s"]["dram"] > 0
    # --quick is honoured on the CPU: one matmul size per dtype (QUICK_CPU_PLAN), not the full plan's sweep
    assert doc["details"]["matmul"]["fp32"]["n"] == QUICK_CPU_PLAN.matmul_n["fp32"][0]


def test_run_refuses_an_existing_output_before_timing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import roofline.measuring.target
    import roofline.session

    def no_work(*_: object, **__: object) -> None:
        raise AssertionError("timing work started although the output was refused")

    monkeypatch.setattr(roofline.measuring.target, "resolve_target", no_work)
    monkeypatch.setattr(roofline.session, "place_ops", no_work)
    res = write(tmp_path / "r.json", "precious")
    code, _, err = run(capsys, "run", SMOKE, "-o", str(res))
    assert code == 1 and "--force" in err and res.read_text() == "precious"
    code, _, err = run(capsys, "run", SMOKE, "-o", str(tmp_path / "missing" / "r.json"))  # unwritable: refused first
    assert code == 1 and "no folder" in err


def test_run_document_names_its_suite(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "run", SMOKE, "--gpu", "h200", "--no-time", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["device"]["suite"] == "smoke" and doc["device"]["ceilings"]["device_id"] == "h200-sxm"
    assert "time_device" not in doc["device"]  # nothing timed: no runtime block
