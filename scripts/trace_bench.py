"""How fast `roofline trace` reads a job's traces and in how much memory, beside Holistic Trace Analysis (HTA).

Question: does the streaming parse stay in bounded memory on a large trace, how does the process pool scale from
1 to N processes over many ranks, and how does it compare with HTA loading the same traces?

    python scripts/trace_bench.py --template T.json --ranks 16 --mb 50 --jobs 1,2,4 --out /tmp/bench
    python scripts/trace_bench.py --template T.json --ranks 1 --mb 200 --jobs 1 --hta   # one large trace

Traces: `synthesize` repeats a real trace's events (one the caller profiled: ops with shapes, modules, kernels)
until a file reaches the size asked, each copy shifted in time past the last and its correlation and External ids
renumbered, and stamps each rank's distributedInfo; so the set is made from real traces, as the issue asks. Each
measurement runs in a fresh process (`python -c`), its peak resident memory read from getrusage (the largest of
the main process and its workers: each worker parses one file at a time). HTA (pip install
HolisticTraceAnalysis; imported only here, never by the package) loads the folder with `TraceAnalysis`, its
own default parser. Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# The ids a copy of the events renumbers (so kernels stay tied to their launches, ops to their flows).
ID_ARGS = ("correlation", "External id")


def _load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def synthesize(template: Path, out: Path, target_bytes: int, rank: int | None = None, world: int | None = None) -> int:
    """Write `out`: the template's events repeated until the file holds `target_bytes` (module docstring); returns
    the events written."""
    data = _load(template)
    events = [e for e in data["traceEvents"] if isinstance(e, dict)]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + 1.0
    max_id = max([int(e["args"][k]) for e in events for k in ID_ARGS
                  if isinstance(e.get("args"), dict) and isinstance(e["args"].get(k), int)] + [0]) + 1
    meta = {k: v for k, v in data.items() if k != "traceEvents"}
    if world is not None:
        meta["distributedInfo"] = {**(meta.get("distributedInfo") or {"backend": "nccl"}), "rank": rank,
                                   "world_size": world}
    written = 0
    opener = gzip.open if out.name.endswith(".gz") else open
    with opener(out, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(meta)[:-1] + ', "traceEvents": [\n')
        copy = 0
        size = 0
        while size < target_bytes:
            for e in events:
                if copy and e.get("ph") == "M":
                    continue
                e2 = dict(e)
                if isinstance(e.get("ts"), (int, float)):
                    e2["ts"] = e["ts"] + copy * span
                if isinstance(e.get("args"), dict):
                    args = dict(e["args"])
                    for k in ID_ARGS:
                        if isinstance(args.get(k), int):
                            args[k] += copy * max_id
                    e2["args"] = args
                if isinstance(e.get("id"), int):
                    e2["id"] = e["id"] + copy * max_id
                line = ("" if written == 0 else ",\n") + json.dumps(e2)
                fh.write(line)
                size += len(line)
                written += 1
            copy += 1
        fh.write("\n]}\n")
    return written


def _measure(code: str, python: str = sys.executable) -> dict[str, Any]:
    """Run `code` in a fresh interpreter; its wall time and the peak resident memory of it and its children."""
    wrapper = (f"import resource, time, json\nt0 = time.perf_counter()\n{code}\n"
               "self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
               "child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
               "print(json.dumps({'wall_s': time.perf_counter() - t0, 'peak_rss_mb': max(self_kb, child_kb) / 1024,"
               " 'main_rss_mb': self_kb / 1024, 'worker_rss_mb': child_kb / 1024}))")
    out = subprocess.run([python, "-c", wrapper], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--template", type=Path, required=True, help="a real torch.profiler trace to repeat")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--mb", type=float, default=20.0, help="each rank's trace size (MB)")
    ap.add_argument("--jobs", default="1,2,4", help="the process counts measured")
    ap.add_argument("--out", type=Path, default=Path("/tmp/roofline-trace-bench"))
    ap.add_argument("--gz", action="store_true", help="write the traces gzipped")
    ap.add_argument("--hta", action="store_true", help="also load the folder with HTA (when installed)")
    ap.add_argument("--hta-python", default=sys.executable, help="the interpreter HTA is installed for (its own "
                    "venv: HTA pins its own pandas)")
    ap.add_argument("--analyse", action="store_true", help="time the whole `roofline.trace` (parse and records), "
                    "not the parse alone")
    args = ap.parse_args()
    folder = args.out / f"r{args.ranks}-{args.mb:g}mb"
    folder.mkdir(parents=True, exist_ok=True)
    files = sorted(folder.glob("*.json*"))
    if len(files) != args.ranks:
        for f in files:
            f.unlink()
        first = folder / f"rank0.pt.trace.json{'.gz' if args.gz else ''}"
        n = synthesize(args.template, first, int(args.mb * 1e6), 0, args.ranks)
        for r in range(1, args.ranks):  # the other ranks: the same events, their own rank
            synthesize(args.template, folder / f"rank{r}.pt.trace.json{'.gz' if args.gz else ''}",
                       int(args.mb * 1e6), r, args.ranks)
        print(json.dumps({"made": str(folder), "ranks": args.ranks, "events_per_rank": n}), flush=True)
    total_mb = sum(f.stat().st_size for f in folder.glob("*.json*")) / 1e6
    for jobs in [int(j) for j in args.jobs.split(",")]:
        if args.analyse:
            code = f"import roofline\nroofline.trace({str(folder)!r}, jobs={jobs})"
        else:
            code = (f"from roofline.traces.job import parsed, trace_files\n"
                    f"for t in parsed(trace_files([{str(folder)!r}]), jobs={jobs}): pass")
        r = _measure(code)
        print(json.dumps({"tool": "roofline", "what": "analyse" if args.analyse else "parse", "jobs": jobs,
                          "ranks": args.ranks, "total_mb": round(total_mb, 1),
                          "mb_per_s": round(total_mb / r["wall_s"], 1), **r}), flush=True)
    if args.hta:
        code = ("from hta.trace_analysis import TraceAnalysis\n"
                f"TraceAnalysis(trace_dir={str(folder)!r})")
        started = time.perf_counter()
        try:
            r = _measure(code, args.hta_python)
        except subprocess.CalledProcessError as exc:
            print(json.dumps({"tool": "hta", "error": exc.stderr.strip().splitlines()[-1:]}))
            return
        print(json.dumps({"tool": "hta", "ranks": args.ranks, "total_mb": round(total_mb, 1),
                          "mb_per_s": round(total_mb / r["wall_s"], 1), "outer_s": time.perf_counter() - started,
                          **r}), flush=True)


if __name__ == "__main__":
    main()
