"""SOL-ExecBench's problem format, read and validated (NVIDIA/SOL-ExecBench: docs/definition.md, docs/workload.md,
docs/solution.md; src/sol_execbench/core/data/ for its validation rules). Typed records, no torch: a problem folder
holds

- `definition.json`: named axes (`const` with a value, `var` given by each workload, `expr` computed from the
  others), named inputs and outputs with symbolic shapes (axis names or literal digits; `null` for a Python
  scalar) and dtypes, and the reference as Python source defining `run(<the inputs, in order>)`, which returns
  the outputs (and, optionally, `custom_inputs_entrypoint`, a function of it that makes constrained inputs, and
  `constraints` between axes);
- `workload.jsonl`: one concrete shape per line: the `var` axes' values and where each input comes from
  (`random`, `scalar` with a value, `safetensors` with a file and key, `custom` from the entrypoint).

A candidate is a solution: `solution.json` (its sources, `spec.entry_point` `FILE.py::FUNCTION`,
`spec.destination_passing_style`) or a Python file defining `run`. Every error is one UsageError line naming the
file (and line). measuring/solexec.py turns the records into problems.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.core.errors import UsageError

DEFINITION = "definition.json"
WORKLOADS = "workload.jsonl"
AXIS_KINDS = ("const", "var", "expr")
# SOL-ExecBench's dtypes (docs/definition.md) and their torch names; float4_e2m1 has none (torch packs fp4 in pairs).
DTYPES = {"float64": "float64", "float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
          "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "float4_e2m1": None,
          "float4_e2m1fn_x2": "float4_e2m1fn_x2", "int64": "int64", "int32": "int32", "int16": "int16",
          "int8": "int8", "bool": "bool"}
# The languages whose solutions are Python (docs/solution.md); C++ ones (cuda_cpp, cutlass) need a build.
PYTHON_LANGUAGES = ("pytorch", "triton", "cute_dsl", "cutile", "cudnn_frontend")


# -- the records
@dataclass(frozen=True)
class Axis:
    name: str
    kind: str  # AXIS_KINDS
    value: int | None = None  # const
    expression: str | None = None  # expr


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[str, ...] | None  # axis names or digits; None: a Python scalar
    dtype: str


@dataclass(frozen=True)
class Definition:
    path: Path  # its definition.json
    name: str
    axes: tuple[Axis, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    reference: str
    op_type: str | None = None
    custom_inputs: str | None = None  # custom_inputs_entrypoint
    constraints: tuple[str, ...] = ()


@dataclass(frozen=True)
class InputSource:
    kind: str  # random, scalar, safetensors, custom
    value: int | float | bool | None = None  # scalar
    file: str | None = None  # safetensors
    key: str | None = None


@dataclass(frozen=True)
class Tolerance:
    """SOL-ExecBench's correctness bounds of a workload (docs/workload.md), kept with it: `roofline sol` checks
    outputs with its own tolerances (docs/sol.md), not these."""

    max_atol: float = 1e-2
    max_rtol: float = 1e-2
    required_matched_ratio: float = 0.99
    max_error_cap: float | None = None
    allow_negative_inf: bool = False


@dataclass(frozen=True)
class Workload:
    line: int  # in workload.jsonl, from 1
    uuid: str
    axes: dict[str, int]
    inputs: dict[str, InputSource]
    tolerance: Tolerance = field(default_factory=Tolerance)


# -- arithmetic of axes: a few operators on whole numbers, nothing else (no calls, no attributes)
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge}


class NotArithmetic(ValueError):
    """An expression this evaluator does not take: a name it was not given, a call, an attribute, ..."""


def evaluate(expression: str, names: dict[str, int]) -> Any:
    """The value of an axis expression or constraint ("H_qo == H_kv * H_r") over `names`."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise NotArithmetic(f"not an expression: {exc.msg}") from None
    return _eval(tree.body, names)


def _eval(node: ast.AST, names: dict[str, int]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise NotArithmetic(f"{node.id} is not an axis")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, names), _eval(node.right, names))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, names))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        values = [_eval(node.left, names), *(_eval(c, names) for c in node.comparators)]
        return all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:], strict=False))
    raise NotArithmetic(f"{type(node).__name__} is not arithmetic on axes")


# -- reading and validating
class _Where:
    """A place in a file, for one-line errors: 'rmsnorm/workload.jsonl line 3: ...'."""

    def __init__(self, path: Path, line: int | None = None) -> None:
        self.text = f"{path} line {line}" if line else str(path)

    def error(self, message: str) -> UsageError:
        return UsageError(f"{self.text}: {message}")

    def get(self, obj: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str, required: bool = True,
            default: Any = None) -> Any:
        if key not in obj or obj[key] is None:
            if required:
                raise self.error(f"{what} has no {key!r}")
            return default
        value = obj[key]
        wanted = kind if isinstance(kind, tuple) else (kind,)
        if (isinstance(value, bool) and bool not in wanted) or not isinstance(value, wanted):
            names = " or ".join({"str": "a string", "dict": "an object", "list": "a list", "int": "a whole number",
                                 "float": "a number", "bool": "true or false"}[k.__name__] for k in wanted)
            raise self.error(f"{what}'s {key!r} must be {names}, got {json.dumps(value)[:60]}")
        if isinstance(value, str) and not value.strip():
            raise self.error(f"{what}'s {key!r} is empty")
        return value

    def kind(self, raw: Any, what: str, kinds: Iterable[str]) -> str:
        """The 'type' of an object that must be one of `kinds` (an axis's, an input source's)."""
        if not isinstance(raw, dict):
            raise self.error(f"{what} must be an object with a 'type'")
        kind = self.get(raw, "type", str, what)
        if kind not in kinds:
            raise self.error(f"{what}'s type must be one of {', '.join(kinds)}, got {kind!r}")
        return str(kind)


def _json(text: str, where: _Where, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise where.error(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(value, dict):
        raise where.error(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _axis(name: str, raw: Any, where: _Where) -> Axis:
    what = f"axis {name!r}"
    kind = where.kind(raw, what, AXIS_KINDS)
    if kind == "const":
        value = where.get(raw, "value", int, what)
        if value < 0:
            raise where.error(f"{what}'s value must be 0 or more, got {value}")
        return Axis(name, kind, value=value)
    if kind == "expr":
        expression = where.get(raw, "expression", str, what)
        try:
            ast.parse(expression, mode="eval")
        except SyntaxError as exc:
            raise where.error(f"{what}'s expression {expression!r} is not an expression: {exc.msg}") from None
        return Axis(name, kind, expression=expression)
    return Axis(name, kind)


def _tensor(name: str, raw: Any, axes: set[str], where: _Where, what: str) -> TensorSpec:
    what = f"{what} {name!r}"
    if not isinstance(raw, dict):
        raise where.error(f"{what} must be an object with 'shape' and 'dtype'")
    dtype = where.get(raw, "dtype", str, what)
    if dtype not in DTYPES:
        raise where.error(f"{what}'s dtype {dtype!r} is not one of SOL-ExecBench's ({', '.join(DTYPES)})")
    shape = raw.get("shape")
    if shape is None:
        return TensorSpec(name, None, dtype)
    if not isinstance(shape, list) or not all(isinstance(s, str) and s for s in shape):
        raise where.error(f"{what}'s shape must be a list of axis names (or null for a scalar)")
    unknown = [s for s in shape if not s.isdigit() and s not in axes]
    if unknown:
        raise where.error(f"{what}'s shape names {', '.join(unknown)}, not an axis of the definition")
    return TensorSpec(name, tuple(shape), dtype)


def _run_parameters(source: str, where: _Where) -> tuple[list[str], set[str]]:
    """The parameters of the reference's top-level `run`, and its top-level function names."""
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise where.error(f"the reference is not Python: {exc.msg} (its line {exc.lineno})") from None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if "run" not in functions:
        raise where.error("the reference defines no top-level function run (its entry point)")
    args = functions["run"].args
    return [a.arg for a in (*args.posonlyargs, *args.args)], set(functions)


def read_definition(path: str | Path) -> Definition:
    """definition.json, validated: one UsageError line naming the file for anything SOL-ExecBench would refuse."""
    p = Path(path)
    where = _Where(p)
    try:
        raw = _json(p.read_text(encoding="utf-8"), where, "a definition")
    except (OSError, UnicodeDecodeError) as exc:
        raise where.error(f"cannot be read: {exc}") from None
    name = where.get(raw, "name", str, "the definition")
    axes_raw = where.get(raw, "axes", dict, "the definition")
    axes = tuple(_axis(n, a, where) for n, a in axes_raw.items())
    names = {a.name for a in axes}
    inputs = tuple(_tensor(n, t, names, where, "input")
                   for n, t in where.get(raw, "inputs", dict, "the definition").items())
    outputs = tuple(_tensor(n, t, names, where, "output")
                    for n, t in where.get(raw, "outputs", dict, "the definition").items())
    reference = where.get(raw, "reference", str, "the definition")
    custom = where.get(raw, "custom_inputs_entrypoint", str, "the definition", required=False)
    constraints = where.get(raw, "constraints", list, "the definition", required=False, default=[])
    _check_definition(where, names, inputs, outputs, reference, custom, constraints)
    return Definition(p, name, axes, inputs, outputs, reference,
                      op_type=where.get(raw, "op_type", str, "the definition", required=False),
                      custom_inputs=custom, constraints=tuple(constraints))


def _check_definition(where: _Where, axes: set[str], inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
                      reference: str, custom: str | None, constraints: list[Any]) -> None:
    if clash := [t.name for t in inputs if t.name in axes]:
        raise where.error(f"input {clash[0]!r} has an axis's name")
    if clash := sorted({t.name for t in inputs} & {t.name for t in outputs}):
        raise where.error(f"{clash[0]!r} is both an input and an output")
    params, functions = _run_parameters(reference, where)
    wanted = [t.name for t in inputs]
    if params != wanted:
        raise where.error(f"the reference's run({', '.join(params)}) must take the inputs in order: "
                          f"run({', '.join(wanted)})")
    if custom is not None and custom not in functions:
        raise where.error(f"custom_inputs_entrypoint {custom!r} is not a top-level function of the reference")
    if bad := [c for c in constraints if not isinstance(c, str)]:
        raise where.error(f"constraints must be strings, got {json.dumps(bad[0])[:60]}")


def _source(name: str, raw: Any, where: _Where) -> InputSource:
    what = f"input {name!r}"
    return _SOURCES[where.kind(raw, what, _SOURCES)](raw, where, what)


_SOURCES: dict[str, Callable[[dict[str, Any], _Where, str], InputSource]] = {
    "random": lambda raw, where, what: InputSource("random"),
    "scalar": lambda raw, where, what: InputSource("scalar", value=where.get(raw, "value", (int, float, bool), what)),
    "safetensors": lambda raw, where, what: InputSource("safetensors", file=where.get(raw, "path", str, what),
                                                        key=where.get(raw, "tensor_key", str, what)),
    "custom": lambda raw, where, what: InputSource("custom"),
}


def _tolerance(raw: Any, where: _Where) -> Tolerance:
    if raw is None:
        return Tolerance()
    if not isinstance(raw, dict):
        raise where.error("tolerance must be an object")
    known = set(Tolerance.__dataclass_fields__)
    if unknown := sorted(set(raw) - known):
        raise where.error(f"tolerance has no field {unknown[0]!r} (it has {', '.join(sorted(known))})")
    d = Tolerance()
    return Tolerance(where.get(raw, "max_atol", (int, float), "tolerance", False, d.max_atol),
                     where.get(raw, "max_rtol", (int, float), "tolerance", False, d.max_rtol),
                     where.get(raw, "required_matched_ratio", (int, float), "tolerance", False,
                               d.required_matched_ratio),
                     where.get(raw, "max_error_cap", (int, float), "tolerance", False, None),
                     where.get(raw, "allow_negative_inf", bool, "tolerance", False, False))


def _workload(raw: dict[str, Any], definition: Definition, where: _Where, line: int) -> Workload:
    uuid = where.get(raw, "uuid", str, "the workload")
    axes = where.get(raw, "axes", dict, "the workload")
    kinds = {a.name: a.kind for a in definition.axes}
    for name, value in axes.items():
        if kinds.get(name) != "var":
            raise where.error(f"axis {name!r} is not a var axis of {definition.name} "
                              f"(its var axes: {', '.join(n for n, k in kinds.items() if k == 'var') or 'none'})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise where.error(f"axis {name!r} must be a whole number, 0 or more, got {json.dumps(value)}")
    if missing := [n for n, k in kinds.items() if k == "var" and n not in axes]:
        raise where.error(f"no value for the var axis {missing[0]!r}")
    inputs = {n: _source(n, s, where) for n, s in where.get(raw, "inputs", dict, "the workload").items()}
    _check_inputs(inputs, definition, where)
    work = Workload(line, uuid, dict(axes), inputs, _tolerance(raw.get("tolerance"), where))
    for c in definition.constraints:
        try:
            holds = evaluate(c, sizes(definition, work))
        except NotArithmetic:  # it reads the inputs' data ("kv_indptr[-1].item()"): the reference checks it
            continue
        if not holds:
            raise where.error(f"the constraint {c!r} does not hold for {axes_text(axes)}")
    return work


def _check_inputs(inputs: dict[str, InputSource], definition: Definition, where: _Where) -> None:
    wanted = [t.name for t in definition.inputs]
    if missing := [n for n in wanted if n not in inputs]:
        raise where.error(f"no source for the input {missing[0]!r}")
    if extra := [n for n in inputs if n not in wanted]:
        raise where.error(f"{extra[0]!r} is not an input of {definition.name}")
    custom = [n for n, s in inputs.items() if s.kind == "custom"]
    if custom and len(custom) != len(inputs):
        raise where.error("custom inputs and others in one workload: SOL-ExecBench takes all custom or none")
    if custom and definition.custom_inputs is None:
        raise where.error("custom inputs, but the definition has no custom_inputs_entrypoint")
    for t in definition.inputs:
        if (t.shape is None) != (inputs[t.name].kind == "scalar") and not custom:
            raise where.error(f"input {t.name!r}: " + ("a scalar of the definition (shape null) takes type "
                              "'scalar'" if t.shape is None else "a 'scalar' source for a tensor input"))


def read_workloads(path: str | Path, definition: Definition) -> list[Workload]:
    """workload.jsonl against its definition, validated line by line (blank lines skipped)."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise _Where(p).error(f"cannot be read: {exc}") from None
    out: list[Workload] = []
    seen: set[str] = set()
    for i, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        where = _Where(p, i)
        work = _workload(_json(text, where, "a workload"), definition, where, i)
        if work.uuid in seen:
            raise where.error(f"uuid {work.uuid!r} is given twice")
        seen.add(work.uuid)
        out.append(work)
    if not out:
        raise _Where(p).error("no workload in this file")
    return out


def sizes(definition: Definition, workload: Workload) -> dict[str, int]:
    """Every axis's value for a workload: the consts, the workload's vars, the exprs computed from them."""
    out = {a.name: a.value for a in definition.axes if a.kind == "const" and a.value is not None}
    out.update(workload.axes)
    pending = [a for a in definition.axes if a.kind == "expr"]
    while pending:
        left = []
        for a in pending:
            try:
                value = evaluate(a.expression or "", out)
            except NotArithmetic:
                left.append(a)
                continue
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _Where(definition.path).error(f"axis {a.name!r} = {a.expression} is {value!r} for "
                                                    f"{axes_text(workload.axes)}, not a whole number 0 or more")
            out[a.name] = value
        if len(left) == len(pending):
            raise _Where(definition.path).error(f"axis {left[0].name!r} = {left[0].expression} refers to no axis "
                                                "with a value (or to itself through others)")
        pending = left
    return out


def shape_of(spec: TensorSpec, values: dict[str, int]) -> list[int]:
    return [int(s) if s.isdigit() else values[s] for s in spec.shape or ()]


def axes_text(axes: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in axes.items())


def read_problem(folder: str | Path) -> tuple[Definition, list[Workload]]:
    """A problem folder's definition and workloads, validated."""
    d = Path(folder)
    definition = read_definition(d / DEFINITION)
    if not (d / WORKLOADS).is_file():
        raise UsageError(f"{d}: no {WORKLOADS} beside {DEFINITION} (one workload per line)")
    return definition, read_workloads(d / WORKLOADS, definition)


# -- candidates: SOL-ExecBench's solutions
@dataclass(frozen=True)
class Solution:
    """What runs the candidate: its entry file, the function, whether outputs are passed in (DPS), and for a
    solution.json its sources (relative path -> text), written out only for the child (`entry_file`)."""

    path: Path  # the solution.json or the .py
    entry: str  # the file of the entry point: relative to the sources, or `path` itself
    function: str
    dps: bool
    sources: dict[str, str] = field(default_factory=dict)

    def entry_file(self, folder: Path) -> Path:
        """The entry point's file, its sources written under `folder` first (a .py is where it is)."""
        if not self.sources:
            return self.path.resolve()
        for rel, content in self.sources.items():
            out = folder / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(content, encoding="utf-8")
        return (folder / self.entry).resolve()


def read_solution(path: str | Path, definition: Definition) -> Solution:
    """A solution.json of a Python language, or a .py file defining run (returning the outputs), validated."""
    p = Path(path)
    if p.suffix == ".py":
        return Solution(p, p.name, "run", False)
    where = _Where(p)
    try:
        raw = _json(p.read_text(encoding="utf-8"), where, "a solution")
    except (OSError, UnicodeDecodeError) as exc:
        raise where.error(f"cannot be read: {exc}") from None
    named = where.get(raw, "definition", str, "the solution")
    if named != definition.name:
        raise where.error(f"solves {named!r}, not {definition.name!r}")
    spec = where.get(raw, "spec", dict, "the solution")
    languages = where.get(spec, "languages", list, "the spec")
    if not languages or any(lang not in PYTHON_LANGUAGES for lang in languages):
        raise where.error(f"languages {languages}: only Python solutions run here ({', '.join(PYTHON_LANGUAGES)}); "
                          "C++ ones need SOL-ExecBench's build")
    entry = where.get(spec, "entry_point", str, "the spec")
    file, _, function = entry.partition("::")
    if not file.endswith(".py") or not function.isidentifier():
        raise where.error(f"entry_point {entry!r} must be FILE.py::FUNCTION")
    sources = _sources(where.get(raw, "sources", list, "the solution"), where)
    if file not in sources:
        raise where.error(f"entry_point's file {file!r} is not among its sources")
    dps = where.get(spec, "destination_passing_style", bool, "the spec", required=False, default=True)
    return Solution(p, file, function, dps, sources)


def _sources(raw: list[Any], where: _Where) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in raw:
        if not isinstance(s, dict):
            raise where.error("each source must be an object with 'path' and 'content'")
        rel = where.get(s, "path", str, "a source")
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise where.error(f"source path {rel!r} must be relative, without '..'")
        if rel in out:
            raise where.error(f"source path {rel!r} is given twice")
        out[rel] = where.get(s, "content", str, "a source")
    return out
