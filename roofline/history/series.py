"""One record's series over the runs of a store: the typed runs and points, what a document's records become
when added (`new_points`), and the value of a point in each metric (`--metric time` or `fraction`).

The unit of a series is the run (one document), not the sample: the samples of one run share its clocks and
placement, and it is between runs of unchanged code that the median moves (`roofline.ci.runs`). A point keeps
the run's median, quartiles and every sample; the clock and power cap it ran at; and the roofline time at that
clock, so a series can be judged as the fraction of the roofline the code reached at the clock it got, where a
lower clock alone (heat, a power cap) does not read as slower code.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from roofline.ci.inputs import measurement_problem, record_name, records_by_key
from roofline.ci.runs import RUN_SAMPLES, check_runs, run_samples
from roofline.core.document import Document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.record import Key, Record
from roofline.core.stats import quantile

METRICS = ("time", "fraction")
# Every sample of a point, packed as little-endian float64 (8 bytes a sample): a suite's 20-300 samples take
# 0.2-2.4 KB a point, a third of their JSON text, and read back exactly.
SAMPLE_FORMAT = "<d"


@dataclass(frozen=True)
class Run:
    """One results document added to the store."""

    id: int
    added: str  # when it was added (ISO 8601, UTC)
    created: str  # when the document was made
    commit: str | None
    branch: str | None
    machine: str
    device: str  # the device's name ('NVIDIA H200')
    driver: str | None
    torch: str | None = None
    tool_version: str | None = None
    source: str | None = None  # the document's path as given to `history add`


@dataclass(frozen=True)
class Point:
    """One record of one run: its median time and spread, and what it ran at."""

    run: Run
    median_s: float
    q1_s: float
    q3_s: float
    n: int  # samples
    roofline_time_s: float | None
    roof_at_clock_s: float | None  # the roofline time at the SM clock measured (`roof_at_clock`)
    sm_clock_mhz: float | None
    power_limit_w: float | None

    def value(self, metric: str) -> float | None:
        """The point in `metric`: its median time, or the fraction of the roofline at its clock (None when the
        record has no roofline time)."""
        if metric == "time":
            return self.median_s
        roof = self.roof_at_clock_s
        return roof / self.median_s if roof else None

    def spread(self, metric: str) -> tuple[float, float] | None:
        """The quartiles of the samples in `metric` (a fraction's low quartile is the slow samples')."""
        if metric == "time":
            return self.q1_s, self.q3_s
        roof = self.roof_at_clock_s
        return (roof / self.q3_s, roof / self.q1_s) if roof else None


@dataclass(frozen=True)
class Series:
    """One record key on one GPU over the runs: `points` in the order the runs were added (when read)."""

    id: int
    key: str
    gpu: str
    op: str
    name: str  # 'gemm bf16 m=4096 n=4096 k=4096'
    points: tuple[Point, ...] = ()

    def values(self, metric: str) -> list[float | None]:
        return [p.value(metric) for p in self.points]


@dataclass(frozen=True)
class NewPoint:
    """A timed record of a document as `history add` stores it."""

    key: str
    gpu: str
    op: str
    name: str
    median_s: float
    q1_s: float
    q3_s: float
    n: int
    samples: bytes
    roofline_time_s: float | None
    roof_at_clock_s: float | None
    sm_clock_mhz: float | None
    power_limit_w: float | None


def series_key(gpu: str, key: Key) -> str:
    """A series' identity as stored: the GPU, then the record's key (operator, variant, canonical params, dtype,
    case), joined by '|' (params are JSON without that character outside strings)."""
    return "|".join([gpu, *(str(k) if k is not None else "" for k in key)])


def pack(samples: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(samples)}d", *samples)


def unpack(blob: bytes | None) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 8}d", blob)) if blob else []


def roof_at_clock(rec: Record) -> float | None:
    """The record's roofline time at the SM clock measured during its samples. A peak re-quoted at that clock
    (`peak_flops_per_s_datasheet` set) is already there; a datasheet peak is scaled from the clock its spec quotes
    it at (`GPUSpec.reference_clock_mhz`) to the measured one; memory roofs are not scaled (HBM does not run
    on the SM clock). Without a clock, a GPU spec or a datasheet roof: the record's own roofline time."""
    roof, clock = rec.roofline_time_s, rec.sm_clock_mhz
    if roof is None or not clock or not rec.flops or not rec.peak_flops_per_s or not rec.compute_pipe:
        return roof
    if rec.peak_flops_per_s_datasheet is not None:
        return roof
    if rec.device_kind != "gpu" or (rec.roof_source or "datasheet") != "datasheet":
        return roof
    from roofline.ceilings.specs import as_spec

    try:
        quoted = as_spec(rec.gpu).reference_clock_mhz(rec.compute_pipe)
    except (RooflineError, KeyError):  # a GPU this roofline has no spec for, or no clock quoted: the recorded roof
        return roof
    compute_s = rec.flops / (rec.peak_flops_per_s * clock / quoted)
    memory_s = (rec.bytes or 0.0) / rec.peak_bytes_per_s if rec.peak_bytes_per_s else 0.0
    return max(compute_s, memory_s)


def new_points(doc: Document, where: str) -> tuple[list[NewPoint], list[str]]:
    """The timed records of a document as points, and the names of the records left out (not timed). A number that
    is no measurement (a document built in memory; files are refused so on read) is a one-line UsageError naming the
    record, as `check` says it."""
    points, untimed = [], []
    for key, rec in records_by_key(doc, where).items():
        name = record_name(rec, key[4])
        problem = measurement_problem(rec) or check_runs(rec)
        if problem:
            raise UsageError(f"{where}: {name}: {problem}")
        runs = run_samples(rec)
        if rec.time_s is None or not runs:
            untimed.append(name)
            continue
        samples = [t for run in runs for t in run]
        clocks = rec.clocks
        power = clocks.power_limit_w if clocks is not None else None
        points.append(NewPoint(
            key=series_key(rec.gpu, key), gpu=rec.gpu, op=rec.op, name=name, median_s=float(rec.time_s),
            q1_s=quantile(samples, 0.25), q3_s=quantile(samples, 0.75), n=len(samples), samples=pack(samples),
            roofline_time_s=rec.roofline_time_s, roof_at_clock_s=roof_at_clock(rec), sm_clock_mhz=rec.sm_clock_mhz,
            power_limit_w=float(power) if isinstance(power, (int, float)) and math.isfinite(power) else None))
    if not points:
        raise UsageError(f"{where}: no timed record: the history keeps measured times")
    return points, untimed


def digest(doc: Document) -> str:
    """The document's identity in the store: the SHA-256 of when it was made, by which roofline, on which device,
    and each record's key, time and samples, as compact JSON (the same document, gzipped or not, indented or not, is
    one run). Not its whole text: turning 50 records back into a dict took 8 ms of a 35 ms add."""
    ident = [doc.created, doc.tool_version, doc.device,
             [[rec.key(), rec.time_s, rec.time_samples_s, rec.extra.get(RUN_SAMPLES)] for rec in doc.records]]
    return hashlib.sha256(json.dumps(ident, separators=(",", ":"), default=str).encode()).hexdigest()
