"""How long the analytic commands take to start and answer, against a bare Python: the figure in docs/guide.md
("Start-up time").

    python scripts/startup.py [--runs 20] [--python PATH]

    python scripts/startup.py --check-table DOC.json

Each command runs `--runs` times as a fresh process (stdout to /dev/null, as a pipe or a file sees it),
interleaved with `python -c pass` so that a busy machine slows both alike; the median and the fastest of each
are printed, then one markdown line for the docs. The runs use the bytecode cache (PYTHONDONTWRITEBYTECODE is
unset and one warm-up run writes it; a first start after an install compiles every module once), and a cache
folder of their own, where the warm-up leaves the parsed spec files, as an installed tool keeps them. Where the
time goes: `python -X importtime -m roofline analyze gemm --m 4096 --no-time --gpu h100`.

`--check-table` draws each record of a results document (a timed one, from the GPU) as `roofline analyze`
prints it, by `roofline.report.plain` and by rich, at 80 and 160 columns, plain and styled, and says whether
the bytes are the same (exit 1 if not): the check tests/test_plain.py makes, on records it cannot make here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "analyze gemm": ["analyze", "gemm", "--m", "4096", "--no-time", "--gpu", "h100"],
    "analyze attention": ["analyze", "attention", "--batch", "8", "--heads", "32", "--seq", "4096",
                          "--head-dim", "128", "--causal", "--no-time", "--gpu", "h100"],
    "specs list": ["specs", "list"],
}
BARE = "python -c pass"


def _env(cache: str) -> dict[str, str]:
    """The runs' environment: bytecode cache on, and a cache folder of their own (`cache`): the parsed spec files
    are kept there for one spec folder at a time, so another checkout's runs (another worktree, a CI job) would
    have these parse all 31 TOML files again (~0.1 s) whenever theirs came between."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["ROOFLINE_CACHE_DIR"] = cache
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def measure(python: str, runs: int) -> dict[str, list[float]]:
    """Seconds per run of each command and of a bare Python, the runs of all of them interleaved."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="roofline-startup-") as cache:
        return _measure(python, runs, _env(cache))


def _measure(python: str, runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    argvs = {name: [python, "-m", "roofline", *args] for name, args in COMMANDS.items()}
    argvs[BARE] = [python, "-c", "pass"]
    for argv in argvs.values():  # the warm-up: writes the bytecode cache
        _once(argv, env)
    times: dict[str, list[float]] = {name: [] for name in argvs}
    for i in range(runs):
        for name, argv in argvs.items():
            times[name].append(_once(argv, env))
        sys.stderr.write(f"\r{i + 1}/{runs} rounds")
    sys.stderr.write("\r" + " " * 20 + "\r")
    return times


def check_table(path: str) -> int:
    """0 when every record of the document at `path` reads the same drawn by `report.plain` as by rich."""
    import io

    from rich.console import Console

    from roofline.core.document import read_document
    from roofline.core.errors import RooflineError
    from roofline.report.plain import boxed
    from roofline.report.rows import record_rows
    from roofline.report.text import rows_table

    try:
        records = read_document(path).records
    except RooflineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    bad = drawn = 0
    for r in records:
        title, rows = f"roofline: {r.op}", record_rows(r)
        for width in (80, 160):
            for styled in (False, True):
                ours = boxed(title, rows, width, styled=styled)
                if ours is None:
                    continue
                buf = io.StringIO()
                Console(file=buf, width=width, highlight=False, soft_wrap=False, force_terminal=styled,
                        color_system="truecolor" if styled else None).print(rows_table(title, rows))
                drawn += 1
                if ours != buf.getvalue():
                    bad += 1
                    print(f"{r.op} at {width} columns{' styled' if styled else ''}: not rich's bytes\n{ours}"
                          f"{buf.getvalue()}")
    print(f"{drawn - bad} of {drawn} tables the same bytes as rich's ({path})")
    return 1 if bad or not drawn else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each command (default 20)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to time (default: this one)")
    parser.add_argument("--check-table", metavar="DOC", help="compare the tables of DOC's records with rich's")
    args = parser.parse_args()
    if args.check_table:
        return check_table(args.check_table)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    times = measure(args.python, args.runs)
    width = max(len(n) for n in times)
    print(f"{'command'.ljust(width)}  median    min   ({args.runs} runs each, interleaved)")
    for name, ts in times.items():
        print(f"{name.ljust(width)}  {statistics.median(ts):.3f} s  {min(ts):.3f} s")
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"\n`analyze gemm --m 4096 --no-time --gpu h100`: {med['analyze gemm']:.2f} s median, "
          f"{min(times['analyze gemm']):.2f} s fastest of {args.runs} (bare `python -c pass`: {med[BARE]:.2f} s, "
          f"{min(times[BARE]):.2f} s); `analyze attention ... --no-time` {med['analyze attention']:.2f} s, "
          f"`specs list` {med['specs list']:.2f} s (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
