"""Question: does `roofline sol DIR --time --json` give every problem of a public suite nobody here wrote
(KernelBench levels 1-3, as published) a verdict, fail none for the harness's own reasons, and hold every reference
at or above its fused speed of light? (issue 51)

    git -C KERNELBENCH_REPO archive HEAD KernelBench/level1 KernelBench/level2 KernelBench/level3 | tar -x -C DIR
    KERNELBENCH_DIR=DIR/KernelBench python3 scripts/kernelbench_run.py OUT_DIR [--levels 1,2,3] [--chunk 10]
        [--limit N] [--no-time] [--device cpu]

Runs the problems in folders of --chunk (symbolic links to the published files, in name order), one
`roofline sol FOLDER [--time] --json` process per folder, and tabulates: verdicts by level, failures by reason,
each folder's wall time and the largest peak resident memory of a folder's processes (the command and its
workers), and every reference faster than its fused bound (with the op that carries most of the bound, the
formula to suspect). Writes OUT_DIR/kernelbench.json (every problem's row) and OUT_DIR/kernelbench.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

# Reasons grouped by their first words: the exception's type, or the harness's phrase.
REASON_WORDS = 6


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--root", type=Path, default=os.environ.get("KERNELBENCH_DIR"),
                   help="KernelBench's problem folder (holding level1, level2, ...); default $KERNELBENCH_DIR")
    p.add_argument("--levels", default="1,2,3")
    p.add_argument("--chunk", type=int, default=10, help="problems per `roofline sol` folder")
    p.add_argument("--limit", type=int, default=None, help="the first N problems of each level")
    p.add_argument("--no-time", action="store_true", help="the speed of light alone (no data: any size, any host)")
    p.add_argument("--device", default=None, help="passed to roofline sol --device")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per folder")
    args = p.parse_args(argv)
    if args.root is None or not Path(args.root).is_dir():
        p.error("give --root or set KERNELBENCH_DIR to KernelBench's problem folder (level1, level2, ...)")
    return args


def _chunks(root: Path, level: str, size: int, limit: int | None, work: Path) -> list[Path]:
    """Folders of `size` links to the level's problems (in the order KernelBench numbers them)."""
    files = sorted((root / f"level{level}").glob("*.py"), key=lambda f: (int(re.match(r"\d+", f.name)[0])  # type: ignore[index]
                                                                          if re.match(r"\d+", f.name) else 0, f.name))
    files = files[:limit] if limit else files
    folders = []
    for start in range(0, len(files), size):
        d = work / f"level{level}" / f"{start // size:03d}"
        d.mkdir(parents=True, exist_ok=True)
        for f in files[start:start + size]:
            link = d / ("p" + f.name)  # a name that starts with a letter: problem_files skips '_'
            if not link.exists():
                link.symlink_to(f.resolve())
        folders.append(d)
    return folders


def _run(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """`roofline sol FOLDER [--time] --json` in a process of its own: its document, wall time, peak RSS."""
    cmd = [sys.executable, "-m", "roofline", "sol", str(folder), "--json"]
    cmd += [] if args.no_time else ["--time"]
    cmd += ["--device", args.device] if args.device else []
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=args.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        timed_out = True
    wall = time.monotonic() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest of any process so far
    try:
        doc = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        doc = None
    return {"folder": str(folder), "code": proc.returncode, "timed_out": timed_out, "wall_s": wall,
            "peak_rss_kib_so_far": peak_kib, "doc": doc, "stderr_tail": err.strip().splitlines()[-5:]}


def _rows(level: str, run: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per problem of a folder's run: its verdict (or failure) and its reference against the bound."""
    doc = run["doc"]
    if doc is None:
        why = "no answer (stopped)" if run["timed_out"] else f"no document (exit {run['code']})"
        names = sorted(p.name for p in Path(run["folder"]).glob("*.py"))
        return [{"level": level, "problem": n[1:-3], "status": "failed", "reason": why} for n in names]
    rows = [{"level": level, "problem": f["problem"][1:], "status": "failed", "reason": f["error"]}
            for f in doc["sol"]["failed"]]
    for rec in doc["records"]:
        if rec.get("variant") != "reference":
            continue
        sol = rec["sol"]
        verdict = sol.get("verdict") or {}
        measured = (sol.get("timing") or {}).get("measured_s")
        ops = sorted(sol.get("ops") or [], key=lambda o: -(o.get("share") or 0))
        rows.append({"level": level, "problem": rec["op"][1:], "status": verdict.get("status", "bounded"),
                     "reason": verdict.get("reason", ""), "measured_s": measured, "fused_s": sol.get("fused_s"),
                     "of_fused": (sol["fused_s"] / measured) if measured and sol.get("fused_s") else None,
                     "main_op": ops[0].get("op") if ops else None})
    return rows


def _reason(text: str) -> str:
    words = re.sub(r"\d[\d.,]*", "N", text or "").split()
    return " ".join(words[:REASON_WORDS])


def _table(rows: list[dict[str, Any]], runs: list[dict[str, Any]]) -> str:
    lines = [f"{len(rows)} problems, {len(runs)} folders"]
    for level in sorted({r["level"] for r in rows}):
        counts = Counter(r["status"] for r in rows if r["level"] == level)
        lines.append(f"level {level}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    failed = Counter(_reason(r["reason"]) for r in rows if r["status"] == "failed")
    lines.append("failures by reason:" + ("" if failed else " none"))
    lines += [f"  {n:4d}  {why}" for why, n in failed.most_common()]
    walls = [r["wall_s"] for r in runs]
    lines.append(f"wall: {sum(walls):.1f} s in all, per folder {min(walls):.1f}-{max(walls):.1f} s; peak resident "
                 f"memory of a folder's processes {max(r['peak_rss_kib_so_far'] for r in runs) / 1024:.0f} MiB")
    fast = [r for r in rows if r.get("of_fused") is not None and r["of_fused"] > 1]
    ratios = [r["of_fused"] for r in rows if r.get("of_fused") is not None]
    lines.append(f"references faster than their fused bound: {len(fast)}"
                 + (f" (largest fraction of the bound reached {max(ratios):.2f})" if ratios else ""))
    lines += [f"  level {r['level']} {r['problem']}: {r['measured_s']:.3g} s < fused {r['fused_s']:.3g} s "
              f"(x{r['of_fused']:.2f}); most of the bound: {r['main_op']}" for r in fast]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = _args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "folders"
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for level in args.levels.split(","):
        for folder in _chunks(Path(args.root), level.strip(), args.chunk, args.limit, work):
            run = _run(folder, args)
            runs.append(run)
            got = _rows(level.strip(), run)
            rows += got
            print(f"level {level} {folder.name}: {len(got)} problems, {dict(Counter(r['status'] for r in got))}, "
                  f"{run['wall_s']:.1f} s", file=sys.stderr, flush=True)
            _write(args.out, rows, runs)  # after every folder: a run cut short keeps what it did
    print(_write(args.out, rows, runs))
    return 0


def _write(out: Path, rows: list[dict[str, Any]], runs: list[dict[str, Any]]) -> str:
    text = _table(rows, runs)
    (out / "kernelbench.txt").write_text(text + "\n")
    summary = {"rows": rows, "runs": [{k: v for k, v in r.items() if k != "doc"} for r in runs]}
    (out / "kernelbench.json").write_text(json.dumps(summary, indent=1))
    return text


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
