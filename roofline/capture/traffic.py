"""Minimum bytes of one recorded op call, and the dtype it computes in.

Bytes are the op's own tensors, not the catalog's traffic model: the unique storage the inputs read and the
outputs write. Two views of one storage count once (their distinct elements, capped at the storage's size);
an in-place op's output is the input it writes (written once; a mutable argument the kernel leaves, in
`Cost.unwritten`, not at all); out= arguments are written, not read; a
gather reads the rows it gathers, not the whole table (the formula says so in `Cost.read_bytes`). Every
output counts, statistics saved for backward (layer norm's mean and rstd, attention's log-sum-exp) included:
the kernel writes them. Bytes of nn.Parameter storages are WEIGHTS, the rest ACTIVATIONS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roofline.capture.registry import Cost
from roofline.capture.trace import OpCall, TensorMeta
from roofline.ops.base import ACTIVATIONS, WEIGHTS


def unique_bytes(items: Iterable[tuple[TensorMeta, float]]) -> tuple[float, list[tuple[TensorMeta, float]]]:
    """Bytes of the distinct storage a set of views covers: views of one storage summed once each
    (identical views once), capped at the storage's size. Returns the total and the bytes per storage
    (its first view standing for it)."""
    per: dict[int, tuple[TensorMeta, set[tuple[Any, ...]], float]] = {}
    for t, nbytes in items:
        first, seen, total = per.get(t.storage, (t, set(), 0.0))
        view = (t.offset, t.shape, t.strides)
        if view not in seen:
            seen.add(view)
            total += nbytes
        per[t.storage] = (first, seen, total)
    out = [(first, min(total, first.storage_nbytes) if first.storage_nbytes else total)
           for first, _, total in per.values()]
    return float(sum(b for _, b in out)), out


@dataclass(frozen=True)
class Traffic:
    """Minimum bytes of one call: read, written, and the split between weights and activations."""

    bytes_read: float
    bytes_written: float
    by_kind: dict[str, float]
    reads: tuple[tuple[int, float], ...]  # (storage key, bytes) per storage read: the dataflow's consumers
    writes: tuple[tuple[int, float], ...]  # (storage key, bytes) per storage written: its producers


def traffic(call: OpCall, cost: Cost) -> Traffic:
    """The unique storage the call's inputs read and its outputs write (module docstring)."""
    read_items = [(t, cost.read_bytes.get(i, t.nbytes)) for i, t in enumerate(call.inputs)
                  if i not in call.not_read and i not in cost.unread]
    written_items = [(call.inputs[i], call.inputs[i].nbytes) for i in sorted(call.mutated) if i not in cost.unwritten]
    written_items += [(t, t.nbytes) for t in call.outputs]
    read, reads = unique_bytes(read_items)
    written, writes = unique_bytes(written_items)
    kinds: dict[str, float] = {}
    for t, b in (*reads, *writes):
        kind = WEIGHTS if t.is_param else ACTIVATIONS
        kinds[kind] = kinds.get(kind, 0.0) + b
    return Traffic(read, written, {k: v for k, v in kinds.items() if v},
                   tuple((t.storage, b) for t, b in reads), tuple((t.storage, b) for t, b in writes))


def compute_dtype(call: OpCall, cost: Cost, tf32_matmul: bool = False, tf32_conv: bool = False) -> str:
    """The dtype the op computes in: its first floating input (output for factories), else its first
    tensor's. fp32 matrix products run as TF32 on tensor cores when torch allows it (the flags given)."""
    tensors = (*call.inputs, *call.outputs)
    name = next((t.dtype for t in tensors if t.is_float), None) or next((t.dtype for t in tensors), "fp32")
    if name == "fp32" and cost.tensor_cores:
        conv = (cost.source or "").startswith("catalog:conv") or "convolution" in call.op
        if (tf32_conv if conv else tf32_matmul):
            return "tf32"
    return name
