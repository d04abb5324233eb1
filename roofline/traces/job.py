"""`roofline.trace(paths)`: one trace or one per rank (files, folders, globs), read in a process pool, analysed
rank by rank, and the results document of one rank with the job's ranks, steps and collectives beside it.

Paths: a file is a trace; a folder holds traces (`*.json`, `*.json.gz`, as tensorboard_trace_handler writes them:
`*.pt.trace.json[.gz]`); a pattern with `*`, `?` or `[` is a glob. Each file is parsed in a worker process
(`jobs`, default: one per file up to the CPUs; the parse imports no torch, so a worker starts in a fraction of a
second), then analysed here as it arrives (torch: the formulas run on meta tensors), and only its records and
summaries are kept.

Refused (UsageError, one line, exit 2; nothing written): no trace found, two traces of one rank, ranks of
different GPUs, ranks that traced different steps (ProfilerStep numbers), `rank` that no trace has.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core.document import Document, write_document
from roofline.core.errors import UsageError
from roofline.core.record import Record
from roofline.core.summary import ProfileSummary
from roofline.traces.model import NONE, US, RankTrace
from roofline.traces.read import read_trace

if TYPE_CHECKING:  # torch (the formulas): imported by `trace`, never by the parse or its workers
    from roofline.traces import ranks as rk
    from roofline.traces.analyse import RankAnalysis

TRACE_SUFFIXES = (".json", ".json.gz")
GLOB_CHARS = frozenset("*?[")


def trace_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The trace files `paths` name (module docstring), in order, each once."""
    out: list[Path] = []
    for raw in paths:
        text = str(raw)
        if GLOB_CHARS & set(text):
            found = sorted(Path(p) for p in glob.glob(text))
            if not found:
                raise UsageError(f"{text}: no trace matches")
            out += [p for p in found if p.is_file()]
        elif Path(text).is_dir():
            found = sorted(p for p in Path(text).iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
            if not found:
                raise UsageError(f"{text}: a folder without traces (*.json, *.json.gz)")
            out += found
        else:
            out.append(Path(text))
    if not out:
        raise UsageError("no trace given")
    for p in out:  # each refused here, before any worker starts
        if p.is_dir():
            raise UsageError(f"{p}: a folder inside a folder of traces: name the folder of traces itself")
        if not p.is_file():
            raise UsageError(f"{p}: no such trace")
    return list(dict.fromkeys(out))


def parsed(files: Sequence[Path], jobs: int | None = None) -> Iterator[RankTrace]:
    """Each file read, in order; in a pool of `jobs` processes when there are several files."""
    jobs = jobs or min(len(files), os.cpu_count() or 1)
    if jobs <= 1 or len(files) == 1:
        for f in files:
            yield read_trace(f)
        return
    import multiprocessing

    # spawn: a fresh interpreter per worker, whatever the caller imported (forking a process with torch's
    # threads running can hang); the reader's imports take a fraction of a second
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(read_trace, files)


@dataclass
class TraceResult:
    """The job's traces analysed: `analysis` (the document's rank), and every rank's summary, the slow steps and
    the collectives (`ranks.py`)."""

    analysis: RankAnalysis
    rank: int
    ranks: list[rk.RankSummary] = field(default_factory=list)
    slow_steps: list[rk.SlowStep] = field(default_factory=list)
    collectives: list[rk.Collective] = field(default_factory=list)

    @property
    def records(self) -> list[Record]:
        return self.analysis.records

    @property
    def summary(self) -> ProfileSummary:
        return self.analysis.summary

    def trace_summary(self) -> dict[str, Any]:
        """The document's `trace`: the rank its records are, and the job's ranks, slow steps and collectives."""
        from roofline.traces import ranks as rk

        return {"rank": self.rank, "ranks": rk.as_dicts(self.ranks), "slow_steps": rk.as_dicts(self.slow_steps),
                "collectives": rk.as_dicts(self.collectives)}

    def document(self) -> Document:
        return self.analysis.document({"trace": self.trace_summary()})

    def save(self, path: str | os.PathLike[str], force: bool = False) -> Path:
        return write_document(self.document(), path, force=force)


def trace(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *, gpu: str | None = None,
          db: str | os.PathLike[str] | None = None, rank: int | None = None, jobs: int | None = None) -> TraceResult:
    """The roofline of a run from its torch.profiler traces (module docstring): `gpu` the roof's spec (default: the
    traces' device), `db` the operator database of the predicted times, `rank` the rank whose records the document
    holds (default: the lowest), `jobs` the parsing processes."""
    from roofline.traces import ranks as rk
    from roofline.traces.analyse import analyse

    files = trace_files([paths] if isinstance(paths, (str, os.PathLike)) else list(paths))
    kept: dict[int, RankAnalysis] = {}
    calls: dict[int, list[rk.CollectiveCall]] = {}
    summaries: list[rk.RankSummary] = []
    steps: dict[int, dict[int, float]] = {}
    ops: dict[int, rk.OpTimes] = {}
    devices: dict[int, set[str]] = {}
    step_sets: dict[int, frozenset[int]] = {}
    target = None
    for i, t in enumerate(parsed(files, jobs)):
        r = t.rank if t.rank is not None else i
        if r in kept or r in calls:
            raise UsageError(f"{t.path}: a second trace of rank {r} (the first: "
                             f"{next(s.path for s in summaries if s.rank == r)})")
        devices[r] = {d for d in t.devices if d}
        step_sets[r] = frozenset(s.number for s in t.steps)
        a = analyse(t, gpu=gpu, db=db, target=target)
        target = a.target  # every rank on the first one's roof
        calls[r] = rk.collective_calls(a)
        summaries.append(rk.rank_summary(r, a, calls[r]))
        steps[r] = {s.number: s.dur * US for s in t.steps} or {NONE: (a.summary.wall_s or 0.0)}
        ops[r] = rk.step_op_times(a)
        if rank is None or rank == r:
            kept[r] = a
        if len(kept) > 1:  # only the lowest rank's analysis is kept unless one was asked for
            kept.pop(max(kept))
    _same_job(devices, step_sets, summaries)
    if not kept:
        raise UsageError(f"rank {rank}: no such rank in the traces (ranks {sorted(calls)})")
    chosen = min(kept)
    return TraceResult(kept[chosen], chosen, sorted(summaries, key=lambda s: s.rank),
                       rk.slow_steps(steps, ops) if len(files) > 1 else [], rk.collectives(calls))


def _same_job(devices: dict[int, set[str]], step_sets: dict[int, frozenset[int]],
              summaries: list[rk.RankSummary]) -> None:
    """Ranks of one job: one GPU model, the same steps (module docstring)."""
    path = {s.rank: s.path for s in summaries}
    names = {r: sorted(d)[0] for r, d in devices.items() if d}
    if len(set(names.values())) > 1:
        a, b = sorted(names, key=lambda r: names[r])[0], sorted(names, key=lambda r: names[r])[-1]
        raise UsageError(f"ranks of different GPUs: {path[a]} ran on {names[a]}, {path[b]} on {names[b]}")
    sets = {r: s for r, s in step_sets.items() if s}
    if len(set(sets.values())) > 1:
        first = min(sets)
        other = next(r for r in sets if sets[r] != sets[first])
        raise UsageError(f"ranks of different steps: {path[first]} traced steps {sorted(sets[first])}, "
                         f"{path[other]} steps {sorted(sets[other])}")

