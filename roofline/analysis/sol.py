"""The speed of light of a kernel-benchmark problem (`roofline sol`): how fast any kernel could run it on a
device, from a profile of the reference's ops, and what a measured time means against it. Pure functions:
records and plain numbers in, numbers and sentences out.

Two bounds, both lower bounds on the time:
- unfused: the sum of the roofline times of the reference's ops (each op's FLOPs at its pipe's peak, or its
  minimum bytes at the DRAM rate, whichever is longer): what the reference's ops, run as they are, could reach.
- fused: the problem as one kernel, its own inputs read once and its outputs written once (the tensors the
  forward reads that no op of it wrote: the inputs, the weights; the tensors it returns), at the DRAM rate, or
  its FLOPs at peak (each op's at its own pipe's), whichever is longer: what a candidate could reach.
An op without a FLOP formula adds nothing to either (a bound on what is counted, and `notes` says so).

A time below the fused bound is refused as impossible (`judge`, on a GPU's datasheet roofs with the L2 flushed
before each call), with one allowance: outputs the L2 can hold may be written back to DRAM after the call ends,
so the memory floor of the refusal leaves them out (`memory_floor_s`). No other margin: the peaks are the
datasheet's at the boost clock, and the DRAM rate is the interface's; no kernel runs faster with cold caches.

NB: an input is counted as the most bytes any one counted op reads of it (a gather reads its rows, not the
whole table); outputs that are views of inputs (never written) count no bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from roofline.core.format import duration, percent, si
from roofline.core.record import Record

# One op call's traffic for the fused bound: (storage, bytes) read, (storage, bytes) written, and whether the
# op has a FLOP formula (only counted ops set the inputs' bytes).
CallTraffic = tuple[Sequence[tuple[int, float]], Sequence[tuple[int, float]], bool]

# Verdicts.
OK = "ok"  # timed, outputs right, at or above the fused bound (or no hard bound here)
WRONG = "wrong"  # an output differs from the reference's
REFUSED = "refused"  # the harness refused the timing (a patched timer, work outside the calls)
IMPOSSIBLE = "impossible"  # faster than the fused speed of light allows
FAILED = "failed"  # did not build, raised, timed out
STATUSES = (OK, WRONG, REFUSED, IMPOSSIBLE, FAILED)


@dataclass(frozen=True)
class OpShare:
    """One record of the reference's profile: its calls and its part of the unfused speed of light."""

    op: str
    module: str
    count: int
    roofline_s: float | None  # per call; None without a formula
    share: float | None  # of the unfused bound, all calls
    bound: str | None


@dataclass(frozen=True)
class SpeedOfLight:
    """The problem's bounds on one device (module docstring)."""

    flops: float  # every counted op's, over all calls
    op_bytes: float  # every counted op's minimum bytes, over all calls (the unfused traffic)
    read_bytes: float  # fused: the problem's own inputs, read once
    written_bytes: float  # fused: its outputs, written once
    dram_bytes_per_s: float
    unfused_s: float
    fused_compute_s: float
    ops: tuple[OpShare, ...] = ()
    without_formula: tuple[tuple[str, int], ...] = ()  # (op, calls)
    roof: str = ""  # the device and the roof's source: "NVIDIA H200 SXM (datasheet)"

    @property
    def fused_bytes(self) -> float:
        return self.read_bytes + self.written_bytes

    @property
    def fused_memory_s(self) -> float:
        return self.fused_bytes / self.dram_bytes_per_s if self.dram_bytes_per_s else 0.0

    @property
    def fused_s(self) -> float:
        return max(self.fused_memory_s, self.fused_compute_s)

    @property
    def fused_bound(self) -> str:
        return "compute" if self.fused_compute_s > self.fused_memory_s else "memory"

    @property
    def complete(self) -> bool:
        """Every op has a formula: the bounds are the problem's, not only the counted part's."""
        return not self.without_formula

    def notes(self) -> list[str]:
        if self.complete:
            return []
        ops = ", ".join(f"{op} ({n} call{'s' if n != 1 else ''})" for op, n in self.without_formula)
        return [f"no formula for {ops}: the speed of light bounds what is counted, the ops without a formula add "
                "nothing to it (the problem's true bound is higher)"]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ops"] = [asdict(o) for o in self.ops]
        out["without_formula"] = [{"op": op, "calls": n} for op, n in self.without_formula]
        out.update(fused_memory_s=self.fused_memory_s, fused_s=self.fused_s, fused_bound=self.fused_bound,
                   complete=self.complete)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SpeedOfLight:
        return cls(flops=d["flops"], op_bytes=d["op_bytes"], read_bytes=d["read_bytes"],
                   written_bytes=d["written_bytes"], dram_bytes_per_s=d["dram_bytes_per_s"], unfused_s=d["unfused_s"],
                   fused_compute_s=d["fused_compute_s"], ops=tuple(OpShare(**o) for o in d.get("ops", ())),
                   without_formula=tuple((w["op"], w["calls"]) for w in d.get("without_formula", ())),
                   roof=d.get("roof", ""))


def external_reads(calls: Iterable[CallTraffic]) -> float:
    """Bytes of the tensors the calls read that no earlier call wrote (the problem's own inputs and weights),
    each counted once, as the most bytes any one counted call reads of it."""
    written: set[int] = set()
    inputs: dict[int, float] = {}
    for reads, writes, counted in calls:
        for key, nbytes in reads:
            if key not in written and counted:
                inputs[key] = max(inputs.get(key, 0.0), float(nbytes))
        written.update(key for key, _ in writes)
    return sum(inputs.values())


def written_outputs(calls: Iterable[CallTraffic], outputs: Iterable[tuple[int, float]]) -> float:
    """Bytes of the returned tensors (storage, bytes) that some call wrote, each storage once."""
    written = {key for _, writes, _ in calls for key, _ in writes}
    seen: dict[int, float] = {}
    for key, nbytes in outputs:
        if key in written:
            seen[key] = max(seen.get(key, 0.0), float(nbytes))
    return sum(seen.values())


def speed_of_light(records: Sequence[Record], calls: Sequence[CallTraffic], outputs: Sequence[tuple[int, float]],
                   dram_bytes_per_s: float, roof: str = "") -> SpeedOfLight:
    """The bounds of a problem from its reference's profile: `records` (per-call FLOPs, bytes and roofline
    time, `count` calls each), `calls` (every call's traffic, in order) and `outputs` (the returned tensors)."""
    counted = [r for r in records if r.flops is not None]
    unfused = sum((r.roofline_time_s or 0.0) * (r.count or 1) for r in counted)
    compute = sum((r.flops or 0.0) * (r.count or 1) / r.peak_flops_per_s for r in counted if r.peak_flops_per_s)
    ops = tuple(OpShare(r.op, r.module or "", r.count or 1, r.roofline_time_s,
                        (r.roofline_time_s or 0.0) * (r.count or 1) / unfused if unfused and r.flops is not None
                        else None, r.bound or None) for r in records)
    missing: dict[str, int] = {}
    for r in records:
        if r.flops is None:
            missing[r.op] = missing.get(r.op, 0) + (r.count or 1)
    return SpeedOfLight(
        flops=sum((r.flops or 0.0) * (r.count or 1) for r in counted),
        op_bytes=sum((r.bytes or 0.0) * (r.count or 1) for r in counted),
        read_bytes=external_reads(calls), written_bytes=written_outputs(calls, outputs),
        dram_bytes_per_s=dram_bytes_per_s, unfused_s=unfused, fused_compute_s=compute, ops=ops,
        without_formula=tuple(sorted(missing.items())), roof=roof)


# -- a measured time against the bounds
@dataclass(frozen=True)
class Verdict:
    """What a timing says: `status` (STATUSES), the reason in a sentence, and the ratios when it stands."""

    status: str
    reason: str = ""
    time_s: float | None = None  # the median device time per call, when it stands
    speedup: float | None = None  # the reference's time over this one
    of_fused: float | None = None  # fused speed of light / time: 1.0 is the limit
    of_unfused: float | None = None
    notes: list[str] = field(default_factory=list)
    sol_score: float | None = None  # SOL-ExecBench's score against the reference and the fused bound (`sol_score`)

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def memory_floor_s(sol: SpeedOfLight, l2_bytes: float = 0.0) -> float:
    """The least DRAM time any kernel of the problem pays inside its call: its inputs read (the L2 was flushed
    before the call), and of its outputs only what the L2 cannot hold (a kernel's dirty lines can be written
    back after it ends)."""
    if not sol.dram_bytes_per_s:
        return 0.0
    return (sol.read_bytes + max(0.0, sol.written_bytes - l2_bytes)) / sol.dram_bytes_per_s


def impossible(time_s: float, sol: SpeedOfLight, l2_bytes: float = 0.0) -> str | None:
    """Why `time_s` cannot be (below the fused bound's floors), with what it implies; None when it can. The
    floors: the FLOPs at peak, and the memory floor (`memory_floor_s`: the fused bound less the outputs the L2
    can hold)."""
    memory = memory_floor_s(sol, l2_bytes)
    if time_s >= max(memory, sol.fused_compute_s):
        return None
    said = f"{duration(time_s)} is below the fused speed of light ({duration(sol.fused_s)})"
    if time_s < memory:
        held = f", less the {si(min(sol.written_bytes, l2_bytes), 'B')} of outputs the L2 can hold" if l2_bytes else ""
        return (f"{said}: reading the problem's inputs once and writing its outputs once ({si(sol.fused_bytes, 'B')}"
                f"{held}) takes {duration(memory)} at {si(sol.dram_bytes_per_s, 'B/s')}. Either the output was not "
                "computed in the call, or work ran outside the timed window, or the inputs and outputs are smaller "
                "than counted")
    return (f"{said}: the reference's {si(sol.flops, 'FLOP')} take {duration(sol.fused_compute_s)} at the peak "
            "rates. Either the candidate does fewer FLOPs than the reference's ops (an algebraic shortcut: then "
            "the problem needs fewer FLOPs than counted, and this bound is not the problem's), or work ran outside "
            "the timed window, or the output was not computed in the call")


def judge(time_s: float | None, sol: SpeedOfLight, *, hard: bool, reference_s: float | None = None,
          wrong: str | None = None, refused: Sequence[str] = (), failed: str | None = None,
          l2_bytes: float = 0.0) -> Verdict:
    """The verdict on one timing: failed, refused, wrong, impossible (only against a `hard` bound: datasheet
    peaks with the caches flushed; `impossible` says which floor) or ok with its speedup over the reference and
    its fractions of the bounds. `l2_bytes`: the device's L2, which can hold outputs past the call."""
    if failed:
        return Verdict(FAILED, failed)
    if refused:
        return Verdict(REFUSED, "; ".join(refused))
    if wrong:
        return Verdict(WRONG, wrong)
    if time_s is None or time_s <= 0:
        return Verdict(REFUSED, "no time was measured: the calls launched no device work") if time_s == 0 else \
            Verdict(FAILED, "not timed")
    if hard and (why := impossible(time_s, sol, l2_bytes)):
        return Verdict(IMPOSSIBLE, why)
    notes = [] if hard else ["the roofs here are measured, not physical limits, and the caches are not flushed: a "
                             "time below the speed of light is reported, not refused"]
    return Verdict(OK, "", time_s, reference_s / time_s if reference_s else None,
                   sol.fused_s / time_s, sol.unfused_s / time_s, notes,
                   sol_score(time_s, reference_s, sol.fused_s) if reference_s else None)


def sol_score(t_k: float, t_b: float, t_sol: float) -> float:
    """SOL-ExecBench's SOL-Score of a candidate's time `t_k` against a baseline's `t_b` and the speed of light
    `t_sol` (NVIDIA/SOL-ExecBench, src/sol_execbench/sol_score.py): 1 / (1 + (t_k - t_sol) / (t_b - t_sol)),
    0.5 at the baseline's time, 1 at the speed of light, towards 0 as t_k grows. A baseline at or below the speed
    of light leaves no gap to score: 1 at or below it, else 0 (as there).
    NB: not clamped (as there): a time below `t_sol` scores above 1; `judge` refuses it first on a hard bound."""
    gap = t_b - t_sol
    if gap <= 0:
        return 1.0 if t_k <= t_sol else 0.0
    return 1.0 / (1.0 + (t_k - t_sol) / gap)


# KernelBench's fast_p thresholds reported (arXiv 2502.10517, its src/score.py): fast_0 is the fraction of
# candidates that are correct, fast_1 of those also faster than the reference.
FAST_P = (0.0, 1.0)


def fast_p(candidates: Sequence[Verdict], p: float) -> float | None:
    """KernelBench's fast_p: the fraction of `candidates` that are correct (ok) with a speedup over the reference
    above `p`; every candidate counts in the denominator (one that failed, is wrong or impossible is not fast).
    None without candidates."""
    if not candidates:
        return None
    return sum(1 for v in candidates if v.ok and v.speedup is not None and v.speedup > p) / len(candidates)


def verdict_line(v: Verdict) -> str:
    """'ok: 1.8x the reference, 62.0% of the fused speed of light' or 'wrong: ...'."""
    if not v.ok:
        return f"{v.status}: {v.reason}"
    parts = [f"{v.speedup:.3g}x the reference" if v.speedup is not None else "",
             f"{percent(v.of_fused)} of the fused speed of light"]
    return f"{v.status}: " + ", ".join(p for p in parts if p)
