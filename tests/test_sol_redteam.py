"""The red team of issue 51 (suites/sol/candidates/redteam/), on the CPU: each candidate against the red team's
problem (tests/data/sol_redteam/problem.py) in its own sandboxed child, and each caught with its reason. The
attacks that need a GPU (persisting L2, other device) compute honestly here and read `ok`; tests/test_sol_gpu.py
runs them on the device. The earlier six (tests/data/sol_redteam): tests/test_sol_timer.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT

RED = ROOT / "suites" / "sol" / "candidates" / "redteam"
PROBLEM = ROOT / "tests" / "data" / "sol_redteam" / "problem.py"
SETTINGS: dict[str, Any] = dict(min_reps=3, max_reps=10, rep_s=0.005, warmup_s=0.0, timeout_s=120.0)
# Secrets in the parent's environment that no candidate may read (env_token.py raises when it finds one).
SECRETS = {"HF_TOKEN": "hf_fake_0123", "ROOFLINE_TEST_API_KEY": "sk-fake-4567"}


def _reference() -> Any:
    import threading

    import torch

    from roofline.measuring.problem import build_model, load_problem, make_inputs

    problem = load_problem(PROBLEM)
    model = build_model(problem, 0, "cpu")
    lock = threading.Lock()

    def reference(seed: int) -> Any:
        with lock, torch.no_grad():  # the global RNG: one thread at a time
            return model(*make_inputs(problem, seed, "cpu"))

    return reference


def _time(path: Path, reference: Any) -> Any:
    from roofline.measuring.untrusted import TimerSettings, time_candidate

    return time_candidate(PROBLEM, path, "cpu", None, reference, TimerSettings(**SETTINGS), init_seed=0)


@pytest.fixture(scope="module")
def red() -> dict[str, Any]:
    """Every red-team candidate but the two run end to end below, two at a time, with secrets in the environment."""
    reference = _reference()
    saved = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)
    try:
        cands = [p for p in sorted(RED.glob("*.py")) if p.stem not in ("double_fork", "plant_json")]
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {p.stem: pool.submit(_time, p, reference) for p in cands}
            return {name: f.result() for name, f in futures.items()}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_the_red_team_holds_twelve_attacks_each_a_file_that_says_how_it_is_caught() -> None:
    files = sorted(RED.glob("*.py"))
    assert len(files) >= 12
    assert [p.name for p in files if "Caught:" not in p.read_text()] == []


def test_a_patched_harness_clock_is_refused_naming_it(red: dict[str, Any]) -> None:
    t = red["patch_clock_ns"]
    assert t.refused and "__main__._clock_ns" in t.refused[0] and "roofline.measuring.untrusted_child._clock_ns" \
        in t.refused[0]
    assert t.wrong is None and t.median_s > 0  # timed with the instance's clock all the same


def test_a_replaced_harness_method_is_refused(red: dict[str, Any]) -> None:
    t = red["harness_method"]
    assert t.refused and "Harness._timed_cpu" in t.refused[0]


def test_torchs_own_timers_shifted_are_refused(red: dict[str, Any]) -> None:
    t = red["time_shift"]
    assert t.refused and "time.perf_counter_ns" in t.refused[0] and "torch.cuda.Event.elapsed_time" in t.refused[0]


def test_no_secret_of_the_parents_environment_reaches_the_candidate(red: dict[str, Any]) -> None:
    t = red["env_token"]
    assert t.ok, (t.failed, t.wrong, t.refused)  # it raises, naming what it read, when it finds any


def test_the_next_calls_seed_cannot_be_predicted(red: dict[str, Any]) -> None:
    t = red["next_seed"]
    assert t.ok, (t.failed, t.wrong, t.refused)  # it raises when its prediction of the next inputs comes true


def test_an_output_cached_by_address_is_wrong(red: dict[str, Any]) -> None:
    t = red["cached_by_address"]
    assert t.wrong is not None and "wrong output" in t.wrong


def test_an_exit_with_status_0_in_the_middle_is_a_failure(red: dict[str, Any]) -> None:
    t = red["exit_zero"]
    assert t.failed is not None and "exited with status 0" in t.failed and t.median_s is None


@pytest.mark.parametrize("name", ["persisting_l2", "other_device"])
def test_the_gpu_attacks_compute_honestly_on_the_cpu(red: dict[str, Any], name: str) -> None:
    """They attack CUDA's L2 and device time; here they are honest candidates (caught on the GPU: test_sol_gpu.py)."""
    t = red[name]
    assert t.ok, (t.failed, t.wrong, t.refused)


def test_the_parents_proc_entries_are_closed_to_the_candidate(red: dict[str, Any]) -> None:
    if os.geteuid() == 0:
        pytest.skip("as root the candidate holds CAP_SYS_PTRACE and opens any /proc entry: not covered (docs/sol.md)")
    t = red["proc_parent"]
    assert t.ok, (t.failed, t.wrong, t.refused)  # it raises when /proc/<parent>/cwd or fd/1 opens for writing


def test_a_module_planted_in_the_working_directory_is_never_imported(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """plant_json.py writes a json.py (raising SystemExit when imported) into its working directory; the next child
    would import it first if it started there with that directory on its path."""
    monkeypatch.chdir(tmp_path)
    reference = _reference()
    planted = _time(RED / "plant_json.py", reference)
    honest = _time(ROOT / "tests" / "data" / "sol_redteam" / "honest.py", reference)
    assert planted.ok and honest.ok, (planted.failed, honest.failed)
    assert list(tmp_path.iterdir()) == []  # nothing landed where the parent runs


def test_a_double_forked_grandchild_is_ended_before_the_document_is_written(tmp_path: Path) -> None:
    """double_fork.py leaves a setsid grandchild that waits for the roofline process to exit and then divides every
    time of its -o document by 1000. The document must stay as written, and the grandchild be gone."""
    out = tmp_path / "r.json"
    env = {**os.environ, "ROOFLINE_NO_GPU": "1"}
    cmd = [sys.executable, "-m", "roofline", "sol", str(PROBLEM), "--time", "--candidate",
           str(RED / "double_fork.py"), "-o", str(out)]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr  # refused: a verdict that is not ok
    written = out.read_text()
    cand = next(r for r in json.loads(written)["records"] if r["variant"] == "candidate")
    assert cand["sol"]["verdict"]["status"] == "refused"
    assert "left 1 process(es) running that had left its process tree" in cand["sol"]["verdict"]["reason"]
    time.sleep(1.5)  # the grandchild polls every 0.1 s: were it alive, it would have rewritten the file by now
    assert out.read_text() == written
    ref = next(r for r in json.loads(written)["records"] if r["variant"] == "reference")
    assert ref["time_s"] > 0


def test_a_child_being_started_is_never_taken_for_another_sandboxs_orphan() -> None:
    """Two sandboxes at once (the red team runs two candidates at a time): one's clean-up scans this process's
    children for orphans while the other starts its child. A child started but not yet noted read as an orphan
    there and was killed ("building ModelNew: the child process exited with status -9", a fresh clone's `make
    test`). Its start and its noting are one step under the sandboxes' lock (`sandbox.starting`)."""
    import threading

    from roofline.measuring import sandbox

    before = sandbox.children_now()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])  # the other sandbox's child, already ended
    gone.wait()
    with sandbox.starting() as started:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        cleanup = threading.Thread(target=sandbox.end_tree, args=(gone.pid, before))
        cleanup.start()  # the other clean-up, in the window between the start and the noting
        time.sleep(0.2)
        started(child.pid)
    cleanup.join(timeout=60)
    try:
        assert child.poll() is None  # alive: noted, never killed as an orphan
    finally:
        sandbox.end_tree(child.pid, before)
        child.wait()
