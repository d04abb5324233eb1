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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from torch.utils._pytree import tree_flatten

from roofline.capture.collective_ops import COLLECTIVES, OUTPUTS
from roofline.capture.registry import Cost, formula, rule
from roofline.capture.trace import OpCall, TensorMeta
from roofline.core.aten_names import packet
from roofline.core.record import evolve
from roofline.ops import make
from roofline.ops.collectives import LINK, algbw, busbw, busbw_factor, reduction_flops

if TYPE_CHECKING:
    from roofline.core.record import Record
    from roofline.ops.base import Operator

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
    entry = COLLECTIVES.get(packet(call.op))
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


def link_traffic(comm: Comm | None) -> tuple[float, float, dict[str, float]] | None:
    """(bytes received, bytes sent, by kind) of a collective over two ranks or more; None otherwise."""
    if comm is None or comm.ranks < 2:
        return None
    sent = comm.link_bytes / 2
    return sent, sent, {LINK: comm.link_bytes}


def on_interconnect(comm: Comm | None, catalog: Operator | None, record: Record) -> Record:
    """A collective's record (placed on the memory roof by the caller) moved onto the link (module docstring);
    `catalog` is the call's catalog collective."""
    if comm is None:
        return record
    rec = evolve(record, op=comm.op, params=comm.params)
    return rec if catalog is None else catalog.placed(rec)


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
    return evolve(record, collective={
        "torch_op": c.torch_op, "backend": c.backend, "ranks": c.ranks, "busbw_factor": c.busbw_factor,
        "link_bytes_per_s_one_way": _link_one_way(record) if c.ranks >= 2 else None,
        "algbw_bytes_per_s": algbw(c.nbytes, t) if t else None,
        "busbw_bytes_per_s": busbw(c.op, c.nbytes, c.ranks, t) if t else None})
