"""Repeated blocks as one row: a decoder's 16 layers run the same ops on the same shapes, and a view that lists
them one per layer shows 16 near-identical rows where one says it all. Pure: the document keeps every record;
grouping is a view (analysis/profile_view.py, and its `group=False` for the raw rows).

- A module path's numeric components are its indices ('model.layers.3.mlp' has one); `pattern` writes each as
  '*'. Records are repeats when their paths are equal but for those indices and they are otherwise the same op
  call: op, phase, region, shapes, strides, dtypes, params, FLOPs and bytes (what a profile aggregates calls by,
  capture/records.py, less the module). Two records of one module are never repeats: they would be one record.
- `index_label` writes a group's paths as one: each index that varies as the set of its values, runs of three
  or more as a range ('model.layers.{0..15}.mlp.down_proj', 'blocks.{0..3,5..11}.attn', 'layers.{0,2}.mlp').
- Fusions (analysis/whatif.py) are repeats when their kind is one and their records are repeats of each other,
  one for one: one fusion row with the occurrences, bytes and time of all of them (profile_view.group_fusions).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from roofline.core.record import Record

INDEX = "*"  # a numeric path component in a pattern
RANGE = ".."  # between the first and last index of a run: '0..15'
# A run of consecutive indices is written as a range from this length on ('0..2'); shorter ones are listed
# ('0,1'): a range of two is no shorter and reads less plainly.
RANGE_FROM = 3


# A component that is an index: digits ('layers.3'), or a name and an instance number as torch.profiler's
# `with_modules=True` names modules in a trace ('Block_3.LayerNorm_7': class name, instance).
_INDEXED = re.compile(r"(?P<stem>(?:[^.]*_)?)(?P<index>\d+)")


def _index(part: str) -> tuple[str, int] | None:
    """(the part before the index, the index) of an index component, else None: '3' -> ('', 3),
    'Block_3' -> ('Block_', 3), 'layer3' -> None (a name)."""
    m = _INDEXED.fullmatch(part)
    return (m["stem"], int(m["index"])) if m else None


def pattern(path: str) -> str:
    """The path with each index written '*': 'model.layers.3.mlp' -> 'model.layers.*.mlp', 'Block_3.Linear_7'
    -> 'Block_*.Linear_*'."""
    return ".".join(i[0] + INDEX if (i := _index(p)) else p for p in path.split("."))


def _ranges(values: Iterable[int]) -> str:
    """'0..15', '0..3,5..15', '0,2': sorted, runs of RANGE_FROM or more as a range."""
    ordered = sorted(set(values))
    out: list[str] = []
    start = 0
    for i in range(1, len(ordered) + 1):
        if i == len(ordered) or ordered[i] != ordered[i - 1] + 1:
            run = ordered[start:i]
            out += [f"{run[0]}{RANGE}{run[-1]}"] if len(run) >= RANGE_FROM else [str(v) for v in run]
            start = i
    return ",".join(out)


def index_label(paths: Sequence[str]) -> str:
    """One label for paths equal but for their indices: an index that varies is the set of its values in
    braces, one that does not is kept ('layers.{0..15}.mlp'); paths of another pattern than the first are
    ignored. One path, or none that differ: the first path."""
    if not paths:
        return ""
    first = paths[0].split(".")
    split = [p.split(".") for p in paths if pattern(p) == pattern(paths[0])]
    out = []
    for j, part in enumerate(first):
        index = _index(part)
        values = {v[1] for p in split if (v := _index(p[j]))} if index else set()
        out.append(f"{index[0]}{{{_ranges(values)}}}" if index and len(values) > 1 else part)
    return ".".join(out)


def record_key(r: Record) -> tuple[Any, ...] | None:
    """What repeats of `r` share (module docstring); None for a record whose module has no index (its
    repeats would be in its own module: one record)."""
    module = r.module or ""
    if not any(_index(p) for p in module.split(".")):
        return None
    return (pattern(module), r.op, r.phase, r.region, _frozen(r.input_shapes), _frozen(r.input_strides),
            _frozen(r.input_dtypes), _frozen(r.output_shapes), _frozen(r.output_strides), _frozen(r.output_dtypes),
            r.dtype, r.flops, r.bytes_read, r.bytes_written, json.dumps(r.params, sort_keys=True, default=str))


def _frozen(x: Any) -> Any:
    return json.dumps(x) if x is not None else None


def repeated(records: Sequence[Record], idx: Iterable[int] | None = None) -> list[list[int]]:
    """The records `idx` (all of them by default) in groups of repeats, each in record order, the groups in
    the order of their first record; a record without repeats is a group of one."""
    groups: dict[Any, list[int]] = {}
    for i in range(len(records)) if idx is None else idx:
        key = record_key(records[i])
        groups.setdefault(("one", i) if key is None else key, []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


__all__ = ["INDEX", "index_label", "pattern", "record_key", "repeated"]
