"""Kernel-benchmark problems in the plain convention of public suites: a Python file with `class Model(nn.Module)`,
`get_inputs()` (the forward's arguments) and `get_init_inputs()` (the constructor's); a candidate file defines
`ModelNew` with the same interface.

The reference and a candidate are built alike, so that their outputs can be compared: the weights under one
seed (`torch.manual_seed(seed)` before the constructor, as the suites' own harnesses do: a candidate that
creates its parameters in the reference's order gets the reference's weights), the inputs under another, made
on the device the model runs on (`with torch.device(device)` around `get_inputs()`: the suites write
`torch.randn(...)` without a device). Both are deterministic for a seed on one device and one torch build, so
two processes that build the same seed hold the same tensors and no tensor crosses between them.

`dtype` (the command line's --dtype) casts the model's floating parameters and buffers and the floating inputs;
None keeps the problem's own.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from roofline.core.errors import RooflineError, UsageError

# What each file must define.
PROBLEM_NAMES = ("Model", "get_inputs", "get_init_inputs")
CANDIDATE_CLASS = "ModelNew"
# torch dtype names by the names the command line takes.
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}
_loaded = itertools.count()


class ProblemError(RooflineError):
    """A problem or candidate file that cannot be loaded, built or run: one line naming the file."""


class _Exit(BaseException):
    """os._exit called by a problem's code while `contained` runs it (a BaseException: the problem's own `except
    Exception` does not swallow it)."""

    def __init__(self, code: Any) -> None:
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def contained(name: str) -> Iterator[None]:
    """Run a problem's code (its import, Model, get_inputs, the timed calls) in this block: sys.exit() and
    os._exit() in it end the problem, one ProblemError naming `name`, never the command (exit status 0, no
    output, no document: a problem that exits is a problem that failed). os._exit is replaced in this process
    only while the block runs (a process forked meanwhile keeps the real one)."""
    real, owner = os._exit, os.getpid()

    def refuse(code: int) -> None:
        if os.getpid() != owner:  # a child forked by the problem's code exits as it asked
            real(code)
        raise _Exit(code)

    os._exit = refuse  # type: ignore[assignment]
    try:
        yield
    except SystemExit as exc:
        raise ProblemError(f"{name}: it called sys.exit({exc.code!r}): a problem's code returns, it does not end "
                           "the process") from None
    except _Exit as exc:
        raise ProblemError(f"{name}: it called os._exit({exc.code!r}): a problem's code returns, it does not end "
                           "the process") from None
    finally:
        os._exit = real


@dataclass(frozen=True)
class Problem:
    """One loaded problem file (and its candidate's, when given)."""

    path: Path
    module: ModuleType
    candidate: ModuleType | None = None

    @property
    def name(self) -> str:
        return self.path.stem

    def model_class(self, candidate: bool = False) -> type:
        return getattr(self.candidate, CANDIDATE_CLASS) if candidate and self.candidate else self.module.Model


def load_module(path: str | Path, what: str = "problem") -> ModuleType:
    """Import a Python file as a fresh module (its folder importable while it loads, as `python FILE` has it).
    A file that is missing is a usage error; one that raises while loading a ProblemError with its error."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{p}: no such {what} file")
    name = f"roofline_{what}_{next(_loaded)}_{p.stem}"
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise UsageError(f"{p}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = str(p.resolve().parent)
    sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ProblemError(f"{p.name}: loading it raised {type(exc).__name__}: {_first_line(exc)}") from exc
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    return module


def load_problem(path: str | Path, candidate: str | Path | None = None) -> Problem:
    """The problem file (Model, get_inputs, get_init_inputs) and, when given, the candidate's (ModelNew)."""
    module = load_module(path)
    missing = [n for n in PROBLEM_NAMES if not hasattr(module, n)]
    if missing:  # not a file of its kind: bad input, exit status 2 (docs/guide.md), as a missing file is
        raise UsageError(f"{Path(path).name}: not a problem file: it defines no {', '.join(missing)} (a problem "
                         "defines class Model(nn.Module), get_inputs() and get_init_inputs())")
    cand = None
    if candidate is not None:
        cand = load_module(candidate, "candidate")
        if not hasattr(cand, CANDIDATE_CLASS):
            raise ProblemError(f"{Path(candidate).name}: not a candidate file: it defines no class "
                               f"{CANDIDATE_CLASS} (with the problem's Model's interface)")
    return Problem(Path(path), module, cand)


def torch_dtype(name: str | None) -> Any:
    """The torch dtype of a --dtype name (fp32, fp16, bf16, fp64); None for None."""
    if name is None:
        return None
    import torch

    if name not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return getattr(torch, DTYPES[name])


def _cast(value: Any, dtype: Any, device: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        value = value.to(device)
        return value.to(dtype) if dtype is not None and value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype, device) for v in value)
    return value


def _place(model: Any, device: str, dtype: Any) -> None:
    """Every parameter and buffer on `device`, the floating ones in `dtype` (None: as they are), in place.
    Not `model.to(...)`: under FakeTensorMode (the analytic run) a module cannot swap its parameters."""
    for m in model.modules():
        for p in m._parameters.values():
            if p is not None:
                p.data = _cast(p.data, dtype, device)
        for name, b in m._buffers.items():
            if b is not None:
                m._buffers[name] = _cast(b, dtype, device)


def build_model(problem: Problem, seed: int, device: str, dtype: str | None = None, candidate: bool = False) -> Any:
    """The reference (or the candidate's ModelNew) built under `seed` on `device`, in eval mode."""
    import torch

    cls = problem.model_class(candidate)
    what = f"{CANDIDATE_CLASS}(...)" if candidate else "Model(...)"
    try:
        init = list(problem.module.get_init_inputs())
        torch.manual_seed(seed)
        with torch.device(device):
            model = cls(*init)
        if not isinstance(model, torch.nn.Module):
            raise ProblemError(f"{problem.name}: {what} is not an nn.Module")
        _place(model, device, torch_dtype(dtype))
        return model.eval()
    except RooflineError:
        raise
    except Exception as exc:
        raise ProblemError(f"{problem.name}: building {what} raised {type(exc).__name__}: {_first_line(exc)}") from exc


def make_inputs(problem: Problem, seed: int, device: str, dtype: str | None = None) -> list[Any]:
    """get_inputs() under `seed`, made on `device` (tensors it made elsewhere moved there), floats cast to
    `dtype`."""
    import torch

    try:
        torch.manual_seed(seed)
        with torch.device(device):
            values = list(problem.module.get_inputs())
        return [_cast(v, torch_dtype(dtype), device) for v in values]
    except RooflineError:
        raise
    except Exception as exc:
        raise ProblemError(f"{problem.name}: get_inputs() raised {type(exc).__name__}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
