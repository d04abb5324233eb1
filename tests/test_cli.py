"""The CLI end to end (analytic paths): JSON output, exit codes, one-line errors, no heavy imports."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run, write


def test_analyze_gemm_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--dtype", "fp16", "--gpu", "a100", "--no-time",
                       "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema_version"] == 1
    rec = doc["records"][0]
    assert rec["flops"] == 137438953472  # 2 x 4096^3
    assert rec["bytes"] == 100663296  # 3 x 4096^2 x 2 B
    assert rec["bound"] == "compute"
    assert rec["params"] == {"m": 4096, "n": 4096, "k": 4096, "batch": 1, "epilogue": "none"}


def test_analyze_relu_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "relu", "--numel", str(2**28), "--gpu", "h100", "--no-time")
    assert code == 0
    assert "memory" in out and "268,435,456" in out


@pytest.mark.parametrize(("args", "code", "needle"), [
    (["analyze", "gemm", "--m", "0", "--gpu", "a100", "--no-time"], 2, "--m must be >= 1"),
    (["analyze", "gemm", "--m", "-5", "--gpu", "a100", "--no-time"], 2, "--m must be >= 1"),
    (["analyze", "gemm", "--m", "abc", "--gpu", "a100", "--no-time"], 2, "--m"),
    (["analyze", "gemm", "--dtype", "fp7", "--gpu", "a100", "--no-time"], 2, "unknown dtype 'fp7'"),
    (["analyze", "nosuchop"], 2, "nosuchop"),
    (["analyze", "gemm", "--gpu", "z9000", "--no-time"], 2, "unknown GPU 'z9000'"),
    (["analyze", "gemm", "--dtype", "fp8", "--gpu", "a100", "--no-time"], 2, "no fp8 tensor cores"),
    (["specs", "show", "nope"], 2, "unknown GPU"),
])
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], args: list[str], code: int, needle: str) -> None:
    got, _, err = run(capsys, *args)
    assert got == code
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_output_is_never_overwritten(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("precious")
    code, _, err = run(capsys, "analyze", "relu", "--gpu", "h100", "--no-time", "-o", str(out))
    assert code == 1 and "--force" in err
    assert out.read_text() == "precious"
    code, _, _ = run(capsys, "analyze", "relu", "--gpu", "h100", "--no-time", "-o", str(out), "--force")
    assert code == 0 and json.loads(out.read_text())["records"][0]["op"] == "relu"


def test_unwritable_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    not_a_dir = write(tmp_path / "file", "")  # the output's parent is a file: no directory can be made there
    for bad in (tmp_path / "no" / "x.json", not_a_dir / "x.json"):  # a missing folder is not created
        code, _, err = run(capsys, "analyze", "relu", "--gpu", "h100", "--no-time", "-o", str(bad))
        assert code == 1 and "cannot write" in err and len(err.strip().splitlines()) == 1
        assert not bad.parent.is_dir()


def test_specs_list_and_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "specs", "list", "--json")
    assert code == 0 and any(s["id"] == "h200-sxm" for s in json.loads(out))
    code, out, _ = run(capsys, "specs", "show", "h200", "--json")
    assert code == 0 and json.loads(out)["specs"]["sm_count"] == 132
    code, out, _ = run(capsys, "specs", "show", "h100")
    # each field on its own line with its value, its source indented beneath (the H100 whitepaper's SM count)
    assert code == 0 and re.search(r"^sm_count +132\n +\S", out, re.MULTILINE) and "whitepaper" in out


def test_ops_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ops", "list", "--json")
    ops = json.loads(out)
    assert code == 0 and {"gemm", "relu", "add", "mul", "gelu", "silu"} <= set(ops)
    assert ops["gemm"]["params"]["m"]["default"] == 4096


def test_device_reports_cpu_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "device")
    assert code == 0 and "CPU-only" in out


@pytest.mark.parametrize("args", [["--help"], ["specs", "list"], ["analyze", "gemm", "--gpu", "a100", "--no-time"]])
def test_light_commands_import_neither_torch_nor_matplotlib(args: list[str]) -> None:
    code = (f"import sys; from roofline.cli.app import main; rc = main({args!r}); "
            "bad = [m for m in ('torch', 'matplotlib') if m in sys.modules]; "
            "print('HEAVY', bad); sys.exit(rc)")
    env = {**os.environ, "ROOFLINE_NO_GPU": "1", "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


def test_exit_now_exits_normally_without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline.cli.app import exit_now

    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were never imported
    with pytest.raises(SystemExit) as exc:
        exit_now(3)
    assert exc.value.code == 3


def test_exit_now_skips_teardown_after_cuda_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """After CUDA work: atexit handlers run, both streams are flushed, then os._exit with the same code."""
    import atexit
    import types

    from roofline.cli.app import exit_now

    calls: list[str] = []

    class Exited(Exception):
        pass

    def fake_exit(code: int) -> None:
        calls.append(f"_exit {code}")
        raise Exited

    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: True))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: calls.append("atexit"))
    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(sys.stdout, "flush", lambda: calls.append("flush out"), raising=False)
    with pytest.raises(Exited):
        exit_now(1)
    assert calls == ["atexit", "flush out", "_exit 1"]


def test_outputs_are_checked_before_any_work(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An existing --plot file is refused before the target is resolved (that may calibrate the CPU) and
    before -o is written; a chart path without a format fails as early."""
    import roofline.measuring.target

    def no_work(**_: object) -> None:
        raise AssertionError("resolve_target ran although an output was refused")

    monkeypatch.setattr(roofline.measuring.target, "resolve_target", no_work)
    chart, results = tmp_path / "c.svg", tmp_path / "r.json"
    chart.write_text("precious")
    code, _, err = run(capsys, "analyze", "relu", "--gpu", "h100", "--no-time", "-o", str(results),
                       "--plot", str(chart))
    assert code == 1 and f"{chart} exists" in err and "--force" in err
    assert chart.read_text() == "precious" and not results.exists()
    code, _, err = run(capsys, "analyze", "relu", "--gpu", "h100", "--no-time", "--plot", str(tmp_path / "c.txt"))
    assert code == 2 and "cannot tell the chart format" in err


def test_analyze_hands_its_options_to_the_runner(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """What `analyze` passes to measure_op, and the document it builds from the record measure_op returns
    (timed on the CPU: the runtime is in the device block, the advice in the record)."""
    import roofline.measuring.runner
    import roofline.measuring.target
    from roofline.core.record import Record, analytic_record, with_time

    seen: dict[str, Any] = {}

    def fake_measure_op(op: Any, dtype: Any, target: Any, **kwargs: Any) -> Record:
        kwargs.pop("progress")  # the status line the runner reports to (tests/test_progress.py)
        seen.update(op=op.name, dtype=dtype.name, device=target.time_device, **kwargs)
        return with_time(analytic_record(op, dtype, target.ceilings, kwargs["tensor_cores"]), 1e-3)

    monkeypatch.setattr(roofline.measuring.runner, "measure_op", fake_measure_op)
    # torch's version and the GPU state (the real ones: test_run_check_and_baseline) without importing torch
    monkeypatch.setattr(roofline.measuring.target, "runtime_info", lambda device: {"time_device": device})
    code, out, err = run(capsys, "analyze", "relu", "--numel", "4096", "--timer", "graph", "--power", "sustained",
                         "--warm-l2", "--no-tensor-cores", "--no-kernels", "--json")
    assert code == 0, err
    assert seen == {"op": "relu", "dtype": "fp32", "device": "cpu", "warm_l2": True, "method": "graph",
                    "tensor_cores": False, "power": "sustained", "kernels": False}
    doc = json.loads(out)
    assert doc["device"]["time_device"] == "cpu"
    assert doc["device"]["ceilings"]["device_id"] == "cpu"
    (rec,) = doc["records"]
    assert rec["time_s"] == 1e-3 and rec["bound_class"] and isinstance(rec["advice"], list)
