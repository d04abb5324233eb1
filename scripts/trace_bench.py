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
own default parser. Prints one JSON line per measurement: wall and CPU seconds (user and system, workers included:
on a shared machine the CPU time is the steadier figure), MB/s of each, peak RSS; with `--repeat N` the tools' runs
interleaved N times and the fastest kept (other work on the machine only slows a run).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
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
    """Run `code` in a fresh interpreter; its wall time, its CPU time (user and system, with its workers') and the
    peak resident memory of it and its children. The code's imports are inside: a tool is timed as a user
    meets it, from a fresh interpreter to the trace loaded."""
    wrapper = (f"import resource, time, json\nt0 = time.perf_counter()\n{code}\n"
               "me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime\n"
               "print(json.dumps({'wall_s': time.perf_counter() - t0, 'cpu_s': cpu,"
               " 'peak_rss_mb': max(me.ru_maxrss, kids.ru_maxrss) / 1024,"
               " 'main_rss_mb': me.ru_maxrss / 1024, 'worker_rss_mb': kids.ru_maxrss / 1024}))")
    out = subprocess.run([python, "-c", wrapper], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def make_set(template: Path, folder: Path, ranks: int, mb: float, gz: bool) -> int:
    """`ranks` traces of `mb` MB each in `folder` (module docstring): rank 0 synthesized from the template, the
    others its copy with their own rank in distributedInfo (the events are the same). Returns the events per rank
    (0 when the set was there already)."""
    suffix = ".pt.trace.json" + (".gz" if gz else "")
    files = sorted(folder.glob("*.json*"))
    if len(files) == ranks and all((folder / f"rank{r}{suffix}").is_file() for r in range(ranks)):
        return 0
    for f in files:
        f.unlink()
    first = folder / f"rank0{suffix}"
    n = synthesize(template, first, int(mb * 1e6), 0, ranks)
    opener: Any = gzip.open if gz else open
    for r in range(1, ranks):
        with opener(first, "rt", encoding="utf-8") as src, opener(folder / f"rank{r}{suffix}", "wt",
                                                                   encoding="utf-8") as dst:
            head = json.loads(src.readline()[:-len(', "traceEvents": [\n')] + "}")
            head["distributedInfo"] = {**head["distributedInfo"], "rank": r}
            dst.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
            shutil.copyfileobj(src, dst, 1 << 20)
    return n


def _summary(tool: str, samples: list[dict[str, Any]], total_mb: float, **extra: Any) -> dict[str, Any]:
    """The fastest of the repeats (the least disturbed by the machine's other work), and every sample's wall."""
    best = min(samples, key=lambda r: r["cpu_s"])
    return {"tool": tool, **extra, "total_mb": round(total_mb, 1), "repeats": len(samples),
            "mb_per_s": round(total_mb / min(r["wall_s"] for r in samples), 1),
            "mb_per_cpu_s": round(total_mb / best["cpu_s"], 1), "wall_s": round(min(r["wall_s"] for r in samples), 2),
            "cpu_s": round(best["cpu_s"], 2), "peak_rss_mb": round(max(r["peak_rss_mb"] for r in samples), 1),
            "walls_s": [round(r["wall_s"], 2) for r in samples]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--template", type=Path, required=True, help="a real torch.profiler trace to repeat")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--mb", type=float, default=20.0, help="each rank's trace size (MB)")
    ap.add_argument("--jobs", default="1,2,4", help="the process counts measured")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each measurement, interleaved between the "
                    "tools (the fastest is reported: a shared machine's other work only slows a run)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/roofline-trace-bench"))
    ap.add_argument("--gz", action="store_true", help="write the traces gzipped")
    ap.add_argument("--hta", action="store_true", help="also load the folder with HTA (when installed)")
    ap.add_argument("--hta-python", default=sys.executable, help="the interpreter HTA is installed for (its own "
                    "venv: HTA pins its own pandas)")
    ap.add_argument("--analyse", action="store_true", help="time the whole `roofline.trace` (parse and records), "
                    "not the parse alone")
    args = ap.parse_args()
    folder = args.out / f"r{args.ranks}-{args.mb:g}mb{'-gz' if args.gz else ''}"
    folder.mkdir(parents=True, exist_ok=True)
    n = make_set(args.template, folder, args.ranks, args.mb, args.gz)
    if n:
        print(json.dumps({"made": str(folder), "ranks": args.ranks, "events_per_rank": n}), flush=True)
    total_mb = sum(f.stat().st_size for f in folder.glob("*.json*")) / 1e6
    runs: dict[str, tuple[str, str]] = {}
    for jobs in [int(j) for j in args.jobs.split(",")]:
        if args.analyse:
            code = f"import roofline\nroofline.trace({str(folder)!r}, jobs={jobs})"
        else:
            code = (f"from roofline.traces.job import parsed, trace_files\n"
                    f"for t in parsed(trace_files([{str(folder)!r}]), jobs={jobs}): pass")
        runs[f"roofline:{jobs}"] = (code, sys.executable)
    if args.hta:
        runs["hta"] = (f"from hta.trace_analysis import TraceAnalysis\nTraceAnalysis(trace_dir={str(folder)!r})",
                       args.hta_python)
    samples: dict[str, list[dict[str, Any]]] = {k: [] for k in runs}
    for _ in range(args.repeat):
        for key, (code, python) in runs.items():
            try:
                samples[key].append(_measure(code, python))
            except subprocess.CalledProcessError as exc:
                print(json.dumps({"tool": key, "error": exc.stderr.strip().splitlines()[-1:]}), flush=True)
                samples[key] = []
                runs = {k: v for k, v in runs.items() if k != key}
                break
    for key, got in samples.items():
        if not got:
            continue
        tool, _, pool = key.partition(":")
        extra: dict[str, Any] = {"what": "analyse" if args.analyse else "parse", "jobs": int(pool)} if pool else {}
        print(json.dumps(_summary(tool, got, total_mb, ranks=args.ranks, **extra)), flush=True)


if __name__ == "__main__":
    main()
