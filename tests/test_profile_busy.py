"""Issue 52: `roofline profile` timed a CPU step on a busy machine without a word (the warning was nowhere, not even
in the JSON). A CPU-timed profile now reads the machine's load over its run (measuring/machine_load.py, as the CPU
timer does), marks each timed record (core.stats.busy_marked) and prints the warning under its top table. The load
is made busy here by a stand-in reading (a real one depends on what else the test machine runs); the wiring and the
view are real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run, write

from roofline.core.record import BUSY_NOTE
from roofline.measuring.machine_load import Load


def _load(others: float) -> Load:
    return Load(wall_s=2.0, cpus=2, others_share=others, steal_share=0.0, load1=0.5, machine_cpus=2)


@pytest.mark.parametrize("others", [0.9, 0.0])
def test_a_cpu_profile_on_a_busy_machine_says_so_under_its_table(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, others: float) -> None:
    import importlib

    capture_profile = importlib.import_module("roofline.capture.profile")  # the module, not its `profile` function
    monkeypatch.setattr(capture_profile, "load_between", lambda start, end: _load(others))
    script = write(tmp_path / "step.py", "import torch\nx = torch.ones(256, 256)\nfor _ in range(3):\n    x @ x\n")
    doc = tmp_path / "p.json"
    code, out, err = run(capsys, "profile", str(script), "-o", str(doc))
    assert code == 0, err
    timed = [r for r in json.loads(doc.read_text())["records"] if r.get("time_s") is not None]
    assert timed
    busy = [r for r in timed if any(n.startswith(BUSY_NOTE) for n in r["notes"])]
    said = " ".join(out.split())
    if others:  # 90% of the CPUs used by others: over OTHERS_BUSY_SHARE, every timed record marked, one warning
        assert len(busy) == len(timed) and "other processes used 90% of 2 CPUs" in busy[0]["notes"][-1]
        assert said.count("warning: busy machine while timing") == 1
    else:  # a quiet machine: nothing marked, nothing said
        assert busy == [] and "busy machine" not in said
