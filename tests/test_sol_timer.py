"""The untrusted timer of `roofline sol --time` (measuring/untrusted.py, untrusted_child.py) on the CPU: how a
CUPTI session is cut into calls (synthetic activities: the GPU's rules, without a GPU), the harness's guard,
and the red team's candidates, each in its own child process, each refused with its reason. The same set on a
GPU: tests/test_sol_gpu.py."""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run

REDTEAM = ROOT / "tests" / "data" / "sol_redteam"
PROBLEM = REDTEAM / "problem.py"
US = 1_000  # ns


# -- cutting a session into calls (pure)
def _session(*extra: list[Any], drop: str | None = None) -> dict[str, Any]:
    """Two timed calls of a GEMM on stream 7 (the caller's), the first with a kernel on stream 9 too; before each
    call the harness makes its inputs (randn) and flushes the L2 (reduce); the second call's output is kept
    (copy). Times in ns, 1 us apart."""
    acts = [["randn", 7, 0, 10 * US], ["reduce", 7, 10 * US, 20 * US],
            ["spin_kernel", 7, 20 * US, 21 * US], ["gemm", 7, 25 * US, 60 * US], ["side", 9, 30 * US, 50 * US],
            ["spin_kernel", 7, 61 * US, 62 * US],
            ["randn", 7, 70 * US, 80 * US], ["reduce", 7, 80 * US, 90 * US],
            ["spin_kernel", 7, 90 * US, 91 * US], ["gemm", 7, 95 * US, 130 * US],
            ["spin_kernel", 7, 131 * US, 132 * US],
            ["copy", 7, 140 * US, 150 * US], *extra]
    acts = [a for a in acts if a[0] != drop or a[2] != 80 * US]
    return {"activities": acts, "marker": "spin_kernel", "marker_stream": 7, "keep": [1],
            "layout": {"inputs": ["randn"], "flush": ["reduce"], "snapshot": ["copy"]}}


def test_each_calls_seed_is_drawn_on_its_own() -> None:
    """A seed seen (torch.initial_seed() inside a call) must not tell the next call's: no run of consecutive seeds
    (the harness used seed + i, so a candidate could precompute the next call's output off the clock)."""
    from roofline.measuring.untrusted import TimerSettings

    seeds = TimerSettings(max_reps=50).plan()["seeds"]
    timed = seeds["timed"]
    assert len(timed) == 50 and len(set(timed) | set(seeds["checks"]) | {seeds["warmup"]}) == 53
    assert sum(1 for a, b in itertools.pairwise(timed) if b - a == 1) == 0  # 49 pairs 1 apart by chance: ~2e-8


def test_a_call_is_the_work_of_every_stream_between_its_markers() -> None:
    from roofline.measuring.untrusted import split_calls

    calls = split_calls(_session(), reps=2)
    assert calls.problems == []
    assert calls.samples_s == pytest.approx([55e-6, 35e-6])  # gemm 35 + side 20 us; gemm 35 us
    assert calls.spans_s == pytest.approx([40e-6, 40e-6])  # 61 - 21, 131 - 91 us: the caller's stream
    assert calls.kernels == ["gemm", "side"]


def test_work_still_running_after_the_return_is_refused() -> None:
    from roofline.measuring.untrusted import split_calls

    late = _session()
    late["activities"][4] = ["side", 9, 30 * US, 66 * US]  # ends 5 us after the second marker started (61 us)
    calls = split_calls(late, reps=2)
    assert len(calls.problems) == 1
    assert "stream 9 (side) was still running 5.0 µs after call 1 returned" in calls.problems[0]


def test_work_between_the_calls_that_the_timer_did_not_launch_is_refused() -> None:
    from roofline.measuring.untrusted import split_calls

    calls = split_calls(_session(["gemm", 9, 63 * US, 69 * US]), reps=2)  # after call 1's return, before call 2
    assert len(calls.problems) == 1 and "did not launch ran between the calls" in calls.problems[0]
    assert "1 activities: gemm" in calls.problems[0]
    assert calls.samples_s == pytest.approx([55e-6, 35e-6])  # not counted in either call


def test_the_timers_own_work_missing_is_refused() -> None:
    from roofline.measuring.untrusted import split_calls

    calls = split_calls(_session(drop="reduce"), reps=2)  # the second flush did not run
    assert len(calls.problems) == 1 and "missing reduce" in calls.problems[0]


def test_a_forged_marker_makes_the_calls_untimable() -> None:
    from roofline.measuring.untrusted import split_calls

    calls = split_calls(_session(["spin_kernel", 7, 40 * US, 41 * US]), reps=2)
    assert calls.samples_s == [] and "+1 kernels named like the timer's marker" in calls.problems[0]


# -- the harness
def test_the_harness_names_what_was_replaced_after_it_was_built(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from roofline.measuring.untrusted_child import Harness

    h = Harness("cpu", {}.__setitem__)
    assert h.patched() == []
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 1e-6)
    assert h.patched() == ["time.perf_counter", "torch.cuda.Event.elapsed_time"]


def test_the_harness_times_each_call_on_fresh_inputs_with_the_clock_it_bound(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline.measuring.untrusted_child import Harness

    kept: dict[str, Any] = {}
    h = Harness("cpu", kept.__setitem__)
    seeds: list[int] = []
    plan = {"seeds": {"checks": [7, 3], "warmup": 11, "timed": [100, 57, 9, 1000, 42]}, "checks": 2, "keep": 2,
            "warmup_s": 0.0, "rep_s": 0.0, "min_reps": 5, "max_reps": 5, "later_s": 0.0}
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)  # a candidate's patch after the harness was built
    result = h.run(lambda xs: xs[0] * 2, lambda s: seeds.append(s) or [float(s)], plan)
    assert result["reps"] == 5 and len(result["timed"]["samples_ns"]) == 5
    assert all(ns > 0 for ns in result["timed"]["samples_ns"])  # the bound clock, not the patched one
    assert seeds == [7, 3, 11, 100, 57, 9, 1000, 42]  # every call the seed the plan gives it, in order
    assert len(set(seeds)) == len(seeds) == 8  # 2 checks, the warm-up's one input set, 5 timed calls: all fresh
    assert result["kept"][-1]["rep"] == 4 and len(result["kept"]) in (2, 3)  # the last, and 2 drawn at random
    assert {k["rep"]: k["seed"] for k in result["kept"]}[4] == 42
    assert result["patched"] == ["time.perf_counter_ns"]
    # every output handed to the sink, by the names the result gives: nothing written to a file
    names = {e[k] for e in result["checks"] + result["kept"] for k in ("output", "later")}
    assert names == set(kept) and list(tmp_path.iterdir()) == []


# -- the red team, each candidate in its own child process (run side by side: the CPU has two cores to share)
SETTINGS: dict[str, Any] = dict(min_reps=3, max_reps=10, rep_s=0.005, warmup_s=0.0, timeout_s=120.0)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each red-team candidate, and three that cannot run, timed against the problem's reference."""
    import torch

    from roofline.measuring.problem import build_model, load_problem, make_inputs
    from roofline.measuring.untrusted import TimerSettings, time_candidate

    folder = tmp_path_factory.mktemp("cands")
    (folder / "raises.py").write_text("raise ImportError('no module named fast_kernels')\n")
    (folder / "no_class.py").write_text("class Model:\n    pass\n")
    (folder / "hangs.py").write_text("import time\ntime.sleep(1000)\n")
    problem = load_problem(PROBLEM)
    model = build_model(problem, 0, "cpu")
    lock = threading.Lock()

    def reference(seed: int) -> Any:
        with lock, torch.no_grad():  # the global RNG: one thread at a time
            return model(*make_inputs(problem, seed, "cpu"))

    cands = {p.stem: p for p in REDTEAM.glob("*.py") if p.stem != "problem"}
    cands.update({p.stem: p for p in folder.glob("*.py")})

    def one(path: Path) -> Any:
        settings = TimerSettings(**{**SETTINGS, "timeout_s": 10.0 if path.stem == "hangs" else 120.0})
        return time_candidate(PROBLEM, path, "cpu", None, reference, settings, init_seed=0)

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(one, path) for name, path in cands.items()}
        return {name: f.result() for name, f in futures.items()}


def test_the_honest_candidate_passes(verdicts: dict[str, Any]) -> None:
    t = verdicts["honest"]
    assert t.ok, (t.wrong, t.refused, t.failed)
    assert 5 <= t.checked <= 6  # 2 fresh-input checks, then the kept calls: the last and 3 drawn (maybe it too)
    assert t.method == "cpu" and len(t.samples_s) >= 3 and t.median_s > 0


def test_a_cached_output_fails_on_fresh_inputs(verdicts: dict[str, Any]) -> None:
    t = verdicts["cached"]
    assert t.wrong is not None and t.wrong.startswith("wrong output on fresh inputs (check 2 of 2) (its first call "
                                                      "was right: an output kept from an earlier call?)")
    assert "max abs error" in t.wrong


def test_an_early_return_is_caught_computing_after_the_return(verdicts: dict[str, Any]) -> None:
    t = verdicts["early_return"]
    assert t.wrong is not None and "was computed after the call returned (work deferred past its return)" in t.wrong


def test_a_patched_clock_is_refused_and_does_not_change_the_time(verdicts: dict[str, Any]) -> None:
    t = verdicts["patch_timer"]
    assert t.refused == ["replaced time.perf_counter, time.perf_counter_ns: the timer's functions must not be "
                         "patched (the time was taken with the originals, bound before the candidate was imported)"]
    assert t.wrong is None  # it computes honestly
    assert t.median_s > 0 and len(t.samples_s) >= 3  # taken with the bound clock (its own patch would read ~0)


def test_lower_precision_fails_the_dtypes_tolerance(verdicts: dict[str, Any]) -> None:
    t = verdicts["low_precision"]
    assert t.wrong is not None and "(float32: rtol 1.3e-06" in t.wrong and "max abs error" in t.wrong


def test_a_side_stream_has_nothing_to_hide_on_the_cpu(verdicts: dict[str, Any]) -> None:
    """On the CPU it computes like the reference (the attack needs CUDA streams: tests/test_sol_gpu.py)."""
    assert verdicts["side_stream"].ok


@pytest.mark.parametrize(("name", "said"), [("raises", "building ModelNew raised"),
                                            ("no_class", "defines no class ModelNew"),
                                            ("hangs", "no answer within 10 s (stopped)")])
def test_a_candidate_that_cannot_run_is_one_line(verdicts: dict[str, Any], name: str, said: str) -> None:
    t = verdicts[name]
    assert t.failed is not None and said in t.failed and "\n" not in t.failed
    assert t.median_s is None


# -- end to end
def _ratio(doc: dict[str, Any], role: str) -> dict[str, Any]:
    return next(r for r in doc["records"] if r["variant"] == role)


def test_the_command_times_both_and_judges_the_candidate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import json

    out = tmp_path / "r.json"
    code, text, err = run(capsys, "sol", str(PROBLEM), "--time", "--candidate", str(REDTEAM / "honest.py"),
                          "-o", str(out))
    assert code == 0, err
    doc = json.loads(out.read_text())
    ref, cand = _ratio(doc, "reference"), _ratio(doc, "candidate")
    assert cand["sol"]["verdict"]["status"] == "ok"
    # speedup = the reference's median over the candidate's
    assert cand["sol"]["verdict"]["speedup"] == pytest.approx(ref["time_s"] / cand["time_s"])
    assert cand["roofline_fraction"] == pytest.approx(cand["roofline_time_s"] / cand["time_s"])  # % of fused SoL
    assert "timed" in text and "verdict" in text


def test_a_refused_candidate_exits_1_with_its_reason_and_no_time(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path) -> None:
    import json

    out = tmp_path / "r.json"
    code, text, err = run(capsys, "sol", str(PROBLEM), "--time", "--candidate", str(REDTEAM / "cached.py"),
                          "-o", str(out))
    assert code == 1 and "did not pass" in err
    cand = _ratio(json.loads(out.read_text()), "candidate")
    assert "time_s" not in cand and cand["sol"]["verdict"]["status"] == "wrong"  # never reported as a speedup
    assert cand["sol"]["timing"]["measured_s"] > 0  # what was measured stays in the record's sol block
    assert "candidate: wrong: wrong output on fresh inputs" in " ".join(text.split())


def test_the_session_runs_through_the_bound_entry_points() -> None:
    """The CUPTI session's code path with the CPU's activities (a GPU's kernels: tests/test_sol_gpu.py): the
    records come through the accessors bound before any candidate, in start order, with their thread as the
    'stream' a kernel would have."""
    import torch
    from torch.autograd import ProfilerActivity

    from roofline.measuring.untrusted_child import Harness

    h = Harness("cpu", {}.__setitem__)
    h.bind_profiler(ProfilerActivity.CPU)
    h._sync = lambda: None
    h.kinds = frozenset({"cpu_op"})
    acts = h._session(lambda: torch.randn(64).relu())
    names = [a[0] for a in acts]
    assert "aten::relu" in names and [a[2] for a in acts] == sorted(a[2] for a in acts)
    assert all(end >= start for _, _, start, end in acts)


def test_a_problem_whose_inputs_ignore_the_seed_says_so(tmp_path: Path) -> None:
    from roofline.capture.sol import sol

    fixed = tmp_path / "fixed.py"
    fixed.write_text("import torch\nimport torch.nn as nn\n\nX = torch.ones(8, 8)\n\n\nclass Model(nn.Module):\n"
                     "    def forward(self, x):\n        return x.relu()\n\n\ndef get_inputs():\n    return [X]\n\n\n"
                     "def get_init_inputs():\n    return []\n")
    r = sol(fixed, time=True).results[0]
    assert any("same inputs under every seed" in n for n in r.notes)
    assert sol(ROOT / "suites" / "sol" / "relu.py", time=True).results[0].notes == []


def test_the_activity_kind_is_derived_where_torch_has_no_accessor() -> None:
    """torch 2.11 (the H200 machine's) has no _KinetoEvent.activity_type: a device record that is no annotation
    is device work, a CPU record a CPU op, an annotation neither."""
    from types import SimpleNamespace

    from roofline.measuring.untrusted_child import activity_kind

    old = SimpleNamespace(device_type=lambda e: e.dev, is_user_annotation=lambda e: e.annot)
    kind = activity_kind(old)
    assert [kind(SimpleNamespace(dev=d, annot=a)) for d, a in (("DeviceType.CUDA", False), ("DeviceType.CPU", False),
                                                               ("DeviceType.CUDA", True))] == \
        ["kernel", "cpu_op", "gpu_user_annotation"]
    assert activity_kind(SimpleNamespace(activity_type=len)) is len  # torch's own accessor when it has one
