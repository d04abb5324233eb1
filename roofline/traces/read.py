"""Read one torch.profiler trace (Chrome/Kineto JSON, as `export_chrome_trace` and `tensorboard_trace_handler`
write it; gzipped or not) into a `RankTrace`, streaming: torch-free, in memory bounded by what is kept.

The file is read once, never held whole (traces/stream.py): the metadata before `traceEvents` (Kineto writes
`schemaVersion`, `deviceProperties`, `distributedInfo` there), then the events one at a time. Of each event only
what the roofline needs is kept, as numbers (the names and argument lists interned once: `RankTrace.names`,
`RankTrace.signatures`), and only these kinds, by category (`HANDLERS`):
- `cpu_op`: every CPU op, with its recorded arguments (`record_shapes=True`: "Input Dims", "Input type",
  "Input Strides", "Concrete Inputs") and autograd sequence number; `record_param_comms` keeps a collective's
  arguments (its name, sizes, group);
- `user_annotation`: `record_function` ranges (the region of the ops inside), `ProfilerStep#N` (the step),
  `Optimizer.step#...` (the optimizer phase) and a collective backend's work on its own thread (`gloo:...`);
- `python_function`: only the module ranges `with_modules=True` writes ("nn.Module: Linear_0");
- `cuda_runtime`, `cuda_driver`: launches, tied to their kernels by "correlation", and a stream capture's begin
  and end (the launches between were captured into a CUDA graph: traces/graphs.py);
- `kernel`, `gpu_memcpy`, `gpu_memset`: device work, with the "graph id" and "graph node id" of a graph replay's;
- on a `cpu_op`, Inductor's args of a Triton launch (kernel_backend, kernel_file, kernel_flop, kernel_num_gb:
  traces/compiled.py).
Each thread's ranges are then nested by time (a stack per thread): each op learns its nearest enclosing op, its
module path, region, phase and step; each launch its innermost op.

Refused, one line each (UsageError, exit 2): a file that is not JSON or ends early, a JSON document without
`traceEvents`, and a trace of another tool (no `cpu_op` or `kernel` event).
"""

from __future__ import annotations

import os
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roofline.core.errors import UsageError
from roofline.traces.model import (
    BACKWARD,
    FORWARD,
    NONE,
    OPTIMIZER,
    OTHER,
    CaptureMark,
    CompiledLaunch,
    Kernel,
    Launch,
    OpNode,
    Range,
    RankTrace,
    Signature,
)
from roofline.traces.stream import Events

PYTHON = "python_function"  # with_stack=True: a frame per Python call; of them only the module ranges are kept
COMPLETE = "X"  # the phase of a complete event (ts and dur); flows, counters, instants and metadata are skipped
MODULE_PREFIX = "nn.Module: "  # with_modules=True: the module ranges' names
STEP_PREFIX = "ProfilerStep#"
BACKWARD_PREFIX = "autograd::engine::evaluate_function"  # the autograd engine running a node
# record_function ranges torch itself opens: a phase (the optimizer's step and zero_grad), not a region
PHASE_RANGES = (("Optimizer.step#", OPTIMIZER), ("Optimizer.zero_grad#", OTHER))
# Ranges that are not the user's regions: torch's and the profiler's own
NOT_REGIONS = (STEP_PREFIX, "Optimizer.", "## ", "Torch-Compiled Region", "CompiledFunction", "roofline#",
               "Lazy Function Loading", "cudaGraph", "CUDAGraph")
REGION_PREFIX = "roofline.region:"  # a roofline.region range (a GPU profile's own trace): its name alone
# A collective backend's work on its own thread ("gloo:all_reduce"): when the collective ran, not a region
WORK_PREFIXES = ("gloo:",)
GRAPH_RANGES = ("CUDAGraph.replay",)
GRAPH_LAUNCHES = ("cudaGraphLaunch", "cuGraphLaunch")
# A stream capture's begin and end (runtime calls; the launches between them on the thread are captured, not run)
CAPTURE_MARKS = ("cudaStreamBeginCapture", "cudaStreamEndCapture")
GRAPH_ARGS = ("graph id", "graph node id")  # a kernel replayed from a CUDA graph: its graph and node (CUPTI's)
# record_param_comms' arguments kept (the collective's name, sizes, dtype and group)
COMM_ARGS = ("Collective name", "dtype", "In msg nelems", "Out msg nelems", "In split size", "Out split size",
             "Group size", "Process Group Name", "Process Group Description", "Process Group Ranks", "Rank", "Seq")
COMM_OP = "record_param_comms"
# Inductor's Triton launch: a CPU op with these args (traces/model.py CompiledLaunch)
BACKEND_ARG, TRITON = "kernel_backend", "triton"
# How the host events of a thread sort when they start together: the enclosing kinds first.
STEP, ANNOTATION, MODULE, OP, LAUNCH = range(5)


class _Reader:
    """The state of one pass over the events: interned names and signatures, each thread's host events."""

    def __init__(self, trace: RankTrace) -> None:
        self.t = trace
        self.name_ids: dict[str, int] = {}
        self.sig_ids: dict[str, int] = {}
        self.host: dict[int, list[tuple[Any, ...]]] = defaultdict(list)  # thread -> (ts, end, kind, ...)
        self.cats: set[str] = set()
        self.threads: dict[tuple[Any, Any], int] = {}

    def intern(self, name: str) -> int:
        i = self.name_ids.get(name)
        if i is None:
            i = self.name_ids[name] = len(self.t.names)
            self.t.names.append(name)
        return i

    def signature(self, args: dict[str, Any]) -> int:
        dims, types = args.get("Input Dims"), args.get("Input type")
        if dims is None or types is None:
            return NONE
        strides, concrete = args.get("Input Strides"), args.get("Concrete Inputs")
        key = f"{dims}|{types}|{strides}|{concrete}"
        i = self.sig_ids.get(key)
        if i is None:
            i = self.sig_ids[key] = len(self.t.signatures)
            self.t.signatures.append(Signature(dims, types, strides, concrete))
        return i

    def thread(self, e: dict[str, Any]) -> int:
        key = (e.get("pid"), e.get("tid"))
        i = self.threads.get(key)
        if i is None:
            i = self.threads[key] = self.intern(f"{key[0]}/{key[1]}")
        return i


def _cpu_op(r: _Reader, e: dict[str, Any]) -> None:
    args = e.get("args") or {}
    name = e.get("name", "")
    comm = compiled = NONE
    if name == COMM_OP:
        comm = len(r.t.comms)
        r.t.comms.append({k: args[k] for k in COMM_ARGS if k in args})
    elif args.get(BACKEND_ARG) == TRITON:
        compiled = len(r.t.compiled)
        r.t.compiled.append(CompiledLaunch(_text(args.get("kernel_file")), _number(args.get("kernel_flop")),
                                           _number(args.get("kernel_num_gb"))))
    ts = float(e["ts"])
    seq = args.get("Sequence number")
    r.host[r.thread(e)].append((ts, ts + float(e.get("dur", 0.0)), OP, r.intern(name), r.signature(args),
                                seq if isinstance(seq, int) else NONE, comm, compiled))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _annotation(r: _Reader, e: dict[str, Any]) -> None:
    name = e.get("name", "")
    ts, dur = float(e["ts"]), float(e.get("dur", 0.0))
    if name.startswith(WORK_PREFIXES):
        r.t.works.append(Range(r.intern(name), ts, dur, NONE))
        return
    if name.startswith(STEP_PREFIX):
        number = int(name[len(STEP_PREFIX):]) if name[len(STEP_PREFIX):].isdigit() else NONE
        r.t.steps.append(Range(r.intern(name), ts, dur, number))
        r.host[r.thread(e)].append((ts, ts + dur, STEP, number))
        return
    r.host[r.thread(e)].append((ts, ts + dur, ANNOTATION, r.intern(name)))


def _python(r: _Reader, e: dict[str, Any]) -> None:
    name = e.get("name", "")
    if name.startswith(MODULE_PREFIX):
        ts = float(e["ts"])
        r.host[r.thread(e)].append((ts, ts + float(e.get("dur", 0.0)), MODULE, name[len(MODULE_PREFIX):]))


def _launch(r: _Reader, e: dict[str, Any]) -> None:
    name = e.get("name", "")
    if name.startswith(CAPTURE_MARKS):  # a stream capture's begin or end: the launches between are captured
        r.t.capture_marks.append(CaptureMark(r.thread(e), float(e["ts"]), name.startswith(CAPTURE_MARKS[0])))
        return
    corr = (e.get("args") or {}).get("correlation")
    if isinstance(corr, int):
        ts = float(e["ts"])
        r.host[r.thread(e)].append((ts, ts + float(e.get("dur", 0.0)), LAUNCH, corr,
                                    name.startswith(GRAPH_LAUNCHES)))


def _device(r: _Reader, e: dict[str, Any]) -> None:
    args = e.get("args") or {}
    corr = args.get("correlation")
    device, stream = args.get("device", e.get("pid")), args.get("stream", e.get("tid"))
    graph, node = (args.get(k) for k in GRAPH_ARGS)
    r.t.kernels.append(Kernel(r.intern(e.get("name", "")), float(e["ts"]), float(e.get("dur", 0.0)),
                              device if isinstance(device, int) else NONE, stream if isinstance(stream, int) else NONE,
                              corr if isinstance(corr, int) else NONE,
                              graph if isinstance(graph, int) and graph else NONE,
                              node if isinstance(node, int) and node else NONE))


# The events kept, by category; any other category is skipped.
HANDLERS: dict[str, Callable[[_Reader, dict[str, Any]], None]] = {
    "cpu_op": _cpu_op, "user_annotation": _annotation, PYTHON: _python,
    "cuda_runtime": _launch, "cuda_driver": _launch,
    "kernel": _device, "gpu_memcpy": _device, "gpu_memset": _device,
}
# Categories that show a torch.profiler trace (another tool's Chrome trace has none of them).
TORCH_CATEGORIES = frozenset({"cpu_op", "kernel"})


def read_trace(path: str | os.PathLike[str], measure_memory: bool = False) -> RankTrace:
    """One trace file, read (module docstring); `measure_memory`: tracemalloc's peak in `peak_bytes` (the parse
    runs about twice as long)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{path}: a folder, not a trace (name its files, or pass the folder alone)")
    if not p.is_file():
        raise UsageError(f"{path}: no such trace")
    if measure_memory:
        import tracemalloc

        tracemalloc.start()
    start = time.perf_counter()
    trace = RankTrace(str(path))
    try:
        reader = _Reader(trace)
        events = Events(p)
        handlers, cats = HANDLERS, reader.cats
        for e in events:
            trace.events += 1
            if e.get("ph") != COMPLETE:
                continue
            cat = e.get("cat")
            handler = handlers.get(cat) if isinstance(cat, str) else None
            if handler is not None:
                cats.add(cat)  # type: ignore[arg-type]
                handler(reader, e)
        _metadata(trace, events.meta)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: unreadable (not UTF-8 text: {_short(exc)})") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise UsageError(f"{path}: unreadable ({_short(exc)})") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: an event the trace format does not allow ({type(exc).__name__}: "
                         f"{_short(exc)})") from None
    finally:
        if measure_memory:
            trace.peak_bytes = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    if not reader.cats & TORCH_CATEGORIES:
        raise UsageError(f"{path}: not a torch.profiler trace (no cpu_op or kernel events: a trace of another "
                         "tool, or a profile that recorded nothing)")
    trace.shapes = any(s is not None for s in trace.signatures) and bool(trace.signatures)
    _nest(trace, reader)
    trace.parse_s = time.perf_counter() - start
    return trace


def _short(exc: BaseException) -> str:
    """The exception's message on one line."""
    return " ".join(str(exc).split())[:160] or type(exc).__name__


def _metadata(trace: RankTrace, meta: dict[str, Any]) -> None:
    dist = meta.get("distributedInfo")
    if isinstance(dist, dict):
        trace.rank = dist.get("rank") if isinstance(dist.get("rank"), int) else None
        trace.world_size = dist.get("world_size") if isinstance(dist.get("world_size"), int) else None
        trace.backend = dist.get("backend") if isinstance(dist.get("backend"), str) else None
        trace.groups = [g for g in dist.get("pg_config") or [] if isinstance(g, dict)]
    props = meta.get("deviceProperties")
    if isinstance(props, list):
        trace.devices = [str(d.get("name", "")) for d in props if isinstance(d, dict)]


# -- nesting ---------------------------------------------------------------------------------------------------

class _Frame:
    """An open range on a thread's stack and the context it gives what runs inside it."""

    __slots__ = ("end", "graph", "module", "op", "owner", "phase", "region", "seq", "step")

    def __init__(self, end: float, op: int, module: int, region: int, phase: int, step: int, seq: int,
                 graph: bool, owner: int) -> None:
        self.end, self.op, self.module, self.region, self.phase = end, op, module, region, phase
        self.step, self.seq, self.graph, self.owner = step, seq, graph, owner


def _nest(trace: RankTrace, r: _Reader) -> None:
    """Each thread's host events nested by time (module docstring): op nodes in start order, launches by
    correlation."""
    names = trace.names
    for thread in list(r.host):
        events: list[Any] = r.host.pop(thread)
        events.sort(key=lambda ev: (ev[0], -ev[1], ev[2]))
        root = _Frame(float("inf"), NONE, NONE, NONE, FORWARD, NONE, NONE, False, NONE)
        stack = [root]
        for j, ev in enumerate(events):
            events[j] = None  # each event's tuple freed as its node is made: the peak is one of the two, not both
            ts, end, kind = ev[0], ev[1], ev[2]
            while len(stack) > 1 and stack[-1].end <= ts:
                stack.pop()
            top = stack[-1]
            if kind == OP:
                _, _, _, name, sig, seq, comm, compiled = ev
                text = names[name]
                index = len(trace.ops)
                trace.ops.append(OpNode(name, sig, ts, end - ts, top.op, top.module, top.region, top.phase,
                                        top.step, seq, top.seq, thread, comm, compiled))
                phase, bwd = (BACKWARD, seq) if text.startswith(BACKWARD_PREFIX) else (top.phase, top.seq)
                stack.append(_Frame(end, index, top.module, top.region, phase, top.step, bwd,
                                    top.graph or text.startswith(GRAPH_RANGES), name))
            elif kind == LAUNCH:
                trace.launches[ev[3]] = Launch(top.op, top.graph or ev[4], top.owner, ts, thread)
            elif kind == MODULE:
                path = ev[3] if top.module == NONE else f"{names[top.module]}.{ev[3]}"
                stack.append(_Frame(end, top.op, r.intern(path), top.region, top.phase, top.step, top.seq,
                                    top.graph, top.owner))
            elif kind == STEP:
                stack.append(_Frame(end, top.op, top.module, top.region, top.phase, ev[3], top.seq, top.graph,
                                    top.owner))
            else:
                stack.append(_annotation_frame(r, top, end, names[ev[3]]))


def _annotation_frame(r: _Reader, top: _Frame, end: float, text: str) -> _Frame:
    """A record_function range: a phase (the optimizer's), a region (the user's), or neither (torch's own)."""
    phase = next((p for prefix, p in PHASE_RANGES if text.startswith(prefix)), top.phase)
    region = top.region
    if text.startswith(REGION_PREFIX):
        region = r.intern(text[len(REGION_PREFIX):])
    elif not text.startswith(NOT_REGIONS):
        region = r.intern(text)
    return _Frame(end, top.op, top.module, region, phase, top.step, top.seq,
                  top.graph or text.startswith(GRAPH_RANGES), top.owner)
