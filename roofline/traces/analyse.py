"""One rank's trace on the roofline: the records, summary and results document `roofline profile` makes, from a
trace instead of a run (traces/calls.py gives the calls; capture/records.py, capture/profile_summary.py and the
predictor do the rest, as for a profile).

The roof: `gpu` (a spec name) when given, else the spec of the device the trace names (its deviceProperties),
else, for a trace without device work (a CPU program's), this machine's CPU roof (as `roofline profile` on the
CPU places ops). Predicted times: the operator database `db`, else the GPU's own (analysis/predict.py
`predictor_for(..., in_sequence=True)`, as a profile's). The summary says, each with a code (TRACE_NOTES), what the
trace could not give: shapes (time only), outputs of ops without a meta kernel, a tensor list's dtype, which
tensors were the same (no dataflow, no minimum step bytes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from roofline.analysis.predict import predicted, predictor_for
from roofline.analysis.predict_step import step_prediction
from roofline.analysis.utilization import utilization
from roofline.capture.profile_summary import Run, profile_summary
from roofline.capture.records import build_records
from roofline.ceilings.opdb import WARM
from roofline.ceilings.specs import GPUSpec, as_spec, gpu_ceilings, match_nvml_name
from roofline.core.document import Document
from roofline.core.errors import UsageError
from roofline.core.model import Ceilings
from roofline.core.notes import Note
from roofline.core.record import Record, ceilings_dict
from roofline.core.summary import ProfileSummary
from roofline.measuring.target import Target, command_line
from roofline.traces.calls import TraceCalls, trace_calls
from roofline.traces.model import US, RankTrace

NO_SHAPES = "trace.no_shapes"  # recorded without shapes: time only
NOT_REBUILT = "trace.not_rebuilt"  # ops whose outputs no meta kernel gave
LIST_DTYPE = "trace.list_dtype"  # tensor lists' dtype assumed
NO_DATAFLOW = "trace.no_dataflow"  # no tensor identities: no dataflow, no minimum step bytes
UNKNOWN_OPS = "trace.unknown_ops"  # ops torch does not know: timed, not counted
CPU_ROOF = "trace.cpu_roof"  # a CPU trace placed on this machine's CPU roof
COMPILED = "trace.compiled"  # torch.compile'd Triton launches: what placed them, what was not placed and why
GRAPH_LINKED = "trace.graph_linked"  # CUDA graph replays' kernels tied to the ops that captured them
TRACE_NOTES = (NO_SHAPES, NOT_REBUILT, LIST_DTYPE, NO_DATAFLOW, UNKNOWN_OPS, CPU_ROOF, COMPILED, GRAPH_LINKED)


@dataclass
class RankAnalysis:
    """One rank's trace analysed: its calls, records, summary and results document."""

    trace: RankTrace
    calls: TraceCalls
    records: list[Record]
    summary: ProfileSummary
    target: Target

    def document(self, extra: dict[str, Any] | None = None) -> Document:
        device = {**self.target.device_info, "ceilings": ceilings_dict(self.target.ceilings)}
        return Document(device=device, records=list(self.records),
                        extra={"command": command_line(), "profile": self.summary.to_dict(), **(extra or {})})


def target_of(trace: RankTrace, gpu: str | None, on_gpu: bool) -> Target:
    """The roof the trace is placed on (module docstring)."""
    if not on_gpu:
        if gpu is not None:
            raise UsageError(f"--gpu {gpu}: {trace.path} ran no device kernel (a CPU program's trace): its ops are "
                             "placed on this machine's CPU roof; leave --gpu out")
        from roofline.measuring.calibrate import cpu_ceilings
        from roofline.measuring.device import cpu_description

        said: list[str] = []
        ceilings = cpu_ceilings(said)
        return Target(ceilings, "cpu", cpu_description(), messages=[Note(CPU_ROOF, "a CPU trace: its ops are placed "
                      "on this machine's CPU roof (the trace's own machine may differ)")])
    spec = _spec(trace, gpu)
    name = trace.devices[0] if trace.devices else spec.name
    info = {"kind": "gpu", "name": name, "spec_id": spec.id, "spec_name": spec.name}
    return Target(gpu_ceilings(spec), "cuda:0", info, spec=spec)


def _spec(trace: RankTrace, gpu: str | None) -> GPUSpec:
    if gpu is not None:
        return as_spec(gpu)
    names = {d for d in trace.devices if d}
    if not names:
        raise UsageError(f"{trace.path}: the trace names no device (no deviceProperties): pass --gpu SPEC")
    spec = match_nvml_name(sorted(names)[0])
    if spec is None:
        raise UsageError(f"{trace.path}: no spec for the trace's '{sorted(names)[0]}': pass --gpu SPEC "
                         "(`roofline specs list`)")
    return spec


def analyse(trace: RankTrace, gpu: str | None = None, db: str | os.PathLike[str] | None = None, name: str | None = None,
            target: Target | None = None) -> RankAnalysis:
    """The rank's records, summary and document (module docstring); `target`: a roof chosen already (the
    other ranks')."""
    tc = trace_calls(trace)
    target = target or target_of(trace, gpu, tc.on_gpu)
    predictor = predictor_for(target.ceilings.device_id, db, WARM, in_sequence=True)
    records = build_records(tc.calls, target.ceilings, tc.timeline.method)
    records = predicted(records, predictor)
    roofs: dict[str, Ceilings | None] = ({"datasheet": None, "measured": target.ceilings} if target.is_cpu else
                                         {"datasheet": target.ceilings, "measured": None})
    wall = _wall_s(trace)
    run = Run(name or Path(trace.path).name, target, tc.timeline, tc.calls, [], records, None, {}, {}, wall, None,
              tc.root, 0, dict(tc.skipped), {}, roofs, None, None)
    summary = profile_summary(run)
    # no tensor identities in a trace: the step's minimum bytes (and MBU) are not known
    summary = replace(summary, min_bytes=None, utilization=utilization(
        summary.model_flops_by_pipe, 0.0, {"kernel": summary.kernel_time_s}, roofs))
    measured = summary.kernel_time_s
    summary = replace(summary, prediction=step_prediction(records, predictor, measured or None))
    return RankAnalysis(trace, tc, records, summary.with_notes(*_notes(trace, tc)), target)


def _wall_s(trace: RankTrace) -> float | None:
    """The traced steps' wall (their ProfilerStep ranges), else the span of the trace's ops and kernels."""
    if trace.steps:
        return sum(s.dur for s in trace.steps) * US
    span = trace.span_us
    return (span[1] - span[0]) * US if span else None


def _notes(trace: RankTrace, tc: TraceCalls) -> list[Note]:
    notes = [Note(NO_DATAFLOW, "a trace names no tensors: no dataflow between ops, and the step's minimum bytes "
                  "(and MBU) are not known")]
    if not trace.shapes:
        notes.append(Note(NO_SHAPES, "the trace has no input shapes (profile with record_shapes=True): time only, "
                          "no FLOPs or bytes"))
    if tc.not_rebuilt:
        said = ", ".join(f"{op} x{n}" for op, n in tc.not_rebuilt.most_common(5))
        notes.append(Note(NOT_REBUILT, f"{sum(tc.not_rebuilt.values())} calls' outputs could not be rebuilt from "
                          f"their inputs ({said}): their bytes leave the outputs out"))
    if tc.list_dtype:
        notes.append(Note(LIST_DTYPE, f"the profiler writes no dtype for tensor lists (cat, stack, foreach ops, "
                          f"collectives without record_param_comms): taken as {tc.list_dtype}, the trace's most "
                          "common"))
    if tc.replayed_s > 0:
        notes.append(Note(GRAPH_LINKED, f"{tc.replayed_s * 1e3:.3g} ms of CUDA graph replays' kernels tied to the ops "
                          "that captured them (the trace holds the capture): each replay counted as a call of those "
                          "ops, the capture itself not"))
    if tc.compiled_by or tc.compiled_unplaced:
        notes.append(_compiled_note(tc))
    if tc.unknown_ops:
        said = ", ".join(f"{op} x{n}" for op, n in tc.unknown_ops.most_common(5))
        notes.append(Note(UNKNOWN_OPS, f"ops torch does not know here ({said}): timed, not counted"))
    return notes


def _compiled_note(tc: TraceCalls) -> Note:
    """How the torch.compile'd Triton launches were placed (traces/compiled.py), each launch counted once."""
    from roofline.traces.compiled import PLACED_BY

    total = sum(tc.compiled_by.values()) + sum(tc.compiled_unplaced.values())
    parts = [f"{tc.compiled_by[by]} by {text}" for by, text in PLACED_BY.items() if tc.compiled_by[by]]
    parts += [f"{n} not placed ({why}: their kernels listed unattributed, with their time)"
              for why, n in tc.compiled_unplaced.most_common()]
    return Note(COMPILED, f"{total} torch.compile'd Triton launches: " + "; ".join(parts))
