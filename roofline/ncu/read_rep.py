"""Nsight Compute's binary report (`.ncu-rep`) read with NVIDIA's `ncu_report` module into the same kernels as
the raw CSV gives (`ncu.read_csv.NcuKernel`, metrics in SI units).

`ncu_report` ships with Nsight Compute (`<install>/extras/python`) and on PyPI as `ncu-report` (the `ncu`
extra: `pip install roofline[ncu]`). It is imported only here, only when a report is read; where it is not
importable, the install directory of the `ncu` on PATH (and /opt/nvidia/nsight-compute/*) is searched.
"""

from __future__ import annotations

import glob
import importlib
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from roofline.core.errors import UsageError
from roofline.ncu.read_csv import NcuKernel, unit_factor

NO_MODULE = ("reading a .ncu-rep needs NVIDIA's ncu_report module: `pip install 'roofline[ncu]'` (the PyPI "
             "package ncu-report), or export the report as CSV: ncu --import REPORT --csv --page raw > R.csv")
# The column the NVTX range goes into, as `ncu.read_csv.nvtx_range` reads it.
NVTX_COLUMN = "NVTX Range"


def _install_dirs() -> list[str]:
    """Where Nsight Compute keeps its python module: beside the `ncu` on PATH, then the usual install root."""
    dirs = []
    ncu = shutil.which("ncu")
    if ncu:
        dirs.append(os.path.join(os.path.dirname(os.path.realpath(ncu)), "extras", "python"))
    dirs += sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True)
    return [d for d in dirs if os.path.isfile(os.path.join(d, "ncu_report.py"))]


def load_module() -> Any:
    """The `ncu_report` module, or a UsageError saying how to get it."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    for d in _install_dirs():
        sys.path.insert(0, d)
        try:
            return importlib.import_module("ncu_report")
        except ImportError:
            sys.path.remove(d)
    raise UsageError(NO_MODULE)


def read_ncu_rep(path: str | os.PathLike[str], metrics: Iterable[str], module: Any = None) -> list[NcuKernel]:
    """The kernels of a .ncu-rep in launch order, each with the `metrics` it holds (SI units) and its NVTX
    range. `module`: the ncu_report module (tests pass a stand-in)."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{p}: no such file")
    mod = module or load_module()
    try:
        ctx = mod.load_report(str(p))
    except Exception as exc:  # the module raises its own types for a damaged file
        raise UsageError(f"{p}: not a readable Nsight Compute report: {exc}") from None
    wanted = list(metrics)
    kernels: list[NcuKernel] = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            values: dict[str, float | None] = {}
            for name in wanted:
                m = action.metric_by_name(name)
                if m is not None:
                    values[name] = m.as_double() * unit_factor(m.unit() or "")
            text = {"Kernel Name": action.name()}
            nvtx = _nvtx(action)
            if nvtx:
                text[NVTX_COLUMN] = nvtx
            kernels.append(NcuKernel(len(kernels), action.name(), values, text))
    return kernels


def _nvtx(action: Any) -> str | None:
    """The innermost push/pop range of the first NVTX domain that has one (None without NVTX)."""
    try:
        state = action.nvtx_state()
    except Exception:  # a report recorded without --nvtx
        return None
    if state is None:
        return None
    for dom in state.domains():
        ranges = list(state.domain_by_id(dom).push_pop_ranges())
        if ranges:
            return str(ranges[-1])
    return None
