"""Collective operators (ops.collectives): nccl-tests' busbw factors, the ring's bytes per GPU, the reduction's
FLOPs, the alpha-beta time, the NVLink spec fields, and the CLI (`analyze`, `compare`, the timed-run refusal).

Expected factors are nccl-tests' doc/PERFORMANCE.md, "Summary" of "Bus bandwidth" (github.com/NVIDIA/nccl-tests):
AllReduce 2(n-1)/n, ReduceScatter (n-1)/n, AllGather (n-1)/n, Broadcast 1, AlltoAll (n-1)/n.
Link figures: H100/H200 SXM NVLink 4, 18 links, 900 GB/s both directions added = 450 GB/s per direction;
B200 NVLink 5, 1.8 TB/s both directions = 900 GB/s per direction (specs/*.toml give the sources).
"""

from __future__ import annotations

import pytest
from helpers import run

from roofline.ceilings.specs import gpu_ceilings, link_bytes_per_s, resolve
from roofline.core.dtypes import get_dtype
from roofline.core.errors import UsageError
from roofline.core.record import analytic_record
from roofline.ops import OPERATORS, make
from roofline.ops.collectives import (
    TIMED_ELSEWHERE,
    algbw,
    alpha_beta_time,
    busbw,
    busbw_factor,
    reduction_flops,
    ring_bytes_per_gpu,
)

S = 268435456  # 256 MiB
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")


@pytest.mark.parametrize(("op", "n", "factor"), [
    ("all_reduce", 8, 1.75),  # 2 x 7 / 8
    ("all_reduce", 2, 1.0),  # 2 x 1 / 2
    ("reduce_scatter", 8, 0.875),  # 7 / 8
    ("all_gather", 4, 0.75),  # 3 / 4
    ("all_to_all", 8, 0.875),  # 7 / 8
    ("broadcast", 8, 1.0),  # 1, whatever n
    ("broadcast", 2, 1.0),
])
def test_busbw_factors_are_nccl_tests(op: str, n: int, factor: float) -> None:
    assert busbw_factor(op, n) == pytest.approx(factor, rel=1e-12)


def test_ring_bytes_algbw_and_busbw() -> None:
    # all_reduce of 256 MiB on 8 GPUs: each sends 2 x 7/8 x 268,435,456 = 469,762,048 B (and receives as many)
    assert ring_bytes_per_gpu("all_reduce", S, 8) == 469_762_048
    # all_gather: 7/8 x S = 234,881,024 B; broadcast: S
    assert ring_bytes_per_gpu("all_gather", S, 8) == 234_881_024
    assert ring_bytes_per_gpu("broadcast", S, 8) == S
    # algbw = S / t; busbw = algbw x 1.75: 256 MiB in 1 ms -> 268.4 GB/s algbw, 469.8 GB/s busbw
    assert algbw(S, 1e-3) == pytest.approx(268.435456e9)
    assert busbw("all_reduce", S, 8, 1e-3) == pytest.approx(469.762048e9)


def test_reduction_flops() -> None:
    # all_reduce of 256 MiB bf16 on 8 GPUs: 134,217,728 elements, 7/8 of them added per GPU = 117,440,512
    assert reduction_flops("all_reduce", S, 8, 2) == 117_440_512
    assert reduction_flops("reduce_scatter", S, 8, 4) == 58_720_256  # fp32: 67,108,864 elements x 7/8
    assert reduction_flops("all_gather", S, 8, 2) == 0
    op = make("all_reduce", "fp32", bytes=S, ranks=8)
    rec = analytic_record(op, get_dtype("fp32"), gpu_ceilings("h200"))
    assert rec.flops == 58_720_256  # the dtype's element size counts: 4 B per fp32 element


def test_alpha_beta_time() -> None:
    # all_reduce, 8 GPUs, alpha 5 us, beta 1 / 450 GB/s: 2 x 7 steps x 5 us + 469,762,048 B / 450e9 B/s
    t = alpha_beta_time("all_reduce", S, 8, 5e-6, 1 / 450e9)
    assert t == pytest.approx(14 * 5e-6 + 469_762_048 / 450e9)  # 70 us + 1043.9 us
    # broadcast: a chain of 7 hops, all of S
    assert alpha_beta_time("broadcast", 1024, 8, 1e-6, 0.0) == pytest.approx(7e-6)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: ring_bytes_per_gpu("all_reduce", 0, 8), "must be > 0 bytes"),
    (lambda: busbw_factor("reduce", 8), "unknown collective 'reduce'"),
    (lambda: alpha_beta_time("all_reduce", 1024, 1, 1e-6, 1e-9), "at least 2 GPUs"),
    (lambda: make("all_gather", bytes=0), "bytes must be >= 1"),
    (lambda: make("all_to_all", ranks=1), "ranks must be >= 2"),
])
def test_bad_input_is_a_usage_error(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError, match=message):
        call()


def test_every_collective_is_registered_with_symmetric_link_bytes() -> None:
    for name in COLLECTIVES:
        assert OPERATORS[name].family == "collectives"
        t = make(name, bytes=S, ranks=8).traffic(get_dtype("bf16"))
        assert t.bytes_read == t.bytes_written == ring_bytes_per_gpu(name, S, 8)  # received == sent


def test_link_specs() -> None:
    assert link_bytes_per_s("h100") == link_bytes_per_s("h200") == 450e9  # 900 GB/s both directions / 2
    assert link_bytes_per_s("b200") == 900e9  # 1.8 TB/s both directions / 2
    assert link_bytes_per_s("a100") is None  # not filled: the field is optional
    h200 = resolve("h200")
    assert (h200["nvlink_generation"], h200["nvlink_links"], h200["pcie_generation"]) == (4, 18, 5)
    assert "BOTH directions" in h200.sources["nvlink_bandwidth_per_direction_gbps"]


def test_placed_on_the_link() -> None:
    op = make("all_reduce", "bf16", bytes=S, ranks=8)
    rec = op.placed(analytic_record(op, get_dtype("bf16"), gpu_ceilings("h200")))  # type: ignore[attr-defined]
    # bytes = sent + received = 2 x 469,762,048; roof = 2 x 450 GB/s -> time = 469,762,048 / 450e9 = 1.0439 ms
    assert rec.bytes == 2 * 469_762_048
    assert rec.peak_bytes_per_s == 900e9
    assert rec.roofline_time_s == pytest.approx(469_762_048 / 450e9)
    assert any("busbw = algbw x 1.75" in n for n in rec.notes)
    assert any("NVLink 450 GB/s per direction" in n for n in rec.notes)


def test_cli_analyze_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "all_reduce", "--bytes", str(S), "--ranks", "8", "--gpu", "h200",
                       "--no-time")
    assert code == 0
    assert "bytes=268435456 ranks=8" in out
    assert "read 469,762,048, written 469,762,048" in out  # received and sent per GPU


def test_cli_analyze_places_on_the_link(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "all_reduce", "--bytes", str(S), "--ranks", "8", "--gpu", "h200",
                       "--no-time")
    assert code == 0 and "busbw = algbw x 1.75" in out and "1.04 ms" in out


def test_cli_compare(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compare", "all_reduce", "--bytes", str(S), "--ranks", "8", "--gpus", "h100,h200")
    assert code == 0
    assert "h100-sxm" in out and "h200-sxm" in out


@pytest.mark.parametrize(("args", "message"), [
    (("--bytes", "0", "--no-time"), "all_reduce: --bytes must be >= 1, got 0"),
    (("--ranks", "1", "--no-time"), "all_reduce: --ranks must be >= 2, got 1"),
    ((), TIMED_ELSEWHERE),  # timed: `roofline collectives` does that
])
def test_cli_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                                          message: str) -> None:
    code, _, err = run(capsys, "analyze", "all_reduce", "--dtype", "fp32", *args)
    assert code == 2
    assert err.strip() == f"error: {message}"  # one line
