"""Energy windows on a real GPU's NVML counter: an operator's calls replayed as a CUDA graph where they can be
captured, launched one by one where they cannot (or where the caller asks, as a profiled step does)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def _counter():  # type: ignore[no-untyped-def]
    from roofline.measuring.energy import counter_for

    return counter_for(0)


def _gemm():  # type: ignore[no-untyped-def]
    import torch

    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    return lambda: a @ a


def test_a_graph_safe_operator_runs_its_window_as_a_cuda_graph() -> None:
    from roofline.measuring.energy import measure_fn

    e = measure_fn(_gemm(), _counter(), flops=2.0 * 2048**3, nbytes=None, static_w=None, static_source=None,
                   warmup_s=0.2, graph=True)
    assert "a CUDA graph of" in e["method"] and e["energy_j"] > 0 and e["calls"] > 1


def test_a_callable_that_cannot_be_captured_is_launched_one_by_one_and_says_why() -> None:
    import torch

    from roofline.measuring.energy import measure_fn

    x = torch.randn(1 << 20, device="cuda")

    def syncs() -> float:
        return float((x * 2).sum().item())  # .item() synchronises: illegal inside a capture

    e = measure_fn(syncs, _counter(), flops=None, nbytes=None, static_w=None, static_source=None, warmup_s=0.2,
                   graph=True)
    assert "launched one by one (CUDA graph capture failed" in e["method"] and e["energy_j"] > 0
    # the process's CUDA state survived the failed capture: a graph still captures afterwards
    e2 = measure_fn(_gemm(), _counter(), flops=None, nbytes=None, static_w=None, static_source=None, warmup_s=0.2,
                    graph=True)
    assert "a CUDA graph of" in e2["method"]


def test_without_graph_the_calls_are_launched_one_by_one() -> None:
    from roofline.measuring.energy import measure_fn

    e = measure_fn(_gemm(), _counter(), flops=None, nbytes=None, static_w=None, static_source=None, warmup_s=0.2)
    assert e["method"].endswith("(launched one by one)")
