"""Many ranks' traces side by side: each rank's summary, the slowest rank of each step and the ops that made it
slow, and each collective across the ranks: its size, algorithm and bus bandwidth, the time it is exposed (not
overlapped with compute) and the skew between the ranks entering it. Pure: built from each rank's analysis
(traces/analyse.py), nothing parsed here.

Conventions:
- A collective is matched across ranks by its order: the n-th all_reduce of each rank is one collective (every
  rank calls a group's collectives in the same order). Its size S, algbw = S / t and busbw = algbw x nccl-tests'
  factor (capture/comm.py, ops/collectives.py) with t the slowest rank's time, as nccl-tests reports.
- Exposed: the part of a rank's collective interval (its NCCL kernels on a GPU; on the CPU, the op's entry to
  the end of its backend's work) that no compute interval covers (other kernels on a GPU, other ops' host time
  on the CPU); the collective's is the largest over ranks.
- Skew: the latest rank's entry (the host op's start) less the earliest's, on the traces' clocks (one clock for
  the ranks of one host; ranks of several hosts are as aligned as their clocks).
- Steps: ProfilerStep#N ranges; a trace without them is one step, numbered -1. The slowest rank of a step is the
  one whose step lasted longest; why: the ops whose time on it exceeds the median over ranks the most.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from roofline.capture.kernels import union_length
from roofline.core.aten_names import short_name
from roofline.ops.collectives import algbw, busbw
from roofline.traces.analyse import RankAnalysis
from roofline.traces.calls import is_nccl
from roofline.traces.model import US

WHY_OPS = 3  # the ops named for a slow step


@dataclass(frozen=True)
class CollectiveCall:
    """One rank's call of a collective."""

    op: str  # "all_reduce"
    nth: int  # its order among the rank's calls of this op
    nbytes: int  # S, nccl-tests' size
    ranks: int  # the group's size
    entry_us: float  # the host op's start
    time_s: float
    exposed_s: float


@dataclass(frozen=True)
class RankSummary:
    """One rank's trace in a line."""

    rank: int
    path: str
    events: int
    parse_s: float
    calls: int
    kernel_time_s: float | None
    wall_s: float | None
    communication_s: float | None
    exposed_communication_s: float
    steps_s: dict[str, float]  # ProfilerStep#N -> seconds


@dataclass(frozen=True)
class Collective:
    """One collective across the ranks (module docstring)."""

    op: str
    nth: int
    bytes: int
    ranks: int
    time_s: float  # the slowest rank's
    algbw_bytes_per_s: float | None
    busbw_bytes_per_s: float | None
    exposed_s: float  # the largest over ranks
    skew_s: float  # latest entry - earliest entry
    last_rank: int  # the rank that entered last


@dataclass(frozen=True)
class SlowStep:
    """The slowest rank of one step and why."""

    step: int
    rank: int
    time_s: float
    median_s: float
    ops: tuple[tuple[str, float], ...]  # (op, seconds over the median rank's), the largest first


def _exposed(span: tuple[float, float], compute: list[tuple[float, float]]) -> float:
    """µs of `span` no compute interval covers."""
    s, e = span
    inside = [(max(a, s), min(b, e)) for a, b in compute if b > s and a < e]
    return max(0.0, (e - s) - union_length(inside))


def collective_calls(a: RankAnalysis) -> list[CollectiveCall]:
    """The rank's collective calls in order, with the time each is exposed."""
    tc, trace = a.calls, a.trace
    if tc.on_gpu:
        compute = [(k.ts, k.ts + k.dur) for k in trace.kernels if not is_nccl(trace.names[k.name])]
    else:
        compute = [(trace.ops[n].ts, trace.ops[n].ts + trace.ops[n].dur)
                   for p, n in zip(tc.calls, tc.nodes, strict=True) if p.comm is None]
    seen: Counter[str] = Counter()
    out = []
    for i, (p, n) in enumerate(zip(tc.calls, tc.nodes, strict=True)):
        if p.comm is None:
            continue
        node = trace.ops[n]
        spans = tc.spans.get(i) or [(node.ts, node.ts + (p.time_s or 0.0) / US)]
        exposed = sum(_exposed(s, compute) for s in spans) * US
        out.append(CollectiveCall(p.comm.op, seen[p.comm.op], p.comm.nbytes, p.comm.ranks, node.ts, p.time_s or 0.0,
                                  exposed))
        seen[p.comm.op] += 1
    return out


def rank_summary(rank: int, a: RankAnalysis, calls: Sequence[CollectiveCall]) -> RankSummary:
    s = a.summary
    comm = s.communication
    return RankSummary(rank, a.trace.path, a.trace.events, a.trace.parse_s, s.calls or 0, s.kernel_time_s, s.wall_s,
                       comm.time_s if comm is not None else None, sum(c.exposed_s for c in calls),
                       {a.trace.names[st.name]: st.dur * US for st in a.trace.steps})


def collectives(by_rank: dict[int, list[CollectiveCall]]) -> list[Collective]:
    """Each collective matched across ranks (module docstring), in the first rank's order."""
    groups: dict[tuple[str, int], dict[int, CollectiveCall]] = defaultdict(dict)
    for rank, calls in by_rank.items():
        for c in calls:
            groups[(c.op, c.nth)][rank] = c
    out = []
    for (op, nth), per in groups.items():
        first = next(iter(per.values()))
        t = max(c.time_s for c in per.values())
        entries = {r: c.entry_us for r, c in per.items()}
        last = max(entries, key=lambda r: entries[r])
        out.append(Collective(op, nth, first.nbytes, first.ranks, t, algbw(first.nbytes, t) if t else None,
                              busbw(op, first.nbytes, first.ranks, t) if t else None,
                              max(c.exposed_s for c in per.values()),
                              (max(entries.values()) - min(entries.values())) * US, last))
    return out


OpTimes = dict[int, dict[str, float]]  # step -> op (short name) -> seconds


def step_op_times(a: RankAnalysis) -> OpTimes:
    """Seconds per op (short name) in each step of the rank (NONE: outside steps)."""
    out: OpTimes = defaultdict(lambda: defaultdict(float))
    for p, n in zip(a.calls.calls, a.calls.nodes, strict=True):
        out[a.trace.ops[n].step][short_name(p.call.op)] += p.time_s or 0.0
    return {k: dict(v) for k, v in out.items()}


def slow_steps(steps: dict[int, dict[int, float]], ops: dict[int, OpTimes]) -> list[SlowStep]:
    """`steps`: rank -> step -> seconds; `ops`: rank -> step -> op -> seconds. The slowest rank of each step and
    the ops it spent most over the median rank."""
    by_step: dict[int, dict[int, float]] = defaultdict(dict)
    for rank, rank_steps in steps.items():
        for step, t in rank_steps.items():
            by_step[step][rank] = t
    out = []
    for step in sorted(by_step):
        times = by_step[step]
        slow = max(times, key=lambda r: times[r])
        per: dict[int, dict[str, float]] = {r: ops[r].get(step, {}) if r in ops else {} for r in times}
        names: set[str] = set()
        for d in per.values():
            names |= d.keys()
        excess = []
        for name in sorted(names):
            median = float(statistics.median(per[r].get(name, 0.0) for r in times))
            excess.append((name, per[slow].get(name, 0.0) - median))
        top = tuple(sorted((x for x in excess if x[1] > 0), key=lambda x: -x[1])[:WHY_OPS])
        out.append(SlowStep(step, slow, times[slow], statistics.median(times.values()), top))
    return out


def as_dicts(items: Sequence[object]) -> list[dict[str, object]]:
    return [asdict(x) for x in items]  # type: ignore[call-overload]
