"""A function that runs `import torch.x` binds `torch` as a local name for its whole body: in a module that
imports torch at the top, every other use of `torch` in that function then raises UnboundLocalError on any path
that skipped the import. That broke every timed GPU profile once (capture/profile.py imported torch._dynamo in
its analytic branch; the GPU branch's torch.cuda.synchronize raised), and no CPU test reached the GPU branch, so
this test reads the source instead."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "roofline"


def _module_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def shadowing_imports(source: str) -> list[tuple[str, int, str]]:
    """(function, line, name) for each import inside a function that rebinds a module-level import's name
    while the function also uses that name elsewhere."""
    tree = ast.parse(source)
    top = _module_level_names(tree)
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Import):
                continue
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                # `import torch` (the whole module, again) is harmless only if it runs first on every path;
                # a dotted `import torch.x` without `as` is the trap
                if name in top and alias.asname is None and "." in alias.name:
                    found.append((fn.name, node.lineno, alias.name))
    return found


def test_the_check_finds_the_trap() -> None:
    src = ("import torch\n\ndef f(a):\n    if a:\n        import torch._dynamo\n"
           "        return torch._dynamo\n    return torch.cuda\n")
    assert shadowing_imports(src) == [("f", 5, "torch._dynamo")]
    assert shadowing_imports(src.replace("import torch._dynamo", "from torch import _dynamo")) == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_shadows_a_module_import(path: Path) -> None:
    assert shadowing_imports(path.read_text(encoding="utf-8")) == []
