"""Ctrl-C (issue 30): one line on stderr saying what was kept, exit status 130, never a traceback or silence.
The interrupt is a KeyboardInterrupt raised where the signal would land (inside the work), the work itself real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run, write

SWEEP = """[sweep]
name = "four"
cpu_dtypes = ["fp32"]
gpu_dtypes = ["bf16"]

[[family]]
op = "gemm"
gpu = { m = [16] }
cpu = { m = [16, 32, 48, 64], n = [64], k = [64] }
"""


def test_ctrl_c_during_calibrate_ops_says_what_the_database_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C during the third of four points: the two measured are in the file, the command says so in one line
    and exits 130 (it was silent, exit 130), and the same command measures the other two."""
    from roofline.measuring import opsweep

    real, calls = opsweep._time_point, []

    def ctrl_c_at_the_third(*args: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(opsweep, "_time_point", ctrl_c_at_the_third)
    suite, db = write(tmp_path / "four.toml", SWEEP), tmp_path / "cpu.json"
    args = ("calibrate", "--ops", "--suite", str(suite), "--device", "cpu", "--budget", "60s", "--db", str(db))
    code, out, err = run(capsys, *args)
    assert code == 130, err
    assert err.splitlines()[-1] == f"interrupted: 2 points measured kept in {db} (2 in all); the same command resumes"
    assert "Traceback" not in err and out == ""
    assert len(json.loads(db.read_text())["points"]) == 2
    monkeypatch.setattr(opsweep, "_time_point", real)
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    assert json.loads(out)["measured"] == 2 and json.loads(out)["already_there"] == 2  # resumed


def test_ctrl_c_in_a_profiled_script_is_one_line_and_exit_130(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    script = write(tmp_path / "stopped.py", "import torch\ntorch.ones(3).relu()\nraise KeyboardInterrupt\n")
    code, _, err = run(capsys, "profile", str(script))
    assert code == 130 and err.splitlines()[-1] == "interrupted" and "Traceback" not in err


def test_ctrl_c_on_the_fast_path_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze OP --no-time` runs without typer (cli/fast.py): the same line and status."""
    from roofline.cli import fast

    def stopped(argv: list[str]) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(fast, "fast_path", stopped)
    code, _, err = run(capsys, "analyze", "gemm", "--m", "64", "--no-time")
    assert code == 130 and err == "interrupted\n"
