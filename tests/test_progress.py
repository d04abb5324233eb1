"""No silent waits: what the CPU timer reports while it runs, the forecast of a long run (from the first call,
never from the roofline time), the status line on stderr and its clock that moves on its own, and the note that
CUDA-only options are not silently dropped on the CPU. Fake clocks and fake loads throughout: nothing here waits
for real but the one step that sleeps until the status line's clock has moved."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import pytest
from helpers import run
from rich.console import Console

from roofline.core.format import rough_duration
from roofline.core.progress import LONG_RUN_S, REDRAW_S, Throttle
from roofline.measuring import timing_cpu
from roofline.measuring.machine_load import CpuTimes
from roofline.measuring.timing_cpu import SLOW_CALL_S, planned_calls, time_cpu
from roofline.report.progress import StatusLine


class FakeClock:
    """A clock that advances by a scripted duration each time the timed function runs."""

    def __init__(self, durations: list[float]) -> None:
        self.now, self.durations, self.calls = 0.0, list(durations), 0

    def __call__(self) -> float:
        return self.now

    def work(self) -> None:
        self.now += self.durations[min(self.calls, len(self.durations) - 1)]
        self.calls += 1


class Heard:
    """A Reporter that keeps what it hears, with the fake clock's time and call count at each status."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.clock = clock
        self.statuses: list[tuple[str, int]] = []
        self.notices: list[str] = []
        self.long: list[tuple[float, str]] = []

    def status(self, text: str) -> None:
        self.statuses.append((text, self.clock.calls if self.clock else -1))

    def notice(self, text: str) -> None:
        self.notices.append(text)

    def long_run(self, seconds: float, detail: str) -> None:
        self.long.append((seconds, detail))


def quiet_machine() -> CpuTimes:
    """A reading of an idle machine (no other process, no steal, load 0): no busy note."""
    return CpuTimes(wall_s=0.0, total_s=0.0, busy_s=0.0, steal_s=0.0, own_s=0.0, cpus=2, load1=0.0, machine_cpus=2)


def timed(durations: list[float], **kw: Any) -> tuple[FakeClock, Heard, Any]:
    clock = FakeClock(durations)
    heard = Heard(clock)
    m = time_cpu(clock.work, clock=clock, progress=heard, cpu_times=quiet_machine, **kw)
    return clock, heard, m


@pytest.mark.parametrize("call_s", [1e-5, 1e-3, 0.05, 0.15, 0.25, 3.0])
def test_the_forecast_counts_the_calls_the_timer_makes(call_s: float) -> None:
    # planned_calls is what the long-run note multiplies by: it must be the timer's own plan, call for call
    clock, _, m = timed([call_s])
    assert clock.calls == planned_calls(call_s)
    # the first call, the warm-up (warmup_calls counts the first), the estimate unless it was a sample, samples
    estimate_apart = 0 if call_s > SLOW_CALL_S else 1
    assert clock.calls == 1 + (m.warmup_calls - 1) + estimate_apart + len(m.samples_s)


def test_a_slow_call_takes_four_calls_not_six() -> None:
    # > SLOW_CALL_S: the first call warms up, the estimate is the first of the three samples: 1 + 3 calls
    clock, _, m = timed([2.0])
    assert clock.calls == 4 and len(m.samples_s) == 3 and m.warmup_calls == 1
    assert m.samples_s == [2.0, 2.0, 2.0]


def test_each_step_is_reported_between_calls() -> None:
    # first call 5 ms, then 1 ms calls: 10 ms warm-up budget -> 2 warm-up calls; 25 ms budget -> 25 samples
    _, heard, m = timed([0.005] + [0.001] * 1000)
    texts = [t for t, _ in heard.statuses]
    assert texts[0] == "first call" and texts[1] == "warming up (2 calls)"
    assert texts[2].startswith("sampling 1 of 25, ~")
    # the samples take 25 ms in all, under REDRAW_S: the sampling line is drawn once, not once per sample
    assert len(texts) == 3 and 25 * 1e-3 < REDRAW_S
    # said before the first call (0 calls made), before the warm-up (1) and before the samples (1 + 2 + 1)
    assert [calls for _, calls in heard.statuses] == [0, 1, 4]
    assert len(m.samples_s) == 25


def test_a_long_sampling_is_redrawn_at_most_every_redraw_interval() -> None:
    # 0.1 s calls with a 2 s budget: 20 samples over 2 s; REDRAW_S = 0.25 s -> a redraw every third sample
    _, heard, m = timed([0.1], rep_s=2.0)
    sampling = [t for t, _ in heard.statuses if t.startswith("sampling")]
    assert len(m.samples_s) == 20
    assert len(sampling) == 7  # samples 1, 4, 7, ..., 19: each 0.3 s after the last (the first 0.25 s boundary)
    assert sampling[0] == "sampling 1 of 20, ~2.0 s left"


def test_a_long_run_is_announced_after_the_first_call_from_what_it_measured() -> None:
    # the first call takes 12 s: 3 more calls (the slow call's 3 samples, the estimate the first) of 12 s =
    # 36 s > LONG_RUN_S, announced once
    _, heard, _ = timed([12.0])
    assert heard.long == [(36.0, "about 36 s more (3 calls of about 12 s, as long as the first)")]
    assert 36.0 > LONG_RUN_S
    # 1 s per call: 3 s more, nothing to announce
    _, heard, _ = timed([1.0])
    assert heard.long == []


def test_nothing_is_forecast_before_the_first_call_from_the_roofline_time() -> None:
    """Issue 30: the README's attention on a CPU was forecast "at least 55 min" from a roofline time (a bf16
    roof of 1.3 GFLOP/s; 59 s a call at a busy calibration's 18.6 GFLOP/s fp32 roof, `analyze --no-time`) and
    took 2 min 44 s. A CPU's measured roof is beaten, so the roofline time is no lower bound: the timer takes
    none, and its first status names no duration."""
    import inspect

    assert "expected_s" not in inspect.signature(time_cpu).parameters
    _, heard, _ = timed([27.0])  # ~27 s a call: the attention's 164 s was inputs, first call and 3 samples
    assert heard.statuses[0] == ("first call", 0)
    assert [d for _, d in heard.long] == ["about 81 s more (3 calls of about 27 s, as long as the first)"]
    assert not any("at least" in t for t, _ in heard.statuses)


def test_rough_durations() -> None:
    assert [rough_duration(s) for s in (0.57, 9.96, 44.0, 350.0, 7200.0)] == ["0.6 s", "10.0 s", "44 s", "6 min",
                                                                              "2.0 h"]


def test_throttle() -> None:
    t = [0.0]
    throttle = Throttle(lambda: t[0], interval_s=0.25)
    seen = []
    for step in range(10):  # 0.0, 0.1, ..., 0.9 s
        t[0] = step / 10
        seen.append(throttle())
    assert [i for i, s in enumerate(seen) if s] == [0, 3, 6, 9]  # 0.0, 0.3, 0.6, 0.9: each >= 0.25 s apart


def test_status_line_on_a_terminal_is_transient() -> None:
    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, width=80)
    with StatusLine(term, shorter="use --no-time") as line:
        line.status("sampling 2 of 3")
        line.long_run(44.0, "at least 44 s (4 calls of at least 11 s)")
        line.notice("said once")
        line.notice("said once")
    text = buf.getvalue()
    assert "sampling 2 of 3" in text
    assert text.count("said once") == 1
    assert "timing this takes at least 44 s (4 calls of at least 11 s); use --no-time" in text


def test_the_status_lines_clock_moves_during_a_step_that_reports_nothing() -> None:
    """Issue 30: "building the inputs 0:00:00" stood for 35 s, the line redrawn only when a step reported.
    A step that sleeps (reporting nothing) on a fake terminal: the line redraws itself and its elapsed clock
    reaches 0:00:01 (REFRESH_PER_S redraws a second; polled up to 30 s, so a loaded machine only delays it);
    the refresh thread ends with the line."""
    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, width=80)
    threads = threading.active_count()
    with StatusLine(term) as line:
        line.status("building the inputs")
        drawn = buf.getvalue()
        assert "building the inputs" in drawn and "0:00:01" not in drawn
        deadline = time.monotonic() + 30.0
        while "0:00:01" not in buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.1)  # the step: nothing reported, nothing redrawn but by the line itself
        assert "0:00:01" in buf.getvalue()
    deadline = time.monotonic() + 30.0  # rich stops its refresh thread without joining it: it ends on waking
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.1)
    assert threading.active_count() == threads


def test_status_line_draws_nothing_on_a_pipe() -> None:
    buf = io.StringIO()
    pipe = Console(file=buf, force_terminal=False, width=80)
    with StatusLine(pipe) as line:
        line.status("first call")
        line.notice("kept")
    assert buf.getvalue() == "note: kept\n"  # no transient line, and no blank line left behind


def test_a_log_gets_plain_progress_lines_one_per_step_never_a_redrawn_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 52: a `run` or `sol --time` in a CI log (stderr no terminal) printed nothing for 74 s. A fake clock,
    the log's own thread held off (LOG_POLL_S): nothing in the first LOG_AFTER_S (a quick command's log is
    unchanged), then a step (a suite's entry) at once but at most one every LOG_STEP_EVERY_S, and statuses (a sol
    folder's problems, a calibration) at most every LOG_EVERY_S; plain text, no cursor movement or carriage
    return. Before: no line at all."""
    from roofline.report import progress
    from roofline.report.progress import LOG_AFTER_S, LOG_EVERY_S, LOG_STEP_EVERY_S

    monkeypatch.setattr(progress, "LOG_POLL_S", 1e6)
    now = [0.0]
    buf = io.StringIO()
    with StatusLine(Console(file=buf, force_terminal=False, width=80), total=4, clock=lambda: now[0]) as line:
        line.step(0, "smoke: gemm")
        line.status("sampling 1 of 10")
        now[0] = LOG_AFTER_S + 1  # 6 s: the log starts with the next report
        line.status("sampling 2 of 10")
        line.status("sampling 3 of 10")  # within LOG_EVERY_S of the line before: none
        now[0] += LOG_STEP_EVERY_S  # 7 s
        line.step(1, "smoke: relu")  # a new step: at once
        line.step(2, "smoke: add")  # within LOG_STEP_EVERY_S of the step before: none
        now[0] += LOG_EVERY_S  # 17 s
        line.status("first call")
        now[0] += LOG_STEP_EVERY_S  # 18 s
        line.step(3, "smoke: a step named [x]")  # brackets are text, not markup
    assert buf.getvalue().splitlines() == [
        "progress: 1/4 smoke: gemm: sampling 2 of 10 (0:06)",
        "progress: 2/4 smoke: relu (0:07)",
        "progress: 3/4 smoke: add: first call (0:17)",
        "progress: 4/4 smoke: a step named [x] (0:18)"]
    assert "\r" not in buf.getvalue() and "\x1b" not in buf.getvalue()


def test_a_long_step_in_a_log_is_said_again_by_the_log_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step that reports once and then nothing (a profile's analysis, a minute-long first call) in a log: the
    log's own thread says it again once LOG_AFTER_S, then LOG_EVERY_S, have passed on the (fake) clock. Only its
    polling waits for real (LOG_POLL_S, made short); the test waits for the line, at most 30 s. Before: one line
    at most, none when the status came in the first LOG_AFTER_S."""
    from roofline.report import progress

    monkeypatch.setattr(progress, "LOG_POLL_S", 0.01)
    now = [0.0]
    buf = io.StringIO()
    threads = threading.active_count()

    def wait_for(text: str) -> None:
        deadline = time.monotonic() + 30.0
        while text not in buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)

    with StatusLine(Console(file=buf, force_terminal=False, width=80), clock=lambda: now[0]) as line:
        line.status("analysing 812 op calls: reading the profiler's kernels")  # at 0 s: no line yet
        now[0] = 12.0
        wait_for("(0:12)")
        now[0] = 30.0
        wait_for("(0:30)")
    assert buf.getvalue().splitlines() == [
        "progress: analysing 812 op calls: reading the profiler's kernels (0:12)",
        "progress: analysing 812 op calls: reading the profiler's kernels (0:30)"]
    assert threading.active_count() == threads  # the log's thread ended with the line


def test_a_long_step_in_a_log_is_one_line_however_long(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI log does not wrap: a step's line is never cut or wrapped at the console's width."""
    from roofline.report import progress

    monkeypatch.setattr(progress, "LOG_POLL_S", 1e6)
    now = [100.0]
    buf = io.StringIO()
    with StatusLine(Console(file=buf, force_terminal=False, width=40), clock=lambda: now[0]) as line:
        now[0] += 60.0
        line.status("measuring this CPU's roofline (once, then cached): CPU fp32 matmul 1024^3 (round 1 of up to 4)")
    assert buf.getvalue() == ("progress: measuring this CPU's roofline (once, then cached): CPU fp32 matmul 1024^3 "
                              "(round 1 of up to 4) (1:00)\n")


def test_notes_from_code_handed_no_reporter_are_note_lines_under_any_open_reporter(
        recwarn: pytest.WarningsRecorder) -> None:
    """`core.progress.tell` (the calibration cache's notes): through the innermost open reporter, once each (a
    command with no status line opens `Notices` for the whole command); with none open, a RooflineNotice that the
    `warnings` filters govern (the Python API)."""
    from roofline.core.progress import Notices, RooflineNotice, reporting, tell

    said: list[str] = []
    with reporting(Notices(said.append)):
        tell("the cache is unreadable")
        tell("the cache is unreadable")
        buf = io.StringIO()
        with StatusLine(Console(file=buf, force_terminal=False, width=80)):
            tell("inner")
        tell("after")
    assert said == ["the cache is unreadable", "after"] and buf.getvalue() == "note: inner\n"
    assert not recwarn.list
    with pytest.warns(RooflineNotice, match="nobody listens"):
        tell("nobody listens")


def test_cuda_only_options_are_not_silently_ignored_on_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", "relu", "--numel", "4096", "--timer", "graph", "--power", "sustained",
                       "--no-kernels")
    assert code == 0, err
    said = " ".join(err.split())  # the note may wrap at the terminal's width
    assert said.count("--timer graph, --power sustained: CUDA only (the CPU is timed by its host clock)") == 1
    code, _, err = run(capsys, "analyze", "relu", "--numel", "4096", "--no-kernels")
    assert code == 0 and "CUDA only" not in err


def test_analyze_says_after_the_first_call_how_to_shorten_a_long_cpu_run(capsys: pytest.CaptureFixture[str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # a budget of a microsecond makes any run "long": the note comes from the timer, the advice from analyze
    monkeypatch.setattr(timing_cpu, "LONG_RUN_S", 1e-6)
    code, _, err = run(capsys, "analyze", "relu", "--numel", "4096", "--no-kernels")
    assert code == 0, err
    said = " ".join(err.split())
    assert "timing this takes about" in said and "as long as the first)" in said
    assert "a smaller shape, or --no-time for the model alone, is quicker" in said


def test_a_long_step_name_folds_onto_a_second_line_at_80_columns() -> None:
    """A first run's calibration step (95 characters) was cut at 80 with an ellipsis: it folds instead."""
    step = "measuring this CPU's roofline (once, then cached): CPU fp32 matmul 1024^3 (round 1 of up to 4)"
    con = Console(file=io.StringIO(), force_terminal=True, width=80, record=True)
    with StatusLine(con) as line:
        line.status(step)
    text = con.export_text()
    assert "…" not in text and "(round 1 of up to 4)" in text


def test_a_profiles_analysis_after_the_run_reports_its_steps() -> None:
    """Issue 30: `roofline profile` sat 4-5 s without a word after the script ran (the profiler's trace read back
    and each call's record built). The profile reports each step of that analysis to its Reporter, only once the
    profiled block is over (the script's output is never under the status line), each step naming the calls."""
    import torch

    from roofline.capture.profile import Profile

    heard, ran = Heard(), []
    a = torch.ones(16, 16)
    with Profile("steps", device="cpu", progress=heard):
        (a @ a).relu()
        ran.append(len(heard.statuses))  # what the Reporter had heard while the block still ran
    assert ran == [0]
    steps = [text for text, _ in heard.statuses]
    assert len(steps) >= 3 and all(text.startswith("analysing 2 op calls: ") for text in steps), steps  # mm, relu
    assert steps[0].endswith("stopping the profiler") and steps[-1].endswith("the records and the summary")


def test_a_profile_that_raised_reports_no_analysis() -> None:
    import torch

    from roofline.capture.profile import Profile

    heard = Heard()
    with pytest.raises(ValueError), Profile("raises", device="cpu", progress=heard):
        torch.ones(4).relu()
        raise ValueError("the script's own error")
    assert heard.statuses == []


def test_roofline_profile_shows_its_analysis_on_a_terminal(capsys: pytest.CaptureFixture[str], tmp_path: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The command passes its status line to the profile: on a (fake) terminal stderr carries the analysis step."""
    from roofline.report import text

    script = tmp_path / "tiny.py"
    script.write_text("import torch\na = torch.ones(8, 8)\nprint((a @ a).sum().item())\n")
    made = text.console

    def terminal(stderr: bool = False) -> Console:
        con = made(stderr=stderr)
        return Console(file=con.file, force_terminal=True, width=80) if stderr else con

    monkeypatch.setattr(text, "console", terminal)
    code, out, err = run(capsys, "profile", str(script), "--top", "3")
    assert code == 0, err
    assert "analysing" in err and "the records and the summary" in err
    assert out.startswith("512.0\n")  # 8 x 8 ones @ ones: 64 entries of 8; the script's own print, not under the line


def test_calibrate_leaves_no_blank_line_in_a_log(capsys: pytest.CaptureFixture[str]) -> None:
    """New-user pass (issue 30): `roofline calibrate` drew its own rich bar, which left a blank line on stderr in a
    pipe or a CI log; it uses the command line's one status line, which draws nothing there."""
    code, out, err = run(capsys, "calibrate", "--quick", "--device", "cpu")
    assert code == 0, err
    assert "" not in err.splitlines() and "cpu_fp32" in out
