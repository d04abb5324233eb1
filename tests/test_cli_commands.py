"""The CLI wiring of run, check, baseline update, plot, occupancy, compare and calibrate (CPU paths)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
SMOKE = str(ROOT / "suites" / "smoke.toml")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_check_and_baseline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a, b, base = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "base.json"
    assert run(capsys, "run", SMOKE, "-o", str(a))[0] == 0
    doc = json.loads(a.read_text())
    assert len(doc["records"]) == 8 and all(r["time_s"] > 0 for r in doc["records"])
    assert all("advice" in r for r in doc["records"])
    assert all("threshold" not in r for r in doc["records"])  # smoke.toml sets no per-entry threshold
    code, out, _ = run(capsys, "baseline", "update", str(a), "--baseline", str(base))
    assert code == 0 and base.read_bytes() == a.read_bytes()
    before = base.read_bytes()
    # the same document against itself: nothing changed, exit 0, baseline untouched
    code, out, _ = run(capsys, "check", str(a), "--baseline", str(base), "--markdown", str(tmp_path / "r.md"),
                       "--junit", str(tmp_path / "j.xml"))
    assert code == 0 and "passed" in out
    assert base.read_bytes() == before
    assert (tmp_path / "r.md").read_text().strip() and (tmp_path / "j.xml").read_text().startswith("<?xml")
    # a run with the test-only slowdown on entry 3 (relu): 3x its own time is far past any CPU noise
    code, _, _ = run(capsys, "run", SMOKE, "-o", str(b), "--inject-slowdown", "3=3.0")
    assert code == 0
    code, out, _ = run(capsys, "check", str(b), "--baseline", str(base))
    assert code == 1 and "worse" in out
    assert base.read_bytes() == before


def test_suite_entry_threshold_reaches_the_record(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    suite, out = tmp_path / "s.toml", tmp_path / "r.json"
    suite.write_text('[[entry]]\nop = "relu"\nparams = { numel = 4096 }\nthreshold = "median:12%"\n')
    assert run(capsys, "run", str(suite), "-o", str(out))[0] == 0
    assert json.loads(out.read_text())["records"][0]["threshold"] == "median:12%"


def test_check_bad_inputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "records": [')
    code, _, err = run(capsys, "check", str(bad), "--baseline", str(bad))
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "check", str(bad), "--baseline", str(bad), "--fail-on", "median:lots")
    assert code == 2


def test_run_bad_suite(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    s = tmp_path / "s.toml"
    s.write_text('[[entry]]\nop = "gemm"\nparams = { m = -1 }\n')
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
    assert code == 0 and "gemm" in out
    code, _, err = run(capsys, "plot", str(res))
    assert code == 2 and "--terminal" in err


def test_analyze_plot_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--gpu", "h100", "--no-time", "--plot", "-")
    assert code == 0 and "gemm" in out


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
    code, out, _ = run(capsys, "compare", "suite", str(ROOT / "suites" / "llm-decode.toml"), "--gpus", "h100,h200",
                       "--prices", str(ROOT / "examples" / "prices.toml"))
    assert code == 0 and "h200" in out


def test_calibrate_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "calibrate", "--device", "cpu", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["compute_flops_per_s"]["cpu_fp32"] > 0 and doc["memory_bytes_per_s"]["dram"] > 0
