"""The calibration store: keying, stale entries, a corrupted file, and the CPU calibration."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.ceilings import store
from roofline.core.model import Ceilings
from roofline.core.progress import RooflineNotice
from roofline.measuring import calibrate as calibrate_mod
from roofline.measuring.calibrate import FULL_CPU_PLAN, QUICK_CPU_PLAN, CpuPlan, cpu_ceilings, measure_cpu


def _ceilings(rate: float) -> Ceilings:
    return Ceilings(device_id="cpu", device_name="Test CPU", kind="cpu", source="measured",
                    compute={"cpu_fp32": rate}, memory={"dram": 1e10})


@pytest.fixture(autouse=True)
def _empty_store() -> None:
    """These tests start from an empty store (conftest seeds a CPU entry for everyone else)."""
    store.store_path().unlink(missing_ok=True)


def test_save_and_lookup_by_key() -> None:
    key = store.cpu_key("Test CPU", 2)
    assert store.lookup(key) is None
    store.save(key, _ceilings(1e11), {"x": 1})
    found = store.lookup(key)
    assert found is not None and found[0].compute["cpu_fp32"] == 1e11 and found[1] == {"x": 1}
    store.save(key, _ceilings(2e11), {})  # replacing an entry keeps one per key
    assert store.lookup(key)[0].compute["cpu_fp32"] == 2e11  # type: ignore[index]


def test_stale_entries_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    key = store.gpu_key("NVIDIA H200", "580.1")
    store.save(key, _ceilings(1e12), {})
    assert store.lookup(store.gpu_key("NVIDIA H200", "590.0")) is None  # another driver
    monkeypatch.setattr(store, "torch_version", lambda: "9.9.9")
    assert store.lookup(store.gpu_key("NVIDIA H200", "580.1")) is None  # another torch


def test_a_cpu_calibration_of_an_older_method_is_measured_again() -> None:
    # method 1's L3 roof could be the DRAM rate (a VM reporting its host's L3): a stored entry without today's
    # method is not this machine's calibration
    key = store.cpu_key("Test CPU", 2)
    old = {k: v for k, v in key.items() if k != "method"}
    store.save(old, _ceilings(1e11), {})
    assert store.lookup(key) is None and key["method"] == store.CPU_METHOD


def test_corrupted_store_warns_once_and_remeasures(recwarn: pytest.WarningsRecorder) -> None:
    store.store_path().parent.mkdir(parents=True, exist_ok=True)
    store.store_path().write_text("{not json")
    assert store.lookup(store.cpu_key("x", 1)) is None
    store.save(store.cpu_key("x", 1), _ceilings(1e9), {})  # reads the file again: said once (it said it twice)
    said = [str(w.message) for w in recwarn]
    assert len(said) == 1 and "unreadable" in said[0] and recwarn[0].category is RooflineNotice
    assert store.lookup(store.cpu_key("x", 1)) is not None  # rewritten whole


def test_bad_values_in_store_are_rejected() -> None:
    store.save(store.cpu_key("x", 1), _ceilings(1e9), {})
    text = store.store_path().read_text().replace("1000000000.0", "-1.0")
    store.store_path().write_text(text)
    with pytest.warns(UserWarning):
        assert store.lookup(store.cpu_key("x", 1)) is None


# A plan small enough to measure in milliseconds: the tests check the calibration's wiring, not the CPU.
TINY = CpuPlan(matmul_n={"fp32": (64,), "fp64": (64,), "bf16": (32,)}, bandwidth_bytes=4 * 2**20, reps=2, bf16_reps=1)


def test_cpu_calibration_measures_then_caches() -> None:
    messages: list[str] = []
    first = cpu_ceilings(messages, plan=TINY)
    assert messages and "measured" in messages[0]
    assert first.compute["cpu_fp32"] > 1e6 and first.memory["dram"] > 1e6  # any CPU: > 1 MFLOP/s, 1 MB/s
    again: list[str] = []
    second = cpu_ceilings(again, plan=TINY)
    assert not again and second.compute == first.compute  # from the store, not measured again


def test_measure_cpu_reports_each_dtype_as_the_plan_says() -> None:
    ceilings, details = measure_cpu(plan=TINY)
    assert {"cpu_fp32", "cpu_fp64", "cpu_bf16", "cpu_fp16"} <= set(ceilings.compute)
    assert ceilings.compute["cpu_fp16"] == ceilings.compute["cpu_bf16"]  # half matmuls share the bf16 path
    assert {name: m["n"] for name, m in details["matmul"].items()} == {"fp32": 64, "fp64": 64, "bf16": 32}
    assert details["bandwidth"]["bytes"] == 4 * 2**20
    # the memory roof is the copy: read + write bytes over the best copy time
    assert ceilings.memory["dram"] == pytest.approx(2 * 4 * 2**20 / details["bandwidth"]["copy_best_s"])


@pytest.mark.parametrize("quick", [False, True])
def test_calibrate_honours_quick_on_the_cpu(monkeypatch: pytest.MonkeyPatch, quick: bool) -> None:
    used: list[CpuPlan] = []

    def fake_measure(progress: object = None, plan: CpuPlan = FULL_CPU_PLAN) -> tuple[Ceilings, dict[str, int]]:
        used.append(plan)
        return _ceilings(1e9), {}

    monkeypatch.setattr(calibrate_mod, "measure_cpu", fake_measure)
    ceilings, _ = calibrate_mod.calibrate("cpu", quick=quick)
    assert used == [QUICK_CPU_PLAN if quick else FULL_CPU_PLAN]
    assert cpu_ceilings() == ceilings  # stored for analyze


def test_cpu_plans() -> None:
    # the full plan's buffer is far beyond any CPU's last-level cache; the quick one measures one size per dtype
    assert FULL_CPU_PLAN.bandwidth_bytes >= 2**28
    assert all(len(sizes) == 1 for sizes in QUICK_CPU_PLAN.matmul_n.values())
    assert all(max(QUICK_CPU_PLAN.matmul_n[d]) <= min(FULL_CPU_PLAN.matmul_n[d]) for d in QUICK_CPU_PLAN.matmul_n)
    with pytest.raises(ValueError, match="fp32, fp64, bf16"):
        CpuPlan(matmul_n={"fp32": (64,)}, bandwidth_bytes=2**20, reps=1, bf16_reps=1)


def test_a_corrupted_store_is_one_note_line_under_the_command_lines_status_line(
        recwarn: pytest.WarningsRecorder) -> None:
    """Issue 52: a corrupted cache printed two raw UserWarnings, each with its source line (`store.py:100:
    UserWarning: ...` and the code beneath). Under the command line's StatusLine (every command that resolves a
    target runs under one) it is one `note:` line, and no warning."""
    import io

    from rich.console import Console

    from roofline.report.progress import StatusLine

    store.store_path().parent.mkdir(parents=True, exist_ok=True)
    store.store_path().write_text("{not json")
    buf = io.StringIO()
    with StatusLine(Console(file=buf, force_terminal=False, width=80)):
        assert store.lookup(store.cpu_key("x", 1)) is None
        store.save(store.cpu_key("x", 1), _ceilings(1e9), {})
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"note: the cache {store.store_path()} is unreadable ("), lines
    assert "ignored (a roof it held is measured again" in lines[0] and not recwarn.list


def test_an_unwritable_cache_folder_is_said_once_and_the_roof_measured_anyway(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recwarn: pytest.WarningsRecorder) -> None:
    """Issue 52: a cache folder that cannot be written failed a timed `analyze` (exit 1, "cannot write ...") after
    measuring the CPU's roof. A folder under a regular file cannot be made by anyone, root included (a read-only
    one can, by root)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(blocker / "cache"))
    ceilings = cpu_ceilings(plan=TINY)  # raised RooflineError: cannot write .../calibration.json: Not a directory
    assert ceilings.compute["cpu_fp32"] > 0
    said = [str(w.message) for w in recwarn]
    assert len(said) == 1 and said[0].startswith(f"cannot write {blocker / 'cache' / 'calibration.json'}")
    assert "not cached" in said[0]
    assert store.save(store.cpu_key("x", 1), _ceilings(1e9), {}) is None  # said already: not again
    assert len(recwarn) == 1


def test_a_timed_analyze_with_an_unwritable_cache_exits_0_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line: measured (a stand-in calibration: the wiring, not the CPU), placed, exit 0, and one note
    that the cache was not written."""
    from helpers import run

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(calibrate_mod, "measure_cpu", lambda *a, **k: (_ceilings(1e10), {}))
    code, out, err = run(capsys, "analyze", "relu", "--numel", "4096", "--no-kernels")
    assert code == 0, err
    said = " ".join(err.split())
    assert said.count("not cached") == 1 and "cannot write" in said and "relu" in out


def test_with_an_unwritable_cache_no_line_says_the_roof_was_cached_or_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52: with the cache unwritable, a timed `analyze` said "not cached" and then "measured this CPU's
    roofline (cached in PATH)", and `calibrate --quick` "not cached" then "stored in PATH": each now says it once,
    the same way (a stand-in calibration: the wiring, not the CPU)."""
    from helpers import run

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(calibrate_mod, "measure_cpu", lambda *a, **k: (_ceilings(1e10), {}))
    code, _out, err = run(capsys, "analyze", "relu", "--numel", "4096", "--no-kernels")
    said = " ".join(err.split())
    assert code == 0 and "cached in" not in said and said.count("not cached") == 1, said
    code, _out, err = run(capsys, "calibrate", "--quick", "--device", "cpu")
    said = " ".join(err.split())
    assert code == 0 and "stored in" not in said and "not stored" in said, said


def test_compare_with_a_corrupted_cache_says_one_note_line(tmp_path: Path) -> None:
    """Issue 52: `roofline compare` read a corrupted calibration cache outside any status line and printed a raw
    RooflineNotice with its source line; the command line now says notes from code as one `note:` line."""
    import os
    import subprocess
    import sys

    (tmp_path / "calibration.json").write_text("{garbage")
    done = subprocess.run([sys.executable, "-m", "roofline", "compare", "gemm", "--m", "4096"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "ROOFLINE_CACHE_DIR": str(tmp_path)})
    err = " ".join(done.stderr.split())
    assert done.returncode == 0, done.stderr
    assert err.count("note: the cache") == 1 and "RooflineNotice" not in err and "warn" not in err, err
