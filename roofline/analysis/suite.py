"""Suites: a TOML file of operators, shapes, dtypes and variants, run into one results document.

```toml
[suite]
name = "smoke"
description = "..."

[[entry]]
op = "gemm"
params = { m = 256 }            # shapes on the CPU
gpu_params = { m = 4096 }       # optional: shapes when timing on a GPU
dtype = "fp32"                  # optional: default fp32 on the CPU
gpu_dtype = "bf16"              # optional: default fp16 on a GPU
threshold = "median:8%"         # optional: per-entry regression threshold for `roofline check`
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.core.dtypes import DEFAULT_DTYPE, get_dtype
from roofline.core.errors import UsageError
from roofline.core.tomlfile import read_toml
from roofline.core.validate import brief, json_type
from roofline.ops.base import Operator, make

ENTRY_KEYS = {"op", "params", "gpu_params", "dtype", "gpu_dtype", "threshold", "name", "tensor_cores"}


@dataclass(frozen=True)
class Entry:
    """One [[entry]] of a suite file, as written (validated by `load_suite`)."""

    op: str
    params: dict[str, Any]
    gpu_params: dict[str, Any]
    dtype: str | None
    gpu_dtype: str | None
    threshold: str | None
    tensor_cores: bool = True

    def operator(self, on_gpu: bool) -> Operator:
        """The entry's operator: its params, with gpu_params over them on a GPU."""
        params = {**self.params, **(self.gpu_params if on_gpu else {})}
        return make(self.op, **params)

    def dtype_for(self, on_gpu: bool) -> str:
        """The entry's dtype on a GPU (gpu_dtype, else dtype) or the CPU (dtype), else the default of that kind
        of roof (`core.dtypes.DEFAULT_DTYPE`)."""
        if on_gpu:
            return self.gpu_dtype or self.dtype or DEFAULT_DTYPE["gpu"]
        return self.dtype or DEFAULT_DTYPE["cpu"]


@dataclass(frozen=True)
class Suite:
    """A suite file: its name, description and entries, in order (`roofline run` numbers them from 1)."""

    name: str
    description: str
    entries: tuple[Entry, ...]
    path: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _param_names(op: object) -> set[str]:
    """The parameters of catalog operator `op` (none for a name the catalog does not have)."""
    import dataclasses

    from roofline.ops import OPERATORS

    cls = OPERATORS.get(op) if isinstance(op, str) else None
    return {f.name for f in dataclasses.fields(cls)} if cls else set()


# What each key of an [[entry]] holds, as TOML writes it (tensor_cores is checked with its own words below).
ENTRY_TYPES: dict[str, Any] = {"op": str, "params": dict[str, Any], "gpu_params": dict[str, Any], "name": str,
                               "threshold": str}


def _entry_type_problem(entry: dict[str, Any]) -> str | None:
    """The first key of an entry whose value is not what it holds ('params must be a table, got 'm=64''), or
    None. A dtype is worded by `get_dtype`, tensor_cores by `load_suite`."""
    for key, want in ENTRY_TYPES.items():
        if key in entry and json_type(entry[key], want) is not None:
            words = "a table ({ m = 4096 })" if want is not str else "a string"
            return f"{key} must be {words}, got {brief(entry[key])}"
    return None


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file: every entry is built once here, so a bad shape fails before any run."""
    p = Path(path)
    data = read_toml(p, "suite file", UsageError)
    meta = data.get("suite", {})
    if not isinstance(meta, dict):
        raise UsageError(f"{p}: suite must be a table ([suite] with name = \"...\", description = \"...\"), got "
                         f"{brief(meta)}")
    for key in ("name", "description"):
        if key in meta and not isinstance(meta[key], str):
            raise UsageError(f"{p}: suite.{key} must be a string, got {brief(meta[key])}")
    raw = data.get("entry")
    if not isinstance(raw, list) or not raw:
        raise UsageError(f"{p}: a suite needs at least one [[entry]]")
    entries = []
    for i, e in enumerate(raw):
        where = f"{p}: entry {i + 1}"
        if not isinstance(e, dict) or "op" not in e:
            raise UsageError(f"{where}: needs op = \"...\"")
        if (wrong := _entry_type_problem(e)) is not None:  # op = ["gemm"], params = "m=64": one line, not a traceback
            raise UsageError(f"{where}: {wrong}")
        unknown = set(e) - ENTRY_KEYS
        if unknown:
            hint = " (an operator's parameters go in params = {...})" if unknown & _param_names(e["op"]) else ""
            raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}{hint}; an entry takes "
                             f"{', '.join(sorted(ENTRY_KEYS))}")
        try:  # each problem named with its file and entry (a bad dtype was named alone; tensor_cores = "false"
            # was read as True)
            for key in ("dtype", "gpu_dtype"):
                if e.get(key) is not None:
                    get_dtype(e[key])
            entry = Entry(op=e["op"], params=dict(e.get("params", {})), gpu_params=dict(e.get("gpu_params", {})),
                          dtype=e.get("dtype"), gpu_dtype=e.get("gpu_dtype"), threshold=e.get("threshold"),
                          tensor_cores=e.get("tensor_cores", True))
            if not isinstance(entry.tensor_cores, bool):
                raise UsageError(f"tensor_cores must be true or false (a TOML boolean, unquoted), got "
                                 f"{entry.tensor_cores!r}")
            entry.operator(False)
            entry.operator(True)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        entries.append(entry)
    for on_gpu in (False, True):
        _check_unique(entries, on_gpu, p)
    return Suite(name=str(meta.get("name", p.stem)), description=str(meta.get("description", "")),
                 entries=tuple(entries), path=str(p))


def _check_unique(entries: list[Entry], on_gpu: bool, path: Path) -> None:
    """Two entries that become the same operator, shape, dtype and tensor-core use on one device would give
    two records `check` cannot tell apart: refuse the suite on load, naming both."""
    seen: dict[tuple[Any, ...], int] = {}
    for i, e in enumerate(entries, start=1):
        op = e.operator(on_gpu)
        key = (op.name, op.variant_name(), tuple(sorted(op.params().items())), e.dtype_for(on_gpu), e.tensor_cores)
        if key in seen:
            where = "a GPU" if on_gpu else "the CPU"
            raise UsageError(f"{path}: entries {seen[key]} and {i} are the same on {where} ({op.name} "
                             f"{e.dtype_for(on_gpu)} {' '.join(f'{k}={v}' for k, v in op.params().items())}): "
                             "give one of them other params or gpu_params")
        seen[key] = i

