"""Collectives a profiled program calls: each torch.distributed collective becomes a record on the interconnect.

Which ops: the c10d ops `dist.all_reduce`, `all_gather_into_tensor`, `reduce_scatter_tensor`,
`all_to_all_single`, `broadcast` (and their list and coalesced forms) dispatch (`c10d::allreduce_`,
`c10d::_allgather_base_`, `c10d::_reduce_scatter_base_`, `c10d::alltoall_base_`, `c10d::broadcast_`, ...), and
the functional collectives DTensor and torch.compile use (`_c10d_functional::all_reduce`, ...). Other
torch.distributed ops (barrier, send/recv, reduce, gather, scatter) stay ops without a formula.

Each call's record (the catalog's model, `roofline.ops.collectives`, as `roofline analyze all_reduce` gives it):
- op: the collective ("all_reduce"); params: `bytes` = S, the size nccl-tests reports (all_gather: the gathered
  output; reduce_scatter: the input; the others: the buffer; a coalesced call: the sum of its tensors), and
  `ranks` = the process group's size;
- bytes_read / bytes_written: what each GPU receives / sends in the ring (busbw factor x S each way); flops:
  the reduction's adds, (n-1)/n x S / element size for all_reduce and reduce_scatter, 0 for the others (the
  catalog's count, so the record equals `analyze`'s, and a collective counts in the coverage);
- placed on the spec's NVLink roof (per direction, x2 since bytes count both ways) where it gives one; on a GPU
  without an NVLink figure, and on the CPU (gloo: no interconnect roof), on the memory roof, with a note;
- timed: its device time (NCCL's kernel; on the CPU the host time to completion), and in `collective` the
  achieved algbw = S / t and busbw = algbw x nccl-tests' factor (ops.collectives.algbw, busbw).
One rank (a world of 1): no link traffic; the record keeps the tensors' bytes on the memory roof, flops 0,
busbw = algbw x 0 by nccl-tests' convention (broadcast: x 1).

The summary's `communication`: calls, time and share of the kernel time (analytic: of the predicted time),
per collective; NCCL kernels no op launched (a collective inside a torch.compile'd graph, say) are added to the
time as `unattributed_time_s`. It is absent from a profile that ran no collective.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torch.utils._pytree import tree_flatten

from roofline.capture.aten import Cost, formula, rule
from roofline.capture.trace import OpCall, TensorMeta
from roofline.ops import make
from roofline.ops.collectives import LINK, algbw, busbw, busbw_factor, reduction_flops

if TYPE_CHECKING:
    from roofline.capture.records import ProfiledCall
    from roofline.core.record import Record

# NCCL's kernels are named ncclKernel_*, ncclDevKernel_* (a kernel of no op whose name holds this is
# communication)
NCCL_KERNEL = "nccl"
OUTPUTS = "(outputs)"  # S is the call's outputs (a functional all_gather's gathered tensor)
# torch op -> (the collective, the argument holding S as nccl-tests defines it, or OUTPUTS)
COLLECTIVES: dict[str, tuple[str, str]] = {
    "c10d::allreduce_": ("all_reduce", "tensors"),
    "c10d::allreduce_coalesced_": ("all_reduce", "tensors"),
    "c10d::broadcast_": ("broadcast", "tensors"),
    "c10d::_allgather_base_": ("all_gather", "output_tensor"),
    "c10d::allgather_": ("all_gather", "output_tensors"),
    "c10d::allgather_coalesced_": ("all_gather", "output_lists"),
    "c10d::allgather_into_tensor_coalesced_": ("all_gather", "outputs"),
    "c10d::_reduce_scatter_base_": ("reduce_scatter", "input_tensor"),
    "c10d::reduce_scatter_": ("reduce_scatter", "input_tensors"),
    "c10d::reduce_scatter_tensor_coalesced_": ("reduce_scatter", "inputs"),
    "c10d::alltoall_base_": ("all_to_all", "input"),
    "c10d::alltoall_": ("all_to_all", "input_tensors"),
    "_c10d_functional::all_reduce": ("all_reduce", "input"),
    "_c10d_functional::all_reduce_": ("all_reduce", "input"),
    "_c10d_functional::all_reduce_coalesced": ("all_reduce", "inputs"),
    "_c10d_functional::all_reduce_coalesced_": ("all_reduce", "inputs"),
    "_c10d_functional::all_gather_into_tensor": ("all_gather", OUTPUTS),
    "_c10d_functional::all_gather_into_tensor_out": ("all_gather", "out"),
    "_c10d_functional::all_gather_into_tensor_coalesced": ("all_gather", OUTPUTS),
    "_c10d_functional::reduce_scatter_tensor": ("reduce_scatter", "input"),
    "_c10d_functional::reduce_scatter_tensor_out": ("reduce_scatter", "input"),
    "_c10d_functional::reduce_scatter_tensor_coalesced": ("reduce_scatter", "inputs"),
    "_c10d_functional::all_to_all_single": ("all_to_all", "input"),
    "_c10d_functional::broadcast": ("broadcast", "input"),
    "_c10d_functional::broadcast_": ("broadcast", "input"),
    # the legacy functional ops (torch < 2.3 names, still registered)
    "c10d_functional::all_reduce": ("all_reduce", "self"),
    "c10d_functional::all_reduce_coalesced": ("all_reduce", "self"),
    "c10d_functional::all_gather_into_tensor": ("all_gather", OUTPUTS),
    "c10d_functional::all_gather_into_tensor_coalesced": ("all_gather", OUTPUTS),
    "c10d_functional::reduce_scatter_tensor": ("reduce_scatter", "input"),
    "c10d_functional::reduce_scatter_tensor_coalesced": ("reduce_scatter", "inputs"),
    "c10d_functional::all_to_all_single": ("all_to_all", "input"),
    "c10d_functional::broadcast": ("broadcast", "self"),
}
ONE_RANK_NOTE = ("NB: one rank: no link traffic; bytes are the tensors' (a copy in memory, or none in place); "
                 "busbw = algbw x 0 by nccl-tests' convention (broadcast: x 1).")


@dataclass(frozen=True)
class Comm:
    """One collective call: the catalog's collective, nccl-tests' size S, the group it ran on."""

    op: str  # "all_reduce", ...
    nbytes: int  # S
    ranks: int
    backend: str | None
    element_bytes: int
    torch_op: str  # "c10d::allreduce_", ...

    @property
    def params(self) -> dict[str, int]:
        return {"bytes": self.nbytes, "ranks": self.ranks}

    @property
    def busbw_factor(self) -> float:
        return busbw_factor(self.op, self.ranks)

    @property
    def link_bytes(self) -> float:
        """Bytes each GPU sends plus those it receives (0 for one rank)."""
        return 2 * self.busbw_factor * self.nbytes if self.ranks >= 2 else 0.0


def collective_of(call: OpCall) -> Comm | None:
    """The collective a call runs, None for other ops or a group that could not be resolved."""
    entry = COLLECTIVES.get(call.op.split(".")[0])
    if entry is None or call.group is None:
        return None
    name, where = entry
    if where == OUTPUTS:
        tensors = list(call.outputs)
    else:
        tensors = [t for t in tree_flatten(call.args.get(where))[0] if isinstance(t, TensorMeta)]
    if not tensors:
        return None
    nbytes = sum(t.numel * t.itemsize for t in tensors)
    return Comm(name, nbytes, call.group.size, call.group.backend, tensors[0].itemsize, call.op)


@formula(*COLLECTIVES)
def collective(call: OpCall) -> Cost | None:
    """The catalog's collective of nccl-tests' size S over the group (module docstring)."""
    c = collective_of(call)
    if c is None:
        return None
    if c.ranks < 2:
        return rule(0, "collective", ONE_RANK_NOTE)
    op = make(c.op, bytes=c.nbytes, ranks=c.ranks)
    return Cost(reduction_flops(c.op, c.nbytes, c.ranks, c.element_bytes), f"catalog:{c.op}", op.ignores, op)


def link_traffic(p: ProfiledCall) -> tuple[float, float, dict[str, float]] | None:
    """(bytes received, bytes sent, by kind) of a collective over two ranks or more; None otherwise."""
    if p.comm is None or p.comm.ranks < 2:
        return None
    sent = p.comm.link_bytes / 2
    return sent, sent, {LINK: p.comm.link_bytes}


def on_interconnect(p: ProfiledCall, record: Record) -> Record:
    """A collective's record (placed on the memory roof by the caller) moved onto the link (module docstring)."""
    if p.comm is None:
        return record
    rec = dataclasses.replace(record, op=p.comm.op, params=p.comm.params)
    return rec if p.cost.catalog is None else p.cost.catalog.placed(rec)


def _link_one_way(record: Record) -> float | None:
    if record.device_kind != "gpu":
        return None
    from roofline.ceilings.specs import as_spec, link_bytes_per_s
    from roofline.core.errors import UsageError

    try:
        return link_bytes_per_s(as_spec(record.gpu))
    except UsageError:
        return None


def with_bandwidth(c: Comm, record: Record) -> Record:
    """The record's `collective`: the torch op, group, busbw factor, link ceiling and, timed, algbw and busbw
    from its mean time per call."""
    t = record.time_s
    return dataclasses.replace(record, collective={
        "torch_op": c.torch_op, "backend": c.backend, "ranks": c.ranks, "busbw_factor": c.busbw_factor,
        "link_bytes_per_s_one_way": _link_one_way(record) if c.ranks >= 2 else None,
        "algbw_bytes_per_s": algbw(c.nbytes, t) if t else None,
        "busbw_bytes_per_s": busbw(c.op, c.nbytes, c.ranks, t) if t else None})


def communication(items: Sequence[ProfiledCall], records: Sequence[Record], kernel_time_s: float | None,
                  roofline_time_s: float | None, timed: bool,
                  unattributed: Sequence[dict[str, Any]] = ()) -> dict[str, Any] | None:
    """The summary's `communication` (module docstring), from the calls and the summary's `unattributed`
    kernels; None when no collective ran."""
    calls = [p for p in items if p.comm is not None]
    nccl = sum(float(u.get("time_s") or 0.0) for u in unattributed if NCCL_KERNEL in str(u.get("kernel")).lower())
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
        by_op.append({"op": op, "calls": len(ps), "bytes": size, "link_bytes": sum(p.comm.link_bytes for p in ps
                                                                                 if p.comm),
                      "time_s": t, "algbw_bytes_per_s": size / t if t else None,
                      "busbw_bytes_per_s": moved / t if t else None})
    return {"calls": len(calls), "ranks": sorted({p.comm.ranks for p in calls if p.comm}),
            "backends": sorted({p.comm.backend or "?" for p in calls if p.comm}),
            "time_s": time_s, "unattributed_time_s": nccl if timed else None,
            "share": time_s / kernel_time_s if time_s is not None and kernel_time_s else None,
            "roofline_time_s": roof, "roofline_share": roof / roofline_time_s if roofline_time_s else None,
            "link_bytes": sum(p.comm.link_bytes for p in calls if p.comm),
            "by_op": sorted(by_op, key=lambda d: (-(d["time_s"] or 0.0), d["op"]))}
