"""The pytest plugin (roofline.pytest_plugin), driven through pytester: inner pytest sessions run in this
process on the CPU, with the calibration store that tests/conftest.py seeds (no CPU calibration is measured)
and 2 ms sampling budgets (--roofline-rep-ms), so that each session takes well under a second."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from roofline import pytest_plugin
from roofline.core.document import Document, read_document, write_document
from roofline.core.errors import RooflineError
from roofline.measuring.timing import Measurement
from roofline.pytest_plugin import CALL_PARAM, TEST_PARAM, save_document

pytest_plugins = ["pytester"]

# Imported before any inner session: pytester removes from sys.modules what an in-process session imported,
# and a second import of torch's C extension crashes, of a registry that refuses duplicates fails, and of the
# runner would escape a monkeypatch of the first.
for _name in ("torch", "roofline.analysis.advice", "roofline.ci.judge", "roofline.measuring.kernels.families",
              "roofline.measuring.runner", "roofline.ops", "roofline.ops.collectives"):
    importlib.import_module(_name)

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = pytest_plugin.__name__  # what the pytest11 entry point `roofline` names
FAST = ["--roofline-rep-ms", "2"]


def plugin_args() -> list[str]:
    """`-p roofline.pytest_plugin` until the package's pytest11 entry point is installed (then pytest
    loads the plugin by itself, and loading it a second time under another name would be an error)."""
    installed = any(ep.name == "roofline" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", PLUGIN]


# Other plugins of the environment are kept out of the inner sessions: hypothesis's alone imports itself
# again in each one (seconds).
QUIET = ["-p", "no:hypothesispytest", "-p", "no:benchmark", "-p", "no:anyio", "-p", "no:cacheprovider",
         "-W", "ignore::pytest.PytestAssertRewriteWarning"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*plugin_args(), *QUIET, *FAST, "-rs", *args)


# Two kernels on 64 floats: x * 2 is right (its reference is x + x), the second is wrong at index 5 only.
KERNELS = """
import torch

x = torch.arange(64, dtype=torch.float32)


def test_double(roofline, request):
    rec = roofline(lambda: x * 2, ref=lambda: x + x, flops=64, bytes=2 * x.nbytes, dtype="fp32", name="double")
    assert rec.timed and rec.time_s > 0 and rec.roofline_fraction > 0
    assert rec.op == "double" and rec.device_kind == "cpu"
    assert rec.params["test"] == request.node.nodeid
    assert roofline.records == [rec]


def test_gemm(roofline, request):
    rec = roofline(op="gemm", m=32, n=32, k=32, dtype="fp32")
    assert rec.op == "gemm" and rec.flops == 2 * 32 * 32 * 32  # 2mnk
    assert {k: rec.params[k] for k in "mnk"} == {"m": 32, "n": 32, "k": 32}
    assert rec.params["test"] == request.node.nodeid and rec.timed
"""

WRONG = """
import torch

x = torch.arange(16, dtype=torch.float32).reshape(4, 4)


def wrong():
    out = x * 2
    out[1, 1] += 1  # flat index 5
    return out


def test_wrong(roofline):
    roofline(wrong, ref=lambda: x + x, flops=16, bytes=128, dtype="fp32")
"""


def test_fixture_returns_a_record(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    result = run(pytester)
    result.assert_outcomes(passed=2)


def test_a_wrong_kernel_fails_its_test_with_the_index(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_wrong=WRONG)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    # x[1, 1] = 5: got 2*5 + 1 = 11, expected 10; abs error 1, rel error 1/10
    out = result.stdout.str()
    assert ("test_wrong.py:13: roofline: measure 'custom': the kernel is wrong, not timing it: first mismatch at "
            "output[1, 1]: 11, expected 10; 1 of 16 elements (6.2%)") in out
    assert "max abs error 1, max rel error 0.1" in out
    assert "Traceback" not in out and "During handling" not in out


def test_save_writes_one_new_document_per_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    for _ in range(2):
        run(pytester, "--roofline-save", "results").assert_outcomes(passed=2)
    files = sorted((pytester.path / "results").glob("roofline_*.json"))
    assert len(files) == 2, files  # the second session never overwrites the first
    doc = read_document(files[0])
    assert [(r.op, r.params[TEST_PARAM]) for r in doc.records] == [
        ("double", "test_kernels.py::test_double"), ("gemm", "test_kernels.py::test_gemm")]
    assert doc.device["kind"] == "cpu" and doc.device["time_device"] == "cpu" and "ceilings" in doc.device
    assert doc.extra["command"][:1] == ["pytest"] and "--roofline-save" in doc.extra["command"]
    assert all(r.time_samples_s for r in doc.records)


def test_records_get_their_predicted_time_from_roofline_db_or_the_bound(pytester: pytest.Pytester) -> None:
    from roofline.ceilings import opdb

    pytester.makepyfile(test_kernels=KERNELS)
    run(pytester, "--roofline-save", "bare.json").assert_outcomes(passed=2)
    bare = read_document(pytester.path / "bare.json").records
    # no database for the CPU in the test cache: the bound, said so (issue 32: "never silently")
    assert all(r.predicted_time_s == r.roofline_time_s == r.predicted_high_s for r in bare)
    assert {r.prediction_source for r in bare} == {"bound (no operator database for cpu)"}
    # a database of two fp32 GEMM points at a quarter of their roof: the gemm record is predicted from it
    db = opdb.OpDB(device={"kind": "cpu", "id": "cpu", "name": "test CPU"}, path=pytester.path / "cpu-ops.json")
    db.points += [opdb.Point(family="gemm", op="gemm", dtype="fp32", params={"m": m}, flops=2 * m**3,
                             bytes=12 * m * m, roofline_time_s=m**3 * 1e-10, time_s=m**3 * 4e-10) for m in (16, 64)]
    opdb.write(db)
    run(pytester, "--roofline-save", "db.json", "--roofline-db", "cpu-ops.json").assert_outcomes(passed=2)
    gemm = next(r for r in read_document(pytester.path / "db.json").records if r.op == "gemm")
    assert gemm.prediction_source.startswith("gemm fp32: 2 of 2 points")
    assert gemm.predicted_time_s == pytest.approx(4 * gemm.roofline_time_s)  # efficiency 0.25 at both points
    (pytester.path / "bad.json").write_text("{")  # a truncated file: a usage error before any test runs
    result = run(pytester, "--roofline-db", "bad.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--roofline-db: bad.json: not an operator database (corrupt or truncated*"])


def test_save_to_an_existing_file_is_refused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    (pytester.path / "keep.json").write_text("{}")
    result = run(pytester, "--roofline-save", "keep.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--roofline-save keep.json: the file exists; not overwriting it*"])
    assert (pytester.path / "keep.json").read_text() == "{}"


def test_save_document_names(tmp_path: Path) -> None:
    doc = Document(device={"kind": "cpu"}, records=[])
    first, second = save_document(doc, str(tmp_path / "d")), save_document(doc, str(tmp_path / "d"))
    assert first != second and first.exists() and second.exists()
    assert re.fullmatch(r"roofline_\d{8}-\d{6}(_\d+)?\.json", second.name)
    assert save_document(doc, str(tmp_path / "one.json")) == tmp_path / "one.json"
    with pytest.raises(RooflineError, match="exists"):
        save_document(doc, str(tmp_path / "one.json"))


def fake_time_cpu(fn: Any, **_: Any) -> Measurement:
    """The same 20 samples every time (1.000 to 1.019 ms), so that two sessions time identically."""
    fn()
    return Measurement([1e-3 * (1 + 0.001 * i) for i in range(20)], "cpu-perf-counter", 1, 1e-3, l2_flush=False)


def scaled(src: Path, dst: Path, factor: float) -> None:
    """A copy of a results document with every time sample (and median) multiplied by `factor`."""
    data = json.loads(src.read_text())
    for rec in data["records"]:
        rec["time_samples_s"] = [t * factor for t in rec["time_samples_s"]]
        rec["time_s"] *= factor
    dst.write_text(json.dumps(data))


def test_compare_passes_on_an_identical_baseline_and_fails_on_a_faster_one(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("roofline.measuring.runner.time_cpu", fake_time_cpu)
    pytester.makepyfile(test_kernels=KERNELS)
    run(pytester, "--roofline-save", "base.json").assert_outcomes(passed=2)

    same = run(pytester, "--roofline-compare", "base.json")
    same.assert_outcomes(passed=2)
    assert same.ret == 0
    same.stdout.fnmatch_lines(["*compared with base.json: roofline check passed: 2 same*"])

    # A baseline 20% faster: this run's median is 1/0.8 = 1.25x the baseline's, +25% > 5%, and 20 samples
    # against 20 that do not overlap give an exact Mann-Whitney p far below 0.01.
    scaled(pytester.path / "base.json", pytester.path / "fast.json", 0.8)
    slow = run(pytester, "--roofline-compare", "fast.json", "--roofline-fail-on", "median:5%")
    slow.assert_outcomes(passed=2)
    assert slow.ret == pytest.ExitCode.TESTS_FAILED
    slow.stdout.fnmatch_lines(["*roofline check FAILED: 2 worse*",
                               "WORSE double fp32 test=test_kernels.py::test_double: median 25.0% slower (p=*",
                               "*2 passed, 2 regressed*"])


def test_compare_catches_a_real_slowdown(pytester: pytest.Pytester) -> None:
    """Real CPU timings of the elementwise kernel: a baseline at a quarter of the first run's times is a 4x
    slowdown, past what the shared 2-core CI machine varies from one session to the next (up to 1.5x seen)."""
    pytester.makepyfile(test_kernels=KERNELS)
    run(pytester, "-k", "double", "--roofline-save", "base.json").assert_outcomes(passed=1, deselected=1)
    scaled(pytester.path / "base.json", pytester.path / "quarter.json", 0.25)
    result = run(pytester, "-k", "double", "--roofline-compare", "quarter.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # WORSE, or WORSE_BUSY_MACHINE when this shared machine was busy while either session timed: both fail
    result.stdout.fnmatch_lines(["*roofline check FAILED: 1 worse*", "WORSE* double fp32 *: median * slower (p=*"])


def test_compare_with_a_baseline_of_other_tests_compares_nothing(pytester: pytest.Pytester,
                                                                 tmp_path: Path) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    run(pytester, "--roofline-save", "base.json").assert_outcomes(passed=2)
    pytester.makepyfile(test_other=KERNELS)  # the same kernels under other node ids
    result = run(pytester, "test_other.py", "--roofline-compare", "base.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*no record of this session is in base.json: nothing compared*"])


def test_bad_options_are_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    result = run(pytester, "--roofline-device", "tpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--roofline-device 'tpu': use cpu, cuda or cuda:N*"])
    result = run(pytester, "--roofline-compare", "absent.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*roofline: absent.json: no such file*"])
    write_document(Document(device={}, records=[]), pytester.path / "empty.json")
    result = run(pytester, "--roofline-compare", "empty.json", "--roofline-fail-on", "median:5")
    result.stderr.fnmatch_lines(["*--roofline-fail-on 'median:5' is ambiguous*"])


def test_an_absent_device_skips_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    result = run(pytester, "--roofline-device", "cuda")  # conftest hides every GPU (ROOFLINE_NO_GPU)
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_kernels.py:*: roofline: cannot time on --roofline-device cuda: "
                                 "no NVIDIA GPU found on this machine*"] * 2)


def test_the_targets_messages_are_printed_once_and_kept_in_every_record(pytester: pytest.Pytester,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What the target says (here a stand-in for "measured this CPU's roofline") is in the terminal summary once
    and last among the notes of every record, a callable's and a catalog operator's alike (as `roofline run`
    and `roofline analyze` keep it); the catalog's record carries the command's advice."""
    from roofline.measuring import target as target_mod

    said = "measured this CPU's roofline (cached in a test's folder)"
    real = target_mod.resolve_target

    def resolve_target(**kw: Any) -> Any:
        target = real(**kw)
        target.messages.append(said)
        return target

    monkeypatch.setattr(target_mod, "resolve_target", resolve_target)
    pytester.makepyfile(test_kernels=KERNELS)
    result = run(pytester, "--roofline-save", "said.json")
    result.assert_outcomes(passed=2)
    assert result.stdout.str().count(said) == 1
    records = read_document(pytester.path / "said.json").records
    assert [r.op for r in records] == ["double", "gemm"] and all(r.notes[-1] == said for r in records)
    assert records[1].advice is not None and records[1].bound_class


def test_one_test_timing_one_kernel_twice_gets_numbered_records(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_twice="""
        import torch
        x = torch.ones(8)

        def test_twice(roofline):
            a = roofline(lambda: x + 1, flops=8, bytes=64, dtype="fp32")
            b = roofline(lambda: x + 1, flops=8, bytes=64, dtype="fp32")
            assert "call" not in a.params and b.params["call"] == 2
        """)
    run(pytester, "--roofline-save", "twice.json").assert_outcomes(passed=1)
    keys = [r.key() for r in read_document(pytester.path / "twice.json").records]
    assert len(set(keys)) == 2 and CALL_PARAM == "call"


# ---------------------------------------------------------------- loading and turning off
FAKE_DIST = "roofline_plugin_entry-0.dist-info"


def test_entry_point_loads_it_and_p_no_roofline_turns_it_off(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a pytest11 entry point named `roofline`, as the package declares it: a stand-in distribution
    on PYTHONPATH declares it (pytest skips a second entry point of the same name once installed)."""
    site = pytester.mkdir("site")
    dist = site / FAKE_DIST
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: roofline-plugin-entry\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(f"[pytest11]\nroofline = {PLUGIN}\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    pytester.makepyfile(test_device="""
        def test_device(roofline):
            assert roofline.device == "cpu"
        """)
    on = pytester.runpytest_subprocess(*QUIET)
    on.assert_outcomes(passed=1)
    off = pytester.runpytest_subprocess(*QUIET, "-p", "no:roofline")
    off.assert_outcomes(errors=1)
    off.stdout.fnmatch_lines(["*fixture 'roofline' not found*"])
    off = pytester.runpytest_subprocess(*QUIET, "-p", "no:roofline", "--roofline-save", "x")
    off.stderr.fnmatch_lines(["*unrecognized arguments: --roofline-save*"])


def test_help_lists_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*plugin_args(), *QUIET, "--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["roofline: kernels timed and placed on the roofline:", "*--roofline-device=DEVICE*",
                                 "*--roofline-fail-on=RULES*"])
    assert "(default median:5%)" in " ".join(result.stdout.str().split())  # the % survives argparse


def test_the_default_rule_is_checks() -> None:
    from roofline.ci import judge

    assert pytest_plugin.DEFAULT_FAIL_ON == judge.DEFAULT_FAIL_ON  # written out to keep loading cheap


def test_loading_the_plugin_imports_no_torch() -> None:
    code = (f"import sys, {PLUGIN}; "
            "print(sorted(m for m in ('torch', 'matplotlib', 'numpy', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- the user guide's examples
def doc_examples() -> list[tuple[str, str]]:
    """docs/pytest.md's test files: each ```python block that starts with `# test_NAME.py`."""
    text = (ROOT / "docs" / "pytest.md").read_text()
    blocks = re.findall(r"```python\n(# (test_\w+)\.py\n.*?)```", text, flags=re.S)
    return [(name, code) for code, name in blocks]


def test_the_user_guide_examples_run(pytester: pytest.Pytester) -> None:
    examples = doc_examples()
    assert [name for name, _ in examples] == ["test_kernels", "test_catalog"]
    for name, code in examples:
        pytester.makepyfile(**{name: code})
    result = run(pytester, "--roofline-save", "results")
    # test_catalog's GPU test is skipped here (no CUDA device); everything else passes
    result.assert_outcomes(passed=3, skipped=1)
    assert len(list((pytester.path / "results").glob("*.json"))) == 1
