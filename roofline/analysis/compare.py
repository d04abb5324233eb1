"""`roofline compare`: which GPU for my operators? One operator, or a whole suite, on many GPU specs.

Per GPU: the roofline time (the analytic model of `analytic_record`), the attainable FLOP/s, the bound and
the ratio to the fastest; with a prices file, the cost per call and per million calls; with a results
document measured on one of the GPUs, the measured time beside the prediction. Measured ceilings (a
calibration in the store for that spec) replace the datasheet's where they exist, and the row says so.

NB: the roofline time is a lower bound for one GPU, so costs derived from it are lower bounds too; memory
capacity (do the weights and KV cache fit?) and multi-GPU communication are outside the model.

Prices are never part of the code or the spec files: they come from the user's TOML file
(examples/prices.toml is a dated, illustrative example).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from roofline.ceilings import store
from roofline.ceilings.specs import GPUSpec, gpu_ceilings, load_all, resolve
from roofline.core.dtypes import get_dtype
from roofline.core.errors import RooflineError, UsageError
from roofline.core.model import Ceilings
from roofline.core.record import analytic_record
from roofline.core.tomlfile import read_toml

if TYPE_CHECKING:  # pragma: no cover - typing only
    from rich.table import Table

    from roofline.analysis.suite import Suite
    from roofline.ops.base import Operator

COMPARE_VERSION = 1  # of the JSON document compare_to_json writes: add fields, never rename them
SECONDS_PER_HOUR = 3600.0
CALLS_PER_QUOTE = 1_000_000  # costs are quoted per million calls: one call costs a fraction of a cent
META_REQUIRED = ("currency", "date")
META_OPTIONAL = ("source", "note")
NO_PRICE = "no price"
UNSUPPORTED = "unsupported"

Status = Literal["ok", "unsupported"]
RoofSource = Literal["datasheet", "measured", "mixed"]


# ---------------------------------------------------------------- prices
@dataclass(frozen=True)
class Prices:
    """Price of one GPU for one hour, by spec id, in `currency`, as of `date` (the user's file)."""

    currency: str
    date: str
    source: str
    per_hour: dict[str, float]
    path: str = ""
    note: str = ""

    def price(self, gpu_id: str) -> float | None:
        return self.per_hour.get(gpu_id)


def _price_err(where: str, key: str, msg: str) -> UsageError:
    return UsageError(f"{where}: {key}: {msg}")


def parse_prices(data: dict[str, Any], where: str) -> Prices:
    """Validate a parsed prices document; every problem is a one-line UsageError naming the file and key."""
    for key in data:
        if key not in ("meta", "prices"):
            raise _price_err(where, key, "unknown top-level key (expected [meta] and [prices])")
    meta = data.get("meta")
    if not isinstance(meta, dict):
        raise _price_err(where, "meta", "missing [meta] table (currency and date are required)")
    for key in meta:
        if key not in META_REQUIRED + META_OPTIONAL:
            raise _price_err(where, f"meta.{key}", f"unknown key (known: {', '.join(META_REQUIRED + META_OPTIONAL)})")
    for key in META_REQUIRED:
        if key not in meta:
            raise _price_err(where, f"meta.{key}", "missing")
    currency = meta["currency"]
    if not isinstance(currency, str) or not currency.strip():
        raise _price_err(where, "meta.currency", "must be a non-empty string, e.g. \"USD\"")
    date = meta["date"]
    if isinstance(date, dt.date) and not isinstance(date, dt.datetime):
        date = date.isoformat()
    if not isinstance(date, str):
        raise _price_err(where, "meta.date", f"must be a date, YYYY-MM-DD, got {date!r}")
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise _price_err(where, "meta.date", f"must be a date, YYYY-MM-DD, got {date!r}") from None
    for key in META_OPTIONAL:
        if key in meta and not isinstance(meta[key], str):
            raise _price_err(where, f"meta.{key}", "must be a string")
    table = data.get("prices")
    if not isinstance(table, dict) or not table:
        raise _price_err(where, "prices", "missing or empty [prices] table (GPU id or alias = price per GPU-hour)")
    per_hour: dict[str, float] = {}
    named_by: dict[str, str] = {}
    for key, value in table.items():
        try:
            spec = resolve(key)
        except UsageError:
            known = ", ".join(sorted({a for s in load_all().values() for a in (s.id, *s.aliases)}))
            raise _price_err(where, f"prices.{key}", f"unknown GPU (known ids and aliases: {known})") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _price_err(where, f"prices.{key}", f"must be a number (price per GPU-hour), got {value!r}")
        if not math.isfinite(value) or value <= 0:
            raise _price_err(where, f"prices.{key}", f"must be a positive price per GPU-hour, got {value!r}")
        if spec.id in per_hour:
            raise _price_err(where, f"prices.{key}", f"{spec.id} is already priced by '{named_by[spec.id]}'")
        per_hour[spec.id] = float(value)
        named_by[spec.id] = key
    return Prices(currency=currency.strip(), date=date, source=str(meta.get("source", "")), per_hour=per_hour,
                  path=where, note=str(meta.get("note", "")))


def load_prices(path: str | os.PathLike[str]) -> Prices:
    """Read and validate a prices file (TOML: [meta] currency, date, source; [prices] GPU = per GPU-hour)."""
    return parse_prices(read_toml(path, "prices file", UsageError), str(Path(path)))


# ---------------------------------------------------------------- ceilings
def measured_ceilings() -> dict[str, Ceilings]:
    """The newest calibration in the store for each GPU spec id.

    Usable whatever the driver or torch it was measured with (compare is about the hardware, not this
    machine). The store has no timestamps; `store.save` appends, so a later entry is a newer one.
    """
    found: dict[str, Ceilings] = {}
    for entry in store._read_entries():
        c = entry.get("ceilings") or {}
        if c.get("kind") == "gpu" and isinstance(c.get("device_id"), str):
            found[c["device_id"]] = store._ceilings_from(entry)
    return found


def roof_for(spec: GPUSpec, measured: Ceilings | None) -> Ceilings:
    """Datasheet ceilings, with the measured figures laid over them where a calibration has them."""
    sheet = gpu_ceilings(spec)
    if measured is None:
        return sheet
    return Ceilings(device_id=spec.id, device_name=spec.name, kind="gpu", source="measured",
                    compute={**sheet.compute, **measured.compute}, memory={**sheet.memory, **measured.memory},
                    sm_clock_mhz=measured.sm_clock_mhz or sheet.sm_clock_mhz, notes=measured.notes)


def resolve_gpus(gpus: list[str] | None) -> list[GPUSpec]:
    """Specs by id or alias (each item may be a comma-separated list), first mention first; None: every spec."""
    if gpus is None:
        return sorted(load_all().values(), key=lambda s: s.id)
    names = [n.strip() for item in gpus for n in item.split(",") if n.strip()]
    if not names:
        raise UsageError("no GPU to compare: give --gpu ID (repeat it, or comma-separate) or leave it out for all")
    specs: dict[str, GPUSpec] = {}
    for name in names:
        spec = resolve(name)
        specs.setdefault(spec.id, spec)
    return list(specs.values())


# ---------------------------------------------------------------- measured times
@dataclass(frozen=True)
class Measured:
    """Timed records of a results document (a run on a local GPU), to set beside the predictions."""

    path: str
    gpu: str | None  # the spec id of the device it was measured on
    records: tuple[dict[str, Any], ...]


def load_measured(source: str | os.PathLike[str] | dict[str, Any]) -> Measured:
    """A results document (path or parsed) reduced to its timed records."""
    from roofline.core.document import read_document, validate_document

    if isinstance(source, dict):
        doc, where = validate_document(source, "measured results"), "measured results"
    else:
        doc, where = read_document(source), str(source)
    device = doc.get("device") or {}
    gpu = device.get("spec_id") or (device.get("ceilings") or {}).get("device_id")
    records = tuple(r for r in doc["records"] if r.get("time_s") is not None)
    if not records:
        raise RooflineError(f"{where}: no timed records (run it on the GPU without --no-time)")
    return Measured(where, gpu if isinstance(gpu, str) else None, records)


def _canonical(params: Any) -> str:
    return json.dumps(params, sort_keys=True)


def match_record(measured: Measured, op: Operator, dtype: str, gpu_id: str) -> dict[str, Any] | None:
    """The first timed record on this GPU of the same operator, variant, parameters and dtype."""
    params = _canonical(op.params())
    for r in measured.records:
        if (r.get("gpu") == gpu_id and r.get("op") == op.name and r.get("variant") == op.variant_name()
                and r.get("dtype") == dtype and _canonical(r.get("params")) == params):
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

    time_s: float | None
    price_per_hour: float | None

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
    record: dict[str, Any] | None = None
    reason: str = ""  # why unsupported
    roof: RoofSource | None = None
    rank: int | None = None  # 1 = fastest; None when unsupported
    vs_fastest: float | None = None  # roofline time / the fastest GPU's: 1.0 for the fastest
    price_per_hour: float | None = None
    cost_vs_cheapest: float | None = None  # cost per call / the cheapest priced GPU's: 1.0 for the cheapest
    measured_time_s: float | None = None

    @property
    def time_s(self) -> float | None:
        return self.record["roofline_time_s"] if self.record else None

    @property
    def attainable_flops_per_s(self) -> float | None:
        return self.record["attainable_flops_per_s"] if self.record else None

    @property
    def bound(self) -> str | None:
        return self.record["bound"] if self.record else None

    @property
    def roofline_fraction(self) -> float | None:
        """Roofline time / measured time (1.0 = on the roof), where the GPU was measured."""
        if self.measured_time_s is None or self.time_s is None:
            return None
        return self.time_s / self.measured_time_s


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

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def label(self) -> str:
        """'decode_attention bf16' or 'swiglu fused bf16'."""
        return " ".join(p for p in (self.op, self.variant, self.dtype) if p)

    def row(self, gpu: str) -> GPURow:
        """The row of a GPU by id or alias."""
        gpu_id = resolve(gpu).id
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


def compare_op(op: Operator, dtype: str, gpus: list[str] | None = None, prices: Prices | None = None,
               tensor_cores: bool = True, *, measured: Measured | str | os.PathLike[str] | dict[str, Any] | None
               = None, use_measured: bool = True) -> Comparison:
    """Rank GPUs for one operator by roofline time.

    A GPU that cannot run the dtype (fp8 on an A100, bf16 on a V100) is 'unsupported', not an error; a dtype
    the operator itself does not take is a UsageError. `use_measured=False` ignores calibrations.
    """
    dtype_ = get_dtype(dtype)
    op.check_dtype(dtype_)
    specs = resolve_gpus(gpus)
    calibrated = measured_ceilings() if use_measured else {}
    timed = measured if isinstance(measured, Measured) or measured is None else load_measured(measured)
    rows: list[GPURow] = []
    for spec in specs:
        cal = calibrated.get(spec.id)
        try:
            rec = analytic_record(op, dtype_, roof_for(spec, cal), tensor_cores)
        except UsageError as exc:
            rows.append(GPURow(spec.id, spec.name, "unsupported", reason=str(exc)))
            continue
        roof: RoofSource = "datasheet"
        if cal is not None:
            roof = "measured" if rec["compute_pipe"] in cal.compute and "dram" in cal.memory else "mixed"
        hit = match_record(timed, op, dtype_.name, spec.id) if timed else None
        rows.append(GPURow(spec.id, spec.name, "ok", record=rec, roof=roof,
                           price_per_hour=prices.price(spec.id) if prices else None,
                           measured_time_s=hit["time_s"] if hit else None))
    notes = list(_measured_notes(timed, [op], specs, rows_matched=any(r.measured_time_s for r in rows)))
    for r in rows:
        if r.roof == "mixed":
            pipe = (r.record or {}).get("compute_pipe_label", "compute")
            notes.append(f"{r.gpu}: measured DRAM bandwidth, datasheet {pipe} peak (the calibration has no figure "
                         "for that pipe)")
    traffic = op.traffic(dtype_)
    return Comparison(op=op.name, variant=op.variant_name(), params=op.params(), dtype=dtype_.name,
                      tensor_cores=tensor_cores, flops=float(op.flops()), bytes=traffic.total, rows=tuple(_rank(rows)),
                      prices=prices, measured_path=timed.path if timed else None, model_note=op.ignores,
                      notes=tuple(notes))


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

    def row(self, gpu: str) -> SuiteRow:
        gpu_id = resolve(gpu).id
        for r in self.rows:
            if r.gpu == gpu_id:
                return r
        raise KeyError(gpu)


def compare_suite(suite: Suite | str | os.PathLike[str], gpus: list[str] | None = None,
                  prices: Prices | None = None, *,
                  measured: Measured | str | os.PathLike[str] | dict[str, Any] | None = None,
                  use_measured: bool = True) -> SuiteComparison:
    """Every entry of a suite (its GPU shapes and dtypes) on every GPU; a GPU that cannot run one entry is
    'unsupported' for the suite and left out of the ranking."""
    from roofline.analysis.suite import Suite as SuiteType
    from roofline.analysis.suite import load_suite

    s = suite if isinstance(suite, SuiteType) else load_suite(suite)
    timed = measured if isinstance(measured, Measured) or measured is None else load_measured(measured)
    specs = resolve_gpus(gpus)
    ids = [sp.id for sp in specs]
    entries = tuple(compare_op(e.operator(True), e.dtype_for(True), ids, prices, e.tensor_cores, measured=timed,
                               use_measured=use_measured) for e in s.entries)
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
            measured_time_s=sum(hits) if hits else None, measured_entries=len(hits)))
    notes = _measured_notes(timed, [e.operator(True) for e in s.entries], specs,
                            rows_matched=any(r.measured_entries for r in rows))
    notes += sorted({n for c in entries for n in c.notes if "measured DRAM" in n})
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
    rec = r.record or {}
    return {"gpu": r.gpu, "name": r.name, "status": r.status, "reason": r.reason or None, "rank": r.rank,
            "roof": r.roof, "bound": r.bound, "compute_pipe": rec.get("compute_pipe"),
            "peak_flops_per_s": rec.get("peak_flops_per_s"), "peak_bytes_per_s": rec.get("peak_bytes_per_s"),
            "ridge_point": rec.get("ridge_point"), "roofline_time_s": r.time_s,
            "attainable_flops_per_s": r.attainable_flops_per_s, "vs_fastest": r.vs_fastest,
            "measured_time_s": r.measured_time_s, "roofline_fraction": r.roofline_fraction,
            **(_cost_json(r, prices) if prices is not None else {})}


def _op_json(c: Comparison) -> dict[str, Any]:
    return {"op": c.op, "variant": c.variant, "params": c.params, "dtype": c.dtype, "tensor_cores": c.tensor_cores,
            "flops": c.flops, "bytes": c.bytes, "arithmetic_intensity": c.arithmetic_intensity,
            "model_note": c.model_note, "notes": list(c.notes),
            "gpus": [_row_json(r, c.prices) for r in c.rows]}


def compare_to_json(c: Comparison | SuiteComparison) -> dict[str, Any]:
    """The comparison as a JSON-ready document (`kind` 'op' or 'suite'); inf is written as null."""
    from roofline import __version__
    from roofline.core.document import _clean, now_iso

    head = {"compare_version": COMPARE_VERSION, "tool_version": __version__, "created": now_iso(),
            "prices": _prices_json(c.prices), "measured": c.measured_path}
    if isinstance(c, Comparison):
        return _clean({**head, "kind": "op", **_op_json(c)})
    gpus = []
    for r in c.rows:
        gpus.append({"gpu": r.gpu, "name": r.name, "status": r.status, "reason": r.reason or None, "rank": r.rank,
                     "roof": r.roof, "roofline_time_s": r.time_s, "attainable_flops_per_s": r.attainable_flops_per_s,
                     "memory_bound_share": r.memory_bound_share, "vs_fastest": r.vs_fastest,
                     "by_op_s": dict(r.by_op) if r.status == "ok" else None,
                     "entry_times_s": list(r.entry_times) if r.status == "ok" else None,
                     "measured_time_s": r.measured_time_s, "measured_entries": r.measured_entries,
                     **(_cost_json(r, c.prices) if c.prices is not None else {})})
    entries = [{"entry": i, **_op_json(e)} for i, e in enumerate(c.entries, start=1)]
    return _clean({**head, "kind": "suite", "suite": c.suite, "path": c.path, "notes": list(c.notes),
                   "gpus": gpus, "entries": entries})


# ---------------------------------------------------------------- rendering
def money(x: float | None, currency: str) -> str:
    """0.01234 -> '0.0123 USD'; large sums keep their cents: 1234.5 -> '1,234.50 USD'."""
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.2f} {currency}"
    return f"{x:.3g} {currency}"


def num(x: float | None) -> str:
    """3 significant digits, without exponents for large values: 0.105, 28.2, 2,490."""
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _cost_cells(r: GPURow | SuiteRow, prices: Prices) -> list[str]:
    if r.status != "ok":
        return ["-", "-", "-"]
    if r.price_per_hour is None:
        return [NO_PRICE, NO_PRICE, "-"]
    return [f"{r.price_per_hour:g}", num(r.cost_per_million), _ratio(r.cost_vs_cheapest)]


def _caption(prices: Prices | None, unsupported: list[tuple[str, str]], notes: tuple[str, ...],
             suite: bool = False, measured: str | None = None) -> str:
    lines = ["roofline time: a lower bound, max(FLOPs / peak, bytes / bandwidth); vs fastest: time / the fastest "
             "GPU's time"]
    if suite:
        lines.append("operator columns: roofline time of that operator's entries, summed, in µs; mem-bound: share of "
                     "the total spent in memory-bound entries")
    if measured is not None:
        lines.append(f"measured: median times from {measured}; % of roof = roofline time / measured time"
                     + ("; n/N: only n of N entries measured (no total)" if suite else ""))
    if prices is not None:
        src = f" ({prices.source})" if prices.source else ""
        lines.append(f"prices: {prices.currency} per GPU-hour as of {prices.date}, {prices.path}{src}")
        lines.append(f"cost per 1M {'runs' if suite else 'calls'} = roofline time x price / 3600 x 1e6 "
                     f"(a lower bound, as the time is)")
    lines += [f"{UNSUPPORTED}: {gpu}: {why}" for gpu, why in unsupported]
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)


def _table(title: str, caption: str) -> Table:
    from rich.table import Table

    return Table(title=title, caption=caption, caption_justify="left", title_justify="left")


def _render_op(c: Comparison) -> Table:
    from roofline.report.text import duration, si

    measured = c.measured_path is not None
    params = " ".join(f"{k}={v}" for k, v in c.params.items())
    title = (f"compare: {c.label} ({params})\n{si(c.flops, 'FLOP')}, {si(c.bytes, 'B')}, "
             f"AI {num(c.arithmetic_intensity)} FLOP/B")
    t = _table(title, _caption(c.prices, [(r.gpu, r.reason) for r in c.rows if r.status != "ok"], c.notes,
                               measured=c.measured_path))
    # Two-line headers keep the table within 160 columns (render.PIPE_WIDTH) with --measured and --prices.
    cols = ["#", "GPU", "roof", "bound", "pipe", "roofline\ntime", "vs\nfastest", "TFLOP/s", "GB/s\nroof"]
    if measured:
        cols += ["measured", "% of\nroof"]
    if c.prices is not None:
        cols += [f"{c.prices.currency}/\nGPU-h", f"{c.prices.currency}/1M\ncalls", "vs\ncheapest"]
    for col in cols:
        t.add_column(col, justify="left" if col in ("GPU", "roof", "bound", "pipe") else "right")
    for r in c.rows:
        if r.status != "ok":
            cells = ["-", r.gpu, "-", "-", "-", UNSUPPORTED, "-", "-", "-"]
        else:
            rec = r.record or {}
            cells = [str(r.rank), r.gpu, r.roof or "-", r.bound or "-", rec.get("compute_pipe_label", ""),
                     duration(r.time_s), _ratio(r.vs_fastest), num((r.attainable_flops_per_s or 0) / 1e12),
                     f"{rec.get('peak_bytes_per_s', 0) / 1e9:.4g}"]
        if measured:
            frac = r.roofline_fraction
            cells += [duration(r.measured_time_s), f"{frac:.0%}" if frac is not None else "-"]
        if c.prices is not None:
            cells += _cost_cells(r, c.prices)
        t.add_row(*cells)
    return t


def _render_suite(c: SuiteComparison) -> Table:
    from roofline.report.text import duration

    measured = c.measured_path is not None
    roofs = {r.roof for r in c.ranked}
    one_roof = len(roofs) == 1  # the table is wide: a roof every GPU shares goes to the caption
    notes = (*c.notes, f"roof: {next(iter(roofs))} for every GPU") if one_roof else c.notes
    title = f"compare: suite {c.suite} ({len(c.entries)} entries, per run of the whole suite)"
    t = _table(title, _caption(c.prices, [(r.gpu, r.reason) for r in c.rows if r.status != "ok"], notes, True,
                               c.measured_path))
    # Two-line headers: a column per operator, and the table must fit 160 columns (render.PIPE_WIDTH).
    cols = ["#", "GPU", *([] if one_roof else ["roof"]), "total", "vs\nfastest", "TFLOP/s", "mem-\nbound",
            *(op.replace("_", "_\n", 1) for op in c.op_names)]
    if measured:
        cols += ["measured", "% of\nroof"]
    if c.prices is not None:
        cols += [f"{c.prices.currency}/\nGPU-h", f"{c.prices.currency}/1M\nruns", "vs\ncheapest"]
    for col in cols:
        t.add_column(col, justify="left" if col in ("GPU", "roof") else "right")
    for r in c.rows:
        roof = [] if one_roof else [r.roof or "-"]
        if r.status != "ok":
            cells = ["-", r.gpu, *roof, UNSUPPORTED, "-", "-", "-", *("-" for _ in c.op_names)]
        else:
            share = r.memory_bound_share
            cells = [str(r.rank), r.gpu, *roof, duration(r.time_s), _ratio(r.vs_fastest),
                     num((r.attainable_flops_per_s or 0) / 1e12), f"{share:.0%}" if share is not None else "-",
                     *(num(r.by_op[op] * 1e6) if op in r.by_op else "-" for op in c.op_names)]
        if measured:
            n = len(c.entries)
            if r.measured_entries == n and r.time_s and r.measured_time_s:
                cells += [duration(r.measured_time_s), f"{r.time_s / r.measured_time_s:.0%}"]
            else:
                cells += [f"{r.measured_entries}/{n}" if r.measured_entries else "-", "-"]
        if c.prices is not None:
            cells += _cost_cells(r, c.prices)
        t.add_row(*cells)
    return t


def render_compare(c: Comparison | SuiteComparison) -> Table:
    """A rich table, fastest GPU first, unsupported GPUs last (rendering only: the numbers are the comparison's)."""
    return _render_suite(c) if isinstance(c, SuiteComparison) else _render_op(c)


# ---------------------------------------------------------------- chart
OP_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974",
              "#64b5cd")  # one per operator name in a suite's stacked bars (cycled)
MEASURED_COLOUR = "#1a1a1a"


def _bar_text(ax: Any, y: float, x: float, text: str, gid: str) -> None:
    ax.annotate(text, xy=(x, y), xytext=(3, 0), textcoords="offset points", va="center", ha="left", fontsize=8,
                gid=gid)


def plot_compare(c: Comparison | SuiteComparison, path: str | os.PathLike[str]) -> Path:
    """A horizontal bar chart, fastest GPU on top: roofline time per GPU (stacked by operator for a suite;
    measured times as diamonds) and, with prices, cost per million calls. PNG, SVG or PDF by suffix."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from roofline import __version__
    from roofline.report.chart import BOUND_COLOURS, DPI, FONT_PT, FORMATS, TITLE_PT, bound_colour
    from roofline.report.text import duration

    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise UsageError(f"{p}: cannot tell the chart format from '{p.suffix or '(no suffix)'}': "
                         f"use {', '.join(FORMATS)}")
    ok = list(c.ranked)
    if not ok:
        raise RooflineError("no GPU can run it: nothing to draw")
    bad = [r for r in c.rows if r.status != "ok"]
    labels = [r.gpu for r in ok]
    ys = list(range(len(ok)))
    priced = c.prices is not None
    suite = isinstance(c, SuiteComparison)
    with matplotlib.rc_context({"font.size": FONT_PT, "axes.titlesize": FONT_PT + 1, "svg.fonttype": "none",
                                "pdf.fonttype": 42}):
        fig = Figure(figsize=(11.0 if priced else 7.5, 1.6 + 0.38 * len(ok)), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 2 if priced else 1, sharey=True, squeeze=False)[0]
        ax = axes[0]
        top = max(r.time_s or 0.0 for r in ok)
        if isinstance(c, SuiteComparison):
            left = [0.0] * len(ok)
            for k, op in enumerate(c.op_names):
                widths = [r.by_op.get(op, 0.0) * 1e6 for r in ok]  # type: ignore[union-attr]
                bars = ax.barh(ys, widths, left=left, color=OP_COLOURS[k % len(OP_COLOURS)], label=op, height=0.7)
                for bar, gpu in zip(bars, labels, strict=True):
                    bar.set_gid(f"bar:op:{op}:{gpu}")
                left = [a + b for a, b in zip(left, widths, strict=True)]
            fig.legend(loc="outside lower left", fontsize=8, ncol=min(len(c.op_names), 6), frameon=False)
        else:
            bars = ax.barh(ys, [(r.time_s or 0.0) * 1e6 for r in ok], height=0.7,
                           color=[bound_colour(r.bound or "") for r in ok])
            for bar, gpu in zip(bars, labels, strict=True):
                bar.set_gid(f"bar:time:{gpu}")
            from matplotlib.patches import Patch

            bounds = [b for b in BOUND_COLOURS if any(r.bound == b for r in ok)]
            fig.legend(handles=[Patch(color=BOUND_COLOURS[b], label=f"{b}-bound") for b in bounds],
                       loc="outside lower left", fontsize=8, ncol=len(bounds), frameon=False)
        for y, r in zip(ys, ok, strict=True):
            end = r.time_s or 0.0
            complete = not isinstance(r, SuiteRow) or r.measured_entries == len(r.entry_times)
            if r.measured_time_s is not None and complete:  # a suite's partial measurement is not drawn
                ax.plot([r.measured_time_s * 1e6], [y], marker="D", color=MEASURED_COLOUR, markersize=6,
                        linestyle="none", gid=f"measured:{r.gpu}", zorder=5)
                end = max(end, r.measured_time_s)
                top = max(top, end)
            _bar_text(ax, y, end * 1e6, f"{duration(r.time_s)}  ({_ratio(r.vs_fastest)})", f"label:time:{r.gpu}")
        ax.set_xlim(0, top * 1e6 * 1.35)
        ax.set_yticks(ys, labels)
        ax.invert_yaxis()
        what = "per run of the suite" if suite else "per call"
        ax.set_xlabel(f"roofline time {what} (µs)" + ("; ◆ measured" if c.measured_path else ""))
        ax.set_title("time (lower is better)", loc="left")
        if priced:
            assert c.prices is not None
            cax = axes[1]
            costs = [r.cost_per_million for r in ok]
            cbars = cax.barh(ys, [x or 0.0 for x in costs], height=0.7, color="#5a5a5a")
            for bar, r in zip(cbars, ok, strict=True):
                bar.set_gid(f"bar:cost:{r.gpu}")
            ctop = max((x for x in costs if x is not None), default=1.0)
            for y, r, x in zip(ys, ok, costs, strict=True):
                text = NO_PRICE if x is None else money(x, c.prices.currency)
                _bar_text(cax, y, x or 0.0, text, f"label:cost:{r.gpu}")
            cax.set_xlim(0, ctop * 1.45)
            cax.set_xlabel(f"{c.prices.currency} per million {'runs' if suite else 'calls'} "
                           f"(prices as of {c.prices.date})")
            cax.set_title("cost (lower is better)", loc="left")
        for a in axes:
            for side in ("top", "right"):
                a.spines[side].set_visible(False)
            a.grid(True, axis="x", color="#e3e3e3", linewidth=0.6)
            a.set_axisbelow(True)
        subject = f"suite {c.suite}" if isinstance(c, SuiteComparison) else c.label
        fig.suptitle(f"Which GPU? {subject}", x=0.01, ha="left", fontsize=TITLE_PT, fontweight="bold")
        if bad:
            ax.set_title(f"{UNSUPPORTED}: " + ", ".join(r.gpu for r in bad), loc="right", fontsize=8,
                         color="#555555").set_gid("unsupported")
        meta = {"Title": f"Which GPU? {subject}"}
        meta["Software" if fmt == "png" else "Creator"] = f"roofline {__version__}"
        try:
            fig.savefig(p, format=fmt, dpi=DPI, bbox_inches="tight", pad_inches=0.15, facecolor="white",
                        metadata=meta)
        except OSError as exc:
            raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    return p


__all__ = ["COMPARE_VERSION", "Comparison", "GPURow", "Measured", "Prices", "SuiteComparison", "SuiteRow",
           "compare_op", "compare_suite", "compare_to_json", "load_measured", "load_prices", "match_record",
           "measured_ceilings", "parse_prices", "plot_compare", "render_compare", "resolve_gpus", "roof_for"]
