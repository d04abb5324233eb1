"""`roofline compare`: which GPU for my operators? One operator, or a whole suite, on many GPU specs.

Per GPU: the roofline time (the analytic model of `analytic_record`), the attainable FLOP/s, the bound and
the ratio to the fastest; with a prices file, the cost per call and per million calls; with a results
document measured on one of the GPUs, the measured time beside the prediction. Measured ceilings (a
calibration in the store for that spec) replace the datasheet's where they exist, and the row says so.

NB: the roofline time is a lower bound for one GPU, so costs derived from it are lower bounds too; memory
capacity (do the weights and KV cache fit?) and multi-GPU communication are outside the model.

Prices come from the user's file (`ceilings.prices`); the tables and the chart are drawn by `report.compare`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from roofline._version import __version__
from roofline.analysis.placing import analytic
from roofline.analysis.predict import from_database, predicted, predictor_for
from roofline.ceilings import opdb, store
from roofline.ceilings.prices import Prices
from roofline.ceilings.specs import GPUSpec, as_spec, gpu_ceilings, load_all
from roofline.core.document import clean_json, now_iso, read_document, validate_document
from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import RooflineError, UsageError
from roofline.core.model import Ceilings
from roofline.core.notes import Note, code_of
from roofline.core.record import Record, label

if TYPE_CHECKING:  # pragma: no cover - typing only
    from roofline.analysis.suite import Suite
    from roofline.ops.base import Operator

COMPARE_VERSION = 1  # of the JSON document compare_to_json writes: add fields, never rename them
SECONDS_PER_HOUR = 3600.0
CALLS_PER_QUOTE = 1_000_000  # costs are quoted per million calls: one call costs a fraction of a cent
NO_PRICE = "no price"
UNSUPPORTED = "unsupported"
# The note code of a GPU placed on its measured DRAM bandwidth beside a datasheet compute peak.
MIXED_ROOF = "compare.mixed_roof"

Status = Literal["ok", "unsupported"]
RoofSource = Literal["datasheet", "measured", "mixed"]


# ---------------------------------------------------------------- ceilings
def roof_for(spec: GPUSpec, measured: Ceilings | None) -> Ceilings:
    """Datasheet ceilings, with the measured figures laid over them where a calibration has them."""
    sheet = gpu_ceilings(spec)
    if measured is None:
        return sheet
    return Ceilings(device_id=spec.id, device_name=spec.name, kind="gpu", source="measured",
                    compute={**sheet.compute, **measured.compute}, memory={**sheet.memory, **measured.memory},
                    sm_clock_mhz=measured.sm_clock_mhz or sheet.sm_clock_mhz, notes=measured.notes)


def resolve_gpus(gpus: str | Sequence[str | GPUSpec] | None) -> list[GPUSpec]:
    """Specs by id or alias (a string, or a list whose items may be comma-separated lists or GPUSpecs), first
    mention first; None: every spec."""
    if gpus is None:
        return sorted(load_all().values(), key=lambda s: s.id)
    names: list[str | GPUSpec] = []
    for item in [gpus] if isinstance(gpus, str) else gpus:  # "h100,h200" is two GPUs, not nine characters
        names += [n.strip() for n in item.split(",") if n.strip()] if isinstance(item, str) else [item]
    if not names:
        raise UsageError("no GPU to compare: give --gpu ID (repeat it, or comma-separate) or leave it out for all")
    specs: dict[str, GPUSpec] = {}
    for name in names:
        spec = as_spec(name)
        specs.setdefault(spec.id, spec)
    return list(specs.values())


# ---------------------------------------------------------------- measured times
@dataclass(frozen=True)
class Measured:
    """Timed records of a results document (a run on a local GPU), to set beside the predictions."""

    path: str
    gpu: str | None  # the spec id of the device it was measured on
    records: tuple[Record, ...]


def load_measured(source: str | os.PathLike[str] | dict[str, Any]) -> Measured:
    """A results document (path or parsed) reduced to its timed records."""
    if isinstance(source, dict):
        doc, where = validate_document(source, "measured results"), "measured results"
    else:
        doc, where = read_document(source), str(source)
    device = doc.device or {}
    gpu = device.get("spec_id") or (device.get("ceilings") or {}).get("device_id")
    records = tuple(r for r in doc.records if r.timed)
    if not records:
        raise RooflineError(f"{where}: no timed records (run it on the GPU without --no-time)")
    return Measured(where, gpu if isinstance(gpu, str) else None, records)


def match_record(measured: Measured, predicted: Record) -> Record | None:
    """The first timed record on the predicted record's GPU with its key (operator, variant, parameters as
    `Record.key` compares them, so m=4096.0 is m=4096, and dtype)."""
    key = predicted.key()
    for r in measured.records:
        if r.gpu == predicted.gpu and r.key() == key:
            return r
    return None


# ---------------------------------------------------------------- the comparison
def _cost_per_call(time_s: float | None, price_per_hour: float | None) -> float | None:
    """time x price / 3600: what one call costs on a GPU rented by the hour (kept busy)."""
    if time_s is None or price_per_hour is None:
        return None
    return time_s * price_per_hour / SECONDS_PER_HOUR


class _Priced:
    """Cost of one row: its roofline time at its GPU's price (None without a price or a time)."""

    price_per_hour: float | None

    @property
    def time_s(self) -> float | None:
        raise NotImplementedError  # each row says what its time is

    @property
    def cost_per_call(self) -> float | None:
        return _cost_per_call(self.time_s, self.price_per_hour)

    @property
    def cost_per_million(self) -> float | None:
        c = self.cost_per_call
        return None if c is None else c * CALLS_PER_QUOTE


@dataclass(frozen=True)
class GPURow(_Priced):
    """One GPU's verdict on one operator; `record` is its analytic record (None when unsupported)."""

    gpu: str
    name: str
    status: Status
    record: Record | None = None
    reason: str = ""  # why unsupported
    roof: RoofSource | None = None
    rank: int | None = None  # 1 = fastest; None when unsupported
    vs_fastest: float | None = None  # roofline time / the fastest GPU's: 1.0 for the fastest
    price_per_hour: float | None = None
    cost_vs_cheapest: float | None = None  # cost per call / the cheapest priced GPU's: 1.0 for the cheapest
    measured_time_s: float | None = None
    measured_energy_j: float | None = None  # J per call of the matched record, when measured with --energy
    measured_j_per_token: float | None = None  # measured_energy_j / the tokens one call processes (`tokens`)

    @property
    def time_s(self) -> float | None:
        """The predicted time where the GPU has an operator database (`time_source`), else the roofline time."""
        if self.record is None:
            return None
        p = self.record.predicted_time_s
        return p if p is not None else self.record.roofline_time_s

    @property
    def time_source(self) -> str | None:
        if self.record is None:
            return None
        return "predicted" if from_database(self.record) else "bound"  # a bound-only prediction is the bound

    @property
    def attainable_flops_per_s(self) -> float | None:
        return self.record.attainable_flops_per_s if self.record else None

    @property
    def bound(self) -> str | None:
        return self.record.bound if self.record else None

    @property
    def roofline_fraction(self) -> float | None:
        """Roofline time / measured time (1.0 = on the roof), where the GPU was measured."""
        t = self.record.roofline_time_s if self.record else None
        if self.measured_time_s is None or t is None:
            return None
        return t / self.measured_time_s


RowT = TypeVar("RowT")


class _Ranking(Generic[RowT]):
    """Rows of one comparison, fastest first; only supported GPUs (status "ok") are ranked."""

    rows: tuple[RowT, ...]

    @property
    def ranked(self) -> tuple[RowT, ...]:
        return tuple(r for r in self.rows if r.status == "ok")  # type: ignore[attr-defined]

    @property
    def fastest(self) -> RowT | None:
        return self.ranked[0] if self.ranked else None


@dataclass(frozen=True)
class Comparison(_Ranking[GPURow]):
    """One operator on many GPUs: rows ranked fastest first, unsupported GPUs last."""

    op: str
    variant: str | None
    params: dict[str, Any]
    dtype: str
    tensor_cores: bool
    flops: float
    bytes: float
    rows: tuple[GPURow, ...]
    prices: Prices | None = None
    measured_path: str | None = None
    model_note: str = ""
    notes: tuple[str, ...] = ()
    tokens: int | None = None  # tokens one call processes: J per token beside J per call

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def label(self) -> str:
        """'decode_attention bf16' or 'swiglu fused bf16'."""
        return label(self.op, self.variant, self.dtype)

    def row(self, gpu: str | GPUSpec) -> GPURow:
        """The row of a GPU by id or alias."""
        gpu_id = as_spec(gpu).id
        for r in self.rows:
            if r.gpu == gpu_id:
                return r
        raise KeyError(gpu)


def _rank(rows: list[Any]) -> list[Any]:
    """Supported rows by time (fastest first) with rank and ratios; unsupported rows after, by id."""
    ok = sorted((r for r in rows if r.status == "ok"), key=lambda r: (r.time_s, r.gpu))
    bad = sorted((r for r in rows if r.status != "ok"), key=lambda r: r.gpu)
    best = ok[0].time_s if ok else None
    costs = [c for r in ok if (c := r.cost_per_call) is not None]
    cheapest = min(costs) if costs else None
    out = []
    for i, r in enumerate(ok, start=1):
        cost = r.cost_per_call
        out.append(replace(r, rank=i, vs_fastest=r.time_s / best if best else None,
                           cost_vs_cheapest=cost / cheapest if cost is not None and cheapest else None))
    return out + bad


def compare_op(op: Operator, dtype: str | DType | Any, gpus: str | Sequence[str | GPUSpec] | None = None,
               prices: Prices | None = None, tensor_cores: bool = True, *,
               measured: Measured | str | os.PathLike[str] | dict[str, Any] | None = None,
               use_measured: bool = True, dbs: dict[str, opdb.OpDB] | None = None,
               tokens: int | None = None) -> Comparison:
    """Rank GPUs for one operator by roofline time; `tokens`, the tokens one call processes, gives a measured
    J per call (`--energy` results) its J per token.

    A GPU that cannot run the dtype (fp8 on an A100, bf16 on a V100) is 'unsupported', not an error; a dtype
    the operator itself does not take is a UsageError. `use_measured=False` ignores calibrations. A GPU with an
    operator database (`dbs`, by spec id; default: each GPU's own, `databases`) is ranked by its predicted time,
    the others by the bound, and the notes say which.
    """
    if tokens is not None and tokens <= 0:
        raise UsageError(f"--tokens-per-call {tokens}: the tokens one call processes must be a positive integer")
    if tokens is not None and measured is None:
        raise UsageError("--tokens-per-call gives the J per token of a measured call: it needs --measured RESULTS")
    dtype_ = get_dtype(dtype)
    op.check_dtype(dtype_)
    specs = resolve_gpus(gpus)
    calibrated = store.newest_gpu_ceilings() if use_measured else {}
    timed = measured if isinstance(measured, Measured) or measured is None else load_measured(measured)
    dbs = databases(specs) if dbs is None else dbs
    rows: list[GPURow] = []
    for spec in specs:
        cal = calibrated.get(spec.id)
        try:
            rec = analytic(op, dtype_, roof_for(spec, cal), spec, tensor_cores)
        except UsageError as exc:
            rows.append(GPURow(spec.id, spec.name, "unsupported", reason=str(exc)))
            continue
        roof: RoofSource = "datasheet"
        if cal is not None:
            roof = "measured" if rec.compute_pipe in cal.compute and "dram" in cal.memory else "mixed"
        if spec.id in dbs:
            rec = predicted([rec], predictor_for(spec.id, dbs[spec.id]))[0]
        hit = match_record(timed, rec) if timed else None
        rows.append(GPURow(spec.id, spec.name, "ok", record=rec, roof=roof,
                           price_per_hour=prices.price(spec.id) if prices else None,
                           measured_time_s=hit.time_s if hit else None,
                           measured_energy_j=(j := (hit.energy or {}).get("energy_j") if hit else None),
                           measured_j_per_token=j / tokens if j is not None and tokens else None))
    notes = list(_measured_notes(timed, [op], specs, rows_matched=any(r.measured_time_s for r in rows)))
    # a database without this op's family and dtype predicts by the bound: the note names it, not the database
    unused = {r.gpu: r.record.prediction_source for r in rows
              if r.gpu in dbs and r.record is not None and r.time_source != "predicted"}
    notes += prediction_notes({g: d for g, d in dbs.items() if g not in unused}, specs)
    notes += [f"{g}: {why}" for g, why in sorted(unused.items())]
    for r in rows:
        if r.roof == "mixed":
            pipe = (r.record.compute_pipe_label if r.record else None) or "compute"
            notes.append(Note(MIXED_ROOF, f"{r.gpu}: measured DRAM bandwidth, datasheet {pipe} peak (the "
                                          "calibration has no figure for that pipe)"))
    traffic = op.traffic(dtype_)
    return Comparison(op=op.name, variant=op.variant_name(), params=op.params(), dtype=dtype_.name,
                      tensor_cores=tensor_cores, flops=float(op.flops()), bytes=traffic.total, rows=tuple(_rank(rows)),
                      prices=prices, measured_path=timed.path if timed else None, model_note=op.ignores,
                      notes=tuple(notes), tokens=tokens)


def _measured_notes(timed: Measured | None, ops: list[Operator], specs: list[GPUSpec],
                    rows_matched: bool) -> list[str]:
    if timed is None:
        return []
    if timed.gpu is not None and timed.gpu not in {s.id for s in specs}:
        return [f"{timed.path} was measured on {timed.gpu}, which is not among the compared GPUs"]
    if not rows_matched:
        what = ops[0].name if len(ops) == 1 else "any entry"
        return [f"{timed.path}: no timed record matches {what} (same op, variant, parameters and dtype)"]
    return []


def databases(specs: Sequence[GPUSpec], db: str | os.PathLike[str] | None = None) -> dict[str, opdb.OpDB]:
    """Each compared GPU's operator database: its default file (`roofline calibrate ops`), and `db` for the GPU
    it was measured on (compare never transfers one GPU's database to another). The databases the package ships
    (`opdb.shipped`) are used only when every compared GPU has a database: a GPU ranked by its prediction beside
    others ranked by their bound would lose to them for the work the bound leaves out."""
    out = {spec.id: found for spec in specs if (found := opdb.load_for(spec.id)) is not None}
    if len(out) < len(specs):  # the package's own databases rank only GPUs that all have one: a prediction
        out = {g: d for g, d in out.items() if d.held_out is None}  # beside bounds would favour the bounds
    if db is not None:
        named = opdb.read(Path(db))
        if named.device_id not in {spec.id for spec in specs}:
            raise UsageError(f"{db}: measured on {named.device_id}, which is not among the compared GPUs")
        out[named.device_id] = named
    return out


def prediction_notes(dbs: dict[str, opdb.OpDB], specs: Sequence[GPUSpec]) -> list[str]:
    """Which GPUs' times are predicted from a database, and that the others' are bounds."""
    if not dbs:
        ships = [s.id for s in specs if opdb.ships(s.id)]
        return [f"time: the roofline bound on every GPU (the package's databases of {', '.join(ships)} rank only "
                "GPUs that all have one: compare those alone to rank by predicted time)"] if ships else []
    others = [s.id for s in specs if s.id not in dbs]
    return [f"time: predicted from the operator database on {', '.join(sorted(dbs))}"
            + (f"; the roofline bound on {', '.join(others)}" if others else "")]


# ---------------------------------------------------------------- suites
@dataclass(frozen=True)
class SuiteRow(_Priced):
    """One GPU's total over a suite: time per entry (suite order) and summed per operator name."""

    gpu: str
    name: str
    status: Status
    entry_times: tuple[float | None, ...] = ()
    by_op: dict[str, float] = field(default_factory=dict)
    flops: float = 0.0
    memory_bound_time_s: float = 0.0
    reason: str = ""  # which entries are unsupported, and why
    roof: RoofSource | None = None
    rank: int | None = None
    vs_fastest: float | None = None
    price_per_hour: float | None = None
    cost_vs_cheapest: float | None = None
    measured_time_s: float | None = None  # sum over the entries that were measured
    measured_entries: int = 0
    bound_time_s: float | None = None  # the entries' roofline times summed (time_s holds predictions where made)

    @property
    def time_s(self) -> float | None:
        return sum(t for t in self.entry_times if t is not None) if self.status == "ok" else None

    @property
    def attainable_flops_per_s(self) -> float | None:
        t = self.time_s
        return self.flops / t if t else None

    @property
    def memory_bound_share(self) -> float | None:
        t = self.time_s
        return self.memory_bound_time_s / t if t else None


@dataclass(frozen=True)
class SuiteComparison(_Ranking[SuiteRow]):
    """A suite on many GPUs: totals ranked fastest first, and each entry's own comparison."""

    suite: str
    path: str
    entries: tuple[Comparison, ...]
    rows: tuple[SuiteRow, ...]
    prices: Prices | None = None
    measured_path: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def op_names(self) -> tuple[str, ...]:
        """Operator names in order of first appearance in the suite."""
        return tuple(dict.fromkeys(c.op for c in self.entries))

    def row(self, gpu: str | GPUSpec) -> SuiteRow:
        gpu_id = as_spec(gpu).id
        for r in self.rows:
            if r.gpu == gpu_id:
                return r
        raise KeyError(gpu)


def compare_suite(suite: Suite | str | os.PathLike[str], gpus: str | Sequence[str | GPUSpec] | None = None,
                  prices: Prices | None = None, *,
                  measured: Measured | str | os.PathLike[str] | dict[str, Any] | None = None,
                  use_measured: bool = True, dbs: dict[str, opdb.OpDB] | None = None) -> SuiteComparison:
    """Every entry of a suite (its GPU shapes and dtypes) on every GPU; a GPU that cannot run one entry is
    'unsupported' for the suite and left out of the ranking."""
    from roofline.analysis.suite import Suite as SuiteType
    from roofline.analysis.suite import load_suite

    s = suite if isinstance(suite, SuiteType) else load_suite(Path(suite))
    timed = measured if isinstance(measured, Measured) or measured is None else load_measured(measured)
    specs = resolve_gpus(gpus)
    ids = [sp.id for sp in specs]
    dbs = databases(specs) if dbs is None else dbs
    entries = tuple(compare_op(e.operator(True), e.dtype_for(True), ids, prices, e.tensor_cores, measured=timed,
                               use_measured=use_measured, dbs=dbs) for e in s.entries)
    rows: list[SuiteRow] = []
    for spec in specs:
        cells = [c.row(spec.id) for c in entries]
        bad = [(i, cell) for i, cell in enumerate(cells, start=1) if cell.status != "ok"]
        if bad:
            i, first = bad[0]
            reason = f"{len(bad)} of {len(cells)} entries unsupported (entry {i}: {first.reason})"
            rows.append(SuiteRow(spec.id, spec.name, "unsupported", reason=reason))
            continue
        by_op: dict[str, float] = {}
        for c, cell in zip(entries, cells, strict=True):
            by_op[c.op] = by_op.get(c.op, 0.0) + (cell.time_s or 0.0)
        roofs = {cell.roof for cell in cells}
        hits = [cell.measured_time_s for cell in cells if cell.measured_time_s is not None]
        rows.append(SuiteRow(
            spec.id, spec.name, "ok", entry_times=tuple(cell.time_s for cell in cells), by_op=by_op,
            flops=sum(c.flops for c in entries),
            memory_bound_time_s=sum(cell.time_s or 0.0 for cell in cells if cell.bound == "memory"),
            roof=roofs.pop() if len(roofs) == 1 else "mixed",
            price_per_hour=prices.price(spec.id) if prices else None,
            measured_time_s=sum(hits) if hits else None, measured_entries=len(hits),
            bound_time_s=sum(cell.record.roofline_time_s or 0.0 for cell in cells if cell.record)))
    notes = _measured_notes(timed, [e.operator(True) for e in s.entries], specs,
                            rows_matched=any(r.measured_entries for r in rows))
    notes += sorted({n for c in entries for n in c.notes if code_of(n) == MIXED_ROOF})
    notes += prediction_notes(dbs, specs)
    return SuiteComparison(suite=s.name, path=s.path, entries=entries, rows=tuple(_rank(rows)), prices=prices,
                           measured_path=timed.path if timed else None, notes=tuple(notes))


# ---------------------------------------------------------------- JSON
def _prices_json(p: Prices | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"currency": p.currency, "date": p.date, "source": p.source, "path": p.path,
            "per_gpu_hour": dict(p.per_hour)}


def _cost_json(r: GPURow | SuiteRow, prices: Prices | None) -> dict[str, Any]:
    note = None
    if r.status != "ok":
        note = UNSUPPORTED
    elif prices is not None and r.price_per_hour is None:
        note = NO_PRICE
    return {"price_per_hour": r.price_per_hour, "cost_per_call": r.cost_per_call,
            "cost_per_million_calls": r.cost_per_million, "cost_vs_cheapest": r.cost_vs_cheapest,
            "price_note": note}


def _row_json(r: GPURow, prices: Prices | None) -> dict[str, Any]:
    rec = r.record
    return {"gpu": r.gpu, "name": r.name, "status": r.status, "reason": r.reason or None, "rank": r.rank,
            "roof": r.roof, "bound": r.bound, "compute_pipe": rec.compute_pipe if rec else None,
            "peak_flops_per_s": rec.peak_flops_per_s if rec else None,
            "peak_bytes_per_s": rec.peak_bytes_per_s if rec else None,
            "ridge_point": rec.ridge_point if rec else None,
            "roofline_time_s": rec.roofline_time_s if rec else None, "time_s": r.time_s, "time_source": r.time_source,
            "predicted_low_s": rec.predicted_low_s if rec else None,
            "predicted_high_s": rec.predicted_high_s if rec else None,
            "attainable_flops_per_s": r.attainable_flops_per_s, "vs_fastest": r.vs_fastest,
            "measured_time_s": r.measured_time_s, "roofline_fraction": r.roofline_fraction,
            "measured_energy_j": r.measured_energy_j, "measured_j_per_token": r.measured_j_per_token,
            **(_cost_json(r, prices) if prices is not None else {})}


def _op_json(c: Comparison) -> dict[str, Any]:
    return {"op": c.op, "variant": c.variant, "params": c.params, "dtype": c.dtype, "tensor_cores": c.tensor_cores,
            "flops": c.flops, "bytes": c.bytes, "arithmetic_intensity": c.arithmetic_intensity,
            "model_note": c.model_note, "notes": list(c.notes), "tokens": c.tokens,
            "gpus": [_row_json(r, c.prices) for r in c.rows]}


def compare_to_json(c: Comparison | SuiteComparison) -> dict[str, Any]:
    """The comparison as a JSON-ready document (`kind` 'op' or 'suite'); inf is written as null."""
    head = {"compare_version": COMPARE_VERSION, "tool_version": __version__, "created": now_iso(),
            "prices": _prices_json(c.prices), "measured": c.measured_path}
    if isinstance(c, Comparison):
        return clean_json({**head, "kind": "op", **_op_json(c)})
    gpus = []
    for r in c.rows:
        gpus.append({"gpu": r.gpu, "name": r.name, "status": r.status, "reason": r.reason or None, "rank": r.rank,
                     "roof": r.roof, "roofline_time_s": r.bound_time_s, "time_s": r.time_s,
                     "attainable_flops_per_s": r.attainable_flops_per_s,
                     "memory_bound_share": r.memory_bound_share, "vs_fastest": r.vs_fastest,
                     "by_op_s": dict(r.by_op) if r.status == "ok" else None,
                     "entry_times_s": list(r.entry_times) if r.status == "ok" else None,
                     "measured_time_s": r.measured_time_s, "measured_entries": r.measured_entries,
                     **(_cost_json(r, c.prices) if c.prices is not None else {})})
    entries = [{"entry": i, **_op_json(e)} for i, e in enumerate(c.entries, start=1)]
    return clean_json({**head, "kind": "suite", "suite": c.suite, "path": c.path, "notes": list(c.notes),
                       "gpus": gpus, "entries": entries})
