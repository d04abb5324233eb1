"""A whole-model profile's summary as typed records (`Profile.summary`, a results document's `extra["profile"]`):
`ProfileSummary` and the records it holds (the regions, phases, utilization, collectives, energy, counters, and
the step's prediction, `StepPrediction`).

Each record writes exactly the keys and order the summary's JSON has always had (`to_dict`), and reads them back
(`from_dict`: keys it does not know kept, keys an older version did not write left unwritten); the schema only
grows. Read by key (`prof.summary["kernel_time_s"]`), a record gives what its JSON holds there, as the untyped
dict the summary once was did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar


@dataclass(frozen=True)
class StepPrediction:
    """A whole step's predicted time (a profile summary's `prediction`): the kernels' sum and interval, the launch
    gaps of an eager program, and how many calls each source predicted. `to_dict` writes the summary's keys in
    their order; `measured_kernel_time_s` (a timed profile's kernel sum) only when there is one."""

    predicted_kernel_time_s: float
    predicted_kernel_low_s: float
    predicted_kernel_high_s: float
    predicted_launch_gaps_s: float | None
    launch_gap_per_kernel_s: float | None
    predicted_kernels: int
    predicted_step_s: float
    predicted_step_low_s: float
    predicted_step_high_s: float
    bound_time_s: float
    calls_from_db: int
    calls_on_bound: int
    calls_unpredicted: int
    prediction_source: str
    measured_kernel_time_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.measured_kernel_time_s is None:
            del out["measured_kernel_time_s"]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepPrediction:
        """The record of a stored summary's `prediction` (a RooflineError when it lacks a field)."""
        names = [f.name for f in fields(cls)]
        missing = [n for n in names[:-1] if n not in data]
        if missing:
            from roofline.core.errors import RooflineError

            raise RooflineError(f"a profile's prediction lacks {', '.join(missing)}")
        return cls(**{n: data[n] for n in names if n in data})


# -- the summary's records ----------------------------------------------------------------------------------
# Each field's JSON key is its name, written in the fields' order. A field named in a record's SOMETIMES is a key
# today's summaries have only sometimes (an analytic run's coverage, a program's collectives): None there means
# the key is not written. Any other key is always written (null when None), except where the summary it was read
# from lacked it (a document written before the key existed): `missing` names those, and they stay unwritten
# until they get a value. Keys a record does not know (a newer version's) are kept in `unknown` and written back
# after the known ones. A JSON list reads as a tuple; DECODE names the fields that hold records.
_HIDDEN = ("unknown", "missing")  # SummaryRecord's own fields: no JSON key
Decoders = Mapping[str, Callable[[Any], Any]]
R = TypeVar("R", bound="SummaryRecord")


def _encode(value: Any) -> Any:
    """The JSON form of a field's value: records as their dicts, tuples as lists, mappings as fresh dicts (a
    Note stays a Note: a str)."""
    if isinstance(value, (SummaryRecord, StepPrediction)):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _unset(value: Any) -> bool:
    """A field's value as a missing key leaves it: None, or an empty collection."""
    return value is None or (isinstance(value, (Mapping, tuple, list)) and not value)


def _object(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        from roofline.core.errors import RooflineError

        raise RooflineError(f"a profile summary's {what} is not a JSON object (got {type(data).__name__})")
    return data


@dataclass(frozen=True)
class SummaryRecord:
    """A record of a profile summary (the comment above: which keys are written when). Read-only access by JSON
    key (`rec["time_s"]`, `rec.get("tokens")`, `"energy" in rec`) gives what the document's JSON holds there (a
    nested record as its dict), so code written against the untyped summary reads the typed one unchanged."""

    SOMETIMES: ClassVar[frozenset[str]] = frozenset()  # keys written only when not None
    DECODE: ClassVar[Decoders] = {}  # how a field's JSON value reads (the fields that hold records)

    unknown: Mapping[str, Any] = field(default_factory=dict, kw_only=True, repr=False)
    missing: frozenset[str] = field(default=frozenset(), kw_only=True, repr=False)

    def _keys(self) -> Iterator[tuple[str, Any]]:
        """(key, value) of each known key this record writes, in order."""
        for f in fields(self):
            if f.name in _HIDDEN:
                continue
            value = getattr(self, f.name)
            if (value is None and f.name in self.SOMETIMES) or (f.name in self.missing and _unset(value)):
                continue
            yield f.name, value

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: each key it writes (the comment above SummaryRecord), in order, then the unknown ones."""
        out = {k: _encode(v) for k, v in self._keys()}
        out.update((k, v) for k, v in _encode(self.unknown).items() if k not in out)
        return out

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record of a stored summary (or part of one): known keys read as their fields, a missing key as
        None (an empty collection) and kept missing, unknown keys kept; `to_dict` gives `data` back."""
        data = _object(data, cls.__name__)
        names = [f.name for f in fields(cls) if f.name not in _HIDDEN]
        values: dict[str, Any] = {}
        for name in names:
            if name in data:
                raw, decode = data[name], cls.DECODE.get(name)
                value = decode(raw) if decode is not None and raw is not None else raw
                values[name] = tuple(value) if isinstance(value, list) else value
        return cls(**values, unknown={k: v for k, v in data.items() if k not in values},
                   missing=frozenset(n for n in names if n not in data and n not in cls.SOMETIMES))

    def __getitem__(self, key: str) -> Any:
        for k, v in self._keys():
            if k == key:
                return _encode(v)
        if key in self.unknown:
            return self.unknown[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self._keys()) or key in self.unknown


def _many(kind: type[SummaryRecord]) -> Callable[[Any], tuple[Any, ...]]:
    return lambda raw: tuple(kind.from_dict(x) for x in raw)


def _by_name(kind: type[SummaryRecord]) -> Callable[[Any], dict[str, Any]]:
    return lambda raw: {k: kind.from_dict(v) for k, v in _object(raw, kind.__name__).items()}


def _rows(raw: Any) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(row) for row in raw)


@dataclass(frozen=True)
class OpWithoutFormula(SummaryRecord):
    """An op type no formula counts (`without_formula`): its calls and their device time (None: analytic)."""

    op: str | None = None
    calls: int | None = None
    time_s: float | None = None


@dataclass(frozen=True)
class UnattributedKernel(SummaryRecord):
    """A device kernel no op launched (`unattributed`): its launches and time."""

    kernel: str | None = None
    launches: int | None = None
    time_s: float | None = None


@dataclass(frozen=True)
class AnalyticCoverage(SummaryRecord):
    """What an analytic prediction covers (capture/records.py `analytic_coverage`): `time`, the share of the
    predicted time the calls with a formula hold; `calls`, the share of calls with one; `without_formula_s`, the
    calls without one at their bytes over the DRAM bandwidth."""

    time: float | None = None
    calls: float | None = None
    without_formula_s: float | None = None


@dataclass(frozen=True)
class UtilizationPeak(SummaryRecord):
    """The peaks MFU and MBU are stated against (analysis/utilization.py): the pipe holding most model FLOPs,
    and each roof's peak FLOP/s on it and DRAM bytes/s. Written as `pipe`, then `{roof}_flops_per_s` for each
    roof, then `{roof}_bytes_per_s` for each."""

    pipe: str | None = None
    flops_per_s: Mapping[str, float | None] = field(default_factory=dict)
    bytes_per_s: Mapping[str, float | None] = field(default_factory=dict)

    FLOPS: ClassVar[str] = "_flops_per_s"
    BYTES: ClassVar[str] = "_bytes_per_s"

    def _keys(self) -> Iterator[tuple[str, Any]]:
        if "pipe" not in self.missing or self.pipe is not None:
            yield "pipe", self.pipe
        yield from ((roof + self.FLOPS, v) for roof, v in self.flops_per_s.items())
        yield from ((roof + self.BYTES, v) for roof, v in self.bytes_per_s.items())

    @classmethod
    def from_dict(cls: type[P], data: Mapping[str, Any]) -> P:
        data = _object(data, cls.__name__)
        flops = {k.removesuffix(cls.FLOPS): v for k, v in data.items() if k.endswith(cls.FLOPS)}
        rates = {k.removesuffix(cls.BYTES): v for k, v in data.items() if k.endswith(cls.BYTES)}
        unknown = {k: v for k, v in data.items() if k != "pipe" and not k.endswith((cls.FLOPS, cls.BYTES))}
        return cls(data.get("pipe"), flops, rates, unknown=unknown,
                   missing=frozenset() if "pipe" in data else frozenset({"pipe"}))


P = TypeVar("P", bound=UtilizationPeak)


@dataclass(frozen=True)
class Utilization(SummaryRecord):
    """MFU and MBU of a step or a region (analysis/utilization.py): `time_s` by time (kernel, wall, predicted),
    `mfu` and `mbu` by time then roof (datasheet, measured), the figures refused (above 100%) and why, the
    peaks; tokens/s and FLOPs per token only when the step's tokens are known."""

    SOMETIMES: ClassVar[frozenset[str]] = frozenset({"tokens", "flops_per_token", "tokens_per_s"})
    DECODE: ClassVar[Decoders] = {"peak": UtilizationPeak.from_dict}

    model_flops: float | None = None
    min_bytes: float | None = None
    time_s: Mapping[str, float | None] = field(default_factory=dict)
    mfu: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    mbu: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    refused: tuple[str, ...] = ()
    peak: UtilizationPeak | None = None
    tokens: int | None = None
    flops_per_token: float | None = None
    tokens_per_s: Mapping[str, float] | None = None


@dataclass(frozen=True)
class RegionSummary(SummaryRecord):
    """A region the program marked (`regions`): how often it was entered, its op calls, its kernel time over
    all entries, its wall time (the entries' sum, and each entry's, in order: `roofline check`'s samples), its
    model FLOPs and minimum bytes, and their utilization. Times are None in an analytic profile."""

    DECODE: ClassVar[Decoders] = {"utilization": Utilization.from_dict}

    entered: int | None = None
    calls: int | None = None
    time_s: float | None = None
    wall_s: float | None = None
    entry_wall_s: tuple[float, ...] | None = None
    model_flops: float | None = None
    min_bytes: float | None = None
    utilization: Utilization | None = None


@dataclass(frozen=True)
class GroupTotals(SummaryRecord):
    """The calls of one phase of the step (`phases`: forward, backward, optimizer, ...): FLOPs and bytes of
    those with a formula, device time (None: analytic), roofline time, model FLOPs (by pipe) and minimum
    bytes (capture/records.py `group_totals`)."""

    calls: int | None = None
    flops: float | None = None
    bytes: float | None = None
    time_s: float | None = None
    roofline_time_s: float | None = None
    model_flops: float | None = None
    model_flops_by_pipe: Mapping[str, float] = field(default_factory=dict)
    min_bytes: float | None = None


@dataclass(frozen=True)
class CollectiveOp(SummaryRecord):
    """One collective op of the program (`communication.by_op`): its calls, bytes, bytes over the links, time and
    bandwidths (None: analytic)."""

    op: str | None = None
    calls: int | None = None
    bytes: float | None = None
    link_bytes: float | None = None
    time_s: float | None = None
    algbw_bytes_per_s: float | None = None
    busbw_bytes_per_s: float | None = None


@dataclass(frozen=True)
class Communication(SummaryRecord):
    """The collectives a program ran (capture/comm_summary.py): their calls, ranks and backends, their time and
    share of the kernel time (NCCL kernels no op launched included), their roofline time and share, and each
    op's figures."""

    DECODE: ClassVar[Decoders] = {"by_op": _many(CollectiveOp)}

    calls: int | None = None
    ranks: tuple[int, ...] = ()
    backends: tuple[str, ...] = ()
    time_s: float | None = None
    unattributed_time_s: float | None = None
    share: float | None = None
    roofline_time_s: float | None = None
    roofline_share: float | None = None
    link_bytes: float | None = None
    by_op: tuple[CollectiveOp, ...] = ()


@dataclass(frozen=True)
class CompiledCode(SummaryRecord):
    """torch.compile'd code the profile ran (`compiled`): each compiled module's runs, the Triton launches, and
    those not attributed to an op, by reason."""

    modules: Mapping[str, int] = field(default_factory=dict)
    triton_launches: int | None = None
    unattributed_launches: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CountersSummary(SummaryRecord):
    """`profile --counters` (ncu/profile.py): the tool, the stretch profiled, ncu's kernels, the records given
    counters, and the join's error when it joined none."""

    SOMETIMES: ClassVar[frozenset[str]] = frozenset({"error"})

    source: str | None = None
    profiled: str | None = None
    kernels: int | None = None
    records: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class EnergyWindow(SummaryRecord):
    """The measured window of a step's energy (measuring/energy.py): its length, the step's calls in it, the
    counter and how it was read."""

    window_s: float | None = None
    calls: int | None = None
    counter: str | None = None
    method: str | None = None


@dataclass(frozen=True)
class EnergySummary(SummaryRecord):
    """A step's energy (analysis/energy_profile.py): joules, seconds and watts, the idle share charged the
    static watts, how the operators were attributed, joules per token, and the measured window (a measured step
    only)."""

    SOMETIMES: ClassVar[frozenset[str]] = frozenset({"window"})
    DECODE: ClassVar[Decoders] = {"window": EnergyWindow.from_dict}

    step_j: float | None = None
    step_s: float | None = None
    power_w: float | None = None
    idle_s: float | None = None
    idle_j: float | None = None
    static_w: float | None = None
    attribution: str | None = None
    per_token_j: float | None = None
    window: EnergyWindow | None = None


@dataclass(frozen=True)
class ProfileSummary(SummaryRecord):
    """A whole-model profile's summary (`Profile.summary`; a results document's `extra["profile"]`), in the
    order its JSON has always had. Seconds are None where nothing was measured (an analytic profile), GPU
    fields None off a GPU. `prof.summary["kernel_time_s"]`, `.get("regions")` and `"communication" in
    prof.summary` read the JSON form, as they did when the summary was a dict (SummaryRecord)."""

    SOMETIMES: ClassVar[frozenset[str]] = frozenset({
        "analytic_coverage", "lower_bound", "communication", "compiled", "graph_replay_time_s", "trace_reads_time_s",
        "counters", "energy"})
    DECODE: ClassVar[Decoders] = {
        "without_formula": _many(OpWithoutFormula), "unattributed": _many(UnattributedKernel),
        "analytic_coverage": AnalyticCoverage.from_dict, "regions": _by_name(RegionSummary),
        "phases": _by_name(GroupTotals), "utilization": Utilization.from_dict, "dataflow": _rows,
        "communication": Communication.from_dict, "compiled": CompiledCode.from_dict,
        "prediction": StepPrediction.from_dict, "counters": CountersSummary.from_dict,
        "energy": EnergySummary.from_dict}

    name: str | None = None
    mode: str | None = None  # "timed" or "analytic"
    time_device: str | None = None  # "cuda:0", "cpu"; None: analytic
    timing_method: str | None = None  # how kernel times were read (capture/kernels.py)
    wall_s: float | None = None  # the profiled run (with regions: their entries'), the tool's overhead included
    wall_uninstrumented_s: float | None = None  # a plain call's (the last warm-up)
    calls: int | None = None  # op calls
    flops: float | None = None  # of the calls with a formula
    flops_matmul: float | None = None
    extra_flops: float | None = None  # tensor-core ops' elementwise part, on no roof
    bytes: float | None = None  # read and written by the calls with a formula
    calls_without_formula: int | None = None
    attention_masked_calls: int | None = None  # attention calls given a mask whose values were not read
    attention_masked_flops: float | None = None  # work spent on the scores a mask masks (not in flops)
    without_formula: tuple[OpWithoutFormula, ...] = ()
    kernel_time_s: float | None = None  # the device's kernels: attributed to ops and not
    attributed_time_s: float | None = None
    unattributed_time_s: float | None = None
    coverage: float | None = None  # share of the kernel time in ops with a formula
    unattributed: tuple[UnattributedKernel, ...] = ()
    roofline_time_s: float | None = None  # the sum of the records' roofline times (an analytic step's time)
    analytic_coverage: AnalyticCoverage | None = None
    lower_bound: bool | None = None  # analytic: ops without formula hold time left out
    gpu_busy_s: float | None = None
    gpu_span_s: float | None = None
    gpu_idle_s: float | None = None
    gpu_idle_uninstrumented_s: float | None = None
    records: int | None = None
    build_calls: int | None = None  # calls of the model's build left out (capture/build.py)
    skipped: int | None = None  # calls not recorded (views, metadata)
    skipped_ops: Mapping[str, int] = field(default_factory=dict)
    regions: Mapping[str, RegionSummary] = field(default_factory=dict)
    module_root: str | None = None  # the module path prefix stripped from every record's
    model_flops: float | None = None  # analysis/utilization.py
    model_flops_by_pipe: Mapping[str, float] = field(default_factory=dict)
    min_bytes: float | None = None
    phases: Mapping[str, GroupTotals] = field(default_factory=dict)
    utilization: Utilization | None = None
    dataflow: tuple[tuple[float, ...], ...] = ()  # [producer record,
    # consumer record, bytes per edge, edges]
    communication: Communication | None = None
    notes: tuple[str, ...] = ()  # Notes when made here; sentences when read
    compiled: CompiledCode | None = None
    graph_replay_time_s: float | None = None  # kernels of CUDA graph replays
    trace_reads_time_s: float | None = None  # kernels of the trace's own reads, left out
    prediction: StepPrediction | None = None
    phases_s: Mapping[str, float] = field(default_factory=dict)  # the tool's host seconds: warm-up, run, analysis
    counters: CountersSummary | None = None  # `--counters`
    energy: EnergySummary | None = None  # `--energy`

    @classmethod
    def of(cls, summary: ProfileSummary | Mapping[str, Any] | None) -> ProfileSummary:
        """`summary` as the record: itself, a stored one's dict read (`from_dict`), or None read as empty."""
        return summary if isinstance(summary, ProfileSummary) else cls.from_dict(summary or {})

    @property
    def analytic(self) -> bool:
        """An analytic profile (no time measured)."""
        return self.mode == "analytic"

    def with_notes(self, *notes: str) -> ProfileSummary:
        """The summary with `notes` after its own."""
        return replace(self, notes=(*self.notes, *notes))
