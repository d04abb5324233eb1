"""Compare roofline's kernel times with Nsight Compute's on the same kernels (issue 4's acceptance check).

    python scripts/ncu_compare.py target SUITE [--repeats N]   # run under ncu: each entry N times (default 1)
    python scripts/ncu_compare.py compare RESULTS.json NCU.csv [--markdown OUT.md]

`target` builds every entry of the suite with roofline's own builders, warms each up (compilation,
autotuning) outside the profiled region, then between cudaProfilerStart/Stop runs, for each entry, N times
one marker kernel (torch.cuda._sleep) followed by one call of the operator. ncu must be started with
`--profile-from-start off`; its CSV rows are split at the markers, and the durations of the kernels between
two markers are summed (a multi-kernel operator is the sum of its kernels, without launch gaps). With N > 1
the comparison takes the median over an entry's N calls: one profiled launch of a 33 µs GEMV read
33.1-35.3 µs across launches on the H200, so a single one is a noisy reference.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from roofline.core.document import read_document
from roofline.core.record import Record
from roofline.ncu.join import is_copy
from roofline.ncu.read_csv import read_raw_csv, split_calls

MARKER = "spin"  # torch.cuda._sleep launches a kernel whose name contains this


def target(suite_path: str, repeats: int = 1) -> None:
    import torch

    from roofline.analysis.suite import load_suite
    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels import build

    suite = load_suite(suite_path)
    built = []
    for entry in suite.entries:
        op, dt = entry.operator(True), get_dtype(entry.dtype_for(True))
        b = build(op, dt, "cuda")
        for _ in range(3):
            b.fn()
        built.append(b)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for b in built:
        for _ in range(repeats):
            torch.cuda._sleep(1000)
            b.fn()
            torch.cuda.synchronize()
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def memset_s(record: Record) -> float:
    """Seconds of memsets (and memcpys) in the record's one-call kernel breakdown: part of the operator's time,
    but not of ncu's kernel sum (ncu profiles kernels only)."""
    names, times = record.kernels or [], record.kernel_times_s or []
    return sum(t for n, t in zip(names, times, strict=False) if is_copy(n))


def compare(results_path: str, ncu_path: str, markdown: str | None) -> int:
    recs = read_document(results_path).records
    calls = split_calls(read_raw_csv(ncu_path), MARKER)
    repeats = max(1, len(calls) // len(recs)) if recs else 1
    if len(calls) != repeats * len(recs):
        print(f"warning: {len(recs)} records but {len(calls)} ncu groups", file=sys.stderr)
    ops = []
    for i in range(len(calls) // repeats):
        mine = calls[i * repeats:(i + 1) * repeats]
        times = [c.time_s for c in mine]
        ops.append({"time_s": statistics.median(times),
                    "sm_clock_mhz": statistics.median(c.sm_clock_mhz for c in mine),
                    "sm_clock_max_mhz": statistics.median(c.sm_clock_max_mhz for c in mine),
                    "kernels": mine[0].kernels, "calls": len(mine),
                    "spread": max(times) / min(times) - 1 if min(times) > 0 else 0.0})
    lines = ["| # | operator | dtype | bound | roofline median | roofline SM MHz | ncu time | ncu SM MHz avg/max | "
             "ncu spread | ratio | ratio at same clock | at ncu's max clock | ratio less memsets | kernels |",
             "|---" * 14 + "|"]
    worst = worst_max = 0.0
    for i, (rec, n) in enumerate(zip(recs, ops, strict=False), start=1):
        ours = rec.time_s or 0.0
        our_clock = rec.sm_clock_mhz or 0.0
        ratio = ours / n["time_s"]
        # At the same clock: compute-bound time scales with 1/clock; memory-bound time is left as is.
        same = same_max = ratio
        if rec.bound == "compute" and our_clock and n["sm_clock_mhz"]:
            same = ours / (n["time_s"] * n["sm_clock_mhz"] / our_clock)
        if rec.bound == "compute" and our_clock and n["sm_clock_max_mhz"]:
            same_max = ours / (n["time_s"] * n["sm_clock_max_mhz"] / our_clock)
        worst, worst_max = max(worst, abs(same - 1)), max(worst_max, abs(same_max - 1))
        memsets = memset_s(rec)
        less = f"{(ours - memsets) / n['time_s']:.3f}" if memsets else "-"
        label = rec.op + (f" ({rec.variant})" if rec.variant else "")
        shape = " ".join(f"{k}={v}" for k, v in rec.params.items() if k not in ("epilogue",))
        lines.append(f"| {i} | {label} {shape} | {rec.dtype} | {rec.bound} | {ours * 1e6:.1f} µs | "
                     f"{our_clock:.0f} | {n['time_s'] * 1e6:.1f} µs | "
                     f"{n['sm_clock_mhz']:.0f}/{n['sm_clock_max_mhz']:.0f} | "
                     f"{n['spread']:.1%} | {ratio:.3f} | {same:.3f} | {same_max:.3f} | {less} | {int(n['kernels'])} |")
    text = "\n".join(lines) + (f"\n\nncu: median of {repeats} profiled calls per entry (spread = max/min - 1)."
                                f"\nworst deviation at the same clock: {worst:.1%} (ncu's average SM clock), "
                                f"{worst_max:.1%} (ncu's busiest SM's clock)\n")
    print(text)
    if markdown:
        Path(markdown).write_text(text)
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "target":
        target(sys.argv[2], int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 1)
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        md = sys.argv[sys.argv.index("--markdown") + 1] if "--markdown" in sys.argv else None
        sys.exit(compare(sys.argv[2], sys.argv[3], md))
    else:
        print(__doc__)
        sys.exit(2)
