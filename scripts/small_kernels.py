"""Small kernels against Nsight Compute, kernel by kernel (issue 21's acceptance check).

    ncu --clock-control none --profile-from-start off --csv --page raw --metrics gpu__time_duration.sum,\
        sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max.per_second \
        python scripts/ncu_compare.py target suites/decode-small.toml --repeats 5 > ncu.csv
    roofline run suites/decode-small.toml -o small.json
    python scripts/small_kernels.py small.json ncu.csv [--markdown OUT.md]

For every entry and every kernel it launched (memsets and memcpys aside: ncu profiles kernels only), our time (the
median over the samples of that kernel's device time, `record.kernel_times_s`) beside ncu's median over five
profiled calls. A kernel agrees when it is within max(3%, 0.3 µs) of that median or inside the range of the
five calls (ncu itself spreads up to 10% on an 8 µs kernel). Nsight Compute flushes the caches before every
kernel it profiles, also between the kernels of one operator: its sum over-counts a multi-kernel operator
whose second kernel reads what the first left in L2, so kernels are compared one by one, never the sums.
Exit 0 when every kernel agrees, 1 otherwise.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from ncu_compare import MARKER  # type: ignore[import-not-found]  # scripts/ is on sys.path when run as a script

from roofline.core.document import read_document
from roofline.ncu.join import is_copy
from roofline.ncu.read_csv import read_raw_csv, split_calls

REL_TOL = 0.03  # the bound: 3% ...
ABS_TOL_S = 0.3e-6  # ... or 0.3 µs, whichever is larger


def agrees(ours: float, theirs: list[float]) -> bool:
    mid = statistics.median(theirs)
    return abs(ours - mid) <= max(REL_TOL * mid, ABS_TOL_S) or min(theirs) <= ours <= max(theirs)


def main(results: str, ncu_csv: str, markdown: str | None) -> int:
    recs = read_document(results).records
    calls = split_calls(read_raw_csv(ncu_csv), MARKER)
    repeats = len(calls) // len(recs) if recs else 0
    if not recs or repeats * len(recs) != len(calls):
        print(f"error: {len(recs)} records but {len(calls)} ncu calls", file=sys.stderr)
        return 2
    lines = ["| entry | method | kernel | ours µs | ncu median µs | ncu range µs | diff | agrees |",
             "|---|---|---|---|---|---|---|---|"]
    total = ok = 0
    for i, rec in enumerate(recs):
        mine = calls[i * repeats:(i + 1) * repeats]
        kernels = [(n, t) for n, t in zip(rec.kernels or [], rec.kernel_times_s or [], strict=False)
                   if not is_copy(n)]
        label = f"{rec.op} {rec.shape}"
        method = rec.timing.method if rec.timing else "-"
        if any(len(c.kernel_times_s) != len(kernels) for c in mine):
            lines.append(f"| {label} | {method} | {len(kernels)} kernels vs ncu's "
                         f"{[len(c.kernel_times_s) for c in mine]} | - | - | - | - | not comparable |")
            total += 1
            continue
        for j, (name, ours) in enumerate(kernels):
            theirs = [c.kernel_times_s[j] for c in mine]
            mid = statistics.median(theirs)
            good = agrees(ours, theirs)
            total, ok = total + 1, ok + good
            lines.append(f"| {label if j == 0 else ''} | {method if j == 0 else ''} | {name[:40]} | "
                         f"{ours * 1e6:.2f} | {mid * 1e6:.2f} | {min(theirs) * 1e6:.2f}-{max(theirs) * 1e6:.2f} | "
                         f"{ours / mid - 1:+.1%} | {'yes' if good else 'NO'} |")
    text = "\n".join(lines) + (f"\n\n{ok} of {total} kernels agree (within max({REL_TOL:.0%}, "
                                f"{ABS_TOL_S * 1e6:.1f} µs) of ncu's median of {repeats}, or inside their range)\n")
    print(text)
    if markdown:
        Path(markdown).write_text(text)
    return 0 if ok == total else 1


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    md = sys.argv[sys.argv.index("--markdown") + 1] if "--markdown" in sys.argv else None
    sys.exit(main(sys.argv[1], sys.argv[2], md))
