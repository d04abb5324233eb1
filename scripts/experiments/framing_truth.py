"""Which tool's kernel time is the kernel's? A spin of known length timed by its own clock, by CUPTI's
activity record and by Nsight Compute (issue 21's question: ncu reads short kernels 1-2.5 µs longer).

The kernel is the one-thread PTX spin of `roofline.measuring.clocktrace` (`ClockProbe`): it spins N SM cycles
and stores how many %globaltimer nanoseconds that took (32 ns steps on the H200), from its first instruction
to its last. Nothing outside the kernel's own execution is in that figure; what a tool reads above it is
how the tool frames a kernel (grid launch, completion), the same for every kernel of that size.

    python scripts/experiments/framing_truth.py target OWN.json [--repeats 7]   # under ncu: each length, N launches
    python scripts/experiments/framing_truth.py cupti CUPTI.json [--repeats 50]  # CUPTI, no ncu
    python scripts/experiments/framing_truth.py compare CUPTI.json NCU.csv OWN.json [NCU2.csv OWN2.json ...]
        [--markdown F]                                                  # (one command line)

ncu's runs: `ncu --clock-control none [--cache-control none] --csv --page raw --metrics gpu__time_duration.sum
-k regex:^spin$ python scripts/experiments/framing_truth.py target OWN.json`. ncu's durations are paired with the
spin's own figure of the same launch (the target writes them after ncu has profiled every launch).
"""

from __future__ import annotations

import json
import statistics
import sys

# Spin lengths in SM cycles: at the H200's 1980 MHz, 0.5, 1, 2, 5, 10, 20 and 40 µs (decode-sized kernels).
CYCLES = (1_000, 2_000, 4_000, 10_000, 20_000, 40_000, 80_000)
WARMUP = 3


def _launches(repeats: int) -> list[int]:
    return [c for c in CYCLES for _ in range(repeats)]


def _probe_results(probe: object) -> list[dict[str, int]]:
    return [{"cycles": c, "own_ns": ns} for c, ns, _ in probe.results()]  # type: ignore[attr-defined]


def target(path: str, repeats: int) -> None:
    """Each length `repeats` times, synchronised between launches (ncu serialises them anyway)."""
    import torch

    from roofline.measuring.clocktrace import ClockProbe

    warm = ClockProbe(WARMUP)
    for _ in range(WARMUP):
        warm.launch(1000)
    torch.cuda.synchronize()
    probe = ClockProbe(len(CYCLES) * repeats)
    for c in _launches(repeats):
        probe.launch(c)
        torch.cuda.synchronize()
    json.dump(_probe_results(probe), open(path, "w"))


def cupti(path: str, repeats: int) -> None:
    """The same launches, synchronised and 20 µs apart, timed by CUPTI activity records (torch.profiler, as
    `timing.method = cupti` reads them). No event pairs: this spin is launched through ctypes, whose ~40 µs of
    host time per launch would sit inside a pair."""
    import time

    import torch

    from roofline.measuring.clocktrace import ClockProbe
    from roofline.measuring.cupti import device_profiler
    from roofline.measuring.timing_cupti import device_activities

    warm = ClockProbe(WARMUP)
    for _ in range(WARMUP):
        warm.launch(1000)
    torch.cuda.synchronize()
    launches = _launches(repeats)
    probe = ClockProbe(len(launches))
    with device_profiler() as prof:
        for c in launches:
            probe.launch(c)
            torch.cuda.synchronize()
            time.sleep(20e-6)
    acts = [a for a in device_activities(prof) if a[0] == "spin"]
    if len(acts) != len(launches):
        sys.exit(f"{len(acts)} spin activities for {len(launches)} launches")
    rows = _probe_results(probe)
    for row, (_, t0, t1) in zip(rows, acts, strict=True):
        row["cupti_ns"] = t1 - t0
    json.dump(rows, open(path, "w"))


def _by_cycles(rows: list[dict[str, int]], key: str) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for r in rows:
        out.setdefault(r["cycles"], []).append(r[key] / 1e3)
    return out


def compare(cupti_path: str, pairs: list[tuple[str, str]], markdown: str | None) -> None:
    from roofline.ncu.read_csv import read_raw_csv

    rows = json.load(open(cupti_path))
    own, cup = _by_cycles(rows, "own_ns"), _by_cycles(rows, "cupti_ns")
    ncu_cols = []
    for csv_path, own_path in pairs:
        kernels = [k for k in read_raw_csv(csv_path) if k.name.startswith("spin")][WARMUP:]  # warm-up spins
        theirs = json.load(open(own_path))
        if len(kernels) != len(theirs):
            sys.exit(f"{csv_path}: {len(kernels)} profiled spins for {len(theirs)} launches")
        for k, r in zip(kernels, theirs, strict=True):
            r["ncu_ns"] = k.duration_s * 1e9
        ncu_cols.append((csv_path, _by_cycles(theirs, "ncu_ns"), _by_cycles(theirs, "own_ns")))
    med = statistics.median
    head = ["cycles", "own µs", "CUPTI µs", "CUPTI-own"]
    for i, _ in enumerate(ncu_cols):
        head += [f"ncu{i + 1} µs", f"ncu{i + 1}-own"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in sorted(own):
        o = med(own[c])
        cells = [f"{c}", f"{o:.3f}", f"{med(cup[c]):.3f}", f"{med(cup[c]) - o:+.3f}"]
        for _, ncu, ncu_own in ncu_cols:
            n, no = med(ncu[c]), med(ncu_own[c])
            cells += [f"{n:.3f}", f"{n - no:+.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("own: the spin's %globaltimer span (median of the launches); every other column is the median "
                 "of that tool's reading; ncuN-own pairs each profiled launch with its own span. " +
                 "; ".join(f"ncu{i + 1} = {p}" for i, (p, _, _) in enumerate(ncu_cols)))
    text = "\n".join(lines)
    print(text)
    if markdown:
        open(markdown, "w").write(text + "\n")


def main(argv: list[str]) -> None:
    def opt(name: str, default: str | None) -> str | None:
        if name in argv:
            i = argv.index(name)
            value = argv[i + 1]
            del argv[i:i + 2]
            return value
        return default

    mode = argv[0] if argv else ""
    if mode == "target":
        target(argv[1], int(opt("--repeats", "7") or 7))
    elif mode == "cupti":
        cupti(argv[1], int(opt("--repeats", "50") or 50))
    elif mode == "compare":
        md = opt("--markdown", None)
        rest = argv[2:]
        compare(argv[1], list(zip(rest[0::2], rest[1::2], strict=True)), md)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
