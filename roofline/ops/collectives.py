"""Collectives across GPUs: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast (ring algorithm).

The conventions are nccl-tests' (github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md "Performance reported by NCCL
tests", section "Summary" of "Bus bandwidth"; read at commit 03a204a): S is the size nccl-tests reports (the
full buffer: for all_gather the gathered output, for reduce_scatter the input), algbw = S / t, and busbw =
algbw x a factor per collective, so that busbw is the bandwidth each GPU's link carries in one direction and
can be set beside the link's peak:
    all_reduce      2(n-1)/n   (reduce-scatter then all-gather: each GPU sends and receives 2(n-1)/n x S)
    all_gather      (n-1)/n    (each GPU receives the n-1 chunks it lacks, S/n each)
    reduce_scatter  (n-1)/n
    all_to_all      (n-1)/n    (each GPU keeps 1/n of its buffer; also src/alltoall.cu AlltoAllGetBw)
    broadcast       1          (a pipelined chain: every GPU but the ends receives and forwards all of S)
The bytes each GPU sends (and as many it receives) in the ring are busbw_factor x S, the same arithmetic.

The roof of a collective is the link, not HBM: a record counts the bytes each GPU sends plus those it receives,
so its memory roof is the NVLink bandwidth with both directions added (`on_link`), which gives
time = bytes sent / per-direction bandwidth.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from roofline.core.dtypes import DType
from roofline.core.errors import UsageError
from roofline.core.model import RooflinePoint
from roofline.ops.base import FLOAT_DTYPES, Operator, Traffic, operator, param, rw

if TYPE_CHECKING:
    from roofline.core.record import Record

FAMILY = "collectives"
# Kinds of bytes a collective moves over the link, per GPU.
LINK = "link"

# busbw = algbw x factor(n), nccl-tests doc/PERFORMANCE.md "Summary" (AllReduce 2(n-1)/n, ReduceScatter,
# AllGather and AlltoAll (n-1)/n, Broadcast 1).
BUSBW_FACTORS: dict[str, tuple[int, int]] = {  # factor = a(n-1)/n + b: (a, b)
    "all_reduce": (2, 0), "all_gather": (1, 0), "reduce_scatter": (1, 0), "all_to_all": (1, 0), "broadcast": (0, 1),
}
# Latency terms of the ring: the steps each GPU waits on its neighbour (all_reduce: n-1 reduce-scatter steps then
# n-1 all-gather steps; broadcast: the chain's n-1 hops).
RING_STEPS: dict[str, int] = {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1, "all_to_all": 1, "broadcast": 1}
REDUCING = ("all_reduce", "reduce_scatter")
TIMED_ELSEWHERE = ("a collective is timed across processes by `roofline collectives --ops NAME`; add --no-time "
                   "here for the model alone")


def _known(op: str) -> None:
    if op not in BUSBW_FACTORS:
        raise UsageError(f"unknown collective '{op}' (known: {', '.join(BUSBW_FACTORS)})")


def _check_group(nbytes: float, gpus: int) -> None:
    if nbytes <= 0:
        raise UsageError(f"a collective's size must be > 0 bytes, got {nbytes}")
    if gpus < 2:
        raise UsageError(f"a collective needs at least 2 GPUs, got {gpus}")


def busbw_factor(op: str, gpus: int) -> float:
    """nccl-tests' busbw / algbw for `op` over `gpus` GPUs."""
    _known(op)
    a, b = BUSBW_FACTORS[op]
    return a * (gpus - 1) / gpus + b


def ring_bytes_per_gpu(op: str, nbytes: float, gpus: int) -> float:
    """Bytes each GPU sends (and, as many, receives) in the ring for a collective of nccl-tests size `nbytes`."""
    _check_group(nbytes, gpus)
    return busbw_factor(op, gpus) * nbytes


def algbw(nbytes: float, time_s: float) -> float:
    """nccl-tests' algorithm bandwidth S / t, bytes/s."""
    return nbytes / time_s


def busbw(op: str, nbytes: float, gpus: int, time_s: float) -> float:
    """nccl-tests' bus bandwidth algbw x factor, bytes/s: what one GPU's link carried in one direction."""
    return algbw(nbytes, time_s) * busbw_factor(op, gpus)


def reduction_flops(op: str, nbytes: float, gpus: int, element_bytes: float) -> float:
    """The adds of the reduction, per GPU: (n-1)/n x elements for all_reduce and reduce_scatter, 0 for the rest."""
    _check_group(nbytes, gpus)
    _known(op)
    return (gpus - 1) / gpus * nbytes / element_bytes if op in REDUCING else 0.0


def alpha_beta_time(op: str, nbytes: float, gpus: int, alpha_s: float, beta_s_per_byte: float) -> float:
    """Ring time: steps x alpha + bytes sent per GPU x beta (beta = 1 / per-direction link bandwidth).

    NB: ignores the reduction's compute, protocol overheads (NCCL's LL/LL128 headers), contention and the
    tree and NVLS algorithms NCCL picks instead of the ring at some sizes.
    """
    _known(op)
    _check_group(nbytes, gpus)
    return RING_STEPS[op] * (gpus - 1) * alpha_s + ring_bytes_per_gpu(op, nbytes, gpus) * beta_s_per_byte


def on_link(record: Record, link_bytes_per_s_one_way: float) -> Record:
    """A collective's record placed on the link: peak_bytes_per_s is the bandwidth with both directions added,
    since `bytes` counts those sent plus those received (time = bytes sent / per-direction bandwidth)."""
    both = 2 * link_bytes_per_s_one_way
    a = RooflinePoint(record.flops or 0.0, record.bytes or 0.0, record.peak_flops_per_s, both)
    note = (f"roof: NVLink {link_bytes_per_s_one_way / 1e9:.0f} GB/s per direction (x2: bytes are sent + received), "
            f"not HBM")
    return dataclasses.replace(record, peak_bytes_per_s=both, ridge_point=a.ridge_point, bound=a.bound,
                               attainable_flops_per_s=a.attainable_flops_per_s, roofline_time_s=a.roofline_time_s,
                               notes=[*record.notes, note])


@dataclass(frozen=True)
class Collective(Operator):
    """One collective over `ranks` GPUs, nccl-tests' size `bytes` (the CLI's --bytes takes an integer)."""

    ignores: ClassVar[str] = ("NB: ring algorithm; bytes are per GPU over the link (read = received, written = "
                              "sent), not HBM traffic; the roof is the link's bandwidth with both directions added.")
    dtypes: ClassVar[tuple[str, ...]] = FLOAT_DTYPES
    bytes: int = param(268435456, "message size S in bytes (nccl-tests' size: the full buffer; 256MiB, 1GiB)")
    # `ranks`, not `gpus`: `roofline compare` already takes --gpus as the list of GPU specs to rank
    ranks: int = param(8, "GPUs taking part (torch.distributed's world size)", minimum=2)

    def check_dtype(self, dtype: DType) -> None:
        super().check_dtype(dtype)
        # flops() counts elements of this dtype; the model has no other use for it
        object.__setattr__(self, "_element_bytes", dtype.bytes)

    @property
    def busbw_factor(self) -> float:
        return busbw_factor(self.name, self.ranks)

    @property
    def bytes_per_gpu(self) -> float:
        """Bytes each GPU sends, and as many it receives."""
        return ring_bytes_per_gpu(self.name, self.bytes, self.ranks)

    def placed(self, record: Record) -> Record:
        """The record (placed on the device's HBM by `analytic_record`) moved onto the spec's NVLink roof, with
        the ring's bytes and nccl-tests' busbw factor in its notes; unchanged where the spec gives no NVLink."""
        from roofline.ceilings.specs import as_spec, link_bytes_per_s

        ring = (f"ring over {self.ranks} GPUs: each sends {self.bytes_per_gpu:,.0f} B and receives as many; "
                f"busbw = algbw x {self.busbw_factor:.4g}")
        link = link_bytes_per_s(as_spec(record.gpu)) if record.device_kind == "gpu" else None
        if link is None:
            why = "has no NVLink figure" if record.device_kind == "gpu" else "is not a GPU: no interconnect roof"
            return dataclasses.replace(record, notes=[*record.notes, ring, f"{record.gpu} {why}; placed on its "
                                                      "memory roof"])
        return on_link(dataclasses.replace(record, notes=[*record.notes, ring]), link)

    def flops(self) -> float:
        return reduction_flops(self.name, self.bytes, self.ranks, getattr(self, "_element_bytes", 2.0))

    def traffic(self, dtype: DType) -> Traffic:
        moved = self.bytes_per_gpu
        return rw({LINK: moved}, {LINK: moved})


@operator("all_reduce", FAMILY)
@dataclass(frozen=True)
class AllReduce(Collective):
    summary = "sum S bytes across GPUs, every GPU gets the result; busbw = algbw x 2(n-1)/n"


@operator("all_gather", FAMILY)
@dataclass(frozen=True)
class AllGather(Collective):
    summary = "every GPU gets all n chunks of S/n bytes (S: the gathered output); busbw = algbw x (n-1)/n"


@operator("reduce_scatter", FAMILY)
@dataclass(frozen=True)
class ReduceScatter(Collective):
    summary = "sum S bytes across GPUs, each keeps 1/n of the result (S: the input); busbw = algbw x (n-1)/n"


@operator("all_to_all", FAMILY)
@dataclass(frozen=True)
class AllToAll(Collective):
    summary = "each GPU sends a distinct S/n bytes to every GPU (MoE dispatch); busbw = algbw x (n-1)/n"


@operator("broadcast", FAMILY)
@dataclass(frozen=True)
class Broadcast(Collective):
    summary = "one GPU's S bytes to every GPU (a pipelined chain); busbw = algbw x 1"


def is_collective(op: Operator) -> bool:
    return op.family == FAMILY
