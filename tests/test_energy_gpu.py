"""Energy windows on a real GPU's NVML counter: an operator's calls replayed as a CUDA graph, launched one by one
where the caller asks (a profiled step; an operator that is not graph-safe). The fallback when a capture fails
is tested on the CPU (tests/test_energy.py): a failed capture can leave the CUDA context broken for what follows
(tests/test_gpu.py's attention backward), so this process never tries one here."""

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


def test_measure_with_energy_replays_what_its_timing_captured() -> None:
    import torch

    import roofline

    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    rec = roofline.measure(lambda: a @ a, flops=2.0 * 2048**3, bytes=3 * 2048 * 2048 * 2.0, energy=True)
    assert rec.timing is not None and rec.timing.method != "events"
    assert rec.energy is not None and "a CUDA graph of" in rec.energy["method"]


def test_without_graph_the_calls_are_launched_one_by_one() -> None:
    from roofline.measuring.energy import measure_fn

    e = measure_fn(_gemm(), _counter(), flops=None, nbytes=None, static_w=None, static_source=None, warmup_s=0.2)
    assert e["method"].endswith("(launched one by one)")


def test_gelus_own_watts_are_measured_beyond_its_flops_and_bytes() -> None:
    # a model with the H200's fitted terms of 2026-12-02 21:31 (rounded): torch's GELU drew ~185 W beyond them at
    # three sizes there (scripts/experiments/energy_families.py); on any GPU its erf polynomial draws some
    from roofline.core.energy import EnergyModel
    from roofline.measuring.energy_calibrate import _operator_watts

    model = EnergyModel(pj_per_flop={"fp32_dense_tflops": 10.6}, pj_per_byte_read=118.0, pj_per_byte_written=60.0,
                        pj_per_byte_mixed=52.8, static_w=123.0, power_cap_w=700.0)
    said: list[str] = []
    rows = _operator_watts(model, _counter(), 0, said.append, cases=(("gelu", {"numel": 2**24}),))
    assert len(rows) == 1 and "error" not in rows[0], rows
    assert 0 < rows[0]["op_w"] < 700 and rows[0]["energy_j"] > 0
    assert "a CUDA graph of" in rows[0]["method"] and said and "its own watts" in said[0]
