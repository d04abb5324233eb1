"""How long the docs' commands take on the CPU, as CI runs them: the figure behind "the docs cannot drift and
stay quick to check" (tests/test_docs_commands.py runs the same lines but asserts no time: a shared 2-core CI
machine would fail it on a busy day).

    python scripts/bench_docs_commands.py [--runs 3]

Every command line of the README's and docs/*.md's runnable shell blocks runs in order, in one scratch folder
with the test's fixtures and its CPU settings (tests/test_docs_commands.py: `commands`, `cpu_settings`,
`scratch`, imported, not copied), in this process (the imports are paid once, as in the test), with a
calibration store of its own seeded as tests/conftest.py seeds each test's (so `analyze` without `--gpu` does not
measure the CPU first), and no GPU. Each run is the whole chain in a fresh folder and store; the seconds
of each command (median over the runs) are printed, slowest first, then the total's median and fastest.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers import seed_cpu_store  # noqa: E402
from test_docs_commands import commands, cpu_settings, scratch  # noqa: E402

from roofline.cli.app import main as roofline  # noqa: E402


def chain() -> list[tuple[str, float]]:
    """One run of the docs' CPU chain in a fresh scratch folder: (the command as run, seconds) per line."""
    times = []
    with tempfile.TemporaryDirectory(prefix="roofline-docs-") as tmp, pytest.MonkeyPatch.context() as mp:
        (Path(tmp) / "cache").mkdir()
        mp.setenv("ROOFLINE_CACHE_DIR", str(Path(tmp) / "cache"))
        mp.setenv("ROOFLINE_NO_GPU", "1")
        seed_cpu_store()
        (Path(tmp) / "work").mkdir()
        scratch(Path(tmp) / "work", mp)
        for where, argv in commands(("",)):
            small = cpu_settings(argv)
            if small is None:
                continue
            out, start = io.StringIO(), time.perf_counter()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                code = roofline(small)
            times.append((shlex.join(small), time.perf_counter() - start))
            if code != 0:
                raise SystemExit(f"{where} (run as `roofline {shlex.join(small)}`): exit {code}\n{out.getvalue()}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of the whole chain (default 3)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    runs = []
    for i in range(args.runs):
        runs.append(chain())
        sys.stderr.write(f"run {i + 1}/{args.runs}: {sum(s for _, s in runs[-1]):.1f} s\n")
    per = [(cmd, statistics.median(run[j][1] for run in runs)) for j, (cmd, _) in enumerate(runs[0])]
    width = min(max(len(cmd) for cmd, _ in per), 90)
    for cmd, s in sorted(per, key=lambda p: -p[1]):
        print(f"{cmd[:width].ljust(width)}  {s:6.2f} s")
    totals = [sum(s for _, s in run) for run in runs]
    print(f"\nthe docs' {len(per)} CPU commands: {statistics.median(totals):.1f} s median, {min(totals):.1f} s "
          f"fastest of {args.runs} runs (in one process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
