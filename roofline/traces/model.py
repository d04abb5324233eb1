"""What the reader keeps of one rank's torch.profiler trace (traces/read.py): typed, compact, torch-free.

Names and argument lists are interned once per trace (`RankTrace.names`, `RankTrace.signatures`), so a model's
repeated layers cost one entry each; every event kept is a small named tuple of numbers. Times stay in the trace's
unit, microseconds (`US` converts), on the trace's clock (one clock for every rank of a host; ranks of several
hosts are as aligned as their clocks are).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

US = 1e-6  # the trace's times are in microseconds

# An op node's phase, as the reader sees it on the stack of ranges above the op (traces/read.py); the calls turn
# FORWARD after a backward into `other` (traces/calls.py).
FORWARD, BACKWARD, OPTIMIZER, OTHER = range(4)
PHASE_NAMES = ("forward", "backward", "optimizer", "other")
NONE = -1  # an absent index (no parent, no module, no signature)


class Signature(NamedTuple):
    """An op's recorded arguments, as the profiler wrote them (`record_shapes=True`): one entry per schema
    argument in order, tensors as their dims and dtype name, scalars as their text."""

    dims: tuple[Any, ...]  # "Input Dims": [8, 64] for a tensor, [] for a scalar or None, [[...], ...] for a list
    types: tuple[str, ...]  # "Input type": "float", "c10::BFloat16", "Scalar", "ScalarList", "TensorList", ""
    strides: tuple[Any, ...] | None  # "Input Strides" (None where the profiler wrote none: contiguous assumed)
    concrete: tuple[Any, ...] | None  # "Concrete Inputs": a scalar's text ("1", "[32]", "False"), "" otherwise


class OpNode(NamedTuple):
    """One CPU op event (`cat: cpu_op`) and where it ran: the ranges above it on its thread."""

    name: int  # into RankTrace.names
    sig: int  # into RankTrace.signatures (NONE: no shapes recorded)
    ts: float  # µs
    dur: float  # µs
    parent: int  # the nearest enclosing op node (NONE: a top-level op of its thread)
    module: int  # the nn.Module path (into names; NONE: outside every module)
    region: int  # the innermost record_function range the user named (into names; NONE: none)
    phase: int  # FORWARD, BACKWARD, OPTIMIZER, OTHER
    step: int  # the ProfilerStep#N it ran in (NONE: outside steps)
    seq: int  # the autograd sequence number the profiler gave it (NONE: none)
    bwd_seq: int  # in backward: the sequence number of the autograd node running it (its forward op's)
    thread: int  # into RankTrace.names: "pid/tid"
    comm: int  # into RankTrace.comms (record_param_comms' arguments under this op; NONE: none)
    compiled: int  # into RankTrace.compiled (a torch.compile'd Triton launch's own arguments; NONE: not one)


class Launch(NamedTuple):
    """A runtime call that put work on the device (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync,
    cudaGraphLaunch, ...), tied to its kernels by the correlation id."""

    op: int  # the innermost op node around it (NONE: none)
    graph: bool  # a CUDA graph replay (cudaGraphLaunch, or inside CUDAGraph.replay)
    owner: int  # the innermost non-aten op around it (a Triton launch's, into names; NONE: none)
    ts: float  # µs
    thread: int  # into RankTrace.names: "pid/tid"


class CaptureMark(NamedTuple):
    """A CUDA stream capture's begin or end on a thread (cudaStreamBeginCapture, cudaStreamEndCapture): the
    launches between them were captured into a graph, not run (traces/graphs.py)."""

    thread: int  # into RankTrace.names
    ts: float  # µs
    begin: bool


class CompiledLaunch(NamedTuple):
    """What Inductor writes on the CPU op it wraps a Triton launch in while the profiler runs
    (torch/_inductor/runtime/triton_heuristics.py `get_profiler_kwargs`): the generated source's path and, with
    `config.benchmark_kernel` (FLOPs and bytes) or `config.profile_bandwidth` (bytes), its own estimates."""

    kernel_file: str | None
    kernel_flop: float | None  # "kernel_flop"
    kernel_num_gb: float | None  # "kernel_num_gb": bytes read and written, in GB (1e9)


class Kernel(NamedTuple):
    """Device work: a kernel, memcpy or memset (`cat: kernel, gpu_memcpy, gpu_memset`)."""

    name: int  # into RankTrace.names
    ts: float  # µs
    dur: float  # µs
    device: int
    stream: int
    correlation: int  # its launch's (NONE: none); a graph replay's kernels all carry the graph launch's
    graph: int  # "graph id": the CUDA graph it was replayed from (NONE: not from a graph)
    node: int  # "graph node id": its node in that graph (NONE: not from a graph)


class Range(NamedTuple):
    """A range of the trace the analysis reads whole: a ProfilerStep#N, or a collective backend's work
    (gloo:all_reduce on the backend's own thread)."""

    name: int  # into RankTrace.names
    ts: float  # µs
    dur: float  # µs
    number: int  # the step's N (NONE for a backend's work)


@dataclass
class RankTrace:
    """One trace file, read: its metadata and the events the roofline needs."""

    path: str
    rank: int | None = None  # distributedInfo's
    world_size: int | None = None
    backend: str | None = None  # "nccl", "gloo"
    groups: list[dict[str, Any]] = field(default_factory=list)  # distributedInfo's pg_config
    devices: list[str] = field(default_factory=list)  # deviceProperties' names, by device index
    names: list[str] = field(default_factory=list)
    signatures: list[Signature] = field(default_factory=list)
    ops: list[OpNode] = field(default_factory=list)
    launches: dict[int, Launch] = field(default_factory=dict)  # by correlation id
    kernels: list[Kernel] = field(default_factory=list)
    steps: list[Range] = field(default_factory=list)
    works: list[Range] = field(default_factory=list)  # collectives' work on the backend's threads (gloo)
    comms: list[dict[str, Any]] = field(default_factory=list)  # record_param_comms' arguments
    compiled: list[CompiledLaunch] = field(default_factory=list)  # Inductor's launch arguments
    capture_marks: list[CaptureMark] = field(default_factory=list)  # CUDA stream captures' begins and ends
    events: int = 0  # trace events read
    shapes: bool = False  # whether the profiler recorded input shapes
    parse_s: float = 0.0  # seconds the parse took
    peak_bytes: int | None = None  # tracemalloc's peak during the parse, when measured

    def name(self, i: int) -> str | None:
        return self.names[i] if i >= 0 else None

    @property
    def span_us(self) -> tuple[float, float] | None:
        """The first and last µs any kept event covers."""
        ends = [(o.ts, o.ts + o.dur) for o in self.ops] + [(k.ts, k.ts + k.dur) for k in self.kernels]
        if not ends:
            return None
        return min(s for s, _ in ends), max(e for _, e in ends)
