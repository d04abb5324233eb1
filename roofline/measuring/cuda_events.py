"""The one event-pair loop: seconds of device work between two CUDA events, for every timer that needs it
(the sample timer's estimates and self-measurements, the warm-up's chunks, the GPU calibration, the
test-only slowdown). torch is imported when a loop runs, never at import."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def event_times(fn: Callable[[], Any], n: int, before: Callable[[], Any] | None = None, *,
                in_graph: bool = False) -> list[float]:
    """Seconds of each of `n` calls of `fn`, each between its own pair of events, after an untimed `before()`.

    Every pair is enqueued before one synchronisation, so the GPU runs the calls back to back. With `in_graph`
    the whole loop is captured in one CUDA graph (the events as external nodes) and replayed once: nothing on
    the host paces the GPU."""
    import torch

    pairs = [(torch.cuda.Event(enable_timing=True, external=in_graph),
              torch.cuda.Event(enable_timing=True, external=in_graph)) for _ in range(n)]

    def record() -> None:
        stream = torch.cuda.current_stream()  # passed to record(): looking it up costs ~20 µs of host per call
        for start, end in pairs:
            if before is not None:
                before()
            start.record(stream)
            fn()
            end.record(stream)

    if in_graph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            record()
        graph.replay()
    else:
        record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) * 1e-3 for start, end in pairs]


def mean_event_time(fn: Callable[[], Any], n: int, before: Callable[[], Any] | None = None) -> float:
    """Mean seconds per call of `fn` over `n` event-timed calls, each after an untimed `before()`."""
    times = event_times(fn, n, before)
    return sum(times) / len(times)
