"""SOL-ExecBench's problems beside KernelBench's: each workload of a problem folder (measuring/solexec_format.py
reads and validates them) becomes a `Problem` of measuring/problem.py in the plain convention: `Model`, an
nn.Module whose forward calls the reference's `run`; `get_inputs()`, the workload's inputs; `get_init_inputs()`,
none. So the analytic run, the timers and the verdicts of `roofline sol` are the KernelBench path's, one row per
workload (`rows`).

Inputs are made as SOL-ExecBench's evaluator makes them (src/sol_execbench/core/bench/io.py): floats by randn
(fp8 clamped to [-2, 2] first), bool 0 or 1, int8 in [-128, 128), wider ints in [-1024, 1024); `custom` ones by
the definition's entrypoint; `safetensors` ones read from the file (their declared shape alone in the analytic
run). NB: its name heuristics (norm weights as ones, masks, cos/sin, ...) are not applied: a reference that needs
them to give finite outputs is compared on what randn gives.

A candidate (a solution.json of the Python languages, or a .py defining `run` that returns the outputs) runs in
the candidate's child process through two small files of the plain convention (`child_files`), so the child loads
it as it loads a KernelBench candidate; with destination passing (the solution's default) the outputs are
allocated and passed after the inputs.
"""

from __future__ import annotations

import itertools
import linecache
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.core.errors import UsageError
from roofline.measuring.problem import CANDIDATE_CLASS, Problem, ProblemError, load_module
from roofline.measuring.solexec_format import (
    DEFINITION,
    DTYPES,
    WORKLOADS,
    Definition,
    InputSource,
    Solution,
    TensorSpec,
    Workload,
    axes_text,
    read_problem,
    read_solution,
    shape_of,
    sizes,
)

# fp8 randoms are clamped to this range before the cast, as SOL-ExecBench's io.py does (fp8 saturates beyond).
FP8_RANDOM_LIMIT = 2.0
# Random integer ranges [low, high) by dtype, as SOL-ExecBench's io.py draws them (small: valid as indices of
# nothing, but never overflowing a sum).
INT_RANGES = {"int8": (-128, 128), "int16": (-1024, 1024), "int32": (-1024, 1024), "int64": (-1024, 1024)}
_loaded = itertools.count()


# -- problem folders and their rows
def is_problem(path: str | Path) -> bool:
    """A SOL-ExecBench problem folder (it holds definition.json), its definition.json, or a folder of such
    folders (and no KernelBench *.py problem beside them)."""
    p = Path(path)
    if p.is_file():
        return p.name == DEFINITION
    if not p.is_dir():
        return False
    if (p / DEFINITION).is_file():
        return True
    return not any(p.glob("*.py")) and any((d / DEFINITION).is_file() for d in p.iterdir() if d.is_dir())


def problem_folders(path: str | Path) -> list[Path]:
    p = Path(path)
    if p.is_file():
        return [p.parent]
    if (p / DEFINITION).is_file():
        return [p]
    return sorted(d for d in p.iterdir() if d.is_dir() and (d / DEFINITION).is_file())


@dataclass(frozen=True)
class Row:
    """One workload of one problem: a row of `roofline sol`, loaded as a `Problem` when its turn comes."""

    definition: Definition
    workload: Workload
    label: str  # "rmsnorm_h4096 batch_size=7"
    solution: Solution | None = None  # the candidate, validated

    @property
    def candidate(self) -> Path | None:
        return self.solution.path if self.solution else None

    @property
    def path(self) -> Path:
        return self.definition.path

    def load(self) -> Problem:
        """The workload as a Problem: Model, get_inputs, get_init_inputs (module docstring)."""
        return Problem(self.path, workload_module(self.definition, self.workload))


def rows(path: str | Path, candidate: str | Path | None = None) -> list[Row]:
    """Every workload of a problem folder (or of each problem folder of a folder): one row each, validated on
    load. `candidate`: a solution for one problem, or for several a folder with NAME.json or NAME.py per problem
    folder NAME."""
    folders = problem_folders(path)
    if not folders:
        raise UsageError(f"{path}: no SOL-ExecBench problem ({DEFINITION} and {WORKLOADS}) here")
    if candidate is not None and len(folders) > 1 and not any(_candidate_of(f, candidate, True) for f in folders):
        raise UsageError(f"--candidate {candidate}: no NAME.json or NAME.py for any problem folder NAME here "
                         f"({', '.join(f.name for f in folders[:3])}{', ...' if len(folders) > 3 else ''})")
    out: list[Row] = []
    for folder in folders:
        definition, works = read_problem(folder)
        file = _candidate_of(folder, candidate, len(folders) > 1)
        cand = read_solution(file, definition) if file else None
        labels = [f"{definition.name} {axes_text(w.axes)}".strip() for w in works]
        twice = {lab for lab in labels if labels.count(lab) > 1}
        out += [Row(definition, w, f"{lab} #{w.line}" if lab in twice else lab, cand) for w, lab in zip(works, labels,
                                                                                                    strict=True)]
    return out


def _candidate_of(folder: Path, candidate: str | Path | None, many: bool) -> Path | None:
    if candidate is None:
        return None
    c = Path(candidate)
    if not many:
        if not c.is_file():
            raise UsageError(f"{c}: no such solution file (a solution.json or a .py defining run)")
        return c
    if not c.is_dir():
        raise UsageError(f"--candidate {c}: several problems take a folder of solutions (NAME.json or NAME.py "
                         "per problem folder NAME)")
    found = [c / f"{folder.name}{ext}" for ext in (".json", ".py") if (c / f"{folder.name}{ext}").is_file()]
    return found[0] if found else None


# -- the reference as a module of the plain convention
def _exec_source(source: str, filename: str, what: str) -> types.ModuleType:
    """Python source as a fresh module; its lines in linecache under `filename`, so tracebacks and
    inspect.getsource (which @triton.jit calls) find them."""
    module = types.ModuleType(f"roofline_solexec_{next(_loaded)}")
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except Exception as exc:
        sys.modules.pop(module.__name__, None)
        text = str(exc).strip().splitlines()
        raise ProblemError(f"{what}: loading it raised {type(exc).__name__}: {text[0] if text else ''}") from exc
    return module


def workload_module(definition: Definition, workload: Workload) -> types.ModuleType:
    """The module a KernelBench problem file would be: Model, get_inputs, get_init_inputs (and the reference's
    own names)."""
    module = _exec_source(definition.reference, f"{definition.path}#reference", f"{definition.name}'s reference")
    run = module.run
    names = {"Model": _module_class(lambda *xs: run(*xs), "Model", "The reference's run as a module: its inputs "
                                                                  "are the forward's arguments."),
             "get_inputs": lambda: make_inputs(definition, workload, module), "get_init_inputs": lambda: [],
             "DEFINITION": definition, "WORKLOAD": workload}
    module.__dict__.update(names)
    return module


def _module_class(call: Callable[..., Any], name: str, doc: str) -> type:
    import torch

    def forward(self: Any, *inputs: Any) -> Any:
        return call(*inputs)

    return type(name, (torch.nn.Module,), {"forward": forward, "__doc__": doc})


def make_inputs(definition: Definition, workload: Workload, reference: types.ModuleType) -> list[Any]:
    """The workload's inputs in the definition's order, on torch's default device (measuring/problem.py sets it
    and the seed): tensors as its sources say (_MAKERS), scalars as Python values."""
    values = sizes(definition, workload)
    custom = _custom(definition, workload, reference, values) if any(
        s.kind == "custom" for s in workload.inputs.values()) else {}
    return [_MAKERS[workload.inputs[spec.name].kind](_Making(definition, spec, workload.inputs[spec.name], values,
                                                             custom)) for spec in definition.inputs]


@dataclass(frozen=True)
class _Making:
    """What an input's maker needs: its definition, spec, source, the axes' values, the custom inputs made."""

    definition: Definition
    spec: TensorSpec
    source: InputSource
    values: dict[str, int]
    custom: dict[str, Any]


def _torch_dtype(spec: TensorSpec) -> Any:
    import torch

    name = DTYPES[spec.dtype]
    if name is None or not hasattr(torch, name):
        raise ProblemError(f"input {spec.name!r}: torch {torch.__version__} has no dtype for {spec.dtype}")
    return getattr(torch, name)


def _random(m: _Making) -> Any:
    import torch

    shape, dtype = shape_of(m.spec, m.values), _torch_dtype(m.spec)
    kind = next((k for k in _RANDOM if m.spec.dtype.startswith(k)), None)
    if kind is None:
        raise ProblemError(f"input {m.spec.name!r}: random {m.spec.dtype} inputs are not made here (SOL-ExecBench "
                           "packs them from floats)")
    return _RANDOM[kind](torch, shape, dtype)


# Random tensors by dtype (its name's start), as SOL-ExecBench's io.py draws them.
_RANDOM: dict[str, Callable[[Any, list[int], Any], Any]] = {
    **dict.fromkeys(("float64", "float32", "float16", "bfloat16"),
                    lambda torch, shape, dtype: torch.randn(shape, dtype=dtype)),
    "float8": lambda torch, shape, dtype: torch.randn(shape).clamp_(-FP8_RANDOM_LIMIT, FP8_RANDOM_LIMIT).to(dtype),
    "bool": lambda torch, shape, dtype: torch.randint(0, 2, shape, dtype=torch.bool),
    **dict.fromkeys(INT_RANGES, lambda torch, shape, dtype: torch.randint(
        *INT_RANGES[str(dtype).removeprefix("torch.")], shape, dtype=dtype)),
}


def _custom(definition: Definition, workload: Workload, reference: types.ModuleType,
            values: dict[str, int]) -> dict[str, Any]:
    import torch

    fn = getattr(reference, definition.custom_inputs or "")
    scalars = {n: s.value for n, s in workload.inputs.items() if s.kind == "scalar"}
    made = fn({**values, **scalars}, torch.get_default_device())
    if not isinstance(made, dict):
        raise ProblemError(f"{definition.custom_inputs}() returned {type(made).__name__}, not a dict of inputs")
    for spec in definition.inputs:
        if spec.name not in made:
            raise ProblemError(f"{definition.custom_inputs}() made no {spec.name!r}")
        t = made[spec.name]
        if spec.shape is not None and (not isinstance(t, torch.Tensor) or list(t.shape) != shape_of(spec, values)):
            raise ProblemError(f"{definition.custom_inputs}() made {spec.name!r} of shape "
                               f"{list(getattr(t, 'shape', []))}, the definition says {shape_of(spec, values)}")
    return made


def _analytic(torch: Any) -> bool:
    """Inside FakeTensorMode (the analytic run): tensors have shapes and no data."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(torch.empty(0), FakeTensor)


def _stored(m: _Making) -> Any:
    """A safetensors input: its declared shape alone in the analytic run; else read from the file, found from the
    problem folder up (SOL-ExecBench's paths are relative to the dataset's root)."""
    import torch

    shape, dtype, name, rel = shape_of(m.spec, m.values), _torch_dtype(m.spec), m.spec.name, m.source.file or ""
    if _analytic(torch):
        return torch.empty(shape, dtype=dtype)
    folder = m.definition.path.parent
    found = next((d / rel for d in (folder, *folder.parents) if (d / rel).is_file()), None)
    if found is None:
        raise ProblemError(f"input {name!r}: {rel} is not in {folder} or above it (SOL-ExecBench's "
                           "scripts/download_data.sh fetches these files)")
    try:
        from safetensors.torch import load_file
    except ImportError:
        raise ProblemError(f"input {name!r}: reading {found.name} needs the safetensors package (pip install "
                           "safetensors; transformers brings it)") from None
    stored = load_file(str(found))
    if m.source.key not in stored:
        raise ProblemError(f"input {name!r}: {found.name} holds no tensor {m.source.key!r}")
    value = stored[m.source.key]
    if list(value.shape) != shape or value.dtype != dtype:
        raise ProblemError(f"input {name!r}: {found.name}[{m.source.key}] is {list(value.shape)} {value.dtype}, "
                           f"the definition says {shape} {dtype}")
    return value.to(torch.get_default_device())


# Each input source's maker (workload.jsonl's `type`).
_MAKERS: dict[str, Callable[[_Making], Any]] = {
    "random": _random,
    "scalar": lambda m: m.source.value,
    "safetensors": _stored,
    "custom": lambda m: m.custom[m.spec.name],
}


def candidate_class(folder: str, uuid: str, entry: str, function: str, dps: bool) -> type:
    """ModelNew for the child: the solution's function as a module of the reference's interface (with `dps`,
    the outputs allocated on the inputs' device and passed after them, then returned as the reference does)."""
    import torch

    definition, works = read_problem(folder)
    work = next((w for w in works if w.uuid == uuid), None)
    if work is None:
        raise ProblemError(f"{folder}: no workload {uuid!r}")
    fn = getattr(load_module(entry, "candidate"), function, None)
    if not callable(fn):
        raise ProblemError(f"{Path(entry).name}: defines no function {function}")
    values = sizes(definition, work)

    def call(*inputs: Any) -> Any:
        if not dps:
            return fn(*inputs)
        device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.get_default_device())
        outs = [torch.empty(shape_of(o, values), dtype=_torch_dtype(o), device=device)
                for o in definition.outputs]
        fn(*inputs, *outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    return _module_class(call, CANDIDATE_CLASS, f"The solution's {function} as a module.")


def child_files(row: Row, folder: str | Path) -> tuple[Path, Path]:
    """The workload and its candidate as two files of the plain convention under `folder` (a temporary folder
    the caller owns), for the candidate's child process: (problem.py, candidate.py)."""
    if row.solution is None:
        raise UsageError(f"{row.label}: no candidate to time")
    d = Path(folder)
    solution, entry = row.solution, row.solution.entry_file(d / "solution")
    problem, candidate = d / "problem.py", d / "candidate.py"
    where = repr(str(row.path.parent.resolve()))
    problem.write_text('"""A SOL-ExecBench workload in the plain convention, for the candidate\'s process (written by '
                       'roofline)."""\n'
                       "from roofline.measuring.solexec import workload_names\n\n"
                       f"Model, get_inputs, get_init_inputs = workload_names({where}, {row.workload.uuid!r})\n")
    candidate.write_text('"""A SOL-ExecBench solution as ModelNew, for the candidate\'s process (written by '
                         'roofline)."""\n'
                         "from roofline.measuring.solexec import candidate_class\n\n"
                         f"{CANDIDATE_CLASS} = candidate_class({where}, {row.workload.uuid!r}, {str(entry)!r}, "
                         f"{solution.function!r}, {solution.dps!r})\n")
    return problem, candidate


def workload_names(folder: str, uuid: str) -> tuple[Any, Any, Any]:
    """Model, get_inputs, get_init_inputs of one workload of a problem folder (what child_files' problem.py
    imports)."""
    definition, works = read_problem(folder)
    work = next((w for w in works if w.uuid == uuid), None)
    if work is None:
        raise ProblemError(f"{folder}: no workload {uuid!r}")
    m = workload_module(definition, work)
    return m.Model, m.get_inputs, m.get_init_inputs
