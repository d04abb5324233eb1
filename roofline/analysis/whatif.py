"""What-if for a whole-model profile, in time saved (Amdahl): what the step would take if its operators ran
at their roofs, which fusions the dataflow allows and what each saves, and whether the GPU's idle gaps
between kernels are worth removing.

Input: a profile's records (one per aggregated aten op: `time_s` and `roofline_time_s` per call, `count`
calls) and its summary (`doc.extra["profile"]`): the dataflow rows [producer record, consumer record,
bytes per edge, edges] and the wall, kernel and idle times. Pure: no torch, nothing measured here.

- Amdahl: the records' total (sum of time x count; the predicted total, the sum of roofline times, for an
  analytic profile) against the same sum with every memory-bound op at its memory roof, every compute-bound
  op at its compute roof, and both. An op already faster than its roof keeps its time (the what-if never adds
  time); an op without a formula keeps its measured time.
- Fusions the catalog models, found on the dataflow edges, each edge used by one fusion at most (tried in
  this order): batch norm folded into the conv before it (inference), RoPE (the eager rotate-half pattern
  neg -> cat -> mul -> add, or pointwise ops inside a module named *rotary*/*rope*), SiLU x up (SwiGLU),
  residual add + norm, an elementwise op into a GEMM/conv epilogue, and chains of pointwise ops whose outputs
  only pointwise ops read. Bytes saved: each intermediate's read by the fused consumer, plus its write when
  nothing outside the fusion reads it (2 x bytes for a plain chain); the whole op's bytes and time for a
  folded batch norm. Time saved: bytes saved at the memory roof (bytes / peak_bytes_per_s). Occurrences: the
  fewest edges of the fusion's rows (a record aggregates calls, so one row may hold several edges of one
  occurrence). Ranked by time saved. Only ops of one phase fuse (forward, backward, optimizer: a training
  step's phases run apart, and its optimizer's writes are read by the next step).
- Idle gaps: GPU idle time between kernels as a share of the wall time; CUDA graphs or torch.compile
  when it is large.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline.analysis.repeats import index_label, pattern
from roofline.core.aten_names import base_name, op_name, short_name
from roofline.core.document import Document, clean_json
from roofline.core.format import duration, percent
from roofline.core.record import ROOT_MODULE, Record
from roofline.core.summary import ProfileSummary

# -- thresholds (each with its reason)
# Idle gaps under 10% of the wall time are worth less than the usual fusion savings and sit within what the
# profiler's own host overhead adds to the gaps: not worth a message beyond the number.
IDLE_NOTABLE_SHARE = 0.10
# Over half of the wall time idle: the host (Python, dispatch, kernel launches) sets the pace, not the GPU;
# no kernel-level fix helps before the launches are removed.
IDLE_DOMINANT_SHARE = 0.50

# -- op classes (aten op names: without namespace and overload, core/aten_names.py)
GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "_scaled_mm", "_int_mm",
                      "_addmm_activation", "mv"})
CONV_OPS = frozenset({"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "cudnn_convolution",
                      "mkldnn_convolution", "miopen_convolution", "_convolution_mode"})
NORM_OPS = frozenset({"native_layer_norm", "layer_norm", "_fused_rms_norm", "rms_norm", "native_group_norm",
                      "group_norm"})
# Batch norm at inference: the op torch runs in eval mode, and the others when their FLOP rule says inference.
BN_INFERENCE_OPS = frozenset({"_native_batch_norm_legit_no_training"})
BN_OPS = frozenset({"_native_batch_norm_legit_no_training", "_native_batch_norm_legit", "native_batch_norm",
                    "cudnn_batch_norm", "miopen_batch_norm", "batch_norm"})
# Pointwise: the FLOP sources capture/registry.py gives pointwise ops, and the names for records without one.
POINTWISE_SOURCES = frozenset({"rule:pointwise", "catalog:relu", "catalog:add", "catalog:mul", "catalog:gelu",
                               "catalog:silu"})
POINTWISE_NAMES = frozenset({
    "add", "sub", "rsub", "mul", "div", "neg", "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt",
    "rsqrt", "pow", "abs", "clamp", "clamp_min", "clamp_max", "where", "masked_fill", "hardswish", "hardsigmoid",
    "leaky_relu", "elu", "mish", "softplus", "reciprocal", "erf", "sin", "cos", "square", "maximum", "minimum",
    "addcmul", "addcdiv", "lerp", "relu6", "hardtanh", "threshold"})
# Copies an elementwise kernel does as well (dtype casts, layout copies): fusable with their neighbours
# (base names: copy_ is "copy").
COPY_NAMES = frozenset({"_to_copy", "clone", "copy", "contiguous"})
ROPE_MODULE = re.compile(r"rotary|rope", re.IGNORECASE)
NORM_MODULE = re.compile(r"norm", re.IGNORECASE)

KINDS = {  # kind -> (label, what the estimate assumes or ignores)
    "bn_fold": ("BN folded into conv", "NB: inference only: BN's scale and shift folded into the conv's weights "
                "once; the whole BN op goes, the conv's own time unchanged."),
    "rope": ("RoPE fused", "NB: the eager form's temporaries saved at the memory roof; q/k and the cos/sin tables "
             "read by several of its ops not counted (a fused kernel reads them once)."),
    "swiglu": ("SwiGLU", "NB: silu's output written and read back saved at the memory roof; the fused kernel as "
               "efficient as the mul alone."),
    "add_norm": ("residual add + norm", "NB: the norm's read of the sum saved (its write too when nothing else "
                 "reads it); the fused kernel as efficient as the norm alone."),
    "epilogue": ("GEMM/conv epilogue", "NB: the product's output written and read back by the elementwise op "
                 "saved at the memory roof; the GEMM/conv as fast with the epilogue as without."),
    "pointwise": ("pointwise chain", "NB: intermediates between the ops saved at the memory roof; an input "
                  "several of the ops read still counted per op; the removed launches' overhead not counted."),
}
KIND_ORDER = tuple(KINDS)


# -- the result ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scenario:
    """The records' total with some ops at their roofs."""

    name: str  # "memory", "compute", "both"
    time_s: float
    saved_s: float
    share: float  # saved / the records' total
    records: int  # records whose time changed


@dataclass(frozen=True)
class Amdahl:
    """The whole region with memory-bound, compute-bound, and all ops at their roofs."""

    total_s: float  # sum over records of time_s x count
    memory: Scenario
    compute: Scenario
    both: Scenario
    unmodelled_s: float  # time of records without a roof (no formula), kept as measured


@dataclass(frozen=True)
class Fusion:
    """One fusion the dataflow allows: its records, how often it occurs, the bytes and time it saves."""

    kind: str  # a key of KINDS
    ops: tuple[str, ...]  # short op names of its records, in program order
    module: str  # the module its records share ("" for the root module)
    records: tuple[int, ...]  # record indices
    occurrences: int
    bytes_saved: float  # over all occurrences
    saved_s: float | None  # over all occurrences; None when the roof's bandwidth is unknown
    share: float | None  # saved_s / the records' total
    detected: str  # how it was found: "dataflow", "structure", "module name"
    assumes: str  # the NB line of its kind
    repeats: int = 1  # fusions it stands for: the same in each of repeated blocks (analysis/repeats.py)

    @property
    def label(self) -> str:
        return KINDS[self.kind][0]

    @property
    def bytes_per_occurrence(self) -> float:
        return self.bytes_saved / self.occurrences if self.occurrences else 0.0

    @property
    def title(self) -> str:
        """'addmm -> gelu'; a chain of more than four ops is cut: 'mul -> add -> neg -> cat +2'."""
        head = " -> ".join(self.ops[:4])
        return head + (f" +{len(self.ops) - 4}" if len(self.ops) > 4 else "")


@dataclass(frozen=True)
class IdleGaps:
    """GPU idle time between kernels against the wall time, and what to do about it."""

    idle_s: float
    wall_s: float
    share: float
    instrumented: bool  # taken from the profiled run (the profiler widens the gaps): an upper bound
    per_call_s: float | None  # idle time per op call
    notable: bool  # share >= IDLE_NOTABLE_SHARE
    message: str


@dataclass(frozen=True)
class WhatIf:
    """Everything the what-if says of one profile."""

    predicted: bool  # an analytic profile: totals are predicted (roofline) times, no Amdahl
    total_s: float  # the records' total: measured, or predicted
    amdahl: Amdahl | None
    fusions: tuple[Fusion, ...]
    idle: IdleGaps | None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (for --json): the fields, each fusion with its label, title and bytes per occurrence."""
        out = dataclasses.asdict(self)
        out["fusions"] = [{**dataclasses.asdict(f), "label": f.label, "title": f.title,
                           "bytes_per_occurrence": f.bytes_per_occurrence} for f in self.fusions]
        return clean_json(out)


# -- Amdahl -------------------------------------------------------------------------------------------------

def record_total(r: Record, predicted: bool = False) -> float:
    """A record's time over its calls: time_s x count (roofline time when `predicted`); 0 without one."""
    per_call = r.roofline_time_s if predicted else r.time_s
    return (per_call or 0.0) * (r.count or 1)


def records_total(records: Iterable[Record], predicted: bool = False) -> float:
    """Sum over records of time x count (roofline time when `predicted`)."""
    return sum(record_total(r, predicted) for r in records)


def amdahl(records: Sequence[Record]) -> Amdahl:
    """The measured total against the same with memory-bound, compute-bound, and all ops at their roofs."""
    total = records_total(records)
    sums = {"memory": 0.0, "compute": 0.0, "both": 0.0}
    moved = {"memory": 0, "compute": 0, "both": 0}
    unmodelled = 0.0
    for r in records:
        t = record_total(r)
        roof = r.roofline_time_s
        if roof is None or r.time_s is None or r.bound not in ("memory", "compute"):
            unmodelled += t if roof is None else 0.0
            for k in sums:
                sums[k] += t
            continue
        at_roof = min(t, roof * (r.count or 1))  # never slower than measured
        for k in sums:
            if k in (r.bound, "both"):
                sums[k] += at_roof
                moved[k] += at_roof < t
            else:
                sums[k] += t
    scenarios = {k: Scenario(k, v, total - v, (total - v) / total if total > 0 else 0.0, moved[k])
                 for k, v in sums.items()}
    return Amdahl(total, scenarios["memory"], scenarios["compute"], scenarios["both"], unmodelled)


# -- fusions ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Row:
    producer: int
    consumer: int
    bytes: float  # per edge
    edges: int

    @property
    def total(self) -> float:
        return self.bytes * self.edges


def phase_of(r: Record) -> str:
    """A record's phase of the step; records made before phases existed are forward ops."""
    return r.phase or "forward"


# How the views mark a module's backward ops (the module whose forward created their autograd nodes), and the
# name they give the optimizer's ops (no module's).
BACKWARD_MARK = " [bwd]"
OPTIMIZER = "(optimizer)"


def module_label(r: Record, path: str | None = None) -> str:
    """The module a view shows for a record (`path`: its module group, else its module): marked [bwd] for a
    backward op; the optimizer's ops as (optimizer). The root module's own ops keep "" (the views name it)."""
    if r.phase == "optimizer":
        return OPTIMIZER
    path = r.module or "" if path is None else path
    return (path or ROOT_MODULE) + BACKWARD_MARK if r.phase == "backward" else path


def _rows(dataflow: Iterable[Sequence[float]], records: Sequence[Record]) -> tuple[list[_Row], set[int]]:
    """The summary's dataflow rows between distinct records of one phase, and the records that feed themselves
    (one call's output read by another call of the same record, as a layer's two residual adds: never a fusion,
    but that output is needed, so its write is never saved). A row across phases is no fusion: the backward,
    the optimizer and the next step's forward run at other times (an optimizer's update of a weight and the
    next forward's read of it are a step apart)."""
    out, self_fed = [], set()
    n = len(records)
    for row in dataflow:
        p, c, b, k = int(row[0]), int(row[1]), float(row[2]), int(row[3])
        if 0 <= p < n and 0 <= c < n and b > 0 and k > 0 and phase_of(records[p]) == phase_of(records[c]):
            if p == c:
                self_fed.add(p)
            else:
                out.append(_Row(p, c, b, k))
    return out, self_fed


def is_pointwise(r: Record) -> bool:
    """An elementwise op or an elementwise copy (dtype cast, layout copy): fusable with its neighbours."""
    name = base_name(r.op)
    return r.flops_source in POINTWISE_SOURCES or name in POINTWISE_NAMES or name in COPY_NAMES


def _bn_inference(r: Record) -> bool:
    name = op_name(r.op)
    source = r.flops_source or ""
    catalog_inference = source == "catalog:batchnorm" and not (r.params or {}).get("training")
    return name in BN_INFERENCE_OPS or (name in BN_OPS and (source.endswith("inference") or catalog_inference))


def _in_norm_module(r: Record) -> bool:
    """Runs in a module whose own name says norm ("layers.0.post_attention_layernorm", "model.norm")."""
    return bool(NORM_MODULE.search((r.module or "").rsplit(".", 1)[-1]))


def _residual_add(r: Record) -> bool:
    """An add of two tensors of one shape outside a norm module (a broadcast add is a bias, an add of a
    scalar is a norm's epsilon, not a residual); a record without input shapes is given the benefit."""
    if base_name(r.op) != "add" or _in_norm_module(r):
        return False
    shapes = r.input_shapes
    return shapes is None or (len(shapes) == 2 and shapes[0] == shapes[1])


def _common_module(mods: list[str]) -> str:
    """The module path the records share ('layers.0.mlp'); without one, their modules listed ('conv1, bn1'),
    those equal but for a layer index as one ('layers.{0..15}.self_attn': analysis/repeats.py); "" when every
    record ran in the root module itself."""
    parts = [m.split(".") if m else [] for m in mods]
    common: list[str] = []
    for names in zip(*parts, strict=False):
        if len(set(names)) != 1:
            break
        common.append(names[0])
    alike: dict[str, list[str]] = defaultdict(list)
    for m in dict.fromkeys(m for m in mods if m):
        alike[pattern(m)].append(m)
    return ".".join(common) or ", ".join(index_label(same) for same in alike.values())


class _Finder:
    """Claims dataflow rows for fusions, each row once, pattern by pattern (module docstring)."""

    def __init__(self, records: Sequence[Record], rows: tuple[list[_Row], set[int]], total: float,
                 predicted: bool) -> None:
        self.records, self.total, self.predicted = records, total, predicted
        self.rows, self.self_fed = rows
        self.claimed: set[int] = set()
        self.out: dict[int, list[int]] = defaultdict(list)  # record -> its rows as producer
        self.into: dict[int, list[int]] = defaultdict(list)  # record -> its rows as consumer
        for i, row in enumerate(self.rows):
            self.out[row.producer].append(i)
            self.into[row.consumer].append(i)
        self.folded: dict[int, int] = {}  # batch norm -> the conv it folds into (its epilogue is the conv's)
        self.grouped: set[int] = set()  # records inside a RoPE group (one fused kernel: no other fusion)
        self.fusions: list[Fusion] = []

    def op(self, i: int) -> str:
        return base_name(self.records[i].op)

    def consumers(self, i: int, name: str) -> set[int]:
        """Records named `name` that read record i's output."""
        return {self.rows[j].consumer for j in self.out[i] if self.op(self.rows[j].consumer) == name}

    def producers(self, i: int, name: str) -> set[int]:
        """Records named `name` whose output record i reads."""
        return {self.rows[j].producer for j in self.into[i] if self.op(self.rows[j].producer) == name}

    def free(self, i: int) -> bool:
        row = self.rows[i]
        return i not in self.claimed and row.producer not in self.grouped and row.consumer not in self.grouped

    def bandwidth(self, recs: Iterable[int]) -> float | None:
        return next((self.records[i].peak_bytes_per_s for i in recs if self.records[i].peak_bytes_per_s), None)

    def add(self, kind: str, rows: list[int], detected: str, whole: int | None = None) -> None:
        """A fusion over `rows` (claimed here); `whole`: a record whose op disappears entirely (its bytes and
        time are the saving, per occurrence of the rows)."""
        self.claimed.update(rows)
        recs = sorted({self.rows[i].producer for i in rows} | {self.rows[i].consumer for i in rows})
        if kind == "epilogue":  # a folded batch norm's epilogue is its conv's: show the conv too
            recs = sorted({*recs, *(self.folded[i] for i in recs if i in self.folded)})
        occurrences = min(self.rows[i].edges for i in rows)  # a row may hold several edges of one occurrence
        if whole is not None:
            r = self.records[whole]
            per_call = r.roofline_time_s if self.predicted else r.time_s
            nbytes = (r.bytes or 0.0) * occurrences
            saved: float | None = None if per_call is None else per_call * occurrences
        else:
            nbytes = sum(self.rows[i].total for i in rows)  # every intermediate's read by the fused consumer
            mine = set(rows)
            for p in {self.rows[i].producer for i in rows}:
                if set(self.out[p]) <= mine and p not in self.self_fed:  # nothing else reads it: its write goes
                    nbytes += max(self.rows[i].total for i in rows if self.rows[i].producer == p)
            bw = self.bandwidth(recs)
            saved = nbytes / bw if bw else None
        share = saved / self.total if saved is not None and self.total > 0 else None
        self.fusions.append(Fusion(
            kind, tuple(short_name(self.records[i].op) for i in self.flow_order(recs)),
            module_label(self.records[recs[0]], _common_module([self.records[i].module or "" for i in recs])),
            tuple(recs), occurrences, nbytes, saved,
            share, detected, KINDS[kind][1]))

    def flow_order(self, recs: list[int]) -> list[int]:
        """`recs` producers first (the dataflow between them), for display: a record aggregates calls, so its
        index (its first call) may come after a later call's consumer. A cycle (one record on both sides)
        falls back to record order."""
        left = set(recs)
        inner = [self.rows[j] for r in recs for j in self.out[r] if self.rows[j].consumer in left]
        order: list[int] = []
        while left:
            ready = [r for r in left if not any(row.consumer == r and row.producer in left for row in inner)]
            nxt = min(ready or left)
            order.append(nxt)
            left.remove(nxt)
        return order

    # -- the patterns, in claiming order
    def bn_fold(self) -> None:
        for i, row in enumerate(self.rows):
            if (self.free(i) and op_name(self.records[row.producer].op) in CONV_OPS
                    and _bn_inference(self.records[row.consumer])):
                self.folded[row.consumer] = row.producer
                self.add("bn_fold", [i], "dataflow", whole=row.consumer)

    def rope(self) -> None:
        by_module: dict[str, set[int]] = defaultdict(set)  # one fused kernel per module (q and k together)
        for i, row in enumerate(self.rows):
            if not (self.free(i) and self.op(row.producer) == "neg" and self.op(row.consumer) == "cat"):
                continue
            muls = self.consumers(row.consumer, "mul")  # cat(-x2, x1) * sin
            adds = {a for m in muls for a in self.consumers(m, "add")}  # x * cos + that
            if adds:
                group = {row.producer, row.consumer, *muls, *adds}
                group |= {m for a in adds for m in self.producers(a, "mul")}  # x * cos
                by_module[self.records[row.consumer].module or ""] |= group
        for group in by_module.values():
            self._group("rope", group, "structure")
        named: dict[str, set[int]] = defaultdict(set)
        for i, row in enumerate(self.rows):
            p, c = self.records[row.producer], self.records[row.consumer]
            if (self.free(i) and ROPE_MODULE.search(c.module or "") and ROPE_MODULE.search(p.module or "")
                    and all(is_pointwise(r) or base_name(r.op) == "cat" for r in (p, c))):
                named[c.module or ""] |= {row.producer, row.consumer}
        for group in named.values():
            self._group("rope", group, "module name")

    def _group(self, kind: str, group: set[int], detected: str) -> None:
        rows = [i for i, row in enumerate(self.rows)
                if i not in self.claimed and row.producer in group and row.consumer in group]
        if rows:
            self.add(kind, rows, detected)
            self.grouped |= group

    def pairs(self, kind: str, producer: Any, consumer: Any, detected: str = "dataflow") -> None:
        """One fusion per producer record and consumer module: its free rows into consumers that qualify
        (a norm written as several ops reads the sum in several of them; a producer record that aggregates
        calls feeding other modules makes one fusion for each)."""
        chosen: dict[tuple[int, str], list[int]] = defaultdict(list)
        for i, row in enumerate(self.rows):
            if self.free(i) and producer(row.producer) and consumer(row.consumer):
                chosen[(row.producer, self.records[row.consumer].module or "")].append(i)
        for rows in chosen.values():
            self.add(kind, rows, detected)

    def add_norm(self) -> None:
        def norm_op(c: int) -> bool:
            return op_name(self.records[c].op) in NORM_OPS

        def in_norm_module(c: int) -> bool:  # a norm written as pointwise ops (Hugging Face's RMSNorm)
            return not norm_op(c) and _in_norm_module(self.records[c])

        residual = {i for i, r in enumerate(self.records) if _residual_add(r)}
        self.pairs("add_norm", lambda p: p in residual, norm_op)
        self.pairs("add_norm", lambda p: p in residual, in_norm_module, "module name")

    def find(self) -> list[Fusion]:
        self.bn_fold()
        self.rope()
        self.pairs("swiglu", lambda p: self.op(p) == "silu", lambda c: self.op(c) == "mul")
        self.add_norm()
        product = {i for i, r in enumerate(self.records) if op_name(r.op) in GEMM_OPS | CONV_OPS} | set(self.folded)
        pointwise = {i for i, r in enumerate(self.records) if is_pointwise(r)}
        self.pairs("epilogue", lambda p: p in product, lambda c: c in pointwise)
        self.chains(pointwise)
        return sorted(self.fusions, key=lambda f: (-(f.saved_s or 0.0), -f.bytes_saved, f.records))

    def chains(self, pointwise: set[int]) -> None:
        """Pointwise ops whose output only pointwise ops read, with those readers: one fusion per connected set.
        (A pointwise op whose output something else needs too is left alone: fused into its reader it would
        be recomputed there from its own inputs, which moves no fewer bytes.)"""
        parent: dict[int, int] = {}

        def root(x: int) -> int:
            while parent.setdefault(x, x) != x:
                x = parent[x]
            return x

        rows = [i for p in sorted(pointwise) if self.out[p]
                and all(self.free(j) and self.rows[j].consumer in pointwise for j in self.out[p])
                for i in self.out[p]]
        for i in rows:
            parent[root(self.rows[i].producer)] = root(self.rows[i].consumer)
        groups: dict[int, list[int]] = defaultdict(list)
        for i in rows:
            groups[root(self.rows[i].producer)].append(i)
        for members in groups.values():
            self.add("pointwise", members, "dataflow")


def fusions(records: Sequence[Record], dataflow: Iterable[Sequence[float]], total_s: float,
            predicted: bool = False) -> list[Fusion]:
    """The fusions the dataflow allows, ranked by time saved (module docstring); `total_s` for the shares."""
    return _Finder(records, _rows(dataflow, records), total_s, predicted).find()


# -- idle gaps ----------------------------------------------------------------------------------------------

def idle_gaps(summary: ProfileSummary | Mapping[str, Any]) -> IdleGaps | None:
    """GPU idle time between kernels against the wall time: from the plain (uninstrumented) call when the
    profile has one, else from the profiled run (an upper bound). None without a GPU timeline."""
    s = ProfileSummary.of(summary)
    if s.gpu_idle_uninstrumented_s is not None and s.wall_uninstrumented_s:
        idle, wall, instrumented = float(s.gpu_idle_uninstrumented_s), float(s.wall_uninstrumented_s), False
    elif s.gpu_idle_s is not None and s.wall_s:
        idle, wall, instrumented = float(s.gpu_idle_s), float(s.wall_s), True
    else:
        return None
    share = idle / wall
    calls = s.calls
    per_call = idle / calls if calls else None
    where = (" (the profiled run, whose instrumentation widens the gaps: an upper bound)" if instrumented
             else " (a plain call)")
    said = f"GPU idle between kernels: {duration(idle)}, {percent(share, 0)} of the {duration(wall)} wall time{where}"
    if per_call is not None:
        said += f", {duration(per_call)} per op call"
    notable = share >= IDLE_NOTABLE_SHARE
    if not notable:
        message = said + ": small; launches are not what holds this step back."
    else:
        lead = ("the host sets the pace (launch-bound): remove the launches before tuning kernels. "
                if share >= IDLE_DOMINANT_SHARE else "")
        message = (f"{said}: {lead}CUDA graphs (torch.cuda.graphs, or torch.compile(mode=\"reduce-overhead\")) "
                   "replay the kernels without the host and remove most of it; torch.compile also fuses pointwise "
                   "ops, so fewer kernels launch.")
    return IdleGaps(idle, wall, share, instrumented, per_call, notable, message)


# -- everything ---------------------------------------------------------------------------------------------

def what_if(records: Sequence[Record], summary: ProfileSummary | Mapping[str, Any] | None = None) -> WhatIf:
    """The what-if of a profile: Amdahl at the roofs (timed profiles), fusions, idle gaps. `summary`: the
    profile's (a stored one's dict reads too)."""
    s = ProfileSummary.of(summary)
    predicted = s.analytic or not any(r.time_s is not None for r in records)
    total = records_total(records, predicted)
    notes = ["Fusions that share an op add up only when one kernel does both (a GEMM with a SwiGLU epilogue)."]
    if predicted:
        notes.insert(0, "Predicted: an analytic profile's ops already run at their roofs; fusions save bytes at "
                        "the memory roof.")
    found = fusions(records, s.dataflow, total, predicted)
    return WhatIf(predicted, total, None if predicted else amdahl(records), tuple(found), idle_gaps(s),
                  tuple(notes))


def document_what_if(doc: Document) -> WhatIf:
    """`what_if` of a profile document (its records and `extra["profile"]`)."""
    return what_if(doc.records, doc.extra.get("profile"))


__all__ = ["Amdahl", "Fusion", "IdleGaps", "Scenario", "WhatIf", "amdahl", "document_what_if", "fusions",
           "idle_gaps", "is_pointwise", "record_total", "records_total", "what_if"]
