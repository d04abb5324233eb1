"""SOL-ExecBench's samples (tests/data/solexec/) timed on a GPU by `roofline sol --time`: every workload timed by
CUPTI with the L2 flushed, never below its fused bound, and SOL-ExecBench's own solution scored from its own times
(0 < SOL-Score <= 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DATA, run

pytestmark = pytest.mark.gpu

SAMPLES = DATA / "solexec"
RMSNORM, MATMUL = SAMPLES / "rmsnorm", SAMPLES / "custom_inputs_matmul"


def test_on_a_gpu_every_workload_is_timed_and_scored(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "sol.json"
    code, _, err = run(capsys, "sol", str(MATMUL), "--time", "--candidate", str(MATMUL / "solution_python.json"),
                       "-o", str(out_file))
    assert code == 0, err
    records = json.loads(out_file.read_text())["records"]
    assert len(records) == 6 and all(r["sol"]["verdict"]["status"] == "ok" for r in records)
    for r in records:  # CUPTI device time with the L2 flushed: never below the fused bound (docs/sol.md)
        assert r["sol"]["timing"]["method"] == "untrusted-cupti"
        assert r["sol"]["verdict"]["time_s"] >= r["sol"]["fused_s"]
    # SOL-ExecBench's own solution is the reference's A @ B: 0 < score, and at most 1 above the fused bound
    assert all(0 < r["sol"]["verdict"]["sol_score"] <= 1 for r in records if r["variant"] == "candidate")
    code, _, err = run(capsys, "sol", str(RMSNORM), "--time", "-o", str(tmp_path / "norm.json"))  # 14 rows, bf16
    assert code == 0, err
    norm = json.loads((tmp_path / "norm.json").read_text())["records"]
    assert len(norm) == 14 and all(r["sol"]["verdict"]["time_s"] >= r["sol"]["fused_s"] for r in norm)
