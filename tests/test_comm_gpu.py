"""GPU tests of `roofline collectives` (NCCL, one process per GPU) and `run --devices`: `pytest -m gpu
tests/test_comm_gpu.py` on a CUDA machine of any number of GPUs (1 included), skipped elsewhere.

Each test runs the command in a fresh process, as a user does (the launcher spawns one process per GPU).
Link figures: H100/H200 SXM NVLink 4, 450 GB/s per direction (specs/h200-sxm.toml); busbw cannot pass it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

pytestmark = pytest.mark.gpu

ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()


def _roofline(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roofline", *args], capture_output=True, text=True, env=ENV,
                          cwd=ROOT, timeout=timeout, check=False)


def test_collectives_on_every_gpu(tmp_path: Path) -> None:
    out = tmp_path / "comm.json"
    p = _roofline("collectives", "--sizes", "1MiB,256MiB", "--samples", "5", "-o", str(out))
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    n = _gpus()
    assert d["collectives"]["world_size"] == n and d["collectives"]["backend"] == "nccl"
    assert d["collectives"]["NCCL_NVLS_ENABLE"] == os.environ.get("NCCL_NVLS_ENABLE", "0")
    assert len(d["records"]) == 10  # 5 collectives x 2 sizes
    for r in d["records"]:
        c = r["collective"]
        assert len(c["rank_samples_s"]) == n and r["timing"]["method"] == "cuda-events"
        link = c["link_bytes_per_s_one_way"]
        if n >= 2 and link:
            assert c["busbw_bytes_per_s"] < 1.05 * link, r  # busbw is one direction of the link: never past it
        if r["params"]["bytes"] == 256 * 2**20 and n >= 2 and link:
            assert c["busbw_bytes_per_s"] > 0.3 * link, r  # NVLink, not PCIe or host memory
    if n == 1:
        assert d["records"][0]["collective"]["busbw_bytes_per_s"] == 0  # all_reduce x 2 x 0 / 1


def test_torchrun_job_rank_0_writes(tmp_path: Path) -> None:
    out = tmp_path / "job.json"
    n = _gpus()
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n), "-m", "roofline",
                        "collectives", "--ops", "all_reduce", "--sizes", "64MiB", "--samples", "5", "-o", str(out)],
                       capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=300, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(out.read_text())
    assert [x["rank"] for x in d["collectives"]["ranks"]] == list(range(n))
    assert len(d["records"][0]["collective"]["rank_samples_s"]) == n


def test_a_dying_rank_on_nccl(tmp_path: Path) -> None:
    out = tmp_path / "dead.json"
    n = _gpus()
    p = _roofline("collectives", "--ops", "all_reduce", "--sizes", "1MiB,2MiB", "--samples", "3", "-o", str(out),
                  "--inject-failure", str(n - 1))
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: rank {n - 1} of {n} died"), p.stderr
    assert not out.exists()


def test_run_devices_all(tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    p = _roofline("run", "suites/smoke.toml", "--devices", "all", "--no-kernels", "-o", str(out), timeout=600)
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    n = _gpus()
    entries = len({(r["op"], json.dumps(r["params"], sort_keys=True)) for r in d["records"]})
    assert sorted({r["device_index"] for r in d["records"]}) == list(range(n))
    assert len(d["records"]) == entries * n
    assert [x["index"] for x in d["device"]["devices"]] == list(range(n))


def test_devices_past_the_last_gpu_is_exit_2() -> None:
    n = _gpus()
    p = _roofline("run", "suites/smoke.toml", "--devices", str(n))
    assert p.returncode == 2
    assert p.stderr.strip() == (f"error: --devices {n}: this machine has {n} GPU(s), indices 0 to {n - 1}")
