"""The rule the layout depends on: the analytic packages never import torch, matplotlib, triton or the
measuring code (checked in the source, function-level imports included, and in a fresh interpreter)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from helpers import ROOT

PKG = ROOT / "roofline"
# Torch-free by design: the model, the operators, spec and store reading, the answers built on them, the gate.
ANALYTIC = [PKG / "core", PKG / "ops", PKG / "analysis", PKG / "ci", PKG / "importers",
            PKG / "ceilings" / "specs.py", PKG / "ceilings" / "store.py", PKG / "ceilings" / "prices.py",
            PKG / "report" / "format.py", PKG / "report" / "style.py", PKG / "report" / "chart" / "model.py",
            PKG / "report" / "chart" / "placer.py", PKG / "report" / "chart" / "grid.py",
            PKG / "report" / "profile.py", PKG / "report" / "plain.py", PKG / "report" / "rows.py"]
FORBIDDEN = ("torch", "matplotlib", "triton", "roofline.measuring")


def _files() -> list:
    out = []
    for p in ANALYTIC:
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return out


def _imports(path) -> list[str]:  # type: ignore[no-untyped-def]
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_analytic_sources_import_nothing_heavy() -> None:
    files = _files()
    assert len(files) > 15  # the packages exist where this test looks
    bad = [f"{f.relative_to(ROOT)}: {name}" for f in files for name in _imports(f)
           if any(name == x or name.startswith(x + ".") for x in FORBIDDEN)]
    assert bad == []


def test_importing_the_analytic_packages_loads_no_torch() -> None:
    modules = sorted({".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                      for f in _files()})
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'matplotlib', 'triton') or m.startswith('roofline.measuring'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(out.stdout) == []


def test_the_checker_sees_a_function_level_import(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "m.py"
    p.write_text("def f():\n    import torch\n    from roofline.measuring.runner import measure\n")
    assert _imports(p) == ["torch", "roofline.measuring.runner"]
