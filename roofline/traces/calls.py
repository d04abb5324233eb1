"""From a read trace (traces/read.py) to the op calls `roofline profile` would have recorded, with their FLOPs,
bytes and device times: `ProfiledCall`s and a kernel `Timeline`, as capture/records.py and capture/kernels.py make
them, so the records, summary and views that follow are the profile's own.

Which ops: the profile's tracer sees each op below autograd after composite ops decomposed; the trace holds every
level (aten::linear > aten::t > aten::transpose, aten::addmm). Walking each thread's op tree from the top, an op
is the call when torch runs it whole for the trace's device (`Kind.RECORD`: not composite, or with a kernel of its
own: capture/trace.py's `decomposes`); a composite op is descended into (`DECOMPOSE`); a view or allocation
(`SKIP`: capture/trace.py's `op_info`) is counted in `skipped` with what ran inside it; an op torch does not know
(another library's, or a name that is not an op) is descended into, and taken as a call without a formula when
nothing inside it is. So a trace and a profile of the same step have the same calls.

Each distinct (op, recorded arguments) is described once: its overload found from the recorded types, its
arguments rebuilt as meta tensors (traces/schema.py), run on the meta device for its outputs, and described by
the profile's tracer (the same `OpCall`: named arguments, outputs, written arguments, tags); its FLOPs, bytes and
dtype are then the formula registry's (capture/cost.py, capture/traffic.py). Every call of it shares them.

Time: on a GPU trace, each kernel's device time goes to the call whose subtree holds the launch its correlation
id names (each kernel once); kernels with no such call (a CUDA graph replay, a Triton launch, device work tied to
no launch) are unattributed rows, with their names. On a CPU trace (no device work) a call's time is its op's
host duration, as the profile times CPU ops; a collective's runs to the end of its backend's work (gloo's).
"""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import torch

from roofline.capture.collective_ops import COLLECTIVES, NCCL_KERNEL
from roofline.capture.comm import collective_of
from roofline.capture.cost import cost_of
from roofline.capture.kernels import CallTime, Timeline, union_length
from roofline.capture.records import ProfiledCall
from roofline.capture.registry import Cost, none
from roofline.capture.trace import Group, OpCall, Tracer, decomposes, dtype_name, op_info, strip_root
from roofline.capture.traffic import compute_dtype, traffic
from roofline.core.aten_names import packet
from roofline.traces import compiled, graphs, schema
from roofline.traces.model import BACKWARD, FORWARD, NONE, OTHER, PHASE_NAMES, US, Kernel, OpNode, RankTrace

GPU_METHOD = "device kernels per op (the trace's kernels, by their launches' correlation ids)"
CPU_METHOD = "host time of each op (the trace's CPU op durations; no device kernels)"
UNLINKED = "(device work tied to no launch in the trace)"
WORK_PREFIX = "gloo:"  # a collective backend's work ranges: "gloo:all_reduce"
COMM_KEY = ("dtype", "Group size", "Process Group Name")  # what of record_param_comms' arguments a count reads


class Kind(enum.Enum):
    """What the walk does with an op event (module docstring)."""

    RECORD = "record"
    DECOMPOSE = "decompose"
    SKIP = "skip"
    UNKNOWN = "unknown"  # torch has no such op


@dataclass
class Described:
    """One distinct (op, recorded arguments): what the walk does with it and, for a call, its description."""

    kind: Kind
    func: Any = None  # the OpOverload
    call: OpCall | None = None
    cost: Cost | None = None
    traffic: Any = None
    dtype: str = "fp32"
    failed: str | None = None  # why its outputs are unknown (the meta run failed)


@dataclass
class TraceCalls:
    """A rank's calls, ready for capture/records.py and capture/profile_summary.py."""

    calls: list[ProfiledCall]
    timeline: Timeline
    skipped: Counter[str]
    root: str | None  # the module path prefix stripped
    on_gpu: bool
    unknown_ops: Counter[str] = field(default_factory=Counter)  # calls of ops torch does not know
    not_rebuilt: Counter[str] = field(default_factory=Counter)  # calls whose outputs the meta run could not give
    list_dtype: str | None = None  # the dtype assumed for tensor lists (the profiler does not write theirs)
    nodes: list[int] = field(default_factory=list)  # each call's op node (into RankTrace.ops)
    spans: dict[int, list[tuple[float, float]]] = field(default_factory=dict)  # call index -> its kernels' (µs)
    kernel_calls: dict[int, int] = field(default_factory=dict)  # a kernel's correlation id -> its call's index
    compiled_by: Counter[str] = field(default_factory=Counter)  # Triton launches placed, by what (compiled.py)
    compiled_unplaced: Counter[str] = field(default_factory=Counter)  # launches not placed, by why
    replayed_s: float = 0.0  # CUDA graph replays' device time tied to the ops that captured them (graphs.py)


Key = tuple[int, int]  # a call's execution: (its op node, the graph replay's correlation id, NONE: run directly)


@dataclass
class _Work:
    """Device work by execution (`Key`): its kernels, their intervals, its start; and each kernel's correlation
    id's execution (one launch, one execution; a replay's kernels share its launch's: none)."""

    times: dict[Key, CallTime] = field(default_factory=lambda: defaultdict(CallTime))
    spans: dict[Key, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    starts: dict[Key, float] = field(default_factory=dict)
    kernel_calls: dict[int, Key] = field(default_factory=dict)
    replayed_s: float = 0.0  # device time of graph replays tied to the ops that captured them


class _Describer:
    """Describes each distinct (op, arguments) once (module docstring)."""

    def __init__(self, trace: RankTrace, device_key: str, list_dtype: torch.dtype, default_group: Group | None):
        self.trace = trace
        self.key = device_key
        self.list_dtype = list_dtype
        self.group = default_group
        self.tracer = Tracer(lambda: "", lambda: None)
        self.cache: dict[tuple[Any, ...], Described] = {}

    def __call__(self, node: OpNode, comm: dict[str, Any] | None) -> Described:
        group = tuple(str(comm.get(k)) for k in COMM_KEY) if comm else None
        key = (node.name, node.sig, group)
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = self._describe(node, comm)
        return found

    def _describe(self, node: OpNode, comm: dict[str, Any] | None) -> Described:
        name = self.trace.names[node.name]
        sig = self.trace.signatures[node.sig] if node.sig != NONE else None
        func = schema.overload(name, sig)
        if func is None:
            return Described(Kind.UNKNOWN)
        info = op_info(func)
        if info.skip:
            return Described(Kind.SKIP, func)
        try:
            composite = decomposes(func.name(), self.key)
        except RuntimeError:  # an overload the dispatcher does not hold (TorchScript's own)
            composite = False
        if composite:
            return Described(Kind.DECOMPOSE, func)
        if sig is None:  # no shapes: the call is timed, not counted
            call = self._bare(func, info)
            return Described(Kind.RECORD, func, call, none("NB: the trace recorded no input shapes "
                                                           "(record_shapes=False): no FLOPs counted."),
                             traffic(call, none()), "fp32")
        list_dtype = schema.COMM_DTYPES.get(str((comm or {}).get("dtype")), self.list_dtype)
        failed = None
        try:
            args, kwargs = schema.arguments(func, sig, list_dtype)
        except (schema.NotRebuilt, RuntimeError, ValueError, TypeError) as exc:
            call = self._bare(func, info)
            return Described(Kind.RECORD, func, call, none(f"NB: the trace's arguments could not be rebuilt ({exc})."),
                             traffic(call, none()), "fp32", failed=str(exc))
        out = None
        if func.namespace not in ("c10d", "_c10d_functional", "c10d_functional"):
            try:
                out = func(*args, **kwargs)
            except Exception as exc:  # an op without a meta kernel, or one that needs data: outputs unknown
                failed = f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}"
        # the profile's tracer describes the call as it records a whole op (its public `record_whole`: `run`
        # gives the outputs already computed on the meta device)
        self.tracer.record_whole(func, tuple(args), kwargs, lambda: out)
        call = self.tracer.calls.pop()
        if func.namespace in ("c10d", "_c10d_functional", "c10d_functional"):
            call.group = self._group(comm)
        cost = cost_of(call)
        return Described(Kind.RECORD, func, call, cost, traffic(call, cost), compute_dtype(call, cost), failed)

    def _bare(self, func: Any, info: Any) -> OpCall:
        return OpCall(0, info.name, "", None, (), (), {}, (), {}, None, frozenset(), frozenset(), info.tags,
                      packet=func.overloadpacket)

    def _group(self, comm: dict[str, Any] | None) -> Group | None:
        size = (comm or {}).get("Group size")
        if isinstance(size, int) and size > 0:
            name = (comm or {}).get("Process Group Name")
            return Group(size, self.group.backend if self.group else None, str(name) if name is not None else None)
        return self.group


def default_group(trace: RankTrace) -> Group | None:
    """The job's default process group, from the trace's distributedInfo (None outside a job)."""
    if trace.world_size is None:
        return None
    return Group(trace.world_size, trace.backend, "0")


def list_dtype(trace: RankTrace) -> torch.dtype:
    """The dtype assumed for tensor lists (the profiler writes none for them): the trace's most common floating
    tensor dtype, fp32 without one."""
    seen: Counter[str] = Counter()
    for s in trace.signatures:
        for t in s.types:
            if t in schema.DTYPES and schema.DTYPES[t].is_floating_point:
                seen[t] += 1
    return schema.DTYPES[seen.most_common(1)[0][0]] if seen else torch.float32


def trace_calls(trace: RankTrace) -> TraceCalls:
    """The rank's calls and timeline (module docstring)."""
    on_gpu = any(k.dur > 0 for k in trace.kernels)
    assumed = list_dtype(trace)
    describe = _Describer(trace, "CUDA" if on_gpu else "CPU", assumed, default_group(trace))
    comm_of = _comm_args(trace)
    selected: list[int] = []
    owner = [NONE] * len(trace.ops)  # the call (op node index) each op node runs inside, NONE: none
    state = [""] * len(trace.ops)  # "call", "inside" (a call's or a view's subtree) or "" (descended)
    skipped: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    descs: dict[int, Described] = {}
    placed_by: Counter[str] = Counter()
    unplaced: Counter[str] = Counter()
    has_child = _parents(trace)
    for i, node in enumerate(trace.ops):
        parent = node.parent
        if parent != NONE and state[parent] in ("call", "inside"):
            state[i] = "inside"
            owner[i] = owner[parent]
            continue
        if node.compiled != NONE:  # a torch.compile'd Triton launch (traces/compiled.py)
            placed = compiled.place(trace, node, i)
            if isinstance(placed, str):  # no call: its kernels stay unattributed, with their time
                unplaced[placed] += 1
                continue
            placed_by[placed.placed_by] += 1
            descs[i] = Described(Kind.RECORD, None, placed.call, placed.cost, placed.traffic, placed.dtype)
            state[i], owner[i] = "call", i
            selected.append(i)
            continue
        d = describe(node, comm_of.get(i))
        if d.kind is Kind.RECORD or (d.kind is Kind.UNKNOWN and _is_op(trace.names[node.name]) and
                                     not has_child[i]):
            if d.kind is Kind.UNKNOWN:
                unknown[trace.names[node.name]] += 1
            state[i], owner[i] = "call", i
            selected.append(i)
            descs[i] = d
        elif d.kind is Kind.SKIP:
            state[i] = "inside"
            skipped[op_info(d.func).name] += 1
    work = _Work()
    timeline = _timeline(trace, selected, owner, on_gpu, work)
    calls, keys = _profiled(trace, selected, descs, timeline, work)
    by_key = {key: i for i, key in enumerate(keys)}
    nodes = [key[0] for key in keys]
    modules = [c.call.module for c in calls]
    names, root = strip_root(modules)
    for c in calls:
        c.call.module = names[c.call.module]
    not_rebuilt = Counter(c.call.op for c, n in zip(calls, nodes, strict=True) if descs[n].failed)
    return TraceCalls(calls, timeline, skipped, root, on_gpu, unknown, not_rebuilt,
                      dtype_name(assumed) if any(t == schema.TENSOR_LIST for s in trace.signatures for t in s.types)
                      else None, nodes, {by_key[k]: v for k, v in work.spans.items() if k in by_key},
                      {c: by_key[k] for c, k in work.kernel_calls.items() if k in by_key}, placed_by, unplaced,
                      work.replayed_s)


def _is_op(name: str) -> bool:
    """An op's name ('ns::op'), not a range torch names like one ('autograd::engine::evaluate_function: ...')."""
    ns, sep, op = name.partition("::")
    return bool(sep) and ns.isidentifier() and op.replace(".", "_").isidentifier()


def _parents(trace: RankTrace) -> list[bool]:
    has_child = [False] * len(trace.ops)
    for node in trace.ops:
        if node.parent != NONE:
            has_child[node.parent] = True
    return has_child


def _comm_args(trace: RankTrace) -> dict[int, dict[str, Any]]:
    """record_param_comms' arguments, by the op node of the collective above it."""
    out: dict[int, dict[str, Any]] = {}
    for node in trace.ops:
        if node.comm != NONE and node.parent != NONE:
            out.setdefault(node.parent, trace.comms[node.comm])
    return out


def _phases(trace: RankTrace, selected: list[int]) -> dict[int, int]:
    """Each call's phase: the reader's (forward, backward, optimizer), a forward call after the step's backward
    and outside every module turned `other` (gradient clipping, zero_grad) until a module runs again."""
    out: dict[int, int] = {}
    after_backward: dict[int, bool] = defaultdict(bool)  # by thread
    for i in sorted(selected, key=lambda j: trace.ops[j].ts):
        node = trace.ops[i]
        phase = node.phase
        if phase == BACKWARD:
            after_backward[node.thread] = True
        elif phase == FORWARD and after_backward[node.thread]:
            if node.module != NONE:
                after_backward[node.thread] = False
            else:
                phase = OTHER
        out[i] = phase
    return out


def _modules(trace: RankTrace, selected: list[int]) -> dict[int, str]:
    """Each call's module: its own in the forward; in the backward the module of the forward op whose autograd
    node runs it (its sequence number), as the profile names a backward op's module."""
    forward: dict[int, int] = {}
    for node in trace.ops:
        if node.seq != NONE and node.phase != BACKWARD and node.seq not in forward:
            forward[node.seq] = node.module
    out = {}
    for i in selected:
        node = trace.ops[i]
        module = forward.get(node.bwd_seq, node.module) if node.phase == BACKWARD else node.module
        out[i] = trace.names[module] if module != NONE else ""
    return out


def _executions(trace: RankTrace, selected: list[int], work: _Work) -> list[Key]:
    """Each call's executions in time order: its own run, or, for a call captured into a CUDA graph whose
    replays the trace links to it, each replay (the capture itself ran nothing: counted once per replay, never
    twice)."""
    replays: dict[int, list[Key]] = defaultdict(list)
    for key in work.times:
        if key[1] != NONE:
            replays[key[0]].append(key)
    out: list[tuple[float, Key]] = []
    for i in selected:
        if not replays.get(i) or (i, NONE) in work.times:
            out.append((trace.ops[i].ts, (i, NONE)))
        out += [(work.starts[key], key) for key in replays.get(i, [])]
    return [key for _, key in sorted(out)]


def _profiled(trace: RankTrace, selected: list[int], descs: dict[int, Described], timeline: Timeline,
              work: _Work) -> tuple[list[ProfiledCall], list[Key]]:
    """The calls as the profile records them, one per execution, and the timeline keyed by call index."""
    phases = _phases(trace, selected)
    modules = _modules(trace, selected)
    order = _executions(trace, selected, work)
    calls = []
    times = timeline.calls if timeline.method != GPU_METHOD else {}
    by_index: dict[int, CallTime] = {}
    for index, key in enumerate(order):
        i = key[0]
        node, d = trace.ops[i], descs[i]
        if d.call is None:  # an op torch does not know: timed, no formula
            name = trace.names[node.name]
            d.call = OpCall(0, name, "", None, (), (), {}, (), {}, None, frozenset(), frozenset(), frozenset())
            d.cost, d.traffic = none(), traffic(d.call, none())
        region = trace.names[node.region] if node.region != NONE else None
        call = dataclasses.replace(d.call, index=index, module=modules[i], region=region,
                                   phase=PHASE_NAMES[phases[i]])
        t = times.get(i) if timeline.method != GPU_METHOD else work.times.get(key)
        if t is not None:
            by_index[index] = t
        assert d.cost is not None
        calls.append(ProfiledCall(call, d.cost, d.traffic, d.dtype, t.time_s if t else 0.0,
                                  tuple(t.kernels) if t else (), comm=collective_of(call)))
    timeline.calls = by_index  # keyed by call index from here on, as the profile's
    return calls, order


def _owner(trace: RankTrace, k: Kernel, owner: list[int], link: dict[Key, int]) -> tuple[Key | None, bool]:
    """The execution a kernel belongs to (None: no call's), and whether it was replayed from a graph."""
    if k.graph != NONE:
        captured = trace.launches.get(link.get((k.graph, k.node), NONE))
        if captured is not None and captured.op != NONE and owner[captured.op] != NONE:
            return (owner[captured.op], k.correlation), True
    launch = trace.launches.get(k.correlation)
    if launch is None or launch.op == NONE or owner[launch.op] == NONE:
        return None, launch is not None and (launch.graph or k.graph != NONE)
    return (owner[launch.op], NONE), False


def _timeline(trace: RankTrace, selected: list[int], owner: list[int], on_gpu: bool, work: _Work) -> Timeline:
    """Each kernel's time to the execution that ran it (module docstring; traces/graphs.py for replays)."""
    if not on_gpu:
        return _cpu_timeline(trace, selected)
    link = graphs.links(trace)
    unattributed: list[tuple[str, float, str | None]] = []
    graph_us = device_us = 0.0
    intervals = []
    for k in trace.kernels:
        intervals.append((k.ts, k.ts + k.dur))
        device_us += k.dur
        name = trace.names[k.name]
        key, replayed = _owner(trace, k, owner, link)
        if key is None:
            launch = trace.launches.get(k.correlation)
            region = trace.ops[launch.op].region if launch is not None and launch.op != NONE else NONE
            unattributed.append((name, k.dur * US, trace.names[region] if region != NONE else None))
            graph_us += k.dur if replayed else 0.0
            continue
        work.times[key].kernels.append((name, k.dur * US))
        work.spans[key].append((k.ts, k.ts + k.dur))
        work.starts[key] = min(work.starts.get(key, k.ts), k.ts)
        work.replayed_s += k.dur * US if replayed else 0.0
        if not replayed:
            work.kernel_calls[k.correlation] = key
    busy = union_length(intervals) * US
    span = (max(e for _, e in intervals) - min(s for s, _ in intervals)) * US if intervals else 0.0
    return Timeline({}, unattributed, GPU_METHOD, busy, span, device_us * US, graph_s=graph_us * US)


def _cpu_timeline(trace: RankTrace, selected: list[int]) -> Timeline:
    """On the CPU: each call's host time, a collective's to the end of its backend's work (module docstring)."""
    ends = _work_ends(trace, selected)
    times = {}
    for i in selected:
        node = trace.ops[i]
        end = ends.get(i)
        dur = max(node.dur, end - node.ts) if end is not None else node.dur
        times[i] = CallTime(host_s=dur * US)
    total = sum(t.time_s for t in times.values())
    return Timeline(times, [], CPU_METHOD, total, total, total)


def _work_ends(trace: RankTrace, selected: list[int]) -> dict[int, float]:
    """A CPU collective's end: its backend's work range of the same collective, matched in order (the n-th
    all_reduce call with the n-th gloo:all_reduce)."""
    works: dict[str, list[float]] = defaultdict(list)
    for w in sorted(trace.works, key=lambda w: w.ts):
        works[trace.names[w.name][len(WORK_PREFIX):]].append(w.ts + w.dur)
    taken: Counter[str] = Counter()
    out = {}
    for i in sorted(selected, key=lambda j: trace.ops[j].ts):
        entry = COLLECTIVES.get(packet(trace.names[trace.ops[i].name]))
        if entry is None:
            continue
        n = taken[entry[0]]
        if n < len(works[entry[0]]):
            out[i] = works[entry[0]][n]
        taken[entry[0]] += 1
    return out


def is_nccl(name: str) -> bool:
    return NCCL_KERNEL in name.lower()
