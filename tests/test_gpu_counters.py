"""GPU tests of `--counters` (issue 17): run on a CUDA machine with Nsight Compute (`pytest -m gpu`), skipped
elsewhere (and where `ncu` is not on PATH)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import run

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute's ncu is not on PATH")]


def test_analyze_gemm_counters_count_the_models_flops_and_at_least_its_bytes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "g.json"
    code, stdout, err = run(capsys, "analyze", "gemm", "--m", "2048", "--dtype", "bf16", "--counters",
                            "--no-kernels", "-o", str(out))
    assert code == 0, err
    rec = json.loads(out.read_text())["records"][0]
    c = rec["counters"]
    # bf16 GEMM 2048^3: 2 x 2048^3 = 17,179,869,184 tensor FLOPs (ncu counts 2 per multiply-add)
    assert c["tensor_flops"]["bf16"] == pytest.approx(2 * 2048**3, rel=0.02)
    # minimum bytes 3 x 2048^2 x 2 = 25,165,824: a cold call reads at least its inputs once (ECC and rounding
    # aside), and a 2048^3 GEMM's tiles mostly hit in the 60 MB L2
    assert c["dram_bytes"] >= 0.95 * rec["bytes"] and c["excess_traffic"] < 3
    assert c["l2_bytes"] >= c["dram_bytes"] * 0.5 and c["duration_s"] > 0 and c["sm_clock_mhz"] > 500
    assert "ncu DRAM bytes" in stdout


def test_a_memory_bound_operator_reads_about_its_minimum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a.json"
    code, _, err = run(capsys, "analyze", "add", "--numel", str(2**26), "--dtype", "fp16", "--counters",
                       "--no-kernels", "-o", str(out))
    assert code == 0, err
    c = json.loads(out.read_text())["records"][0]["counters"]
    # add of 2^26 fp16: 2 inputs + 1 output x 2^26 x 2 bytes = 402,653,184 minimum; a streaming kernel moves it
    # once (within 5%)
    assert c["excess_traffic"] == pytest.approx(1.0, abs=0.05)
