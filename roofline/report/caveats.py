"""What a view of timed records says beside its numbers, one line each: times taken on a busy machine, times
whose samples spread widely, a roof measured on a busy machine, predictions whose interval says nothing. Each
record's notes (and the JSON) say it record by record; a table of many rows says it once, under the table, so
that a time measured while other work ran is never printed without a word. Rendering only: the judgements are
the measuring code's (`core.record.BUSY_NOTE`, `core.stats.NOISY_IQR_FRACTION`) and the predictor's
(`analysis.predict.wide_interval_note`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roofline.core.record import BUSY_NOTE, Record
from roofline.core.stats import NOISY_IQR_FRACTION, summarize

# What a calibration on a busy machine writes first in the roof's notes, which every record timed against it
# repeats (`measuring.calibrate.CALIBRATION_WARNING`, said here as text: the views read documents, never the
# measuring code).
BUSY_ROOF_NOTE = "CPU roof measured on a busy machine"
# A noisy-record line names at most this many records, the noisiest first (a suite of 50 stays one line).
NAMED = 2


def busy(r: Record) -> bool:
    """Whether the record was timed on a busy machine (its notes say so)."""
    return any(n.startswith(BUSY_NOTE) for n in r.notes or [])


def relative_iqr(r: Record) -> float | None:
    """The record's IQR as a share of its median: from its timing's stats, else from its samples (sol's
    records keep samples only); None when it holds fewer than two samples."""
    stats = (r.timing.stats if r.timing else None) or {}
    if "relative_iqr" in stats:
        return float(stats["relative_iqr"])
    samples = r.time_samples_s or []
    return summarize(samples).relative_iqr if len(samples) >= 2 else None


def default_label(r: Record) -> str:
    return " ".join(t for t in (r.op, r.variant) if t)


def timing_caveats(records: Sequence[Record], label: Callable[[Record], str] = default_label) -> list[str]:
    """The lines a view of `records` prints under its table (empty when none applies). `label(record)` names
    a record as the view does (its first column)."""
    timed = [r for r in records if r.time_s is not None]
    if not timed:
        return []
    out = []
    crowded = [r for r in timed if busy(r)]
    if crowded:
        fewer = (", or with fewer torch threads than idle cores (run, analyze: --threads 1)"  # rule cpu-threads
                 if any(r.device_kind == "cpu" for r in crowded) else "")
        out.append(f"busy machine while timing {_count(crowded, timed)} (how busy: each record's notes, --json): "
                   f"the times may be slow; time again on a quiet machine{fewer}")
    spreads = sorted(((x, r) for r in timed if (x := relative_iqr(r)) is not None and x > NOISY_IQR_FRACTION),
                     key=lambda p: -p[0])
    if spreads:
        worst = ", ".join(f"{label(r)} ±{x / 2:,.0%}" for x, r in spreads[:NAMED])  # as the tables' ± IQR/2
        more = f" and {len(spreads) - NAMED} more" if len(spreads) > NAMED else ""
        out.append(f"noisy: the samples spread over ±{NOISY_IQR_FRACTION / 2:.0%} of the median (IQR/2) in "
                   f"{_count(spreads, timed)} ({worst}{more}): close other work and time again")
    if any(n.startswith(BUSY_ROOF_NOTE) for r in timed for n in r.notes or []):
        out.append("the CPU roof was measured on a busy machine: it may be low, and % of roof high; run "
                   "`roofline calibrate` when the machine is quiet")
    return out


def _count(some: Sequence[object], of: Sequence[Record]) -> str:
    """'3 of 8 records', 'all 8 records', 'both records', or 'the record' in a view of one."""
    if len(of) <= 2 and len(some) == len(of):
        return "the record" if len(of) == 1 else "both records"
    return f"all {len(of)} records" if len(some) == len(of) else f"{len(some)} of {len(of)} records"
