"""A profile's summary (`core.summary.ProfileSummary`) from what its run left (capture/profile.py): the calls and
records, the device's kernel timeline, the regions entered and their walls; with the notes it says, each a
`Note` whose code names its kind (`PROFILE_NOTES`), so code tells them apart by code, never by their words.

Timed: wall and kernel time, the GPU's busy and idle split (over the regions' entries when the program marked
regions: the warm-up, compilation and the model's build ran outside them). Analytic: what the predicted time
covers (`analytic_coverage`), and `lower_bound` when the calls with a formula hold less than
LOWER_BOUND_COVERAGE of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from roofline.analysis.utilization import utilization
from roofline.capture.comm_summary import communication
from roofline.capture.kernels import Timeline
from roofline.capture.records import (
    Edge,
    ProfiledCall,
    analytic_coverage,
    group_totals,
    record_edges,
    roofline_total,
    step_totals,
    summarise,
)
from roofline.core.format import percent
from roofline.core.model import Ceilings
from roofline.core.notes import Note
from roofline.core.record import Record
from roofline.core.summary import (
    AnalyticCoverage,
    CompiledCode,
    GroupTotals,
    OpWithoutFormula,
    ProfileSummary,
    RegionSummary,
    UnattributedKernel,
)
from roofline.measuring.target import Target

# An analytic prediction whose calls with a formula hold less than this share of it (those without one taken at
# their bytes over the bandwidth) is said to be a lower bound: 1% of a step is about the noise of a timed run.
LOWER_BOUND_COVERAGE = 0.99

# The codes of the notes a profile's summary says, by kind (the target's own notes come with theirs, the
# utilization's refusals with analysis/utilization.py's REFUSED, the counters' with ncu/profile.py's).
INSTRUMENTED = "profile.instrumented"  # wall and idle include the tool's host overhead
MASKED_ATTENTION = "profile.attention_mask"  # attention masks whose values were not read
BUILD_CALLS = "profile.build_calls"  # the model's build left out
COMPILED_UNATTRIBUTED = "profile.compiled_unattributed"  # Triton launches no aten op owns
COMPILED_EAGER = "profile.compiled_eager"  # compiled code ran eager (analytic)
COMPILED_CPU = "profile.compiled_cpu"  # compiled code's C++ kernels neither timed nor counted
STAND_INS = "profile.stand_ins"  # scalar reads without data read as stand-ins
GRAPH_REPLAY = "profile.graph_replay"  # kernels of CUDA graph replays, unattributed
TRACE_READS = "profile.trace_reads"  # the trace's own value reads, left out of the kernel time
OVERCOUNT = "profile.overcount"  # kernel time attributed twice
NO_KERNELS = "profile.no_kernels"  # a GPU profile that ran no device kernel
ROUTING = "profile.routing"  # an eager MoE's router choices took the assumed routing
HOST_BOUND = "profile.host_bound"  # the GPU idle most of the step: the host's time, not the kernels'
# A timed GPU step whose device sat idle more than this share of its wall (without the profiler, where measured) is
# host-bound: Python, launches and synchronisations set its time, and its kernels' sum (and their prediction)
# says little of it. Half: past it, more of the step is the host's than the kernels'.
HOST_BOUND_SHARE = 0.5
PROFILE_NOTES = (INSTRUMENTED, MASKED_ATTENTION, BUILD_CALLS, COMPILED_UNATTRIBUTED, COMPILED_EAGER, COMPILED_CPU,
                 STAND_INS, ROUTING, GRAPH_REPLAY, TRACE_READS, OVERCOUNT, NO_KERNELS, HOST_BOUND)


@dataclass(frozen=True)
class Run:
    """What a profiled run leaves for its summary (capture/profile.py `Profile._build`)."""

    name: str
    target: Target
    timeline: Timeline | None  # the device's kernels (None: analytic)
    calls: Sequence[ProfiledCall]  # the calls kept (those of the regions kept, the model's build left out)
    edges: Sequence[Edge]
    records: Sequence[Record]
    regions: set[str] | None  # the regions kept (None: the whole run)
    entries: Mapping[str, int]  # how often each region was entered
    entry_walls: Mapping[str, list[float]]  # each kept region's entries' wall times, in order
    wall_s: float | None  # the profiled run's
    wall_plain_s: float | None  # a plain call's (the last warm-up)
    root: str | None  # the module path prefix stripped from every call's
    built: int  # calls of the model's build left out
    skipped: Mapping[str, int]  # calls not recorded, by op
    stood_in: Mapping[str, int]  # scalar reads without data, by phase
    roofs: Mapping[str, Ceilings | None]  # MFU and MBU are stated against these
    tokens: int | None
    compiled: CompiledCode | None  # compiled code run in the regions kept (None: none)


def instrumented_note(wall_uninstrumented_s: float | None, gpu_idle_s: float | None) -> Note:
    """What an instrumented run's wall and idle hold, naming only the fields the summary has: no gpu_idle_s on
    the CPU, no wall_uninstrumented_s without a timed warm-up call (a script's profile)."""
    idle = " and gpu_idle_s" if gpu_idle_s is not None else ""
    note = (f"wall_s{idle} include{'s' if not idle else ''} the profiler's and the op trace's host overhead"
            + (", which widens the gaps between kernels" if idle else ""))
    if wall_uninstrumented_s is not None:
        note += "; wall_uninstrumented_s is a plain call (warm-up)"
    return Note(INSTRUMENTED, note)


def compiled_code(modules: Sequence[tuple[str, str | None]], launches: Sequence[str | None],
                  failed: Sequence[tuple[str | None, str]], kept: set[str] | None) -> CompiledCode | None:
    """The summary's `compiled` from the compiled modules run and the Triton launches, each with its region
    (`failed`: those left unattributed, with why), of the regions `kept` (None: all); None when none ran."""
    runs = dict(Counter(name for name, r in modules if kept is None or r in kept))
    count = sum(1 for r in launches if kept is None or r in kept)
    why = Counter(reason for r, reason in failed if kept is None or r in kept)
    if not runs and not count:
        return None
    return CompiledCode(runs, count, dict(why))


def compiled_notes(code: CompiledCode | None, timed: bool, on_gpu: bool) -> list[Note]:
    """What the profile says of torch.compile'd code: the Triton launches left unattributed, and compiled code
    that ran eager (analytic) or on the CPU."""
    if code is None:
        return []
    notes = []
    why = Counter(code.unattributed_launches)
    if why:
        reasons = "; ".join(f"{n}: {r}" for r, n in why.most_common())
        notes.append(Note(COMPILED_UNATTRIBUTED, f"{sum(why.values())} of {code.triton_launches} Triton launches of "
                          f"compiled code are not attributed to aten ops ({reasons}): listed as unattributed kernels"))
    if code.modules and not timed:
        notes.append(Note(COMPILED_EAGER, "compiled code ran eager in the analytic run (no data to run compiled "
                          "kernels on): the records are the unfused aten ops; profile it timed on a GPU to see the "
                          "fused kernels"))
    elif code.modules and not on_gpu:
        notes.append(Note(COMPILED_CPU, "compiled code ran on the CPU: its generated C++ kernels are neither timed "
                          "nor counted (only the aten ops it still calls, such as mm): profile it on a GPU, or "
                          "uncompiled"))
    return notes


def _regions(run: Run) -> dict[str, RegionSummary]:
    """Each region kept: entries, calls, kernel time and walls (timed), model FLOPs, minimum bytes and their
    utilization."""
    timed = run.timeline is not None
    by_region = group_totals(run.calls, run.records, lambda p: p.call.region, timed)
    out = {}
    for name in sorted(run.regions or ()):
        mine = [p for p in run.calls if p.call.region == name]
        t = by_region.get(name, {})
        time_s = sum(p.time_s or 0.0 for p in mine) if timed else None
        min_bytes = t.get("min_bytes", 0.0)
        out[name] = RegionSummary(
            run.entries[name], len(mine), time_s, sum(run.entry_walls[name]) if timed else None,
            tuple(run.entry_walls[name]) if timed else None, t.get("model_flops", 0.0), min_bytes,
            utilization(t.get("model_flops_by_pipe", {}), min_bytes, {
                "kernel": time_s, "predicted": None if timed else t.get("roofline_time_s")}, run.roofs))
    return out


def _gpu(run: Run, kernel_time_s: float | None, wall_s: float | None,
         regions: bool) -> tuple[float | None, float | None, float | None, float | None]:
    """(busy, span, idle, idle of a plain call) on a GPU: over the regions' entries when the program marked
    regions; None each off a GPU."""
    t = run.timeline
    if t is None or not (run.target.time_device or "").startswith("cuda"):
        return None, None, None, None
    plain = max(0.0, run.wall_plain_s - t.busy_s) if run.wall_plain_s is not None else None
    if regions:  # (the warm-up, compilation and the model's build ran outside them)
        return kernel_time_s, None, max(0.0, (wall_s or 0.0) - (kernel_time_s or 0.0)), plain
    return t.busy_s, t.span_s, t.idle_s, plain


def profile_summary(run: Run) -> ProfileSummary:
    """The summary of `run` (module docstring), without its prediction and phases_s (the profile adds them)."""
    timeline, target, regions = run.timeline, run.target, run.regions
    timed = timeline is not None
    on_gpu = bool(timed and (target.time_device or "").startswith("cuda"))
    sums = summarise(list(run.calls), timeline, regions)
    without = tuple(OpWithoutFormula(**m) for m in sums.pop("without_formula"))
    unattributed = tuple(UnattributedKernel(**u) for u in sums.pop("unattributed"))
    roofline_s = roofline_total(list(run.records))
    coverage = lower = None
    if not timed:  # no time measured: what the prediction covers, and whether it is a lower bound
        coverage = AnalyticCoverage(**analytic_coverage(run.calls, run.records, target.ceilings.dram_bytes_per_s))
        lower = (coverage.time or 1.0) < LOWER_BOUND_COVERAGE
    kept = _regions(run)
    wall_s = run.wall_s if timed else None
    if timed and regions:  # regions kept: the wall over their entries, not the whole run
        wall_s = sum(r.wall_s or 0.0 for r in kept.values())
    busy, span, idle, idle_plain = _gpu(run, sums["kernel_time_s"], wall_s, bool(regions))
    totals = step_totals(run.calls, run.records)
    step_use = utilization(totals["model_flops_by_pipe"], totals["min_bytes"], {
        "kernel": sums["kernel_time_s"], "wall": run.wall_plain_s if not regions else None,
        "predicted": None if timed else roofline_s}, run.roofs, run.tokens)
    s = ProfileSummary(
        run.name, "timed" if timed else "analytic", target.time_device, timeline.method if timeline else None,
        wall_s, run.wall_plain_s, **sums, without_formula=without, unattributed=unattributed,
        roofline_time_s=roofline_s, analytic_coverage=coverage, lower_bound=lower, gpu_busy_s=busy,
        gpu_span_s=span, gpu_idle_s=idle, gpu_idle_uninstrumented_s=idle_plain, records=len(run.records),
        build_calls=run.built, skipped=sum(run.skipped.values()), skipped_ops=dict(sorted(run.skipped.items())),
        regions=kept, module_root=run.root, **totals,
        phases={k: GroupTotals(**v) for k, v in group_totals(run.calls, run.records, lambda p: p.call.phase,
                                                              timed).items()},
        utilization=step_use, dataflow=tuple(tuple(row) for row in record_edges(list(run.calls), list(run.edges))),
        communication=communication(run.calls, run.records, sums["kernel_time_s"], roofline_s, timed, unattributed),
        compiled=run.compiled,
        graph_replay_time_s=timeline.graph_s if timeline is not None and timeline.graph_s > 0 else None,
        trace_reads_time_s=timeline.reading_s if timeline is not None and timeline.reading_s > 0 else None)
    return s.with_notes(*summary_notes(s, run, on_gpu))


def summary_notes(s: ProfileSummary, run: Run, on_gpu: bool) -> list[str]:
    """The summary's notes, in order: the target's, then the profile's own (each with its code)."""
    timeline = run.timeline
    notes: list[str] = [*run.target.messages]
    if timeline is not None:
        notes.append(instrumented_note(s.wall_uninstrumented_s, s.gpu_idle_s))
    if s.attention_masked_calls:
        notes.append(Note(MASKED_ATTENTION, f"{s.attention_masked_calls} attention call(s) took a mask tensor whose "
                          "values were not read (no data, not built by Hugging Face's masking_utils from tensors "
                          "with data): every score counted (a causal mask keeps about half)"))
    if run.built:
        notes.append(Note(BUILD_CALLS, f"{run.built} calls of the model's build (before its first forward: "
                          "initialisers, constants) left out; run the build inside roofline.region(...) to keep them"))
    notes += compiled_notes(run.compiled, timeline is not None, on_gpu)
    notes += s.utilization.refused if s.utilization is not None else ()
    routed = run.stood_in.get("routing", 0)
    if routed:
        notes.append(Note(ROUTING, f"{routed} router choice(s) without data (topk, argmax) took the assumed routing "
                          "(roofline.capture.formulas_models.ROUTING): an eager MoE's experts each get their share"))
    scalars = {phase: n for phase, n in run.stood_in.items() if phase != "routing"}
    if scalars:
        said = ", ".join(f"{n} {phase}" for phase, n in sorted(scalars.items()))
        notes.append(Note(STAND_INS, f"scalar reads without data ({said}) read as stand-ins: 1 inside an optimizer "
                          "step (its step count), 0 after the backward (a GradScaler's found-inf) and during the "
                          "model's build (an initialiser's check): FLOPs and bytes do not depend on them"))
    if timeline is None:
        return notes
    if timeline.graph_s > 0:
        share = timeline.graph_s / s.kernel_time_s if s.kernel_time_s else None
        notes.append(Note(GRAPH_REPLAY, f"{timeline.graph_s * 1e3:.3g} ms of kernels ({percent(share)} of the kernel "
                          "time) ran in CUDA graph replays (torch.compile mode='reduce-overhead', or a graph the "
                          "program captured): their ops were captured before the profile, so no op owns them and "
                          "they are listed as unattributed; profile the step without graphs (mode='default') to "
                          "attribute them"))
    if timeline.reading_s > 0:
        notes.append(Note(TRACE_READS, f"{timeline.reading_s * 1e6:.3g} µs of kernels the trace ran reading mask and "
                          "offset values (to count what a mask keeps) are left out of the kernel time"))
    if timeline.overcount_s > 0:
        notes.append(Note(OVERCOUNT, f"{timeline.overcount_s * 1e6:.3g} µs more kernel time was attributed to ops "
                          "than the device ran: some kernels were counted twice (a profiler event of a kind this "
                          "tool does not know); the ops' times are that much high"))
    if (note := host_bound_note(s)) is not None and on_gpu:
        notes.append(note)
    if on_gpu and run.calls and not s.kernel_time_s:
        notes.append(Note(NO_KERNELS, f"no device kernel ran on {run.target.time_device}: if the program runs on the "
                          "CPU, profile it with device='cpu'"))
    return notes


def host_bound_note(s: ProfileSummary) -> Note | None:
    """The note of a host-bound step (HOST_BOUND_SHARE): how long the GPU sat idle and of what wall, the run without
    the profiler where it was measured."""
    plain = s.wall_uninstrumented_s is not None and s.gpu_idle_uninstrumented_s is not None
    wall, idle = (s.wall_uninstrumented_s, s.gpu_idle_uninstrumented_s) if plain else (s.wall_s, s.gpu_idle_s)
    if not wall or idle is None or idle / wall <= HOST_BOUND_SHARE:
        return None
    return Note(HOST_BOUND, f"host-bound: the GPU sat idle {percent(idle / wall)} of the step ({idle * 1e3:.3g} of "
                f"{wall * 1e3:.3g} ms{' without the profiler' if plain else ''}); Python, launches and "
                "synchronisations set its time, not its kernels (their sum, and its prediction, say little of it)")
