"""The typed results record: one operator (or kernel) on one device, analytic and (when timed) measured.

A `Record` is built in one place (`analytic_record`, then `with_time` and `dataclasses.replace`) and
serialises to schema v1: `to_dict()` writes the field names the README lists, `from_dict()` reads them back.
A record read from a file remembers which keys it had and in what order, so a read-then-write round trip
gives the same JSON; a record built here writes its fields in the class's order, leaving out optional
fields that are None. Keys this version does not know are kept in `extra` and written back unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

from roofline.core.dtypes import DType
from roofline.core.model import Ceilings, RooflinePoint, achieved, choose_memory, choose_pipe

S = TypeVar("S", bound="_Serial")


@dataclass(frozen=True)
class _Serial:
    """Dataclass <-> JSON object with remembered key order (see the module docstring)."""

    # Fields written even when None (records built here); others are left out when None.
    ALWAYS: ClassVar[frozenset[str]] = frozenset()
    # Fields holding another _Serial (by field name).
    NESTED: ClassVar[dict[str, type[_Serial]]] = {}

    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, kw_only=True)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False, kw_only=True)

    @classmethod
    def _names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name not in ("extra", "keys")]

    def _value(self, name: str) -> Any:
        v = getattr(self, name)
        return v.to_dict() if isinstance(v, _Serial) else v

    def to_dict(self) -> dict[str, Any]:
        names = self._names()
        if self.keys is None:
            out = {n: self._value(n) for n in names if getattr(self, n) is not None or n in self.ALWAYS}
            out.update(self.extra)
            return out
        known = set(names)
        out = {}
        for k in self.keys:
            if k in known:
                out[k] = self._value(k)
            elif k in self.extra:
                out[k] = self.extra[k]
        for n in names:  # set after the record was read (advice added to a loaded record, say)
            if n not in out and getattr(self, n) is not None:
                out[n] = self._value(n)
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out

    @classmethod
    def from_dict(cls: type[S], data: Mapping[str, Any]) -> S:
        names = set(cls._names())
        kw: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for k, v in data.items():
            if k not in names:
                extra[k] = v
            elif k in cls.NESTED and isinstance(v, Mapping):
                kw[k] = cls.NESTED[k].from_dict(v)
            else:
                kw[k] = v
        return cls(**kw, extra=extra, keys=tuple(data))


@dataclass(frozen=True)
class Timing(_Serial):
    """How the samples were taken (`record.timing`)."""

    # Every field but phases_s (added by the runner) and the cupti timer's two is written, None as null, as the
    # timers always did; those three only when they hold a value.
    ALWAYS: ClassVar[frozenset[str]] = frozenset({
        "method", "warmup_calls", "warmup_s", "reps", "estimate_s", "l2_flush", "flush_bytes", "stats", "notes",
        "timer_overhead_s", "sm_clock_samples_mhz", "warmup_min_s", "after_compute_s", "capture_s",
        "host_phases_s"})

    method: str | None = None
    warmup_calls: int | None = None
    warmup_s: float | None = None
    reps: int | None = None
    estimate_s: float | None = None
    l2_flush: bool | None = None
    flush_bytes: int | None = None
    stats: dict[str, float] | None = None
    notes: list[str] | None = None
    timer_overhead_s: float | None = None
    sm_clock_samples_mhz: list[float] | None = None
    warmup_min_s: float | None = None
    after_compute_s: float | None = None
    capture_s: float | None = None
    host_phases_s: dict[str, float] | None = None
    phases_s: dict[str, float] | None = None
    kernel_span_s: float | None = None  # cupti: the kernels' first start to last end (median over samples)
    launch_gap_s: float | None = None  # cupti: GPU idle per call when the operator is launched eagerly


@dataclass(frozen=True)
class Clocks(_Serial):
    """The clocks and power state while the samples ran (`record.clocks`); `sm_mhz` holds median/min/max."""

    sm_mhz: dict[str, float] | None = None
    mem_mhz: dict[str, float] | None = None
    power_w: dict[str, float] | None = None
    temperature_c: dict[str, float] | None = None
    max_sm_mhz: float | None = None
    max_mem_mhz: float | None = None
    power_limit_w: float | None = None
    limited_by: list[str] | None = None
    readings: int | None = None
    sm_mhz_nvml: dict[str, float] | None = None
    sm_mhz_between_kernels: dict[str, float] | None = None
    sm_mhz_in_kernel: dict[str, float] | None = None
    in_kernel_trace: dict[str, Any] | None = None
    sm_mhz_source: str | None = None

    @property
    def sm_median_mhz(self) -> float | None:
        return (self.sm_mhz or {}).get("median")


@dataclass(frozen=True)
class Counters(_Serial):
    """What the kernel(s) of one call really did, as Nsight Compute counted it (`record.counters`; schema v1,
    added): bytes at each memory level, FLOPs per pipe, ncu's duration and SM clock, and what follows from them
    beside the model (`core.counters.derive`). A counter ncu could not collect is None, never 0."""

    source: str | None = None  # "ncu <version>" or the imported report's path
    kernels: int | None = None  # kernels summed into this call
    duration_s: float | None = None
    sm_clock_mhz: float | None = None  # duration-weighted over the kernels
    dram_bytes_read: float | None = None
    dram_bytes_written: float | None = None
    dram_bytes: float | None = None
    stored_bytes: float | None = None  # what the SMs wrote into the L2: every byte stored, in DRAM yet or not
    l2_bytes: float | None = None
    l1_bytes: float | None = None
    tensor_flops: dict[str, float] | None = None  # per source precision (bf16, fp16, tf32, fp8, fp64, int8)
    fp32_flops: float | None = None
    fp64_flops: float | None = None
    fp16_flops: float | None = None
    flops: float | None = None  # tensor + FP32 + FP64 + FP16
    # Derived (core.counters.derive): against the model's minimum bytes and FLOPs, and per memory level.
    excess_traffic: float | None = None  # (DRAM bytes read + stored bytes) / the model's minimum bytes
    read_excess: float | None = None  # DRAM bytes read / the model's minimum bytes read
    flops_ratio: float | None = None
    intensity_dram: float | None = None
    intensity_l2: float | None = None
    intensity_l1: float | None = None


# The fields every record has (schema v1); a document whose record lacks one is refused.
# The module name shown for ops the profiled root module runs itself (its path is ""): one word in every
# view (terminal, check, HTML).
ROOT_MODULE = "(root)"
# What a CPU timing taken on a busy machine says first in its notes, and so the record's
# (`measuring.timing_cpu`, `measuring.machine_load`): `roofline check` finds the records timed on a busy machine by it.
BUSY_NOTE = "busy machine while timing"

REQUIRED = ("op", "params", "dtype", "flops", "bytes_read", "bytes_written", "bytes", "arithmetic_intensity", "gpu",
            "peak_flops_per_s", "peak_bytes_per_s", "ridge_point", "bound", "roofline_time_s")
# Of those, the ones that must be non-negative numbers.
NUMERIC = ("flops", "bytes_read", "bytes_written", "bytes", "peak_flops_per_s", "peak_bytes_per_s", "ridge_point",
           "roofline_time_s")
# Of those, the ones a profile record leaves null for an operator with no FLOP or byte formula (listed with
# its time, never counted as 0).
NULLABLE = ("flops", "bytes_read", "bytes_written", "bytes", "roofline_time_s")


@dataclass(frozen=True)
class Record(_Serial):
    """One operator on one device: the model's prediction and, when timed, the measurement (schema v1)."""

    ALWAYS: ClassVar[frozenset[str]] = frozenset({"variant", "tensor_cores", "notes", "clocks"})
    NESTED: ClassVar[dict[str, type[_Serial]]] = {"timing": Timing, "clocks": Clocks, "counters": Counters}

    op: str
    variant: str | None
    params: dict[str, Any]
    dtype: str
    flops: float | None  # None only in a profile record of an operator without a formula (NULLABLE)
    bytes_read: float | None
    bytes_written: float | None
    bytes: float | None
    bytes_by_kind: dict[str, float] | None = None
    traffic: dict[str, Any] | None = None
    # Elementwise FLOPs beside the matrix products of a tensor-core operator (attention's softmax, a GEMM's or
    # convolution's epilogue): not in `flops`, on no roof, in no time (`ops.base.Operator.extra_flops`).
    extra_flops: float | None = None
    arithmetic_intensity: float | None = 0.0
    gpu: str = ""
    device_kind: str | None = None
    roof_source: str | None = None
    compute_pipe: str | None = None
    compute_pipe_label: str | None = None
    tensor_cores: bool | None = None
    peak_flops_per_s: float = 0.0
    peak_bytes_per_s: float = 0.0
    memory_level: str | None = None  # a CPU cache ('l3') the traffic is placed on; None: DRAM (or HBM)
    ridge_point: float = 0.0
    bound: str | None = ""
    attainable_flops_per_s: float | None = None
    roofline_time_s: float | None = 0.0
    model_note: str | None = None
    notes: list[str] = field(default_factory=list)
    # Set when the peak was re-quoted at the observed SM clock.
    peak_flops_per_s_datasheet: float | None = None
    sm_clock_mhz_spec: float | None = None
    # Timed records.
    time_s: float | None = None
    achieved_flops_per_s: float | None = None
    achieved_bytes_per_s: float | None = None
    roofline_fraction: float | None = None
    time_samples_s: list[float] | None = None
    timing: Timing | None = None
    clocks: Clocks | None = None
    verdict: str | None = None
    impl: str | None = None
    extra_passes: list[str] | None = None
    kernels: list[str] | None = None
    kernel_times_s: list[float] | None = None
    # Derived by the advice rules.
    bound_class: str | None = None
    advice: list[dict[str, Any]] | None = None
    # Suites.
    threshold: str | None = None
    suite_entry: int | None = None
    # Whole-model profiles (`roofline profile`): one record per aten operator, module, shapes and dtype,
    # aggregated over `count` calls; FLOPs, bytes and times stay per call.
    module: str | None = None
    region: str | None = None
    phase: str | None = None  # one of PHASES (training steps; None in documents made before phases existed)
    count: int | None = None
    input_shapes: list[list[int]] | None = None
    input_dtypes: list[str] | None = None
    input_strides: list[list[int]] | None = None  # in elements; a view's (a transpose's) differ from row-major
    output_shapes: list[list[int]] | None = None
    output_dtypes: list[str] | None = None
    output_strides: list[list[int]] | None = None
    flops_source: str | None = None
    # Nsight Compute's counters for one call (`--counters`, `roofline import-ncu`).
    counters: Counters | None = None
    # `roofline collectives`: one record per (collective, size); params hold bytes and ranks. What the run
    # measured beyond the time: algbw, busbw, the link ceiling, the fitted alpha-beta model, every rank's samples.
    collective: dict[str, Any] | None = None
    # `roofline run --devices`: the GPU index the record was timed on (one record per entry and device).
    device_index: int | None = None
    # Predicted from a measured operator database (`roofline calibrate ops`; analysis/predict.py): the time,
    # its interval, and which family and points it came from ("bound ..." when the database has no such op).
    predicted_time_s: float | None = None
    predicted_low_s: float | None = None
    predicted_high_s: float | None = None
    prediction_source: str | None = None
    # The prediction's family (analysis/predict.py) and kind: db, transfer (another GPU's database) or bound.
    prediction_family: str | None = None
    prediction_kind: str | None = None
    # `--energy` (docs/energy.md): joules per call from the GPU's NVML energy counter, power, FLOP and bytes per
    # joule, the static and dynamic shares, and the counter's figures (`core.energy.energy_fields`).
    energy: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.keys is None and self.time_s is None:
            out.pop("clocks", None)  # an analytic record has no clocks key at all
        if self.keys is None and any(out.get(f, 0) is None or f not in out for f in REQUIRED):
            # a profile record without a formula still writes every required field (null), in field order
            out = {n: out.get(n) for n in self._names() if n in out or n in REQUIRED} | \
                {k: v for k, v in out.items() if k not in self._names()}
        return out

    @property
    def timed(self) -> bool:
        return self.time_s is not None

    @property
    def label(self) -> str:
        """op + variant + dtype: 'swiglu fused bf16'."""
        return label(self.op, self.variant, self.dtype)

    @property
    def shape(self) -> str:
        return shape_text(self.params)

    @property
    def sm_clock_mhz(self) -> float | None:
        """The median SM clock during the samples, when the device reports one."""
        return self.clocks.sm_median_mhz if self.clocks else None

    def key(self, case: str = "") -> Key:
        """How a record is matched across documents: operator, variant, canonical params, dtype (and `case`,
        set only to tell apart two records that share those four). A profile record is also told apart by its
        region, module and input shapes (one aten op runs in many modules with the same params); a record of
        `run --devices` by its device index. A collective's params hold its size and ranks."""
        ident: dict[str, Any] = self.params
        if self.count is not None:
            ident = {**self.params, "@region": self.region, "@module": self.module, "@inputs": self.input_shapes}
            if self.phase not in (None, "forward"):  # a forward's key is the one documents had before phases
                ident["@phase"] = self.phase
        if self.device_index is not None:
            ident = {**ident, "@device": self.device_index}
        return (self.op, self.variant, canonical_params(ident), self.dtype, case)


Key = tuple[str, Any, str, str, str]


def canonical_params(params: Any) -> str:
    """Params as a stable string: sorted keys, integral floats written as ints (4096.0 == 4096)."""
    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v
    return json.dumps(norm(params or {}), sort_keys=True, separators=(",", ":"), default=str)


def label(op: Any, variant: Any, dtype: Any) -> str:
    """op + variant + dtype: 'swiglu fused bf16' (the parts that are set)."""
    return " ".join(str(p) for p in (op, variant, dtype) if p)


def shape_text(params: Any) -> str:
    """'m=4096 n=4096 k=4096', or '-' for a record without parameters."""
    return " ".join(f"{k}={v}" for k, v in (params or {}).items()) or "-"


def ceilings_dict(ceilings: Ceilings) -> dict[str, Any]:
    """The ceilings as stored in a results document's `device` (what a chart draws)."""
    return {"device_id": ceilings.device_id, "source": ceilings.source, "sm_clock_mhz": ceilings.sm_clock_mhz,
            "compute_flops_per_s": dict(ceilings.compute), "memory_bytes_per_s": dict(ceilings.memory),
            "notes": list(ceilings.notes)}


def placed_record(*, op: str, variant: str | None, params: dict[str, Any], dtype: DType, flops: float,
                  bytes_read: float, bytes_written: float, ceilings: Ceilings, uses_tensor_cores: bool,
                  allow_tensor_cores: bool = True, bytes_by_kind: dict[str, float] | None = None,
                  traffic: dict[str, Any] | None = None, model_note: str | None = None,
                  notes: list[str] | None = None, extra_flops: float | None = None,
                  family: str | None = None) -> Record:
    """The one place a record is built: FLOPs and bytes placed on a device's roofs (no timing yet); `family`
    (the catalog's operator family) picks the CPU rate its backend computes at (`core.cpu_pipes`)."""
    pipe = choose_pipe(ceilings, dtype, uses_tensor_cores, allow_tensor_cores, family)
    total = float(bytes_read) + float(bytes_written)
    memory = choose_memory(ceilings, total)
    a = RooflinePoint(float(flops), total, pipe.flops_per_s, memory.bytes_per_s)
    return Record(
        op=op, variant=variant, params=params, dtype=dtype.name, flops=float(flops), bytes_read=bytes_read,
        bytes_written=bytes_written, bytes=total, bytes_by_kind=bytes_by_kind, traffic=traffic,
        extra_flops=float(extra_flops) if extra_flops else None, arithmetic_intensity=a.arithmetic_intensity,
        gpu=ceilings.device_id, device_kind=ceilings.kind,
        roof_source=ceilings.source, compute_pipe=pipe.key, compute_pipe_label=pipe.label,
        tensor_cores=pipe.key.split("_")[1] == "tensor" if ceilings.kind == "gpu" else None,
        peak_flops_per_s=a.peak_flops_per_s, peak_bytes_per_s=a.peak_bytes_per_s,
        memory_level=None if memory.level == "dram" else memory.level, ridge_point=a.ridge_point,
        bound=a.bound, attainable_flops_per_s=a.attainable_flops_per_s, roofline_time_s=a.roofline_time_s,
        model_note=model_note, notes=[*(notes or []), *(n for n in (pipe.note, memory.note) if n)])


def analytic_record(op: Any, dtype: DType, ceilings: Ceilings, tensor_cores: bool = True) -> Record:
    """The roofline prediction for one catalog operator (an `ops.base.Operator`): every field but the timed ones."""
    op.check_dtype(dtype)
    traffic = op.traffic(dtype)
    return op.placed(placed_record(
        op=op.name, variant=op.variant_name(), params=op.params(), dtype=dtype, flops=float(op.flops()),
        bytes_read=traffic.bytes_read, bytes_written=traffic.bytes_written, ceilings=ceilings,
        uses_tensor_cores=op.uses_tensor_cores, allow_tensor_cores=tensor_cores, bytes_by_kind=traffic.by_kind(),
        traffic={"read": traffic.read, "written": traffic.written}, model_note=op.ignores,
        extra_flops=op.extra_flops(), family=op.family))


# The phases of a step a profile record belongs to (capture/modules.py says what each holds).
PHASES = ("forward", "backward", "optimizer", "other")


T = TypeVar("T")


class RecordLike(Protocol):
    """What the predictor and its families read of a placed operator: a `Record`, or a stand-in with these fields
    (the copy of a strided input a norm pays first, a test's own). Optional fields a record may lack (its strides,
    phase, bytes written) are read with `getattr` and a default."""

    @property
    def op(self) -> str: ...
    @property
    def params(self) -> Mapping[str, Any] | None: ...
    @property
    def dtype(self) -> str: ...
    @property
    def roofline_time_s(self) -> float | None: ...
    @property
    def arithmetic_intensity(self) -> float | None: ...
    @property
    def bound(self) -> str | None: ...
    @property
    def tensor_cores(self) -> bool | None: ...
    @property
    def flops_source(self) -> str | None: ...
    @property
    def predicted_time_s(self) -> float | None: ...
    @property
    def predicted_low_s(self) -> float | None: ...
    @property
    def predicted_high_s(self) -> float | None: ...
    @property
    def prediction_source(self) -> str | None: ...


def evolve(obj: T, **changes: Any) -> T:
    """`dataclasses.replace` for the frozen records (none has an `__init__` check or a `__post_init__`): a
    shallow copy with `changes` set. `replace` runs `__init__` over every field again (a Record has over 80):
    a profile of a thousand calls spent a quarter of its analysis there."""
    unknown = changes.keys() - getattr(type(obj), "__dataclass_fields__", {}).keys()
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new


def requoted(record: Record, ceilings: Ceilings, dtype: DType, uses_tensor_cores: bool, allow_tensor_cores: bool,
             spec_clock_mhz: float | None) -> Record:
    """The record placed on other ceilings (the spec's peaks re-quoted at an observed clock)."""
    pipe = choose_pipe(ceilings, dtype, uses_tensor_cores, allow_tensor_cores)
    a = RooflinePoint(record.flops or 0.0, record.bytes or 0.0, pipe.flops_per_s, ceilings.dram_bytes_per_s)
    return dataclasses.replace(record, peak_flops_per_s_datasheet=record.peak_flops_per_s,
                               peak_flops_per_s=a.peak_flops_per_s, ridge_point=a.ridge_point, bound=a.bound,
                               attainable_flops_per_s=a.attainable_flops_per_s, roofline_time_s=a.roofline_time_s,
                               sm_clock_mhz_spec=spec_clock_mhz)


def with_time(record: Record, time_s: float) -> Record:
    """The record with a median time: achieved rates and the fraction of the roofline derived from it."""
    a = RooflinePoint(record.flops or 0.0, record.bytes or 0.0, record.peak_flops_per_s, record.peak_bytes_per_s)
    ach = achieved(a, time_s)
    return evolve(record, time_s=ach.time_s, achieved_flops_per_s=ach.achieved_flops_per_s,
                  achieved_bytes_per_s=ach.achieved_bytes_per_s, roofline_fraction=ach.roofline_fraction)
