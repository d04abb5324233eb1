"""What follows from a kernel's counters beside the model: pure arithmetic on `Counters`, no torch, no ncu.

- `excess_traffic` = (DRAM bytes read + bytes stored) / the model's minimum bytes: 1.0 moves the minimum, 1.36
  moves 36% more. Writes count where the SMs store them (into the L2), not as DRAM writes: a write-back cache
  writes a line to DRAM when it is evicted, often after the kernel, so DRAM bytes alone read below the minimum
  where the output stays in the L2 (0 B written for outputs that fit; 0.93x for 128 MiB ones, H200) and move
  with what else the L2 holds. Without the stored-bytes counter (an imported report): DRAM bytes / minimum.
- `read_excess` = DRAM bytes read / the model's minimum bytes read: reads cannot hide in the L2 when the caches
  are flushed before the kernel (as Nsight Compute does by default), so it is at least 1.0 but for rounding.
- `flops_ratio` = counter FLOPs / the model's FLOPs: 2.0 does twice the arithmetic (padding, recompute).
- `intensity_<level>` = counter FLOPs / bytes at that level (L1, L2, DRAM): Nsight Compute's hierarchical
  roofline, one FLOP count over three byte counts.
NB: the model's minimum counts each tensor once at its dtype's width; it ignores DRAM's 32-byte sector and
ECC granularity, so a small kernel (KBs) reads above 1.0 from rounding alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from roofline.core.record import Counters, Record

# The memory levels of the hierarchical roofline, outermost last, with their Counters field.
LEVELS = {"L1": "l1_bytes", "L2": "l2_bytes", "DRAM": "dram_bytes"}


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def _reads_and_stores(c: Counters) -> bool:
    return c.dram_bytes_read is not None and c.stored_bytes is not None


def moved_bytes(c: Counters) -> float | None:
    """The bytes `excess_traffic` holds against the minimum: DRAM reads + stored bytes, else DRAM bytes."""
    read, stored = c.dram_bytes_read, c.stored_bytes
    return read + stored if read is not None and stored is not None else c.dram_bytes  # as _reads_and_stores


def excess_basis(counters: Iterable[Counters]) -> str:
    """What `moved_bytes` counts for these counters: 'DRAM reads + stored', 'DRAM' (no stored-bytes counter), or
    both named when the documents mix them."""
    kinds = dict.fromkeys("DRAM reads + stored" if _reads_and_stores(c) else "DRAM" for c in counters)
    return " or ".join(kinds) or "DRAM reads + stored"


def derive(counters: Counters, flops: float | None, min_bytes: float | None,
           min_bytes_read: float | None = None) -> Counters:
    """The counters with their derived fields set against the model's FLOPs and minimum bytes (None: unknown)."""
    return dataclasses.replace(
        counters, excess_traffic=_ratio(moved_bytes(counters), min_bytes),
        read_excess=_ratio(counters.dram_bytes_read, min_bytes_read),
        flops_ratio=_ratio(counters.flops, flops) if counters.flops else None,
        intensity_dram=_ratio(counters.flops, counters.dram_bytes),
        intensity_l2=_ratio(counters.flops, counters.l2_bytes),
        intensity_l1=_ratio(counters.flops, counters.l1_bytes))


def with_counters(record: Record, counters: Counters) -> Record:
    """The record carrying `counters`, derived against its own FLOPs and minimum bytes."""
    return dataclasses.replace(record, counters=derive(counters, record.flops, record.bytes, record.bytes_read))


def _sum(values: Iterable[float | None]) -> float | None:
    """The sum of the known values; None when none is known (a counter not collected is never 0)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def combined(parts: list[Counters], source: str | None = None) -> Counters:
    """The counters of one call made of several kernels: bytes and FLOPs summed, durations summed, the SM clock
    weighted by duration."""
    if len(parts) == 1:
        return dataclasses.replace(parts[0], source=source or parts[0].source)
    duration = _sum(p.duration_s for p in parts)
    clocked = [(p.duration_s, p.sm_clock_mhz) for p in parts if p.duration_s and p.sm_clock_mhz]
    weight = sum(d for d, _ in clocked)
    tensor: dict[str, float] = {}
    for p in parts:
        for k, v in (p.tensor_flops or {}).items():
            tensor[k] = tensor.get(k, 0.0) + v
    return Counters(
        source=source or (parts[0].source if parts else None), kernels=sum(p.kernels or 1 for p in parts),
        duration_s=duration, sm_clock_mhz=sum(d * c for d, c in clocked) / weight if weight else None,
        dram_bytes_read=_sum(p.dram_bytes_read for p in parts),
        dram_bytes_written=_sum(p.dram_bytes_written for p in parts),
        dram_bytes=_sum(p.dram_bytes for p in parts), stored_bytes=_sum(p.stored_bytes for p in parts),
        l2_bytes=_sum(p.l2_bytes for p in parts),
        l1_bytes=_sum(p.l1_bytes for p in parts), tensor_flops=tensor or None,
        fp32_flops=_sum(p.fp32_flops for p in parts), fp64_flops=_sum(p.fp64_flops for p in parts),
        fp16_flops=_sum(p.fp16_flops for p in parts), flops=_sum(p.flops for p in parts))


def scaled(counters: Counters, factor: float) -> Counters:
    """The counters with every count (bytes, FLOPs, duration, kernels) times `factor`; the clock and the derived
    ratios kept. `scaled(combined(n calls), 1 / n)` is the mean call of a record that aggregates n calls."""
    def times(v: float | None) -> float | None:
        return None if v is None else v * factor

    return dataclasses.replace(
        counters, kernels=None if counters.kernels is None else round(counters.kernels * factor),
        duration_s=times(counters.duration_s), dram_bytes_read=times(counters.dram_bytes_read),
        dram_bytes_written=times(counters.dram_bytes_written), dram_bytes=times(counters.dram_bytes),
        stored_bytes=times(counters.stored_bytes), l2_bytes=times(counters.l2_bytes), l1_bytes=times(counters.l1_bytes),
        tensor_flops={k: v * factor for k, v in counters.tensor_flops.items()} if counters.tensor_flops else None,
        fp32_flops=times(counters.fp32_flops), fp64_flops=times(counters.fp64_flops),
        fp16_flops=times(counters.fp16_flops), flops=times(counters.flops))
