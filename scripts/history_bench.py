"""Two questions of issue 50's history, answered on this machine (no GPU needed):

  store      Is the store fast enough at the size of a long-lived CI history? 10,000 results documents of 50 records
             each are added to a fresh store (SQLite, and PostgreSQL when --postgres URL is given), then: the time of
             one more `add` (open the store, add a 50-record document, close), and of `roofline history show KEY`
             (the CLI in this process, one series of 10,000 points read and drawn). Targets: add < 50 ms, show <
             0.5 s. Prints the medians and the worst of REPEATS.
  detectors  Which change-point library cries wolf least? Synthetic series of 30 runs (A/A: noise only; then the same
             with a 5% step at a random run in 5..25), three noise models, for ruptures PELT as `roofline.history.
             changes` uses it and the alternatives that import here (Apache Otava's `compute_change_points`, MongoDB's
             signal-processing-algorithms' `e_divisive`): the share of A/A series with any change (false alarms) and
             the share of stepped series with a change within two runs of the step.

    .venv/bin/python scripts/history_bench.py store [--docs 10000] [--postgres postgresql://...]
    .venv/bin/python scripts/history_bench.py detectors [--trials 300] [--seed 1]

Results are in docs/trends.md with their date.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RECORDS = 50
REPEATS = 20
SAMPLES = 20


def make_doc(run: int, rng: Any) -> Any:
    """A results document of RECORDS GEMMs (tests/data/results_h200.json's first record, m = 64 .. 3200), every
    time 100 µs x (1 + 1% noise), SAMPLES samples each."""
    from roofline.core.document import validate_document

    base = json.loads((ROOT / "tests" / "data" / "results_h200.json").read_text())
    rec0 = base["records"][0]
    recs = []
    for i in range(RECORDS):
        r = copy.deepcopy(rec0)
        r["params"]["m"] = 64 * (i + 1)
        samples = [1e-4 * (1 + rng.normal(0, 0.01)) for _ in range(SAMPLES)]
        r["time_samples_s"] = samples
        r["time_s"] = statistics.median(samples)
        recs.append(r)
    base["records"] = recs
    base["created"] = f"2026-12-07T00:00:00.{run:06d}+00:00"
    return validate_document(base, f"run {run}")


def fill(url: str, docs: int, rng: Any) -> None:
    from roofline.history.store import open_store, record_history

    t0 = time.perf_counter()
    with open_store(url, create=True) as store:
        for run in range(docs):
            record_history(make_doc(run, rng), store, commit=f"{run:040x}", branch="main", machine="bench")
            if (run + 1) % 1000 == 0:
                print(f"  {run + 1} documents added ({time.perf_counter() - t0:.0f} s)", flush=True)


def timed(fn: Callable[[], Any]) -> list[float]:
    out = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_store(url: str, docs: int, rng: Any) -> None:
    import contextlib
    import io

    from roofline.cli.app import main
    from roofline.history.store import record_history

    print(f"{url}: filling {docs} documents of {RECORDS} records", flush=True)
    fill(url, docs, rng)
    ready = iter([make_doc(run, rng) for run in range(docs, docs + REPEATS)])  # made outside the timed region
    add = timed(lambda: record_history(next(ready), url, commit="x", machine="bench"))
    key = "gemm bf16 m=64 n=4096"

    def show() -> None:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["history", "show", key, "--history", url]) == 0
        assert f"· {docs + REPEATS} runs" in out.getvalue(), out.getvalue()

    shown = timed(show)
    for name, times, target in (("history add (50 records)", add, 0.05), ("history show KEY", shown, 0.5)):
        print(f"  {name}: median {statistics.median(times) * 1e3:.1f} ms, worst {max(times) * 1e3:.1f} ms "
              f"(target {target * 1e3:.0f} ms)")


# ---------------------------------------------------------------- detectors
def _ours(x: Any) -> list[int]:
    from roofline.history.changes import change_points

    return [c.index for c in change_points(list(x))]


def _otava(x: Any) -> list[int]:
    from otava.analysis import compute_change_points  # Apache Otava, as its CLI runs it (p 0.001)

    return [c.index for c in compute_change_points(list(x), window_len=50, max_pvalue=0.001)[0]]


def _spa(x: Any) -> list[int]:
    import numpy as np
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    return list(e_divisive(np.asarray(x), pvalue=0.05, permutations=100))


DETECTORS: dict[str, tuple[str, Callable[[Any], list[int]]]] = {
    "ruptures PELT L1 (ours)": ("ruptures", _ours),
    "Apache Otava (p 0.001)": ("otava", _otava),
    "signal-processing-algorithms e_divisive (p 0.05)": ("signal_processing_algorithms", _spa),
}


def bench_detectors(trials: int, seed: int) -> None:
    import importlib.util

    import numpy as np

    rng = np.random.default_rng(seed)
    n = 30
    noises = {"normal 1%": lambda: rng.normal(0, 0.01, n), "normal 2%": lambda: rng.normal(0, 0.02, n),
              "Student t (3 dof) 1%": lambda: 0.01 * rng.standard_t(3, n)}
    here = {name: f for name, (module, f) in DETECTORS.items() if importlib.util.find_spec(module) is not None}
    for name in DETECTORS.keys() - here.keys():
        print(f"{name}: not importable here, not measured")
    for noise, draw in noises.items():
        score = {name: [0, 0] for name in here}
        for _ in range(trials):
            flat = 1e-4 * (1 + draw())
            at = int(rng.integers(5, 26))
            stepped = flat.copy()
            stepped[at:] *= 1.05
            for name, f in here.items():
                score[name][0] += bool(f(flat))
                score[name][1] += any(abs(c - at) <= 2 for c in f(stepped))
        for name, (alarms, found) in score.items():
            print(f"{noise:22s} {name:50s} A/A with a change {alarms / trials:6.1%}   5% step found within two "
                  f"runs {found / trials:6.1%}   ({trials} series each)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("store")
    s.add_argument("--docs", type=int, default=10_000)
    s.add_argument("--postgres", help="a PostgreSQL URL whose database is empty of history tables (its schema is "
                   "filled, not cleared)")
    d = sub.add_parser("detectors")
    d.add_argument("--trials", type=int, default=300)
    d.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    import numpy as np

    if args.what == "detectors":
        bench_detectors(args.trials, args.seed)
        return
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        bench_store(str(Path(tmp) / "history.sqlite"), args.docs, rng)
    if args.postgres:
        bench_store(args.postgres, args.docs, rng)


if __name__ == "__main__":
    main()
