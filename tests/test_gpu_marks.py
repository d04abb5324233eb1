"""Where GPU tests live: a test file holding GPU tests is named *_gpu.py and marks all its tests `gpu` at module
level (`pytestmark`), which conftest.py skips where torch sees no CUDA device; no other test file marks a test
`gpu`. So `pytest -m gpu tests/` and a list of *_gpu.py files (scripts/gpu_check.sh) name the same tests, and a
CPU file never hides a GPU test. Read from the source (ast), without importing the files."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT

GPU_MARK = "pytest.mark.gpu"


def _marks(path: Path) -> tuple[bool, bool]:
    """(the module's `pytestmark` holds the gpu mark, some test or the module is marked gpu) for a test file."""
    tree = ast.parse(path.read_text())
    module = any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets)
                 and GPU_MARK in ast.unparse(node.value) for node in tree.body)
    tests = any(GPU_MARK in ast.unparse(d) for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) for d in node.decorator_list)
    return module, module or tests


def misplaced(folder: Path) -> list[str]:
    """Each test file of `folder` that breaks the rule, with why."""
    out = []
    for path in sorted(folder.glob("test_*.py")):
        module, any_gpu = _marks(path)
        if path.name.endswith("_gpu.py") and not module:
            out.append(f"{path.name}: a *_gpu.py file without `pytestmark = pytest.mark.gpu`")
        elif any_gpu and not path.name.endswith("_gpu.py"):
            out.append(f"{path.name}: marks GPU tests, but is not named *_gpu.py (move them to one)")
    return out


def test_gpu_tests_live_in_gpu_files_each_marked() -> None:
    folder = ROOT / "tests"
    assert len(list(folder.glob("test_*_gpu.py"))) >= 8  # the rule is about files that exist
    assert misplaced(folder) == []


def test_a_gpu_test_in_a_cpu_file_and_an_unmarked_gpu_file_are_found(tmp_path: Path) -> None:
    (tmp_path / "test_plainer.py").write_text("import pytest\n\n\n@pytest.mark.gpu\ndef test_x() -> None:\n    pass\n")
    (tmp_path / "test_unmarked_gpu.py").write_text("def test_y() -> None:\n    pass\n")
    (tmp_path / "test_fine_gpu.py").write_text("import pytest\n\npytestmark = [pytest.mark.gpu]\n")
    assert misplaced(tmp_path) == [
        "test_plainer.py: marks GPU tests, but is not named *_gpu.py (move them to one)",
        "test_unmarked_gpu.py: a *_gpu.py file without `pytestmark = pytest.mark.gpu`"]
