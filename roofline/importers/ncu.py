"""Nsight Compute's raw CSV (`ncu --csv --page raw`) read into kernels with metrics in SI base units.

The CSV has one header row of metric names, one row of units, then one row per profiled kernel; numbers may
carry thousands separators ("1,234") and a metric ncu could not collect reads "n/a". Lines before the header
(ncu's `==PROF==` log) are skipped.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from roofline.core.errors import RooflineError

DURATION = "gpu__time_duration.sum"
# The SM clock as ncu reports it: the average over SMs of cycles elapsed per second (its "SM Frequency"), and
# the busiest SM's (max), when the run asked for it. They differ where some SMs sat idle during the kernel.
SM_CLOCK = {"avg": "sm__cycles_elapsed.avg.per_second", "max": "sm__cycles_elapsed.max.per_second"}

# Unit -> factor to the SI base unit (seconds, Hz, bytes, plain counts).
_UNITS = {
    "": 1.0, "ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0,
    "second": 1.0, "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/second": 1.0, "cycle/nsecond": 1e9,
    "cycle/usecond": 1e6, "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "byte/second": 1.0, "kbyte/second": 1e3, "mbyte/second": 1e6, "gbyte/second": 1e9, "tbyte/second": 1e12,
    "cycle": 1.0, "inst": 1.0, "warp": 1.0, "%": 1.0,
}
_TEXT_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Device",
                 "CC", "Block Size", "Grid Size", "Section Name", "Metric Name", "Demangled Name", "Function Name"}


@dataclass(frozen=True)
class NcuKernel:
    """One profiled kernel: its ID (launch order), name, NVTX range (if any) and metrics in SI units."""

    id: int
    name: str
    metrics: dict[str, float | None] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return self.metrics.get(DURATION) or 0.0


def unit_factor(unit: str) -> float:
    """The factor that turns a value in `unit` into SI base units. Units without a prefix to remove
    (sector, request, inst/cycle, ...) keep their values as printed."""
    return _UNITS.get(unit.strip().lower(), 1.0)


def parse_number(text: str) -> float | None:
    """'1,234.5' -> 1234.5; 'n/a' or '' -> None."""
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_raw_csv(lines: Iterable[str], where: str = "ncu CSV") -> list[NcuKernel]:
    """Kernels from the text of `ncu --csv --page raw`, in launch order."""
    rows = [line for line in lines if line.startswith('"')]
    if not rows:
        raise RooflineError(f"{where}: no CSV rows (expected the output of `ncu --csv --page raw`)")
    reader = csv.DictReader(rows)
    if not reader.fieldnames or "ID" not in reader.fieldnames or "Kernel Name" not in reader.fieldnames:
        raise RooflineError(f"{where}: not an Nsight Compute raw CSV (no 'ID' and 'Kernel Name' columns)")
    units: dict[str, str] = {}
    kernels: list[NcuKernel] = []
    for r in reader:
        if not r.get("ID"):
            units = {k: v for k, v in r.items() if k and v}
            continue
        try:
            kid = int(r["ID"])
        except ValueError:
            raise RooflineError(f"{where}: kernel ID {r['ID']!r} is not an integer") from None
        metrics: dict[str, float | None] = {}
        text: dict[str, str] = {}
        for k, v in r.items():
            if k is None or v is None:
                continue
            if k in _TEXT_COLUMNS or (k not in units and parse_number(v) is None and v.strip() not in ("n/a", "")):
                text[k] = v
                continue
            n = parse_number(v)
            metrics[k] = None if n is None else n * unit_factor(units.get(k, ""))
        kernels.append(NcuKernel(kid, r["Kernel Name"], metrics, text))
    return sorted(kernels, key=lambda k: k.id)


def read_raw_csv(path: str | os.PathLike[str]) -> list[NcuKernel]:
    p = Path(path)
    try:
        with open(p, newline="", encoding="utf-8") as fh:
            return parse_raw_csv(fh, str(p))
    except FileNotFoundError:
        raise RooflineError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RooflineError(f"{p}: cannot read: {exc}") from None


@dataclass(frozen=True)
class Call:
    """The kernels of one operator call between two marker kernels: summed duration, duration-weighted
    SM clocks (average and busiest SM), kernel count."""

    time_s: float
    kernels: int
    sm_clock_mhz: float
    sm_clock_max_mhz: float
    kernel_times_s: tuple[float, ...] = ()  # each kernel's duration, in launch order


def split_calls(kernels: Sequence[NcuKernel], marker: str) -> list[Call]:
    """Group kernels between marker kernels (names containing `marker`) into calls; kernels before the
    first marker are not part of any call, and a call is closed by the next marker."""
    calls: list[Call] = []
    group: list[NcuKernel] | None = None
    for k in kernels:
        if marker in k.name:
            if group is not None:
                calls.append(_call(group))
            group = []
        elif group is not None:
            group.append(k)
    return calls


def _call(group: Sequence[NcuKernel]) -> Call:
    total = sum(k.duration_s for k in group)

    def clock(metric: str) -> float:
        cycles = sum(k.duration_s * (k.metrics.get(metric) or 0.0) for k in group)
        return cycles / total / 1e6 if total else 0.0

    return Call(total, len(group), clock(SM_CLOCK["avg"]), clock(SM_CLOCK["max"]),
                tuple(k.duration_s for k in group))
