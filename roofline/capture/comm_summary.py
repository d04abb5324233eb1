"""The profile summary's `communication`: the collectives a profile ran, rolled up by op (capture/comm.py
counts each call)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from roofline.capture.collective_ops import NCCL_KERNEL
from roofline.capture.records import ProfiledCall
from roofline.core.record import Record
from roofline.core.summary import CollectiveOp, Communication, UnattributedKernel


def communication(items: Sequence[ProfiledCall], records: Sequence[Record], kernel_time_s: float | None,
                  roofline_time_s: float | None, timed: bool,
                  unattributed: Sequence[UnattributedKernel] = ()) -> Communication | None:
    """The summary's `communication` (module docstring), from the calls and the summary's `unattributed`
    kernels; None when no collective ran."""
    calls = [p for p in items if p.comm is not None]
    nccl = sum(float(u.time_s or 0.0) for u in unattributed if NCCL_KERNEL in str(u.kernel).lower())
    if not calls and not nccl:
        return None
    groups: dict[str, list[ProfiledCall]] = defaultdict(list)
    for p in calls:
        assert p.comm is not None
        groups[p.comm.op].append(p)
    roof = sum((records[p.record].roofline_time_s or 0.0) for p in calls if p.record >= 0)
    time_s = sum(p.time_s or 0.0 for p in calls) + nccl if timed else None
    by_op = []
    for op, ps in groups.items():
        t = sum(p.time_s or 0.0 for p in ps) if timed else None
        size = sum(p.comm.nbytes for p in ps if p.comm)
        moved = sum(p.comm.busbw_factor * p.comm.nbytes for p in ps if p.comm)
        by_op.append(CollectiveOp(op, len(ps), size, sum(p.comm.link_bytes for p in ps if p.comm), t,
                                  size / t if t else None, moved / t if t else None))
    return Communication(len(calls), tuple(sorted({p.comm.ranks for p in calls if p.comm})),
                         tuple(sorted({p.comm.backend or "?" for p in calls if p.comm})), time_s,
                         nccl if timed else None,
                         time_s / kernel_time_s if time_s is not None and kernel_time_s else None, roof,
                         roof / roofline_time_s if roofline_time_s else None,
                         sum(p.comm.link_bytes for p in calls if p.comm),
                         tuple(sorted(by_op, key=lambda d: (-(d.time_s or 0.0), d.op or ""))))
