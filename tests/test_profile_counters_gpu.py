"""GPU tests of `roofline profile --counters`: run on a CUDA machine with Nsight Compute (`pytest -m gpu`), skipped
elsewhere. Each check is one that must hold physically, whatever the kernels chosen:
- ncu flushes the caches before each replay pass (its default `--cache-control all`), so a kernel reads its
  inputs from DRAM at least once: DRAM bytes read >= the op's minimum read bytes (32-byte sectors only round up);
- a GEMM's tensor pipe does at least the multiply-adds of the math (tiles and padding only add), and exactly
  2 x M x N x K when every dimension is a multiple of the tile (tests/scripts/gpu_mlp_steps.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, run

from roofline.ncu.join import is_copy

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute's ncu is not on PATH")]

STEPS = str(ROOT / "tests" / "scripts" / "gpu_mlp_steps.py")
# Elementwise ops that read each input element once: their minimum read bytes are a lower bound on DRAM reads.
ELEMENTWISE = ("aten::relu", "aten::add.", "aten::add_.", "aten::clamp_min", "aten::clamp")  # not aten::addmm


def _profile(capsys: pytest.CaptureFixture[str], tmp_path: Path, script: str, *args: str) -> dict:
    out, csv = tmp_path / "p.json", tmp_path / "ncu.csv"
    code, _, err = run(capsys, "profile", script, "--counters", "--ncu-csv", str(csv), "-o", str(out), *args)
    assert code == 0, err
    assert csv.read_text().count('"') > 0  # ncu's raw CSV kept
    doc = json.loads(out.read_text())
    assert "error" not in doc["profile"]["counters"], doc["profile"]["notes"]
    return doc


def _launched(rec: dict) -> bool:
    return any(not is_copy(k) for k in rec.get("kernels") or [])


def test_the_last_step_is_counted_and_the_gemm_flops_are_exact(capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    doc = _profile(capsys, tmp_path, STEPS)
    assert doc["profile"]["counters"]["profiled"] == "region 'step' (entry 3 of 3)"
    recs = doc["records"]
    assert all(r.get("counters") for r in recs if _launched(r))
    gemms = [r for r in recs if r["op"].startswith("aten::addmm")]
    assert len(gemms) == 2 and all(r["count"] == 3 for r in gemms)
    for r in gemms:  # fc1 and fc2: 2 x 512 x 4096 x 1024 = 4,294,967,296 FLOPs per call, per-call counters
        assert r["flops"] == 2 * 512 * 4096 * 1024
        assert r["counters"]["tensor_flops"]["bf16"] == pytest.approx(r["flops"], rel=0.02)
    (relu,) = [r for r in recs if r["op"].startswith(ELEMENTWISE)]
    # ReLU of 512 x 4096 bf16 reads 4,194,304 B at least once from DRAM (caches flushed before the pass)
    assert relu["bytes_read"] == 512 * 4096 * 2
    assert relu["counters"]["dram_bytes_read"] >= 0.99 * relu["bytes_read"]
    assert relu["counters"]["kernels"] == 1 and relu["counters"]["excess_traffic"] is not None


def test_without_a_region_the_whole_run_is_counted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = _profile(capsys, tmp_path, STEPS, "--", "--no-region", "--steps", "1")
    assert doc["profile"]["counters"]["profiled"] == "the whole run"
    assert all(r.get("counters") for r in doc["records"] if _launched(r))


def test_the_cnn_example(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = _profile(capsys, tmp_path, str(ROOT / "examples" / "cnn.py"), "--", "--preset", "tiny")
    recs = doc["records"]
    assert all(r.get("counters") for r in recs if _launched(r))
    for r in recs:
        c = r.get("counters")
        if c and r["op"].startswith(ELEMENTWISE) and r.get("bytes_read"):
            assert c["dram_bytes_read"] >= 0.99 * r["bytes_read"], r["op"]
        if c and r["op"].startswith(("aten::convolution", "aten::addmm", "aten::mm")):
            # padding only adds work: the first conv's 3 channels are padded to 8, the classifier's batch of 1
            # to a 64-row tile (66,060,288 tensor FLOPs for 1,024,000 in tests/data/ncu_forward.csv)
            assert sum(c["tensor_flops"].values()) >= 0.98 * r["flops"], (r["op"], r["module"])
