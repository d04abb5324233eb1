"""GPU tests: run on a CUDA machine (`pytest -m gpu`), skipped elsewhere. Recorded in docs/measurements.md."""

from __future__ import annotations

import json

import pytest

from roofline.cli import main
from roofline.dtypes import get_dtype
from roofline.ops import OPERATORS, make
from roofline.stats import median

pytestmark = pytest.mark.gpu


def test_time_cuda_methods_agree() -> None:
    import torch

    from roofline.timing import time_cuda

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    times = {}
    for method in ("events", "graph", "graph-loop"):
        m = time_cuda(lambda: a @ b, method=method)
        assert len(m.samples_s) >= 10 and m.l2_flush
        times[method] = m.median_s
    # 2 x 4096^3 = 137 GFLOP: 0.14-1 ms on any GPU that has bf16; every method within 5% of the others
    assert max(times.values()) / min(times.values()) < 1.05, times


def test_warm_l2_is_not_slower_for_small_working_sets() -> None:
    import torch

    from roofline.timing import time_cuda

    x = torch.randn(2**20, device="cuda")  # 4 MiB: fits in any L2 since Volta
    cold = time_cuda(lambda: x * 2).median_s
    warm = time_cuda(lambda: x * 2, warm_l2=True).median_s
    assert warm <= cold * 1.05


def test_analyze_on_gpu_reports_clock_and_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", "gemm", "--m", "4096", "--dtype", "bf16", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    rec = doc["records"][0]
    assert rec["time_s"] == pytest.approx(median(rec["time_samples_s"]))
    assert rec["clocks"]["sm_mhz"]["median"] > 0
    assert rec["kernels"], "profiler saw no kernel"
    assert 0.05 < rec["roofline_fraction"] < 1.2
    assert doc["device"]["cuda_version"] and doc["device"]["driver_version"]


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_every_builder_runs_on_gpu(name: str) -> None:
    from roofline.kernels import build

    cls = OPERATORS[name]
    small = {"numel": 4096, "m": 64, "n": 64, "k": 64, "rows": 64, "cols": 256, "batch": 2, "heads": 4,
             "seq": 128, "head_dim": 64, "context": 256, "tokens": 64, "height": 16, "width": 16,
             "in_channels": 8, "out_channels": 8}
    fields = {f for f in cls.__dataclass_fields__}
    op = make(name, **{k: v for k, v in small.items() if k in fields})
    dtype = "bf16" if "bf16" in cls.dtypes else cls.dtypes[0]
    built = build(op, get_dtype(dtype), "cuda")
    built.fn()


def test_memory_guard_on_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", "relu", "--numel", str(2**40), "--dtype", "fp16"])
    _, err = capsys.readouterr()
    assert code == 1 and "needs about" in err


def test_calibrate_quick_stores_ceilings(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["calibrate", "--quick", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["memory_bytes_per_s"]["dram"] > 1e11
    assert doc["memory_bytes_per_s"]["l2"] > doc["memory_bytes_per_s"]["dram"]
    code = main(["analyze", "relu", "--numel", str(2**26), "--json"])
    out, _ = capsys.readouterr()
    assert "measured_ceilings" in json.loads(out)["device"]
