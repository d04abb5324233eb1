"""Joules per call from NVML's cumulative energy counter (nvmlDeviceGetTotalEnergyConsumption, millijoules).

The counter does not move with every joule: on the H200 (driver 580) it changes every ~100 ms, by that
period's energy (~8 J at 80 W idle, ~65 J at 650 W). So a window is bounded by two *changes* of the counter,
not by two reads: the work runs back to back, the reader waits for a change (the start edge), goes on until
at least MIN_UPDATES further changes and MIN_WINDOW_S have passed (the end edge), and takes the energy between
the two edges over the time between them. The error is then the timing of two edges (a few ms of a second)
and not the period; the counter's 1 mJ unit is far below it. A counter that does not change within
STUCK_AFTER_S is refused (EnergyError), never read as 0 J.

The reader is a seam: `Counter.read()` gives (host seconds, mJ), and `window()` drives it with a `run_chunk`
that keeps the GPU busy; `threaded_window()` (what `measure_fn` uses) reads it on a thread of its own while
the chunks launch, so a slow read never leaves the GPU waiting. Tests feed them real-shaped sequences;
`NvmlCounter` is the real one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

from roofline.core.device import cuda_index
from roofline.core.energy import COUNTER_MODULUS, CounterWindow, EnergyError, EnergyModel, energy_fields
from roofline.core.errors import UsageError
from roofline.core.validate import setting

# A window spans at least this many changes of the counter and this long: with changes ~100 ms apart whose
# timing wanders by ~3 ms (measured on the H200), 10 changes put the edge error near 0.5% of the window.
MIN_UPDATES = 10
MIN_WINDOW_S = 1.0
# A counter that has not changed for this long (20 periods of the H200's) is not advancing: refused.
STUCK_AFTER_S = 2.0
# Back-to-back calls this long before the window: the board's power and the cap's clock settle (the clock of a
# bf16 GEMM falls from 1.98 GHz to ~1.5 GHz within the first second on the H200).
WARMUP_S = 1.0
# The calls between two reads of the counter: about this much GPU time (reads take ~0.1 ms).
CHUNK_S = 0.005
# Chunks queued ahead of the GPU at most: ~40 ms of work, so that the host's other work (the clock sampler's
# reads) does not leave the GPU waiting, and the host never runs far ahead of it.
IN_FLIGHT = 8
# The counter reader's nap between reads (its thread's, beside the launching one): the edge of a change is
# known to within a read's time and this.
READ_NAP_S = 0.0002

# {energy}: the option as the caller set it (`--energy`, `energy=True`: core.validate.setting)
NO_GPU = "{energy} needs an NVIDIA GPU with an energy counter (NVML): {what} has none"
NO_COUNTER = ("{energy}: {name} has no energy counter (nvmlDeviceGetTotalEnergyConsumption: {why}); "
              "needs Volta or newer")


class Counter(Protocol):
    """A cumulative energy counter: `read()` gives (host seconds, millijoules)."""

    modulus: int

    def read(self) -> tuple[float, int]: ...


class NvmlCounter:
    """The GPU's NVML energy counter; opening it refuses (UsageError, exit 2) a GPU without one."""

    modulus = COUNTER_MODULUS

    def __init__(self, index: int = 0) -> None:
        from roofline.measuring.nvml import _device

        try:
            self._nvml, self._handle, _ = _device(index)
            self.name = str(self._nvml.nvmlDeviceGetName(self._handle))
        except Exception as exc:
            raise UsageError(NO_GPU.format(energy=setting("energy"), what=f"cuda:{index} (NVML: {exc})")) from None
        try:
            self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        except Exception as exc:
            raise UsageError(NO_COUNTER.format(energy=setting("energy"), name=self.name, why=exc)) from None

    def read(self) -> tuple[float, int]:
        return time.perf_counter(), int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))

    def power_cap_w(self) -> float:
        return self._nvml.nvmlDeviceGetEnforcedPowerLimit(self._handle) / 1000.0


def require_counter(device: str | None) -> NvmlCounter:
    """The counter of the CUDA device the work is timed on; on the CPU or without one, one line (exit 2)."""
    if not (device or "").startswith("cuda"):
        raise UsageError(NO_GPU.format(energy=setting("energy"),
                                       what=f"the device '{device or 'none'}'" if device else "an analytic run"))
    return counter_for(cuda_index(device))


@cache
def counter_for(index: int) -> NvmlCounter:
    return NvmlCounter(index)


class _Edges:
    """The changes of a counter seen so far, from the first one: the window is complete at `min_updates` further
    changes and `min_window_s`; a counter that has not changed for `stuck_after_s` raises EnergyError."""

    def __init__(self, counter: Counter, min_updates: int, min_window_s: float, stuck_after_s: float) -> None:
        self.counter, self.min_updates, self.min_window_s, self.stuck_after_s = (counter, min_updates, min_window_s,
                                                                               stuck_after_s)
        t, self.last = counter.read()
        self.changed_at = t
        self.edges: list[tuple[float, int]] = []

    def read(self) -> bool:
        """Read the counter once: whether it changed since the last read."""
        t, e = self.counter.read()
        if e != self.last:
            self.edges.append((t, e))
            self.last, self.changed_at = e, t
            return True
        if t - self.changed_at > self.stuck_after_s:
            raise EnergyError(f"the energy counter did not advance for {t - self.changed_at:.1f} s: no energy can "
                              "be measured on this device now")
        return False

    def complete(self) -> bool:
        return len(self.edges) > self.min_updates and self.edges[-1][0] - self.edges[0][0] >= self.min_window_s

    def window(self) -> CounterWindow:
        return CounterWindow(tuple(self.edges), self.counter.modulus)


def window(counter: Counter, run_chunk: Callable[[], Any], *, min_updates: int = MIN_UPDATES,
           min_window_s: float = MIN_WINDOW_S, stuck_after_s: float = STUCK_AFTER_S,
           on_edge: Callable[[], Any] | None = None) -> CounterWindow:
    """Run `run_chunk` over and over and read the counter after each, from one change of the counter to the one
    at least `min_updates` changes and `min_window_s` later (see the module docstring); `on_edge` is called at
    each change (the work's own clock marks it). A counter that does not change for `stuck_after_s` raises
    EnergyError."""
    edges = _Edges(counter, min_updates, min_window_s, stuck_after_s)
    while True:
        run_chunk()
        if edges.read():
            if on_edge is not None:
                on_edge()
            if edges.complete():
                return edges.window()


def threaded_window(counter: Counter, run_chunk: Callable[[], Any], on_edge: Callable[[], Any], *,
                    min_updates: int = MIN_UPDATES, min_window_s: float = MIN_WINDOW_S,
                    stuck_after_s: float = STUCK_AFTER_S, nap_s: float = READ_NAP_S) -> CounterWindow:
    """window() with the counter read on a thread of its own, `run_chunk` over and over on this one until the
    window is complete: a read that keeps the host for longer than a chunk of work (NVML's did, in some windows
    on the H200) then delays no launch. `on_edge` is called from the reader's thread at each change."""
    out: list[CounterWindow | BaseException] = []
    finished, stop = threading.Event(), threading.Event()

    def reader() -> None:
        try:
            edges = _Edges(counter, min_updates, min_window_s, stuck_after_s)
            while not stop.is_set():
                if edges.read():
                    on_edge()
                    if edges.complete():
                        out.append(edges.window())
                        return
                time.sleep(nap_s)
        except BaseException as exc:  # handed to the launching thread, raised there
            out.append(exc)
        finally:
            finished.set()

    thread = threading.Thread(target=reader, name="roofline-energy-counter", daemon=True)
    thread.start()
    try:
        while not finished.is_set():
            run_chunk()
    finally:  # a chunk that raised stops the reader too: no mark after the work failed
        stop.set()
        thread.join()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


def idle_window(counter: Counter, seconds: float = MIN_WINDOW_S, nap_s: float = 0.01) -> CounterWindow:
    """A window with nothing running (the board's idle power): the host naps between reads."""
    return window(counter, lambda: time.sleep(nap_s), min_window_s=seconds)


class _Loop:
    """`chunk` (`calls` calls of the work: a CUDA graph's replay, or the calls launched one by one) back to back
    on a CUDA stream, at most IN_FLIGHT chunks in flight (so the GPU does not wait for the host and the host
    never runs far ahead of the GPU), timed by CUDA events; `mark()` records an event where the host stands (a
    counter's edge), so the calls between two marks have their own time."""

    def __init__(self, chunk: Callable[[], Any], calls: int) -> None:
        import torch

        self.chunk, self.calls, self.torch = chunk, calls, torch
        self.pending: list[Any] = []
        self.first: Any = None
        self.last: Any = None
        self.done = 0
        self.marks: list[tuple[Any, int]] = []
        self.lock = threading.Lock()

    def mark(self) -> None:
        """An event after the calls launched so far, with their count (called from the counter's reader thread:
        between two chunks, never inside one)."""
        with self.lock:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            self.marks.append((ev, self.done))

    def __call__(self) -> None:
        torch = self.torch
        with self.lock:
            if self.first is None:
                self.first = torch.cuda.Event(enable_timing=True)
                self.first.record()
            self.chunk()
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self.done += self.calls
            self.last = ev
            self.pending.append(ev)
        if len(self.pending) > IN_FLIGHT:
            self.pending.pop(0).synchronize()

    def per_call_s(self) -> float:
        """The time per call between the first and the last mark (a window's calls: the warm-up before it ran
        at another clock, a power-capped GEMM's faster), else since the first call."""
        self.last.synchronize()
        if len(self.marks) >= 2 and self.marks[-1][1] > self.marks[0][1]:
            (a, n0), (b, n1) = self.marks[0], self.marks[-1]
            return a.elapsed_time(b) * 1e-3 / (n1 - n0)
        return self.first.elapsed_time(self.last) * 1e-3 / self.done


def _chunk_calls(fn: Callable[[], Any]) -> int:
    """Calls of `fn` in CHUNK_S of GPU time (from a few timed calls), at least one."""
    import torch

    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    return max(1, int(CHUNK_S / max((time.perf_counter() - t0) / 3, 1e-7)))


def _chunk(fn: Callable[[], Any], calls: int, graph: bool) -> tuple[Callable[[], Any], str]:
    """What one chunk runs, and how it says so: `calls` calls of `fn` captured in one CUDA graph when `graph`
    and the capture works (one launch per chunk: no gap between the calls for the host's launch cost, so the
    window's joules are the kernels' own), else the calls launched one by one (an operator that cannot be
    captured, or a step whose launch gaps are part of what it costs)."""

    def eager() -> None:
        for _ in range(calls):
            fn()  # each call's output freed before the next (in a capture too: its pool reuses the memory)

    if not graph:
        return eager, "launched one by one"
    from roofline.measuring.timing_cuda import capture_graph

    try:
        return capture_graph(eager), f"a CUDA graph of {calls} calls per launch"
    except Exception as exc:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()  # what the failed capture left queued, before the window's calls
        return eager, f"launched one by one (CUDA graph capture failed: {type(exc).__name__})"


def measure_fn(fn: Callable[[], Any], counter: Counter, *, flops: float | None, nbytes: float | None,
               static_w: float | None, static_source: str | None, warmup_s: float = WARMUP_S,
               sm_clock: Callable[[], Any] | None = None, graph: bool = False) -> dict[str, Any]:
    """The `energy` fields of one CUDA callable run back to back (energy_fields): warmed up for `warmup_s`, then
    one counter window; the time per call is the CUDA events' between the window's first and last edge.
    `sm_clock` is a ClockSampler factory whose report is kept as the window's clocks; `graph`: replay the calls
    as a CUDA graph where they can be captured (`_chunk`)."""
    calls = _chunk_calls(fn)
    run, how = _chunk(fn, calls, graph)
    loop = _Loop(run, calls)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warmup_s:
        loop()
    if sm_clock is None:
        w = threaded_window(counter, loop, loop.mark)
        clocks = None
    else:
        with sm_clock() as cs:
            w = threaded_window(counter, loop, loop.mark)
        clocks = cs.report.to_dict()
    out = energy_fields(w, loop.per_call_s(), flops, nbytes, static_w, static_source)
    if clocks is not None:
        out["clocks"] = {k: clocks[k] for k in ("sm_mhz", "power_w", "power_limit_w", "limited_by", "max_sm_mhz")}
    out["method"] = f"NVML energy counter, {w.updates} updates over {w.seconds:.2f} s of back-to-back calls ({how})"
    return out


def this_gpu(index: int) -> Any:
    from roofline.measuring.device import detect_gpus

    gpus = detect_gpus()
    return gpus[index] if index < len(gpus) else None


def stored_model(index: int) -> EnergyModel | None:
    """The stored energy model of GPU `index` with this driver and torch, if `calibrate energy` ran."""
    from roofline.ceilings.store import gpu_key, lookup_energy

    gpu = this_gpu(index)
    found = lookup_energy(gpu_key(gpu.nvml_name, gpu.driver_version)) if gpu else None
    return EnergyModel.from_dict(found[0]) if found else None


@cache
def ready_idle_w(index: int) -> float:
    """The board's power ready but with no kernel running, measured once per process right after a short
    kernel (the GPU still in its working state): the static share's watts when no calibration is stored."""
    import torch

    torch.ones(1, device=f"cuda:{index}").add_(1)
    torch.cuda.synchronize()
    return idle_window(counter_for(index)).power_w


def static_watts(index: int) -> tuple[float, str]:
    """The static watts and where they come from: the stored energy model of this GPU, else measured now."""
    model = stored_model(index)
    if model is not None:
        return model.static_w, "roofline calibrate --energy"  # a stored value: documents keep the spelling
    return ready_idle_w(index), "ready-idle power measured in this run"


def record_energy(fn: Callable[[], Any], device: str, flops: float | None, nbytes: float | None,
                  graph: bool = False) -> dict[str, Any]:
    """The `energy` of a record: `fn` on `device` measured by its NVML counter (see measure_fn); `graph`: its
    calls replayed as a CUDA graph where they can be (an operator's kernel; a profiled step runs as it is)."""
    counter = require_counter(device)
    index = cuda_index(device)
    static_w, source = static_watts(index)
    from roofline.measuring.nvml import ClockSampler

    try:
        return measure_fn(fn, counter, flops=flops, nbytes=nbytes, static_w=static_w, static_source=source,
                          sm_clock=lambda: ClockSampler(index), graph=graph)
    except EnergyError:
        raise
    except RuntimeError as exc:
        raise EnergyError(f"{setting('energy')}: the kernel failed while its energy was measured: {exc}") from None


def with_model(fields: dict[str, Any], record: Any, index: int) -> dict[str, Any]:
    """The fields with the stored energy model's prediction for the same call (`model_j`: the record's FLOPs,
    bytes read and written and the measured time per call), when one is stored."""
    model = stored_model(index)
    if model is None or record.compute_pipe is None:
        return fields
    j = model.energy_j(record.compute_pipe, record.flops or 0.0, record.bytes_read or 0.0, record.bytes_written or 0.0,
                       fields["per_call_s"], op=record.op)
    return {**fields, "model_j": j, "model_error": fields["energy_j"] / j - 1 if j > 0 else None}


def attach_energy(records: list[Any], ops: list[tuple[Any, Any]], device: str, progress: Any = None,
                  spec: Any = None) -> list[Any]:
    """Each catalog operator's record with its `energy` (`record_energy` on the operator's real kernel, built
    again), the stored model's prediction beside it, and its advice again (the power-bound rule reads the
    energy window's clock)."""
    from roofline.analysis.advice import with_advice
    from roofline.core.record import evolve
    from roofline.measuring.kernels import build

    index = cuda_index(device)
    out = []
    for i, (record, (op, dtype)) in enumerate(zip(records, ops, strict=True)):
        if progress is not None:
            progress.status(f"energy {i + 1}/{len(records)}: {record.label} (~2 s: NVML counter window)")
        built = build(op, dtype, device)
        fields = record_energy(built.fn, device, record.flops, record.bytes, graph=built.graph_safe)
        out.append(with_advice(evolve(record, energy=with_model(fields, record, index)), spec))
        del built
    return out


def device_fields(device: str | None) -> dict[str, Any]:
    """What a results document's `device` keeps of the energy model (`energy_model`, without its calibration
    points) when one is stored for the GPU the work ran on: the chart's power roof and energy view read it."""
    if not (device or "").startswith("cuda"):
        return {}
    model = stored_model(cuda_index(device))
    return {"energy_model": {k: v for k, v in model.to_dict().items() if k != "points"}} if model else {}
