"""Serving steps in a profile: a decode step's minimum bytes (weights and the KV cache read once), MBU, and
kernels replayed from a CUDA graph said as such (capture/records.py `step_min_bytes`, capture/kernels.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import roofline  # noqa: E402
from roofline.capture.kernels import gpu_timeline  # noqa: E402

H, KV, HD, CTX, B = 4, 2, 16, 64, 3  # heads, kv heads, head dim, cached tokens, batch
D = H * HD


class Decoder(nn.Module):
    """One attention layer decoding one token per sequence against a KV cache it updates in place (the
    StaticCache pattern), grouped-query (KV heads < heads)."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(D, D, bias=False), nn.Linear(D, KV * HD, bias=False), \
            nn.Linear(D, KV * HD, bias=False)
        self.o = nn.Linear(D, D, bias=False)

    def forward(self, x: Any, k_cache: Any, v_cache: Any, pos: int) -> Any:
        q = self.q(x).view(B, 1, H, HD).transpose(1, 2)
        k_cache[:, :, pos] = self.k(x).view(B, KV, HD)
        v_cache[:, :, pos] = self.v(x).view(B, KV, HD)
        a = nn.functional.scaled_dot_product_attention(q, k_cache[:, :, :pos + 1], v_cache[:, :, :pos + 1],
                                                       enable_gqa=True)
        return self.o(a.transpose(1, 2).reshape(B, D))


@pytest.mark.parametrize("time", [True, False])
def test_a_decode_steps_minimum_bytes_are_the_weights_and_the_cache(time: bool) -> None:
    model = Decoder()
    x = torch.randn(B, D)
    k_cache, v_cache = torch.randn(B, KV, CTX, HD), torch.randn(B, KV, CTX, HD)
    with torch.no_grad():
        prof = roofline.profile(lambda: model(x, k_cache, v_cache, CTX - 1), time=time,
                                gpu=None if time else "h100", warmup=1 if time else 0, tokens=B)
    weights = (D * D * 2 + D * KV * HD * 2) * 4  # q, o: D x D; k, v: D x KV*HD; fp32
    cache = 2 * B * KV * CTX * HD * 4  # K and V, every cached position read once
    io = B * D * 4 * 2  # the token's activations in, the output out
    s = prof.summary
    # the new K and V rows are written into the cache (in place): B x KV x HD x 4 bytes each
    new_rows = 2 * B * KV * HD * 4
    assert s["min_bytes"] == pytest.approx(weights + cache + io + new_rows, rel=0.02), (s["min_bytes"], weights, cache)
    u = s["utilization"]
    assert u["tokens"] == B and u["min_bytes"] == s["min_bytes"]
    if not time:  # MBU of the predicted step: the minimum bytes over the H100's (3352 GB/s, specs/h100-sxm.toml)
        t = u["time_s"]["predicted"]
        assert u["mbu"]["predicted"]["datasheet"] == pytest.approx(s["min_bytes"] / (t * 3.352e12))


def _cpu(name: str, parent: object = None, kernels: list[tuple[str, float]] = ()) -> SimpleNamespace:  # type: ignore[assignment]
    return SimpleNamespace(name=name, device_type="DeviceType.CPU", cpu_parent=parent,
                           kernels=[SimpleNamespace(name=k, duration=us) for k, us in kernels])


def _device(name: str, start: float, end: float) -> SimpleNamespace:
    rng = SimpleNamespace(start=start, end=end, elapsed_us=lambda: end - start)
    return SimpleNamespace(name=name, device_type="DeviceType.CUDA", time_range=rng, linked_correlation_id=1,
                           kernels=[], cpu_parent=None, is_user_annotation=False)


def test_kernels_of_a_graph_replay_are_counted_as_such() -> None:
    op = _cpu("aten::mm", _cpu("roofline#0"), [("gemm", 10.0)])
    replay = _cpu("cudaGraphLaunch", _cpu("CompiledFxGraph"), [("gemm", 7.0), ("triton_poi", 3.0)])
    t = gpu_timeline([op, replay, _device("gemm", 0, 10), _device("gemm", 10, 17), _device("triton_poi", 17, 20)])
    assert t.calls[0].kernels == [("gemm", pytest.approx(10e-6))]
    assert t.graph_s == pytest.approx(10e-6)  # 7 + 3 µs replayed: unattributed, and said to be a graph's
    assert [k for k, _, _ in t.unattributed] == ["gemm", "triton_poi"]


def test_a_compiled_regions_replayed_graph_is_counted_as_such() -> None:
    """torch.compile(mode="reduce-overhead") on torch 2.11 (H200, 2026-12-01): the replayed kernels are the
    "## Call CompiledFxGraph" range's own; its input copy (an aten op the trace never saw) is not a replay."""
    region = _cpu("Torch-Compiled Region: 0/0")
    call = _cpu("## Call CompiledFxGraph abc ##", region, [("sm90_gemm", 6.0), ("triton_per", 2.0)])
    copy = _cpu("aten::_foreach_copy_", call, [("copy", 1.0)])
    t = gpu_timeline([region, call, copy, _device("sm90_gemm", 0, 6), _device("triton_per", 6, 8),
                      _device("copy", 8, 9)])
    assert t.graph_s == pytest.approx(8e-6) and len(t.unattributed) == 3


def test_a_replayed_graph_under_the_profile_is_counted_as_such() -> None:
    """The same step under roofline.profile (H200, 2026-12-01, scripts/experiments/diagnose_vit_graphs.py): the
    replayed kernels are owned by the compiled region's range itself, inside the tracker's compiled range;
    the input copy that the trace recorded is its op's."""
    outer = _cpu("roofline.compiled:Sequential")
    region = _cpu("Torch-Compiled Region: 0/0", outer, [("sgemm_largek", 63.0), ("triton_poi_fused", 2.0)])
    call = _cpu("## Call CompiledFxGraph abc ##", region)
    copy = _cpu("aten::_foreach_copy_", _cpu("roofline#0", call), [("copy", 14.0)])
    t = gpu_timeline([outer, region, call, copy, _device("sgemm_largek", 0, 63), _device("triton_poi_fused", 63, 65),
                      _device("copy", 65, 79)])
    assert t.graph_s == pytest.approx(65e-6)
    assert t.calls[0].kernels == [("copy", pytest.approx(14e-6))]
