"""A timer for code that is not trusted (`roofline sol --time --candidate NEW.py`): the parent's side.

The candidate runs in a child process (`measuring/untrusted_child.py`) that holds none of the parent's objects:
the reference, its outputs, the tolerances, the bounds and the verdict stay here. The child's harness is
bound before the candidate is imported and reports raw data (device activities, or host clock intervals on the
CPU; output files); this side cuts it into calls (`split_calls`), checks every output it asked for against the
reference computed here on the same fresh inputs, and says what it refuses, and why. The reference is timed by
the same harness in this process (`time_reference`): both times are the same measure.

What each check catches (docs/sol.md lists the attacks and the tests that show each one caught):
- a cached output: the inputs are fresh for every check and every timed call (made from seeds chosen here with
  the OS's randomness), and the timed calls whose outputs are checked are drawn the same way in the child;
- work on another stream, or left running past the return: CUPTI records the kernels of every stream; a call's
  time is the device time of all the work that began between its two markers, and work still running when the
  caller's stream went on (the second marker) is refused;
- work deferred past the return (a thread that fills the output later): device work between the calls that the
  harness did not launch is refused; on the CPU, an output that was wrong when the call returned and right later;
- a patched timer: the harness never uses the functions the candidate can reach, and refuses a candidate that
  replaced any of them (`untrusted_child.GUARDED`);
- lower precision than asked: the outputs are compared with the dtype's tolerances (measuring/correctness.py),
  TF32 off in both processes.
"""

from __future__ import annotations

import bisect
import os
import random
import select
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.core.errors import UsageError
from roofline.core.stats import median
from roofline.measuring.timing import MIN_REPS, REP_BUDGET_S, WARMUP_BUDGET_S

# Timed calls at most: each one makes its own inputs (and the kept ones a copy of their output).
MAX_REPS = 200
# Timed calls whose outputs are kept and checked (the last one and this many more, chosen at random).
KEEP = 3
# Fresh-input checks before the timing.
CHECKS = 2
# The wait after the timed calls before the kept outputs are looked at again (deferred work shows by then).
LATER_S = 0.05
# How long the child may take to answer one request (importing torch, building the candidate, the timing).
TIMEOUT_S = 600.0
# A relative tolerance of 1 or more passes an output of zeros (|0 - expected| <= 1 x |expected|): no check.
MAX_RTOL = 1.0
# A candidate's call whose stream time exceeds its device time by more than this, and by more than the device time
# itself, did its work off the device (on the host, in another process): a millisecond is hundreds of launches.
HOST_GAP_FLOOR_S = 1e-3
# Seeds are drawn below this (torch.manual_seed takes any 64-bit value; the offsets must stay in range).
SEED_RANGE = 2**31
# A child whose pipe ended is given this long to exit before it is called silent: the pipe's end comes as the
# process exits, its status a moment later (an exit in the middle of the timing read "no answer within 120 s" when
# the status was asked first).
EXIT_GRACE_S = 5.0


@dataclass(frozen=True)
class TimerSettings:
    """How many checks, calls and seconds; tolerances None: the dtype's (measuring/correctness.py)."""

    checks: int = CHECKS
    keep: int = KEEP
    warmup_s: float = WARMUP_BUDGET_S
    rep_s: float = REP_BUDGET_S
    min_reps: int = MIN_REPS
    max_reps: int = MAX_REPS
    later_s: float = LATER_S
    timeout_s: float = TIMEOUT_S
    flush: bool = True
    rtol: float | None = None
    atol: float | None = None

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """The tolerances refused that would check nothing (NaN, inf, an rtol of 1 or more): UsageError."""
        from roofline.core import validate

        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if value is None:
                continue
            # NaN compared every output wrong; inf passed an output of zeros as right
            validate.number("", name, value, minimum=0)
            if name == "rtol" and value >= MAX_RTOL:
                raise UsageError(f"{validate.arg_name('rtol')} must be below {MAX_RTOL:g}, got {value!r}: |actual - "
                                 "expected| <= rtol x |expected| then passes an output of zeros")

    def plan(self) -> dict[str, Any]:
        """The harness's plan: counts, budgets, and every call's seed, each drawn on its own (new_seed)."""
        seeds = {"checks": [new_seed() for _ in range(max(1, self.checks))], "warmup": new_seed(),
                 "timed": [new_seed() for _ in range(max(self.max_reps, self.min_reps))]}
        return {"seeds": seeds, "checks": max(1, self.checks), "keep": self.keep, "warmup_s": self.warmup_s,
                "rep_s": self.rep_s, "min_reps": self.min_reps, "max_reps": self.max_reps,
                "later_s": self.later_s}


def new_seed() -> int:
    """A seed the candidate cannot guess (the OS's randomness)."""
    return random.SystemRandom().randrange(1, SEED_RANGE)


@dataclass
class Timed:
    """One model's timing under the harness, as this side concludes it."""

    who: str  # "reference" or "candidate"
    method: str = ""  # "cupti" (device time of every activity of the call) or "cpu" (host clock)
    samples_s: list[float] = field(default_factory=list)
    spans_s: list[float] = field(default_factory=list)  # GPU: between the call's two markers (stream time)
    reps: int = 0
    warmup_calls: int = 0
    kernels: list[str] = field(default_factory=list)  # the first timed call's device work, in order
    checked: int = 0  # outputs compared with the reference's
    wrong: str | None = None  # the first output that differs from the reference's
    refused: list[str] = field(default_factory=list)  # what the harness refuses (patched timer, deferred work)
    failed: str | None = None  # did not build, raised, timed out
    notes: list[str] = field(default_factory=list)

    @property
    def median_s(self) -> float | None:
        return median(self.samples_s) if self.samples_s and not self.failed else None

    @property
    def span_s(self) -> float | None:
        return median(self.spans_s) if self.spans_s else None

    @property
    def ok(self) -> bool:
        return not (self.failed or self.wrong or self.refused)


# -- cutting a CUPTI session into calls (pure)
@dataclass(frozen=True)
class Activity:
    """One device activity: its name, stream, and start and end (ns, the session's clock)."""

    name: str
    stream: int
    start_ns: int
    end_ns: int

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) * 1e-9


@dataclass
class Calls:
    """The timed calls' device time, stream time and first call's work; `problems`: what is refused."""

    samples_s: list[float]
    spans_s: list[float]
    kernels: list[str]
    problems: list[str]


def _names(acts: list[Activity]) -> str:
    shown = ", ".join(sorted({a.name[:60] for a in acts})[:3])
    return shown + (", ..." if len({a.name for a in acts}) > 3 else "")


def split_calls(timed: dict[str, Any], reps: int) -> Calls:
    """The session's device activities cut at the markers the harness launched around each call (two per call
    on the caller's stream). Work that began between a call's markers is the call's, on whatever stream; work
    of a call still running when its second marker started is refused (it ran past the return), and so is
    work between the calls that is not the harness's own (`layout`: its inputs, L2 flush and output copies)."""
    acts = sorted((Activity(str(a[0]), int(a[1]), int(a[2]), int(a[3])) for a in timed["activities"]),
                  key=lambda a: a.start_ns)
    marker, stream = str(timed["marker"]), int(timed["marker_stream"])

    def is_marker(a: Activity) -> bool:
        return marker in a.name and a.stream == stream

    marks = [a for a in acts if is_marker(a)]
    if len(marks) != 2 * reps:
        extra = len(marks) - 2 * reps
        return Calls([], [], [], [f"the calls launched {extra:+d} kernels named like the timer's marker ({marker}) "
                                  "on the caller's stream, so the calls cannot be told apart: not timed"])
    starts, ends = marks[0::2], marks[1::2]
    begin = [m.start_ns for m in starts]
    finish = [m.start_ns for m in ends]
    per_call: list[list[Activity]] = [[] for _ in range(reps)]
    between: list[list[Activity]] = [[] for _ in range(reps + 1)]  # [j]: before call j; [reps]: after the last
    problems: list[str] = []
    late: list[tuple[int, Activity]] = []
    for a in acts:
        if is_marker(a):
            continue
        i = bisect.bisect_right(begin, a.start_ns) - 1
        if i >= 0 and a.start_ns < finish[i]:
            per_call[i].append(a)
            if a.end_ns > finish[i]:
                late.append((i, a))
        else:
            between[bisect.bisect_right(finish, a.start_ns)].append(a)
    if late:
        i, a = late[0]
        problems.append(f"work on stream {a.stream} ({a.name[:60]}) was still running "
                        f"{(a.end_ns - finish[i]) * 1e-3:.1f} µs after call {i + 1} returned and the caller's stream "
                        f"went on ({len(late)} such activities): the call returned before its kernels finished "
                        "(join the streams it launches on to the caller's: torch.cuda.current_stream()"
                        ".wait_stream(side))")
    layout, keep = timed["layout"], set(timed.get("keep", ()))
    extra_acts: list[Activity] = []
    missing: Counter[str] = Counter()
    for j, found in enumerate(between):
        expected = Counter(layout["snapshot"] if j - 1 in keep else [])
        if j < reps:
            expected.update([*layout["inputs"], *layout["flush"]])
        seen = Counter(a.name for a in found)
        over = seen - expected
        for a in found:
            if over[a.name] > 0:
                over[a.name] -= 1
                extra_acts.append(a)
        missing += expected - seen
    if extra_acts:
        problems.append(f"device work that the timer did not launch ran between the calls, uncounted "
                        f"({len(extra_acts)} activities: {_names(extra_acts)}): work deferred past a call's return "
                        "or done ahead of it")
    if missing:
        problems.append(f"the timer's own device work between the calls did not run as planned (missing "
                        f"{', '.join(sorted(missing))[:120]}): the inputs or the L2 flush were not the timer's")
    samples = [sum(a.duration_s for a in call) for call in per_call]
    spans = [(f - s.end_ns) * 1e-9 for s, f in zip(starts, finish, strict=True)]
    return Calls(samples, spans, [a.name for a in per_call[0]], problems)


# -- the child process
class _Child:
    """The child process in its sandbox (measuring/sandbox.py), its two pipes and its stderr; `end()` ends it
    and every process it left (the tree this module started)."""

    def __init__(self, extra: dict[str, str], home: Path) -> None:
        from roofline.measuring import sandbox

        sandbox.prepare()
        self._before = sandbox.children_now()
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()
        err_r, err_w = os.pipe()
        cmd = sandbox.python_command("roofline.measuring.untrusted_child", str(to_child_r), str(from_child_w))
        env = sandbox.sandbox_env(dict(os.environ), extra, home)
        with sandbox.starting() as started:  # noted before any other sandbox's clean-up can see it
            self.proc = subprocess.Popen(cmd, pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL,
                                         stdout=err_w, stderr=err_w, cwd=home, start_new_session=True, env=env)
            started(self.proc.pid)
        for fd in (to_child_r, from_child_w, err_w):
            os.close(fd)
        self.stderr = _Tail(err_r)
        self._buf = b""
        self.outputs: dict[str, Any] = {}  # name -> the output as the harness sent it (CPU tensors)
        self.escaped: set[int] = set()  # processes that left the child's tree (found when it ended)

    def send(self, message: dict[str, Any]) -> None:
        import json

        data = (json.dumps(message) + "\n").encode()
        try:
            while data:
                data = data[os.write(self._w, data):]
        except BrokenPipeError:
            pass  # the child has gone: receive() says so

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        """The child's next message (the outputs sent before it stored in `outputs`); None when it exited, did not
        answer within `timeout_s`, or sent what is not the protocol."""
        import json
        import time

        from roofline.measuring import wire

        deadline = time.monotonic() + timeout_s
        while True:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._r], [], [], left)[0]:
                    return None
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    return None
                self._buf += chunk
            line, self._buf = self._buf.split(b"\n", 1)
            try:
                message = json.loads(line)
                if not isinstance(message, dict) or "output" not in message:
                    return message if isinstance(message, dict) else None
                value, self._buf = wire.receive(message, self._buf, self._r, deadline)
            except (ValueError, KeyError, TypeError, AttributeError, EOFError, TimeoutError, OSError):
                return None
            self._store(str(message["output"]), value)

    def _store(self, name: str, value: Any) -> None:
        """Keep an output; a `-later` copy equal to its first one shares it (the memory of one)."""
        import torch

        first = self.outputs.get(name.removesuffix("-later")) if name.endswith("-later") else None
        if isinstance(first, torch.Tensor) and isinstance(value, torch.Tensor) and first.dtype == value.dtype \
                and first.shape == value.shape and torch.equal(first, value):
            value = first
        self.outputs[name] = value

    def end(self) -> None:
        """End the child and every process it left, before anything it sent is judged."""
        from roofline.measuring import sandbox

        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.escaped = sandbox.escaped(self.proc.pid, self._before)
            sandbox.end_tree(self.proc.pid, self._before)
            self.proc.wait()
            self.stderr.join()
        finally:
            sandbox.release()


class _Tail:
    """The last bytes of the child's stderr, read from its pipe by a thread (no file the child could write)."""

    KEEP = 1 << 14  # bytes: a few lines of a traceback

    def __init__(self, fd: int) -> None:
        import threading

        self._fd, self.data = fd, b""
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._fd, 1 << 16):
                self.data = (self.data + chunk)[-self.KEEP:]
        except OSError:
            pass
        finally:
            os.close(self._fd)

    def join(self) -> None:
        self._thread.join(timeout=5.0)  # every process holding the pipe is dead by now

    def last(self, lines: int = 3) -> str:
        text = [line for line in self.data.decode(errors="replace").splitlines() if line.strip()]
        return " | ".join(text[-lines:])


def time_candidate(problem_path: str | Path, candidate_path: str | Path, device: str, dtype: str | None,
                   reference: Callable[[int], Any], settings: TimerSettings, init_seed: int,
                   env: dict[str, str] | None = None) -> Timed:
    """Time the candidate's ModelNew in a child process in its sandbox and check its outputs against
    `reference(seed)` (the reference's output on the inputs of `seed`, computed here). The child and every
    process it started are ended before anything it sent is judged."""
    from roofline.measuring import sandbox

    with sandbox.workdir() as home:
        child = _Child(env or {}, home)
        try:
            message, doing = _exchange(child, problem_path, candidate_path, device, dtype, settings, init_seed)
            alive = _alive(child.proc, message)
        finally:
            child.end()
    if message is None or "error" in message:
        timed = _gone("candidate", message, child, alive, settings, doing)
    else:
        try:
            timed = conclude("candidate", message, reference, settings, device, child.outputs)
        except (KeyError, TypeError, ValueError, IndexError) as exc:  # fields or outputs missing: not the harness's
            timed = Timed("candidate", failed=f"{doing}: the child's result is not the harness's ({type(exc).__name__}:"
                                              f" {exc}): refused")
    if child.escaped:
        timed.refused.append(f"left {len(child.escaped)} process(es) running that had left its process tree (a "
                             "double fork, setsid): ended before any result was read or written")
    return timed


def _exchange(child: _Child, problem_path: str | Path, candidate_path: str | Path, device: str, dtype: str | None,
              settings: TimerSettings, init_seed: int) -> tuple[dict[str, Any] | None, str]:
    """The protocol: set up, build, run. The child's last message, and what it was doing."""
    child.send({"problem": str(Path(problem_path).resolve()), "candidate": str(Path(candidate_path).resolve()),
                "device": device, "dtype": dtype, "init_seed": init_seed, "flush": settings.flush})
    ready = child.receive(settings.timeout_s)
    if ready is None or "error" in ready:
        return ready, "building ModelNew"
    child.send(settings.plan())
    return child.receive(settings.timeout_s), "running ModelNew"


def _alive(proc: subprocess.Popen[bytes], message: dict[str, Any] | None) -> bool:
    """Whether the child still runs after its last message: with none (its pipe ended or it went silent), after
    EXIT_GRACE_S for it to exit (a pipe closed by an exiting process ends before the process is reaped)."""
    if message is not None:
        return proc.poll() is None
    try:
        proc.wait(timeout=EXIT_GRACE_S)
    except subprocess.TimeoutExpired:
        return True
    return False


def _gone(who: str, message: dict[str, Any] | None, child: _Child, alive: bool, settings: TimerSettings,
          doing: str) -> Timed:
    """A child that reported an error, exited or did not answer: one line of why."""
    if message is not None:
        timed = Timed(who, failed=f"{doing} raised {message['error']}")
        if message.get("patched"):
            timed.refused.append(_patched_reason(message["patched"]))
        return timed
    if alive:
        return Timed(who, failed=f"{doing}: no answer within {settings.timeout_s:.0f} s (stopped)")
    said = child.stderr.last()
    code = child.proc.returncode
    return Timed(who, failed=f"{doing}: the child process exited with status {code}" + (f" ({said})" if said else ""))


def time_reference(model: Any, inputs_for: Callable[[int], list[Any]], device: str, reference: Callable[[int], Any],
                   settings: TimerSettings) -> Timed:
    """The reference, timed by the same harness in this process (it is trusted), its outputs checked too (a
    check of the harness: the same model on the same seeds). Its outputs stay in memory (no file)."""
    import torch

    from roofline.measuring.untrusted_child import Harness

    outputs: dict[str, Any] = {}
    harness = Harness(device, outputs.__setitem__, flush=settings.flush)
    with torch.no_grad():
        try:
            result = harness.run(lambda xs: model(*xs), inputs_for, settings.plan())
        except Exception as exc:  # the reference raised: the problem cannot be timed
            text = str(exc).strip().splitlines()
            return Timed("reference", failed=f"Model raised {type(exc).__name__}: {text[0] if text else ''}")
        return conclude("reference", result, reference, settings, device, outputs)


def _patched_reason(names: list[str]) -> str:
    return (f"replaced {', '.join(names)}: the timer's functions must not be patched (the time was taken with "
            "the originals, bound before the candidate was imported)")


def conclude(who: str, result: dict[str, Any], reference: Callable[[int], Any], settings: TimerSettings,
             device: str, outputs: dict[str, Any]) -> Timed:
    """The child's raw run as this side reads it: times cut into calls, outputs checked, refusals stated."""
    timed = Timed(who, reps=int(result["reps"]), warmup_calls=int(result["warmup_calls"]))
    raw = result["timed"]
    timed.method = raw["method"]
    if raw["method"] == "cpu":
        timed.samples_s = [ns * 1e-9 for ns in raw["samples_ns"]]
    else:
        calls = split_calls(raw, timed.reps)
        timed.samples_s, timed.spans_s, timed.kernels = calls.samples_s, calls.spans_s, calls.kernels
        timed.refused += calls.problems
        if timed.samples_s and not any(timed.samples_s):
            timed.notes.append("the calls launched no device work")
        if raw.get("persisting_l2_bytes"):
            timed.refused.append(f"set aside {int(raw['persisting_l2_bytes'])} bytes of persisting L2 (an access-"
                                 "policy window): its lines survive the L2 flush between calls, so a call reads "
                                 "its inputs from the L2, not DRAM")
        if who == "candidate" and (gap := host_gap(timed.samples_s, timed.spans_s)) is not None:
            timed.refused.append(gap)
    if result.get("patched"):
        timed.refused.insert(0, _patched_reason(result["patched"]))
    timed.wrong = _check_outputs(result, reference, settings, device, timed, outputs)
    if (lax := _checks_nothing(result, reference, settings)) is not None:
        timed.refused.append(lax)
    return timed


def host_gap(samples_s: list[float], spans_s: list[float]) -> str | None:
    """Why a candidate's calls did their work off the device: the median stream time (marker to marker on the
    caller's stream) above the median device time by more than HOST_GAP_FLOOR_S and by more than that device time
    (work on the host or another process is not device time); None otherwise."""
    if not samples_s or not spans_s:
        return None
    device, span = median(samples_s), median(spans_s)
    gap = span - device
    if gap <= HOST_GAP_FLOOR_S or gap <= device:
        return None
    return (f"each call held the caller's stream {span * 1e3:.3g} ms for {device * 1e3:.3g} ms of device work: "
            "the rest was done off the device (on the host or in another process), which device time does not "
            "count")


def _zeros(value: Any) -> Any:
    """`value` with every tensor (nested in lists, tuples, dicts) replaced by zeros of its shape and dtype."""
    import torch

    if isinstance(value, torch.Tensor):
        return torch.zeros_like(value)
    if isinstance(value, dict):
        return {k: _zeros(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_zeros(v) for v in value)
    return value


def _checks_nothing(result: dict[str, Any], reference: Callable[[int], Any], settings: TimerSettings) -> str | None:
    """Why the output check, at the tolerances the user gave, would pass an output of zeros (an --atol at the
    scale of the output: a candidate returning zeros read `ok`); None when it would not, or at the dtype's own."""
    from roofline.core import validate
    from roofline.measuring.correctness import compare

    if settings.atol is None or not result.get("checks"):
        return None
    expected = reference(int(result["checks"][0]["seed"]))
    if compare(_zeros(expected), expected, settings.rtol, settings.atol) is not None:
        return None
    return (f"{validate.setting('atol', settings.atol)} passes an output of zeros on these inputs: the check of the "
            "outputs checks nothing (give a tolerance below the output's scale, or none for the dtype's)")


def _on(value: Any, device: str) -> Any:
    """An output the harness kept, its tensors moved to `device` (compared there, as the reference's)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _on(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_on(v, device) for v in value]
    return value


def _check_outputs(result: dict[str, Any], reference: Callable[[int], Any], settings: TimerSettings, device: str,
                   timed: Timed, outputs: dict[str, Any]) -> str | None:
    """The first output that differs from the reference's on the same inputs (checks first, then the kept
    timed calls), as one sentence; None when all agree."""
    from roofline.measuring.correctness import compare

    def kept(name: Any) -> Any:
        if str(name) not in outputs:
            raise KeyError(name)
        return _on(outputs[str(name)], device)

    def differs(name: str, seed: int) -> Any:
        timed.checked += 1
        return compare(kept(name), reference(seed), settings.rtol, settings.atol)

    def deferred(entry: dict[str, Any], what: str, found: Any) -> str | None:
        later = compare(kept(entry["later"]), reference(int(entry["seed"])), settings.rtol, settings.atol)
        if later is not None:
            return None
        return (f"the output of {what} was computed after the call returned (work deferred past its return); "
                f"when it returned: {found.message()}")

    checks = result["checks"]
    for j, c in enumerate(checks):
        found = differs(c["output"], int(c["seed"]))
        if found is not None:
            what = f"check {j + 1} of {len(checks)}"
            hint = " (its first call was right: an output kept from an earlier call?)" if j else ""
            return deferred(c, what, found) or f"wrong output on fresh inputs ({what}){hint}: {found.message()}"
    for k in result["kept"]:
        found = differs(k["output"], int(k["seed"]))
        if found is not None:
            what = f"timed call {k['rep'] + 1} of {timed.reps}"
            return deferred(k, what, found) or f"wrong output of {what} (fresh inputs): {found.message()}"
    return None
