"""Counters for a profile (`roofline profile SCRIPT --counters`): the profiled stretch run once more under
Nsight Compute (`ncu.target_profile`), each op record given the counters of its kernels (docs/counters.md,
"`profile --counters`").

After the timed profile, the same script runs in a child process under
`ncu --profile-from-start off --clock-control none --print-units base --nvtx --metrics ... --csv --page raw
python -m roofline.ncu.target_profile PLAN.json`. The child profiles the LAST entry of each region the
profile kept (the script's steady state: warm-up, autotuning and lazy allocation done before it), or the whole
run when the script marks no region; each kernel is profiled once (one replay pass set). ncu's kernels are
joined to the profile's by position in launch order, each pair checked by name (`ncu.join`): a count or
name mismatch leaves every record without counters and says why in the summary's notes, never a wrong join.
Each record's counters are per call (its calls in that entry summed, divided by their number), derived
against its own FLOPs and minimum bytes (`core.counters.with_counters`), and its advice redone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from roofline.capture.profile import Profile
from roofline.core.counters import with_counters
from roofline.core.files import atomic_write
from roofline.core.notes import Note
from roofline.core.progress import QUIET, Reporter
from roofline.core.summary import CountersSummary
from roofline.ncu.join import JoinError, Launches, is_copy, record_counters
from roofline.ncu.read_csv import NcuKernel
from roofline.ncu.run import kernels_from_output, run_program
from roofline.ncu.target_profile import PROGRAM, WHOLE_RUN, write_plan

# The codes of the notes `--counters` adds to the summary (core/notes.py).
LEFT_OFF = "counters.left_off"  # the join failed: no record has counters
OUTSIDE = "counters.outside"  # records whose kernels ran only outside the profiled entries
JOINED = "counters.joined"  # what was profiled and joined
NO_KERNEL = "counters.no_kernel"  # nothing for ncu to profile


def chosen_entries(prof: Profile) -> dict[str, int] | None:
    """The 0-based entry profiled per region kept by the profile (each one's last), or None: the whole run."""
    kept = sorted(prof.summary.regions)
    if not kept:
        return WHOLE_RUN
    return {name: len(prof.region_spans[name]) - 1 for name in kept if prof.region_spans.get(name)}


def launches(prof: Profile, entries: dict[str, int] | None) -> list[Launches]:
    """The profile's op calls in the chosen entries, in call order, each with its kernels and record."""
    if entries is WHOLE_RUN:
        calls = list(prof.calls)
    else:
        spans = {name: prof.region_spans[name][i] for name, i in entries.items()}
        calls = [p for p in prof.calls if p.call.region in spans
                 and spans[p.call.region][0] <= p.call.index < spans[p.call.region][1]]
    calls.sort(key=lambda p: p.call.index)
    return [Launches(p.record, tuple(name for name, _ in p.kernels)) for p in calls]


def _where(entries: dict[str, int] | None, prof: Profile) -> str:
    if entries is WHOLE_RUN:
        return "the whole run"
    return ", ".join(f"region {name!r} (entry {i + 1} of {len(prof.region_spans[name])})"
                     for name, i in entries.items())


def profile_kernels(prof: Profile, script: Path, args: Sequence[str], entries: dict[str, int] | None, ncu: str,
                    expected: int, reporter: Reporter = QUIET, keep_csv: Path | None = None,
                    force: bool = False) -> list[NcuKernel]:
    """ncu's kernels of the chosen stretch of `script` (one child run); its raw CSV kept at `keep_csv`, created
    exclusively unless `force` (--force), as every output file (core.files.atomic_write): of two runs racing to one
    name one keeps its CSV and the other is refused in one line, never both told it was written."""
    gpu_name = str((prof.target.device_info.get("name") if prof.target else "") or "")
    got = run_program(PROGRAM, lambda plan: write_plan(script.resolve(), list(args), entries, plan),
                      f"running {script.name} again, profiling {expected} kernels of {_where(entries, prof)} "
                      "once each", ncu, gpu_name, reporter)
    if keep_csv is not None:
        atomic_write(keep_csv, got.stdout, exclusive=not force)
    return kernels_from_output(got.stdout, got.stderr, got.returncode)


def attach(prof: Profile, kernels: Sequence[NcuKernel], entries: dict[str, int] | None, source: str) -> None:
    """Each record of `prof` with the counters of its kernels in the chosen entries (advice redone); on a join
    mismatch none, and a note saying why. The summary's `counters` says what was profiled and joined."""
    from roofline.analysis.advice import with_advice

    calls = launches(prof, entries)
    where = _where(entries, prof)
    try:
        found = record_counters(calls, kernels, source)
    except JoinError as exc:
        outside = sum(u.launches or 0 for u in prof.summary.unattributed if not is_copy(str(u.kernel or "")))
        why = f"; {outside} kernel launch(es) ran outside any recorded op" if outside else ""
        prof.summary = replace(prof.summary.with_notes(Note(LEFT_OFF, f"counters left off: {exc} in {where}{why}")),
                               counters=CountersSummary(source, where, len(kernels), 0, str(exc)))
        return
    spec = prof.target.spec if prof.target else None
    for r, c in found.items():
        prof.records[r] = with_advice(with_counters(prof.records[r], c), spec)
    timed_without = sum(1 for i, rec in enumerate(prof.records)
                        if i not in found and any(not is_copy(k) for k in rec.kernels or []))
    notes = [Note(OUTSIDE, f"{timed_without} record(s) launched kernels only outside {where}: no counters")
             ] if timed_without else []
    notes.append(Note(JOINED, f"counters: {len(kernels)} kernels of {where} under Nsight Compute, per call"))
    prof.summary = replace(prof.summary.with_notes(*notes),
                           counters=CountersSummary(source, where, len(kernels), len(found)))


def add_counters(prof: Profile, script: Path, args: Sequence[str], ncu: str, reporter: Reporter = QUIET,
                 keep_csv: Path | None = None, force: bool = False) -> Profile:
    """`profile --counters` after the timed profile: run ncu on the chosen stretch and attach (module
    docstring); ncu's CSV kept at `keep_csv` (replacing a file there only when `force`)."""
    entries = chosen_entries(prof)
    expected = sum(1 for c in launches(prof, entries) for k in c.kernels if not is_copy(k))
    if not expected:  # nothing for ncu to profile (ncu would print no CSV at all)
        where = _where(entries, prof)
        prof.summary = replace(prof.summary.with_notes(Note(NO_KERNEL, f"counters: no kernel ran in {where}")),
                               counters=CountersSummary(f"ncu ({ncu})", where, 0, 0))
        return prof
    kernels = profile_kernels(prof, script, args, entries, ncu, expected, reporter, keep_csv, force)
    attach(prof, kernels, entries, f"ncu ({ncu})")
    return prof

