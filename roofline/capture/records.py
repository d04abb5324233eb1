"""From recorded calls to records: costs and bytes per call, aggregation, placement on the roofs, the
dataflow between calls and the profile's summary.

One record per (region, module, aten op, input shapes and dtypes, output shapes, FLOPs and bytes), with
`count` calls aggregated: FLOPs, bytes and times stay per call (time_s = the mean device time of a call,
time_samples_s = every call's), as in every other record. An op without a FLOP formula keeps flops, bytes and
roofline time null (listed with its time, never counted as 0). Records come in program order (first call).
A torch.distributed collective's record is the collective on the interconnect (capture/comm.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from roofline.capture.comm import Comm, collective_of, link_traffic, on_interconnect, with_bandwidth
from roofline.capture.cost import cost_of
from roofline.capture.kernels import Timeline
from roofline.capture.registry import Cost
from roofline.capture.trace import OpCall
from roofline.capture.traffic import Traffic, compute_dtype, traffic
from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import UsageError
from roofline.core.model import Ceilings
from roofline.core.record import Record, Timing, canonical_params, evolve, placed_record, with_time

PLACEHOLDER_FP32 = "fp32"  # the roof an op is placed on when the device lists no rate for its dtype


@dataclass
class ProfiledCall:
    """One op call with its count, its bytes and (when timed) its device time."""

    call: OpCall
    cost: Cost
    traffic: Traffic
    dtype: str
    time_s: float | None = None
    kernels: tuple[tuple[str, float], ...] = ()
    record: int = -1  # index of its record in Profile.records
    comm: Comm | None = None  # the collective it runs (torch.distributed)

    @property
    def has_formula(self) -> bool:
        return self.cost.flops is not None


@dataclass(frozen=True)
class Edge:
    """A tensor one call writes and a later call reads (views see through to the storage): the traffic a
    fusion of the two would keep on chip."""

    producer: int  # call index
    consumer: int
    bytes: float  # bytes the consumer reads of the producer's output


def profiled_calls(calls: list[OpCall], timeline: Timeline | None, tf32_matmul: bool = False,
                   tf32_conv: bool = False) -> list[ProfiledCall]:
    out = []
    for call in calls:
        cost = cost_of(call)
        t = timeline.calls.get(call.index) if timeline else None
        out.append(ProfiledCall(call, cost, traffic(call, cost), compute_dtype(call, cost, tf32_matmul, tf32_conv),
                                (t.time_s if t else 0.0) if timeline else None, tuple(t.kernels) if t else (),
                                comm=collective_of(call)))
    return out


def dataflow(items: list[ProfiledCall]) -> list[Edge]:
    """Producer -> consumer edges, in program order: each storage's last writer feeds its next readers."""
    writer: dict[int, int] = {}
    edges: list[Edge] = []
    for p in items:
        for key, nbytes in p.traffic.reads:
            src = writer.get(key)
            if src is not None and src != p.call.index and nbytes:
                edges.append(Edge(src, p.call.index, nbytes))
        for key, _ in p.traffic.writes:
            writer[key] = p.call.index
    return edges


def _dtype(name: str, itemsize: float = 4.0) -> DType:
    """The catalog's DType, or a plain-pipe stand-in for dtypes it does not model (int64, bool)."""
    try:
        return get_dtype(name)
    except UsageError:
        return DType(name, itemsize, None, "fp32_dense_tflops", name, is_float=False)


def _place(p: ProfiledCall, ceilings: Ceilings) -> Record:
    """The call's FLOPs and bytes on the device's roofs (null ones when it has no formula)."""
    op = p.cost.catalog
    flops = p.cost.flops if p.cost.flops is not None else 0.0
    read, written, by_kind = link_traffic(p.comm) or (p.traffic.bytes_read, p.traffic.bytes_written,
                                                      dict(p.traffic.by_kind))
    kw: dict[str, Any] = dict(
        op=p.call.op, variant=op.variant_name() if op else None, params=op.params() if op else {},
        flops=flops, bytes_read=read, bytes_written=written, ceilings=ceilings,
        uses_tensor_cores=p.cost.tensor_cores, bytes_by_kind=by_kind or None,
        model_note=p.cost.note, extra_flops=p.cost.extra_flops, family=op.family if op else None)
    try:
        rec = placed_record(dtype=_dtype(p.dtype), **kw)
    except UsageError:  # the device has no rate for this dtype (int64 on a CPU, fp8 without fp8 units)
        rec = placed_record(dtype=get_dtype(PLACEHOLDER_FP32), **kw)
        rec = evolve(rec, dtype=p.dtype, notes=[*rec.notes, f"placed on the {PLACEHOLDER_FP32} roof: "
                                  f"{ceilings.device_name} lists no {p.dtype} rate"])
    if p.cost.flops is None:
        rec = evolve(rec, flops=None, bytes_read=None, bytes_written=None, bytes=None,
                                  bytes_by_kind=None, arithmetic_intensity=None, bound=None,
                                  attainable_flops_per_s=None, roofline_time_s=None)
    return on_interconnect(p.comm, p.cost.catalog, rec)


def _key(p: ProfiledCall) -> tuple[Any, ...]:
    c = p.call
    op = p.cost.catalog
    return (c.region, c.phase, c.module, c.op, tuple(t.shape for t in c.inputs), tuple(t.dtype for t in c.inputs),
            tuple(t.strides for t in c.inputs), tuple(t.shape for t in c.outputs),
            tuple(t.strides for t in c.outputs), p.cost.flops, p.traffic.bytes_read, p.traffic.bytes_written,
            canonical_params(op.params()) if op else "", p.dtype)


def build_records(items: list[ProfiledCall], ceilings: Ceilings, timing_method: str | None) -> list[Record]:
    """Aggregate calls into records (module docstring); sets each call's `record` index."""
    groups: dict[tuple[Any, ...], list[ProfiledCall]] = {}
    for p in items:
        groups.setdefault(_key(p), []).append(p)
    records = []
    for i, group in enumerate(groups.values()):
        for p in group:
            p.record = i
        records.append(_record(group, ceilings, timing_method))
    return records


def _record(group: list[ProfiledCall], ceilings: Ceilings, timing_method: str | None) -> Record:
    first = group[0]
    c = first.call
    rec = evolve(
        _place(first, ceilings), module=c.module, region=c.region, phase=c.phase, count=len(group),
        input_shapes=[list(t.shape) for t in c.inputs], input_dtypes=[t.dtype for t in c.inputs],
        input_strides=[list(t.strides) for t in c.inputs],
        output_shapes=[list(t.shape) for t in c.outputs], output_dtypes=[t.dtype for t in c.outputs],
        output_strides=[list(t.strides) for t in c.outputs],
        flops_source=first.cost.source)
    if timing_method is not None:
        rec = _timed(rec, group, timing_method)
    return rec if first.comm is None else with_bandwidth(first.comm, rec)


def _timed(rec: Record, group: list[ProfiledCall], timing_method: str) -> Record:
    """The record with its calls' device times: mean per call, every call's time, kernels per call."""
    samples = [p.time_s or 0.0 for p in group]
    mean = sum(samples) / len(samples)
    kernel_total: dict[str, float] = defaultdict(float)
    for p in group:
        for name, t in p.kernels:
            kernel_total[name] += t
    notes = list(rec.notes)
    if mean <= 0:
        notes.append("launched no device kernel")
    timing = Timing(method=timing_method, reps=len(group),
                    stats={"mean": mean, "min": min(samples), "max": max(samples)} if mean > 0 else None)
    rec = evolve(
        rec, timing=timing, notes=notes, kernels=list(kernel_total) or None,
        kernel_times_s=[t / len(group) for t in kernel_total.values()] or None,
        time_samples_s=samples if all(s > 0 for s in samples) else None)
    if mean > 0:
        rec = evolve(rec, time_s=mean) if rec.flops is None else with_time(rec, mean)
    return rec


def record_edges(items: list[ProfiledCall], edges: list[Edge]) -> list[list[float]]:
    """The dataflow between records: [producer record, consumer record, bytes per edge, edges], compact for
    the document (a layer run twice gives one row with count 2)."""
    by_index = {p.call.index: p.record for p in items}
    rows: dict[tuple[int, int, float], int] = defaultdict(int)
    for e in edges:
        if e.producer in by_index and e.consumer in by_index:
            rows[(by_index[e.producer], by_index[e.consumer], e.bytes)] += 1
    return [[p, c, b, n] for (p, c, b), n in sorted(rows.items())]


def summarise(items: list[ProfiledCall], timeline: Timeline | None, regions: set[str] | None) -> dict[str, Any]:
    """Totals over calls (sums over calls, not over records), time split and coverage. With `regions`
    (the regions the program marked), unattributed kernels outside them are left out as their calls are."""
    covered = [p for p in items if p.has_formula]
    out: dict[str, Any] = {
        "calls": len(items),
        "flops": sum(p.cost.flops or 0.0 for p in covered),
        "flops_matmul": sum(p.cost.matmul_flops for p in covered),
        "extra_flops": sum(p.cost.extra_flops for p in covered),  # tensor-core ops' elementwise part, on no roof
        "bytes": sum(p.traffic.bytes_read + p.traffic.bytes_written for p in covered),
        "calls_without_formula": len(items) - len(covered),
        "attention_masked_calls": sum(1 for p in items if p.cost.explicit_mask),
        # work kernels given a mask tensor spent on the scores it masks (a mask read from its values; not in flops)
        "attention_masked_flops": sum(p.cost.masked_flops for p in items),
    }
    missing: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for p in items:
        if not p.has_formula:
            missing[p.call.op][0] += 1
            missing[p.call.op][1] += p.time_s or 0.0
    out["without_formula"] = [{"op": op, "calls": int(n), "time_s": t if timeline else None}
                              for op, (n, t) in sorted(missing.items(), key=lambda kv: (-kv[1][1], kv[0]))]
    if timeline is None:
        out.update(kernel_time_s=None, attributed_time_s=None, unattributed_time_s=None, coverage=None,
                   unattributed=[])
        return out
    unattributed: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for name, t, region in timeline.unattributed:
        if regions is None or region in regions:
            unattributed[name][0] += 1
            unattributed[name][1] += t
    attributed = sum(p.time_s or 0.0 for p in items)
    unattr = sum(t for _, t in unattributed.values())
    total = attributed + unattr
    out.update(
        kernel_time_s=total, attributed_time_s=attributed, unattributed_time_s=unattr,
        coverage=sum(p.time_s or 0.0 for p in covered) / total if total > 0 else None,
        unattributed=[{"kernel": k, "launches": int(n), "time_s": t}
                      for k, (n, t) in sorted(unattributed.items(), key=lambda kv: -kv[1][1])])
    return out


def step_totals(items: Sequence[ProfiledCall], records: Sequence[Record]) -> dict[str, Any]:
    """What MFU and MBU are computed from (analysis/utilization.py), over calls: `model_flops` (the FLOPs of
    the matrix products, convolutions and attention as the records count them: causal and sliding-window
    attention as the scores the mask leaves, grouped-query attention with its real heads), `model_flops_by_pipe`
    (the same by the compute pipe their records are placed on, so each is divided by its own peak), and
    `min_bytes` (step_min_bytes)."""
    by_pipe: dict[str, float] = defaultdict(float)
    for p in items:
        if p.cost.tensor_cores and p.cost.flops and p.record >= 0:
            by_pipe[records[p.record].compute_pipe or "?"] += p.cost.flops
    return {"model_flops": sum(by_pipe.values()), "model_flops_by_pipe": dict(sorted(by_pipe.items())),
            "min_bytes": step_min_bytes(items)}


def step_min_bytes(items: Sequence[ProfiledCall]) -> float:
    """The bytes a step must move even as one fused kernel: each storage it reads that it did not make (the
    weights, a KV cache, the inputs) once, each storage it did not make that it writes (an in-place cache or
    weight update) once, and what it makes that none of its later calls reads (its outputs).
    NB: what it makes and reads again (activations, gradients) is taken as kept on chip, which no real step does."""
    made: dict[int, float] = {}
    consumed: set[int] = set()
    outside_read: dict[int, float] = {}
    outside_written: dict[int, float] = {}
    for p in items:
        inputs = {t.storage for t in p.call.inputs}
        for key, nbytes in p.traffic.reads:
            if key in made:
                consumed.add(key)
            else:
                outside_read[key] = max(outside_read.get(key, 0.0), nbytes)
        for key, nbytes in p.traffic.writes:
            if key in made:
                made[key] = max(made[key], nbytes)
            elif key in inputs:
                outside_written[key] = max(outside_written.get(key, 0.0), nbytes)
            else:
                made[key] = nbytes
    outputs = sum(b for key, b in made.items() if key not in consumed)
    return float(sum(outside_read.values()) + sum(outside_written.values()) + outputs)


def group_totals(items: Sequence[ProfiledCall], records: Sequence[Record], key: Callable[[ProfiledCall], Any],
                 timed: bool) -> dict[Any, dict[str, Any]]:
    """Calls, FLOPs, bytes, device time and roofline time of the calls grouped by `key` (a phase, a region),
    with each group's step_totals."""
    groups: dict[Any, list[ProfiledCall]] = defaultdict(list)
    for p in items:
        groups[key(p)].append(p)
    out = {}
    for name, ps in groups.items():
        covered = [p for p in ps if p.has_formula]
        out[name] = {"calls": len(ps), "flops": sum(p.cost.flops or 0.0 for p in covered),
                     "bytes": sum(p.traffic.bytes_read + p.traffic.bytes_written for p in covered),
                     "time_s": sum(p.time_s or 0.0 for p in ps) if timed else None,
                     "roofline_time_s": sum(records[p.record].roofline_time_s or 0.0 for p in ps if p.record >= 0),
                     **step_totals(ps, records)}
    return out


def roofline_total(records: list[Record]) -> float:
    """Sum of roofline times over calls: the analytic prediction of the step's time."""
    return sum((r.roofline_time_s or 0.0) * (r.count or 1) for r in records)


def analytic_coverage(items: Sequence[ProfiledCall], records: Sequence[Record],
                      dram_bytes_per_s: float) -> dict[str, Any]:
    """What the predicted time covers (analytic runs, where no time is measured): `time` is the share of the
    predicted time the calls with a formula hold, the calls without one taken at their bytes over the DRAM
    bandwidth (`without_formula_s`, the least they can take); `calls` the share of calls with a formula.
    NB: a call without formula may compute for longer than its bytes take, so `time` is an upper bound."""
    predicted = roofline_total(list(records))
    missing_s = sum((p.traffic.bytes_read + p.traffic.bytes_written) / dram_bytes_per_s
                    for p in items if not p.has_formula) if dram_bytes_per_s > 0 else 0.0
    total = predicted + missing_s
    return {"time": predicted / total if total > 0 else None,
            "calls": sum(1 for p in items if p.has_formula) / len(items) if items else None,
            "without_formula_s": missing_s}
