"""Issue 17's acceptance checks on the H200 (run by `scripts/gpu_check.sh counters`).

    python scripts/counters_compare.py suite RESULTS.json NCU.csv   # `run --counters` vs a plain ncu run
    python scripts/counters_compare.py imports A.json B.json        # import-ncu of a .ncu-rep vs of its CSV
    python scripts/counters_compare.py plain A.csv B.csv            # two plain ncu runs: ncu's own repeatability
    python scripts/counters_compare.py spread METRICS A.csv B.csv ...  # each metric's spread over several runs
    python scripts/counters_compare.py envelope R1.json ... -- A.csv B.csv ...  # `run --counters` vs plain runs

`suite`: RESULTS.json from `roofline run SUITE --counters`; NCU.csv from `ncu --profile-from-start off --metrics
<the same list> --csv --page raw python scripts/ncu_compare.py target SUITE` (one call per entry between the
same spin markers). Per record: counter time and bytes against the plain run (issue: within 1%), DRAM bytes over
the model's minimum for memory-bound records (at or above 1.0), tensor FLOPs over the model's FLOPs for GEMMs
and attention (within 2%). `imports`: the two documents' per-kernel times and bytes must agree.
"""

from __future__ import annotations

import sys

from roofline.core.counters import combined
from roofline.core.document import read_document
from roofline.core.record import Counters
from roofline.ncu.read_csv import counters_from_kernel, read_raw_csv, split_groups

MARKER = "spin"
FIELDS = ("duration_s", "dram_bytes", "l2_bytes", "l1_bytes", "flops")
TOLERANCE = {"duration_s": 0.01, "dram_bytes": 0.01, "l2_bytes": 0.01, "l1_bytes": 0.01, "flops": 0.0}
TENSOR_OPS = ("gemm", "bmm", "attention", "conv2d", "linear")


def _rel(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or not b else a / b - 1


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:+.2%}"


def suite(results: str, csv: str) -> int:
    recs = read_document(results).records
    calls = _calls(csv)
    if len(calls) != len(recs):
        print(f"warning: {len(recs)} records, {len(calls)} ncu calls")
    print("| # | record | bound | " + " | ".join(f"{f} vs plain" for f in FIELDS) +
          " | DRAM / minimum | tensor FLOPs / model |")
    print("|---" * (5 + len(FIELDS)) + "|")
    worst = 0.0
    bad = 0
    for i, (rec, plain) in enumerate(zip(recs, calls, strict=False), start=1):
        c = rec.counters or Counters()
        diffs = {f: _rel(getattr(c, f), getattr(plain, f)) for f in FIELDS}
        for f, d in diffs.items():
            if d is not None and f != "flops":
                worst = max(worst, abs(d))
                bad += abs(d) > TOLERANCE[f]
        excess = f"{c.excess_traffic:.3f}" if c.excess_traffic is not None and rec.bound == "memory" else "-"
        tensor = sum((c.tensor_flops or {}).values())
        ratio = f"{tensor / rec.flops:.4f}" if rec.op in TENSOR_OPS and rec.flops and tensor else "-"
        print(f"| {i} | {rec.label} {rec.shape} | {rec.bound} | " + " | ".join(_fmt(diffs[f]) for f in FIELDS) +
              f" | {excess} | {ratio} |")
    print(f"\nworst time/bytes deviation from the plain ncu run: {worst:.2%} ({bad} past 1%)")
    return 0


def _calls(csv: str) -> list[Counters]:
    return [combined([counters_from_kernel(k) for k in g]) for g in split_groups(read_raw_csv(csv), MARKER) if g]


def plain(a_path: str, b_path: str) -> int:
    """Two plain ncu runs of the same suite, call by call: how far ncu's own figures move between runs (the
    floor under any tool's agreement with one ncu run)."""
    a, b = _calls(a_path), _calls(b_path)
    if len(a) != len(b) or not a:
        print(f"different call counts: {len(a)} vs {len(b)}")
        return 1
    print("| # | " + " | ".join(f"{f} B/A" for f in FIELDS) + " |")
    print("|---" * (1 + len(FIELDS)) + "|")
    worst = dict.fromkeys(FIELDS, 0.0)
    for i, (ca, cb) in enumerate(zip(a, b, strict=True), start=1):
        diffs = {f: _rel(getattr(cb, f), getattr(ca, f)) for f in FIELDS}
        for f, d in diffs.items():
            if d is not None:
                worst[f] = max(worst[f], abs(d))
        print(f"| {i} | " + " | ".join(_fmt(diffs[f]) for f in FIELDS) + " |")
    print("\nworst between two plain ncu runs: " + ", ".join(f"{f} {w:.2%}" for f, w in worst.items()))
    return 0


def spread(metrics: str, paths: list[str]) -> int:
    """Each metric's spread over several ncu runs of the same suite (each call's kernels summed): the worst
    (max / min - 1) over the calls, with the call it happened in, then the per-call spreads of every metric
    whose worst is past 0.1%. Which byte counters depend on where the data landed, and which do not."""
    # a suite's CSV has marker kernels between calls; a profile's (`profile --ncu-csv`) has none: kernel by kernel
    runs = [split_groups(ks, MARKER) or [[k] for k in ks] for ks in (read_raw_csv(p) for p in paths)]
    if len({len(r) for r in runs}) != 1 or not runs[0]:
        print("different call counts: " + ", ".join(str(len(r)) for r in runs))
        return 1
    names = [m for m in metrics.split(",") if m]

    def total(group: list, metric: str) -> float | None:
        got = [k.metrics.get(metric) for k in group]
        return None if any(v is None for v in got) else sum(got)  # type: ignore[arg-type]

    table: dict[str, list[float | None]] = {}
    for m in names:
        row: list[float | None] = []
        for calls in zip(*runs, strict=True):
            vals = [total(g, m) for g in calls]
            ok = [v for v in vals if v is not None]
            row.append(max(ok) / min(ok) - 1 if len(ok) == len(vals) and min(ok) > 0 else None)
        table[m] = row
    print(f"{len(paths)} runs, {len(runs[0])} calls; spread = max/min - 1 over the runs, per call")
    print("| metric | worst spread | call |")
    print("|---|---|---|")
    for m, row in table.items():
        got = [(v, i) for i, v in enumerate(row, start=1) if v is not None]
        worst = max(got) if got else None
        print(f"| {m} | " + (f"{worst[0]:.3%} | {worst[1]}" if worst else "- | -") + " |")
    noisy = [m for m, row in table.items() if any(v is not None and v > 1e-3 for v in row)]
    if noisy:
        print("\n| call | " + " | ".join(noisy) + " |")
        print("|---" * (1 + len(noisy)) + "|")
        for i in range(len(runs[0])):
            print(f"| {i + 1} | " + " | ".join("-" if (v := table[m][i]) is None else f"{v:.2%}" for m in noisy) +
                  " |")
    return 0


ENVELOPE_FIELDS = ("duration_s", "dram_bytes_read", "dram_bytes_written", "dram_bytes", "l2_bytes", "l1_bytes",
                   "flops")


def envelope(results: list[str], csvs: list[str]) -> int:
    """`run --counters` documents against several plain ncu runs of the same suite: for each field, how far
    outside the plain runs' own range (min..max over the runs, call by call) our figure lies; 0 inside it.
    One plain run is no reference for a counter that moves between plain runs; their range is."""
    plains = [_calls(p) for p in csvs]
    if len({len(p) for p in plains}) != 1:
        print("different call counts among the plain runs")
        return 1
    for path in results:
        recs = read_document(path).records
        worst: dict[str, tuple[float, int]] = dict.fromkeys(ENVELOPE_FIELDS, (0.0, 0))
        for i, rec in enumerate(recs):
            c = rec.counters or Counters()
            for f in ENVELOPE_FIELDS:
                v, ps = getattr(c, f), [getattr(p[i], f) for p in plains]
                if v is None or any(x is None for x in ps) or min(ps) <= 0:
                    continue
                lo, hi = min(ps), max(ps)
                out = v / hi - 1 if v > hi else v / lo - 1 if v < lo else 0.0
                if abs(out) > abs(worst[f][0]):
                    worst[f] = (out, i + 1)
        print(f"{path}: outside the range of {len(csvs)} plain runs: " +
              ", ".join(f"{f} {w:+.2%}" + (f" (#{n})" if n else "") for f, (w, n) in worst.items()))
    return 0


def imports(a_path: str, b_path: str) -> int:
    a, b = read_document(a_path).records, read_document(b_path).records
    if len(a) != len(b):
        print(f"different kernel counts: {len(a)} vs {len(b)}")
        return 1
    worst = 0.0
    for ra, rb in zip(a, b, strict=True):
        ca, cb = ra.counters or Counters(), rb.counters or Counters()
        for f in FIELDS:
            d = _rel(getattr(ca, f), getattr(cb, f))
            if d is not None:
                worst = max(worst, abs(d))
    names = sum(ra.params == rb.params for ra, rb in zip(a, b, strict=True))
    regions = sum(1 for r in a if r.region)
    same_regions = sum(ra.region == rb.region for ra, rb in zip(a, b, strict=True))
    print(f"{len(a)} kernels; same names and ids: {names}; with an NVTX range: {regions}, the same in both: "
          f"{same_regions}; worst time/bytes/FLOPs difference: {worst:.2e}")
    return 0 if worst < 1e-4 and names == same_regions == len(a) else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "suite":
        sys.exit(suite(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 4 and sys.argv[1] == "plain":
        sys.exit(plain(sys.argv[2], sys.argv[3]))
    if len(sys.argv) >= 5 and sys.argv[1] == "envelope" and "--" in sys.argv:
        cut = sys.argv.index("--")
        sys.exit(envelope(sys.argv[2:cut], sys.argv[cut + 1:]))
    if len(sys.argv) >= 5 and sys.argv[1] == "spread":
        sys.exit(spread(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) == 4 and sys.argv[1] == "imports":
        sys.exit(imports(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
