"""`--annotate OUT.json`: the input trace written back with the roofline on it, for Perfetto and chrome://tracing.

Each kernel (on a CPU trace, each op the records count) gets args of its op call's record: `roofline.op`,
`roofline.flops` and `roofline.bytes` (per call), `roofline.roofline_us` (its time at the roof),
`roofline.roof_fraction` (roofline time / the call's measured time) and `roofline.predicted_us` (the database's,
where one applies); a call of several kernels gives each the call's numbers. A counter track, "roofline fraction"
(`ph: C`), steps to each annotated event's fraction at its start and back to 0 at its end. Everything else is
copied as it was read. The file is streamed out event by event (gzipped when OUT ends in .gz), written beside OUT
and renamed onto it when complete: nothing is left on error, and an existing OUT is kept unless `force`.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from roofline.core.files import refuse_existing
from roofline.traces.analyse import RankAnalysis
from roofline.traces.model import US
from roofline.traces.read import COMPLETE
from roofline.traces.stream import EVENTS_KEY, Events, read_head

PREFIX = "roofline."
COUNTER = "roofline fraction"  # the counter track's name
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})


def call_args(a: RankAnalysis) -> list[dict[str, Any]]:
    """Each call's args (module docstring), by call index."""
    out = []
    for p in a.calls.calls:
        rec = a.records[p.record] if p.record >= 0 else None
        t = p.time_s or 0.0
        roof = rec.roofline_time_s if rec is not None else None
        pred = rec.predicted_time_s if rec is not None else None
        out.append({f"{PREFIX}op": p.call.op, f"{PREFIX}flops": p.cost.flops,
                    f"{PREFIX}bytes": (p.traffic.bytes_read + p.traffic.bytes_written) if p.has_formula else None,
                    f"{PREFIX}roofline_us": roof / US if roof is not None else None,
                    f"{PREFIX}roof_fraction": roof / t if roof is not None and t > 0 else None,
                    f"{PREFIX}predicted_us": pred / US if pred is not None else None})
    return out


def _op_keys(a: RankAnalysis) -> dict[tuple[str, float, str], int]:
    """A CPU trace's counted ops by (thread, start, name), as the reader keys them: their call's index."""
    trace = a.trace
    out = {}
    for i, n in enumerate(a.calls.nodes):
        node = trace.ops[n]
        out[(trace.names[node.thread], node.ts, trace.names[node.name])] = i
    return out


def annotated_events(a: RankAnalysis) -> Iterator[dict[str, Any]]:
    """The trace's events with the roofline's args, then the counter track (module docstring)."""
    args = call_args(a)
    on_gpu = a.calls.on_gpu
    by_corr = a.calls.kernel_calls
    by_op = {} if on_gpu else _op_keys(a)
    counter: list[tuple[float, Any, float]] = []
    for e in Events(Path(a.trace.path)):
        if e.get("ph") == COMPLETE:
            cat = e.get("cat")
            i = None
            if on_gpu and cat in DEVICE_CATS:
                corr = (e.get("args") or {}).get("correlation")
                i = by_corr.get(corr) if isinstance(corr, int) else None
            elif not on_gpu and cat == "cpu_op":
                i = by_op.get((f"{e.get('pid')}/{e.get('tid')}", float(e["ts"]), e.get("name", "")))
            if i is not None:
                e["args"] = {**(e.get("args") or {}), **args[i]}
                fraction = args[i][f"{PREFIX}roof_fraction"]
                if fraction is not None:
                    counter.append((float(e["ts"]), e.get("pid"), fraction))
                    counter.append((float(e["ts"]) + float(e.get("dur", 0.0)), e.get("pid"), 0.0))
        yield e
    for ts, pid, value in sorted(counter, key=lambda c: c[0]):
        yield {"ph": "C", "name": COUNTER, "pid": pid, "tid": 0, "ts": ts, "args": {"fraction": value}}


def _writer(path: Path, gz: bool) -> IO[str]:
    if gz:
        return gzip.open(path, "wt", encoding="utf-8")
    return open(path, "w", encoding="utf-8")


def write_annotated(a: RankAnalysis, out: str | os.PathLike[str], force: bool = False) -> Path:
    """Write the annotated trace to `out` (module docstring); returns its path."""
    target = refuse_existing(out, force)
    meta = read_head(Path(a.trace.path))
    tmp = target.with_name(f".{target.name}.{os.getpid()}.roofline-tmp")
    try:
        with _writer(tmp, target.name.endswith(".gz")) as fh:
            fh.write("{")
            for k, v in meta.items():
                fh.write(f"{json.dumps(k)}: {json.dumps(v)}, ")
            fh.write(f'"{EVENTS_KEY}": [\n')
            for i, e in enumerate(annotated_events(a)):
                fh.write((",\n" if i else "") + json.dumps(e))
            fh.write("\n]}\n")
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target
