"""The kernel-timestamp timer's CPU-testable parts: cutting a profiled loop into samples, the record's fields,
and the latency advice from a measured launch gap. (The timer itself runs in tests/test_gpu.py.)"""

from __future__ import annotations

import pytest

from roofline.analysis.advice import LAUNCH_BOUND_IDLE, latency
from roofline.core.record import Record, Timing
from roofline.measuring.timing import Measurement
from roofline.measuring.timing_cupti import KernelSamples, LayoutError, split_samples

FLUSH, SPIN = "reduce_kernel", "spin_kernel"


def _loop(reps: int, op: list[tuple[str, int]], gap_ns: int = 500) -> list[tuple[str, int, int]]:
    """A profiled loop as device activities: per sample the flush (10 µs), the operator's kernels (name,
    duration ns) with `gap_ns` between them, then the clock probe (50 µs)."""
    acts, t = [], 0
    for i in range(reps):
        for name, dur in [(FLUSH, 10_000), *[(n, d + 100 * i) for n, d in op], (SPIN, 50_000)]:
            acts.append((name, t, t + dur))
            t += dur + gap_ns
    return acts


def test_a_two_kernel_operator_is_cut_into_samples_by_position() -> None:
    # split-K GEMM: a 4 µs main kernel then a 1 µs reduction; sample i adds 100 ns to each kernel
    acts = _loop(3, [("gemm_splitk", 4000), ("splitk_reduce", 1000)])
    ks = split_samples(acts, [FLUSH], ["gemm_splitk", "splitk_reduce"], [SPIN], 3)
    assert ks.samples == pytest.approx([5.0e-6, 5.2e-6, 5.4e-6])  # (4000 + 1000 + 2*100*i) ns
    assert ks.medians() == [("gemm_splitk", pytest.approx(4.1e-6)), ("splitk_reduce", pytest.approx(1.1e-6))]
    # the span holds the 500 ns gap between the two kernels, the sum does not
    assert ks.spans == pytest.approx([5.5e-6, 5.7e-6, 5.9e-6])


def test_a_kernel_named_like_the_flush_is_told_apart_by_position() -> None:
    # a sum over fp32 launches the same reduction kernel as the flush: position, not name, tells them apart
    acts = _loop(2, [(FLUSH, 3000)])
    ks = split_samples(acts, [FLUSH], [FLUSH], [SPIN], 2)
    assert ks.samples == pytest.approx([3.0e-6, 3.1e-6])


@pytest.mark.parametrize(("acts", "said"), [
    (_loop(3, [("k", 4000)])[:-1], "8 device activities for 3 samples of 3"),  # one activity missing
    ([("other", 0, 1), *_loop(3, [("k", 4000)])[1:]], "not the operator's kernels"),
])
def test_a_loop_that_does_not_repeat_is_refused(acts: list[tuple[str, int, int]], said: str) -> None:
    with pytest.raises(LayoutError, match=said):
        split_samples(acts, [FLUSH], ["k"], [SPIN], 3)
    with pytest.raises(LayoutError, match="no device work"):
        split_samples([], [FLUSH], [], [SPIN], 3)


def test_kernel_samples_and_the_measurement_reach_the_record() -> None:
    ks = KernelSamples(["a", "b"], [[1e-6, 2e-6], [3e-6, 3e-6]], [5e-6, 6e-6])
    assert ks.samples == pytest.approx([4e-6, 5e-6])
    m = Measurement(ks.samples, "cupti+burst", 10, 5e-6, True, kernel_medians_s=ks.medians(),
                    kernel_span_s=5.5e-6, launch_gap_s=3e-6)
    assert m.times_s == ks.samples  # no event pair to subtract
    t = m.timing()
    assert (t.method, t.kernel_span_s, t.launch_gap_s) == ("cupti+burst", 5.5e-6, 3e-6)
    # the two fields are written only when measured: an event-timed record's timing keeps its old keys
    assert "launch_gap_s" in t.to_dict() and "launch_gap_s" not in Measurement([1.0], "graph", 1, 1.0, True
                                                                                ).timing().to_dict()
    assert Timing.from_dict(t.to_dict()) == t


def _gpu_record(time_s: float, gap_s: float | None) -> Record:
    return Record.from_dict({
        "op": "rmsnorm", "variant": None, "params": {"rows": 64, "cols": 4096}, "dtype": "bf16", "flops": 1.3e6,
        "bytes": 1.05e6, "bytes_read": 5.3e5, "bytes_written": 5.2e5, "intensity": 1.2, "peak_flops": 9.9e14,
        "mem_bw": 4.8e12, "ridge": 206.0, "bound": "memory", "roofline_time_s": 2.2e-7, "pipe": "cuda",
        "tensor_cores": False, "device": "NVIDIA H200", "device_kind": "gpu", "gpu": "h200-sxm",
        "time_s": time_s, "achieved_flops": 1.0, "achieved_bw": 1.0, "roofline_fraction": 0.1,
        "notes": [], "clocks": None,
        "timing": {"method": "cupti", "launch_gap_s": gap_s} if gap_s is not None else {"method": "graph"}})


def test_latency_advice_from_the_measured_launch_gap() -> None:
    # 4 µs of kernel, 6 µs idle per eager call: 6 / (6 + 4) = 60% of each call idle, a graph saves ~6 µs
    (item,) = latency(_gpu_record(4e-6, 6e-6), None)
    assert item["idle_share"] == pytest.approx(0.6) and item["saving_s"] == 6e-6
    assert "idle 6 µs beside its 4 µs" in item["message"] and "60% of the call" in item["message"]
    # 1 µs idle beside 4 µs: 20% is the threshold itself, so 1/(1+4.1) is just under it: no advice
    assert 1e-6 / (1e-6 + 4.1e-6) < LAUNCH_BOUND_IDLE and latency(_gpu_record(4.1e-6, 1e-6), None) == []
    # no gap measured (an event-timed record): the fixed 10 µs rule still speaks for a 4 µs kernel
    (item,) = latency(_gpu_record(4e-6, None), None)
    assert item["threshold_s"] == 10e-6


def test_the_profilers_cycle_warning_is_silenced_as_torch_words_it() -> None:
    """torch 2.11 on the H200 (2026-12-02) printed 'UserWarning: Warning: Profiler clears events at the end of
    each cycle...' under every GPU profile: the filter matched only a message that starts with 'Profiler'."""
    import warnings

    from roofline.measuring.cupti import _CYCLE_WARNING

    text = ("Warning: Profiler clears events at the end of each cycle.Only events from the current cycle will be "
            "reported.To keep events across cycles, set acc_events=True.")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=_CYCLE_WARNING)
        warnings.warn(text, UserWarning, stacklevel=1)
    assert seen == []


def test_only_a_short_operator_gets_a_launch_gap() -> None:
    # the gap's 800 eager calls of a 25 ms attention took 20 s of a sweep point (H100, 2026-12-06), and a kernel
    # longer than SHORT_OP_S keeps the GPU busy past its next launch anyway
    from roofline.measuring.timing_cupti import SHORT_OP_S, measures_launch_gap

    assert measures_launch_gap(2e-6) and measures_launch_gap(SHORT_OP_S * 0.99)
    assert not measures_launch_gap(SHORT_OP_S) and not measures_launch_gap(25e-3)
