"""What an op inside a model pays for the dirty L2 lines the op before it left: their write-back to memory.

The sweep times an op alone after a clean flush (a read of a buffer twice the L2) or warm (again on its own
buffers, its rewrites hitting its own dirty lines); in a model it starts on the lines its predecessor wrote, which
go back to memory as its own traffic evicts them. `roofline calibrate ops` measures this once per database
(measuring/l2_drain.py): a memory-bound add timed after a clean L2 and after a fill of W bytes elsewhere, for W
up to twice the L2. From those raw readings (`OpDB.l2_drain`), this derives, purely:
- bytes_per_s: the add's own bandwidth after the clean start (what a drained byte costs);
- keep: the share of W the add pays for, while W is small (a least-squares line through 0);
- cap_bytes: the most it pays, however much was written (the L2 holds only so many dirty lines).
scripts/experiments/l2_drain.py measured it first (docs/history.md).
The predictor charges it to a model's memory-bound ops only (`analysis.predict.with_drain`): a compute-bound
kernel writes the lines back under its math.
What it ignores: which lines the op itself reads (an op reading its predecessor's output hits some of them), and
how much of the memory pipe a memory-bound op leaves idle.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The readings whose extra bytes fall below this share of the largest are the linear part `keep` is fitted on.
LINEAR_SHARE = 0.8
# The cap is the median of this many largest extra-byte readings (one slow reading does not set it).
CAP_READINGS = 3


@dataclass(frozen=True)
class Drain:
    keep: float  # bytes paid per byte written before, below the cap
    cap_bytes: float  # the most paid
    bytes_per_s: float  # what a paid byte costs

    def seconds(self, written_bytes: float) -> float:
        """The write-back an op pays after a predecessor that wrote `written_bytes`."""
        return min(self.keep * max(written_bytes, 0.0), self.cap_bytes) / self.bytes_per_s


def drain_model(raw: Mapping[str, Any] | None) -> Drain | None:
    """The Drain of an `OpDB.l2_drain` (validated on load); None without one, or when nothing written cost
    anything (then there is nothing to charge)."""
    if not raw:
        return None
    times: dict[int, list[float]] = {}
    for s in raw["samples"]:
        times.setdefault(int(s["written_bytes"]), []).extend(float(t) for t in s["times_s"])
    base = statistics.median(times.pop(0))
    bytes_per_s = 2 * float(raw["op_bytes"]) / base  # the add reads op_bytes and writes op_bytes
    extra = sorted((w, max(statistics.median(ts) - base, 0.0) * bytes_per_s) for w, ts in times.items() if w > 0)
    if not extra or max(e for _, e in extra) <= 0:
        return None
    cap = statistics.median(sorted((e for _, e in extra), reverse=True)[:CAP_READINGS])
    linear = [(w, e) for w, e in extra if e < LINEAR_SHARE * cap] or extra[:1]
    keep = sum(w * e for w, e in linear) / sum(w * w for w, _ in linear)
    return Drain(keep=keep, cap_bytes=cap, bytes_per_s=bytes_per_s) if keep > 0 else None
