"""The CLI end to end (analytic paths): JSON output, exit codes, one-line errors, no heavy imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.cli.app import main

ROOT = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


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
    code, _, err = run(capsys, "analyze", "relu", "--gpu", "h100", "--no-time", "-o", str(tmp_path / "no" / "x.json"))
    assert code == 1 and "cannot write" in err and len(err.strip().splitlines()) == 1


def test_specs_list_and_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "specs", "list", "--json")
    assert code == 0 and any(s["id"] == "h200-sxm" for s in json.loads(out))
    code, out, _ = run(capsys, "specs", "show", "h200", "--json")
    assert code == 0 and json.loads(out)["specs"]["sm_count"] == 132
    code, out, _ = run(capsys, "specs", "show", "h100")
    assert code == 0 and "source" in out


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
