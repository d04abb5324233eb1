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
    # minimum reads 2 x 2048^2 x 2 = 16,777,216: a cold call reads its inputs at least once (the H200 read
    # 16,962,560 on 2026-12-01). DRAM writes are not bounded below (the 8 MiB output can stay dirty in the 50
    # MiB L2 when the kernel ends); the bytes the SMs stored are: the output, 2048^2 x 2 = 8,388,608.
    assert c["dram_bytes_read"] >= 0.99 * rec["bytes_read"] and 1.0 <= c["excess_traffic"] < 3
    assert c["stored_bytes"] >= rec["bytes_written"]
    assert c["l2_bytes"] >= c["dram_bytes"] * 0.5 and c["duration_s"] > 0 and c["sm_clock_mhz"] > 500
    assert "ncu DRAM bytes" in stdout


def test_a_memory_bound_operator_reads_about_its_minimum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a.json"
    code, _, err = run(capsys, "analyze", "add", "--numel", str(2**26), "--dtype", "fp16", "--counters",
                       "--no-kernels", "-o", str(out))
    assert code == 0, err
    c = json.loads(out.read_text())["records"][0]["counters"]
    # add of 2^26 fp16: 2 inputs + 1 output x 2^26 x 2 bytes = 402,653,184 minimum; a streaming kernel moves it
    # once: reads within 1% of 268,435,456, and it stores its output, 134,217,728 B, to the sector
    assert c["excess_traffic"] == pytest.approx(1.0, abs=0.01)
    assert c["stored_bytes"] == 2**26 * 2
