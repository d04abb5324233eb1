"""The rules the layout depends on, read from the source (function-level and TYPE_CHECKING imports included):

1. Layers import only downward: each folder of `roofline/` has a rank (LAYERS, lowest first) and imports only
   from folders of a lower rank, or from itself.
2. No two modules import each other, directly or around a longer circle.
3. The analytic layers never import torch, matplotlib, triton or the measuring code, checked in the source and
   in a fresh interpreter, so the analytic commands start fast.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from helpers import ROOT

PKG = ROOT / "roofline"
# Lowest first. A folder may import the folders before it; folders on one line are siblings and import
# neither each other. The top-level modules (`api`, `session`, `pytest_plugin`, ...) sit above `report`,
# `cli` above them.
LAYERS: list[tuple[str, ...]] = [
    ("_version",),
    ("core",),       # roofline math, dtypes, Record/Document, stats, number formats, progress protocol
    ("ceilings",),   # data only: spec tables, the calibration store, prices
    ("ops",),        # the operator catalog: pure FLOP and byte formulas
    ("analysis",),   # answers on records: advice, what-if, compare, occupancy, suites
    ("ci",),         # the gate as data: match, noise, rules, verdicts, baselines
    ("history",),    # the store of runs over commits (SQLite, PostgreSQL) and the change points in its series
    ("measuring",),  # everything that runs kernels: timers, clocks, builders, calibration
    ("capture",),    # whole-model profiling: tracer, formula registry and families, Profile
    ("ncu", "traces"),  # Nsight Compute: run, target programs, readers, join; torch.profiler traces read in
    ("report",),     # every renderer: text, charts, terminal, HTML, profile views, check formats
    ("session",),              # the use cases the facade, the pytest plugin and the CLI share
    ("api", "pytest_plugin"),  # the facade (measure, analyze) and the pytest plugin: both call session
    ("__init__",),             # the public namespace: the facade's names and the types the docs use
    ("cli",),                  # typer commands only
    ("__main__",),             # `python -m roofline`
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
# Torch-free by design: the model, the operators, spec and store reading, the answers built on them, the gate.
ANALYTIC = ("core", "ceilings", "ops", "analysis", "ci", "history")
FORBIDDEN = ("torch", "matplotlib", "triton", "roofline.measuring")


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


MODULES = {_module(p): p for p in sorted(PKG.rglob("*.py"))}


def _folder(module: str) -> str:
    """'roofline.capture.trace' -> 'capture'; 'roofline.api' -> 'api'; 'roofline' -> '__init__'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, module: str | None = None) -> list[str]:
    """Every module name an import statement of `path` names (relative imports resolved; `module`: its
    name, when it is not under ROOT)."""
    names = []
    module = module or _module(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join([*base, *([node.module] if node.module else [])])
            subs = [f"{mod}.{a.name}" for a in node.names]
            # `from pkg import mod` names the module; `from pkg import name` names the package
            names += [s for s in subs if s in MODULES] or [mod]
    return names


def _roofline_imports(path: Path) -> set[str]:
    """The roofline modules `path` imports (a name resolved to its longest module prefix)."""
    out = set()
    for name in _imports(path):
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name.startswith("roofline") and name != _module(path):
            out.add(name)
    return out


GRAPH = {m: _roofline_imports(p) for m, p in MODULES.items()}


def test_every_folder_has_a_layer() -> None:
    assert sorted({_folder(m) for m in MODULES} - set(RANK)) == []


def test_layers_import_only_downward() -> None:
    up = [f"{a} -> {b}" for a, bs in GRAPH.items() for b in sorted(bs)
          if _folder(a) != _folder(b) and RANK[_folder(b)] >= RANK[_folder(a)]]
    assert up == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_modules_import_each_other() -> None:
    assert _cycles(GRAPH) == []


def test_the_checks_see_an_upward_import_and_a_circle(tmp_path: Path) -> None:
    p = tmp_path / "m.py"
    p.write_text("def f():\n    import torch\n    from roofline.measuring.runner import measure\n")
    assert _imports(p, "roofline.ops.m") == ["torch", "roofline.measuring.runner"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert RANK[_folder("roofline.ci.judge")] < RANK[_folder("roofline.report.check")]


def _analytic_files() -> list[Path]:
    return [p for m, p in MODULES.items() if _folder(m) in ANALYTIC]


def test_analytic_sources_import_nothing_heavy() -> None:
    files = _analytic_files()
    assert len(files) > 15  # the packages exist where this test looks
    bad = [f"{f.relative_to(ROOT)}: {name}" for f in files for name in _imports(f)
           if any(name == x or name.startswith(x + ".") for x in FORBIDDEN)]
    assert bad == []


def test_importing_the_analytic_packages_loads_no_torch() -> None:
    modules = sorted(_module(f) for f in _analytic_files())
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'matplotlib', 'triton') or m.startswith('roofline.measuring'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(out.stdout) == []


# A module holds one concept; past this it is two (STYLE.md: pytest-benchmark and hyperfine keep every file under
# ~600 lines).
MAX_MODULE_LINES = 600


def test_no_module_is_over_the_line_limit() -> None:
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}
