"""The pytest plugin (entry point `pytest11`, name `roofline`): time kernels where their authors test them.

- The `roofline` fixture times a kernel and returns its `Record`:
  `rec = roofline(fn, flops=..., bytes=..., ref=reference_fn)` for a user's callable (its dtype inferred from
  its output unless given; the reference is checked first, `roofline.measuring.correctness`), or
  `roofline(op="gemm", m=4096, n=4096, k=4096)` for a catalog shape with the package's own kernel, placed as
  `roofline analyze` places it (`roofline.session.Placer`); `assert rec.roofline_fraction > 0.8`.
- What the timing target had to say (a CPU roofline measured now, the CPU timed because torch cannot reach the
  GPU) is kept in every record's notes and printed once in the terminal summary.
- `--roofline-save DIR` writes the session's records as one results document (a new file per session);
  `--roofline-compare BASELINE --roofline-fail-on median:5%` judges them as `roofline check` does and fails
  the session on a significant regression.
- Every record carries its test's node id in `params["test"]` (and `params["call"]` from a test's second call
  of the same kernel on), so `Record.key()`, and with it `check`, matches records across runs test by test.
- Every record gets its predicted time (docs/prediction.md): from `--roofline-db FILE`, else the timing
  device's own operator database (`roofline calibrate ops`), else the bound, said in `prediction_source`.
- Timing device: `--roofline-device` (cpu, cuda, cuda:N); by default the machine's GPU, else the CPU, whose
  measured roofline is as real a roof as a GPU's. A test that cannot time there is skipped with the reason.
- `-p no:roofline` turns the plugin off.

Loading the plugin imports neither torch nor matplotlib (it loads in every pytest session of an environment
that has roofline installed): everything is imported when a test first asks for the fixture.
docs/pytest.md is the user guide.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from roofline.ci.judge import FailOn, Report
    from roofline.core.document import Document
    from roofline.core.record import Key, Record
    from roofline.measuring.target import Target
    from roofline.session import Placer

# The params keys that tie a record to its test: the node id, and the call's number within the test when it
# times the same kernel (name, shape and dtype) more than once.
TEST_PARAM = "test"
CALL_PARAM = "call"
DEVICES = re.compile(r"^(cpu|cuda(:\d+)?)$")
DEFAULT_FAIL_ON = "median:5%"  # roofline.ci.judge.DEFAULT_FAIL_ON, not imported: loading stays cheap
# The name of a saved document in a --roofline-save folder: the session's start (UTC), made unique.
SAVE_STEM = "roofline_%Y%m%d-%H%M%S"
# Verdicts printed in the terminal summary (every row with -v); the rest are counted in its summary line.
SHOWN_VERDICTS = ("worse", "worse_busy_machine", "worse_not_significant", "better", "not_comparable", "new",
                  "unjudged")


@dataclass
class RooflineSession:
    """The session's options, the target it times on (resolved on first use) and the records it took."""

    device: str | None
    save: str | None
    rep_s: float | None
    baseline: Document | None = None
    baseline_path: str | None = None
    fail_on: FailOn | None = None
    records: list[Record] = field(default_factory=list)
    calls: dict[Key, int] = field(default_factory=dict)
    target: Target | None = None
    unavailable: str | None = None  # why nothing can be timed here (every test that asks is skipped)
    lines: list[tuple[str, dict[str, bool]]] = field(default_factory=list)  # the terminal summary
    report: Report | None = None
    db: str | None = None  # --roofline-db: the operator database of the predicted times
    placers: dict[bool, Placer] = field(default_factory=dict)  # by warm L2: how the fixture places, as `analyze`

    def resolve(self) -> Target:
        """The session's target, resolved once; skips the calling test when nothing can be timed (a bad
        operator database fails it with one line)."""
        if self.target is None and self.unavailable is None:
            self.target, self.unavailable = _resolve(self.device)
        if self.target is None:
            pytest.skip(f"roofline: {self.unavailable}")
        self.placer(warm_l2=False)
        return self.target

    def placer(self, warm_l2: bool) -> Placer:
        """The session's placer for an L2 state (`session.Placer`: advice, predictions from the warm points with
        a warm L2), built once each; a damaged database fails the calling test with one line."""
        if warm_l2 not in self.placers:
            from roofline.core.errors import RooflineError
            from roofline.session import Options, Placer

            assert self.target is not None
            refused = ""
            try:
                self.placers[warm_l2] = Placer(self.target, Options(warm_l2=warm_l2, rep_s=self.rep_s, db=self.db))
            except RooflineError as exc:  # the device's own file, damaged (a named one is checked at start)
                refused = str(exc)
            if refused:  # outside the except block: one line, no exception chain
                pytest.fail(f"roofline: operator database: {refused}", pytrace=False)
        return self.placers[warm_l2]

    def add(self, record: Record, nodeid: str) -> Record:
        """The record tied to its test (see TEST_PARAM), kept for the session's document."""
        rec = replace(record, params={**record.params, TEST_PARAM: nodeid})
        n = self.calls[rec.key()] = self.calls.get(rec.key(), 0) + 1
        if n > 1:
            rec = replace(rec, params={**rec.params, CALL_PARAM: n})
        self.records.append(rec)
        return rec

    def say(self, line: str, **markup: bool) -> None:
        self.lines.append((line, markup))


STATE = pytest.StashKey[RooflineSession]()


def _resolve(device: str | None) -> tuple[Target | None, str | None]:
    if importlib.util.find_spec("torch") is None:
        return None, "torch is not installed: nothing can be timed"
    from roofline.core.errors import RooflineError
    from roofline.measuring.target import resolve_target

    try:
        target = resolve_target(device=device, time=True)
    except RooflineError as exc:
        where = f"--roofline-device {device}" if device else "the default device (this machine's GPU)"
        why = re.sub(r"^(?:--)?device \S+: ", "", str(exc))  # the option is named once, as the plugin's
        return None, f"cannot time on {where}: {why}"
    if target.time_device is None:
        return None, "the target has no device to time on"
    return target, None


# ---------------------------------------------------------------- options
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roofline", "roofline: kernels timed and placed on the roofline")
    group.addoption("--roofline-device", metavar="DEVICE", default=None,
                    help="where the `roofline` fixture times: cpu, cuda or cuda:N (default: this machine's GPU, "
                         "else the CPU); tests that cannot time there are skipped")
    group.addoption("--roofline-save", metavar="PATH", default=None,
                    help="save the session's records as one results document: a new file in the folder PATH, "
                         "or the file PATH.json (refused if it exists)")
    group.addoption("--roofline-compare", metavar="BASELINE", default=None,
                    help="judge the session's records against a results document, as `roofline check` does, "
                         "and fail the session on a significant regression")
    group.addoption("--roofline-fail-on", metavar="RULES", default=DEFAULT_FAIL_ON,
                    help="--roofline-compare's failure rules, as `roofline check --fail-on` (default "
                         + DEFAULT_FAIL_ON.replace("%", "%%") + ")")  # argparse formats help with %
    group.addoption("--roofline-db", metavar="FILE", default=None,
                    help="operator database of the records' predicted times (default: the timing device's own, "
                         "from `roofline calibrate ops`; without one the prediction is the bound)")
    group.addoption("--roofline-rep-ms", metavar="MS", type=float, default=None,
                    help="time budget for each measurement's samples in milliseconds (default: the timers' "
                         "25 ms)")


def pytest_configure(config: pytest.Config) -> None:
    """Check the options before any test runs: a bad rule or an unreadable baseline is a usage error."""
    opt = config.option
    device = opt.roofline_device
    if device is not None and not DEVICES.match(device.strip().lower()):
        raise pytest.UsageError(f"--roofline-device {device!r}: use cpu, cuda or cuda:N")
    rep_ms = opt.roofline_rep_ms
    if rep_ms is not None and not rep_ms > 0:
        raise pytest.UsageError("--roofline-rep-ms must be a positive number of milliseconds")
    if getattr(config, "workerinput", None) is not None and (opt.roofline_save or opt.roofline_compare):
        raise pytest.UsageError("--roofline-save/--roofline-compare with pytest-xdist: workers timing in parallel "
                                "share the device; run the timed tests without -n")
    state = RooflineSession(device=device.strip().lower() if device else None, save=opt.roofline_save,
                            rep_s=rep_ms / 1e3 if rep_ms else None, db=opt.roofline_db)
    if state.save and state.save.endswith(".json") and Path(state.save).exists():
        raise pytest.UsageError(f"--roofline-save {state.save}: the file exists; not overwriting it (give a "
                                "folder to get a new file per session)")
    if opt.roofline_db:
        from roofline.ceilings.opdb import read
        from roofline.core.errors import RooflineError

        try:
            read(opt.roofline_db)
        except RooflineError as exc:
            raise pytest.UsageError(f"--roofline-db: {exc}") from None
    if opt.roofline_compare:
        from roofline.ci.judge import load_for_check, parse_fail_on
        from roofline.core.errors import RooflineError

        try:
            state.fail_on = parse_fail_on(opt.roofline_fail_on)
            state.baseline = load_for_check(opt.roofline_compare)
        except RooflineError as exc:
            raise pytest.UsageError(f"roofline: {exc}".replace("--fail-on", "--roofline-fail-on")) from None
        state.baseline_path = opt.roofline_compare
    config.stash[STATE] = state


# ---------------------------------------------------------------- the fixture
class Roofline:
    """The `roofline` fixture's value: call it to time a kernel; every record is kept for the session."""

    def __init__(self, state: RooflineSession, nodeid: str, target: Target) -> None:
        self._state = state
        self.nodeid = nodeid
        self.target = target

    @property
    def device(self) -> str:
        """Where kernels are timed: 'cpu', 'cuda:0'."""
        assert self.target.time_device is not None
        return self.target.time_device

    @property
    def records(self) -> list[Record]:
        """This test's records so far."""
        return [r for r in self._state.records if r.params.get(TEST_PARAM) == self.nodeid]

    def __call__(self, fn: Callable[[], Any] | None = None, /, *, op: str | None = None,
                 flops: float | None = None, bytes: float | None = None, dtype: Any = None,
                 ref: Callable[[], Any] | None = None, atol: float | None = None, rtol: float | None = None,
                 name: str = "custom", bytes_written: float | None = None, params: dict[str, Any] | None = None,
                 tensor_cores: bool = True, warm_l2: bool = False, **shape: Any) -> Record:
        """Time `fn` (a zero-argument callable, with its `flops` and `bytes`; checked against `ref` first) or
        the catalog operator `op` at `shape` (e.g. op="gemm", m=4096, n=4096, k=4096). Returns the record;
        a wrong kernel or bad arguments fail the test with one line."""
        __tracebackhide__ = True
        from roofline.core.errors import RooflineError

        caller = sys._getframe(1)
        at = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
        refused = ""
        try:
            if op is not None:
                given = [k for k, v in (("fn", fn), ("flops", flops), ("bytes", bytes), ("ref", ref), ("atol", atol),
                                        ("rtol", rtol), ("bytes_written", bytes_written), ("params", params))
                         if v is not None] + (["name"] if name != "custom" else [])
                rec = self._catalog(op, dtype, shape, given, tensor_cores=tensor_cores, warm_l2=warm_l2)
            else:
                rec = self._custom(fn, flops, bytes, dtype, shape, ref=ref, atol=atol, rtol=rtol, name=name,
                                   bytes_written=bytes_written, params=params, tensor_cores=tensor_cores,
                                   warm_l2=warm_l2)
        except RooflineError as exc:
            refused = str(exc)
        if refused:  # failed outside the except block: the report shows this one line, no exception chain
            pytest.fail(f"{at}: roofline: {refused}", pytrace=False)
        return self._state.add(rec, self.nodeid)

    def _catalog(self, op: str, dtype: Any, shape: dict[str, Any], given: list[str], *, tensor_cores: bool,
                 warm_l2: bool) -> Record:
        """The catalog operator `op` at `shape`, placed as `roofline analyze` places it (`session.Placer`)."""
        from roofline.core.dtypes import get_dtype
        from roofline.core.errors import UsageError
        from roofline.ops import make
        from roofline.session import Entry, default_dtype

        if given:
            raise UsageError(f"op={op!r} times the catalog's own kernel: {', '.join(given)} belong to a "
                             "callable (roofline(fn, flops=..., bytes=...))")
        dt = default_dtype(self.target) if dtype is None else get_dtype(dtype)
        return self._state.placer(warm_l2).one(Entry(make(op, dtype=dt.name, **shape), dt, tensor_cores))

    def _custom(self, fn: Callable[[], Any] | None, flops: float | None, bytes: float | None, dtype: Any,
                shape: dict[str, Any], **kw: Any) -> Record:
        from roofline.core.errors import UsageError
        from roofline.measuring.runner import measure_on

        if fn is None or not callable(fn):
            raise UsageError("roofline(fn, flops=..., bytes=...) needs a zero-argument callable, or op= for a "
                             "catalog operator")
        if flops is None or bytes is None:
            raise UsageError("roofline(fn, ...) needs flops= and bytes= (the kernel's minimum work and traffic)")
        if shape:
            raise UsageError(f"unknown argument(s) {', '.join(sorted(shape))}: a callable's shape goes in "
                             "params={...}")
        rec = measure_on(self.target, fn, flops=flops, bytes=bytes, dtype=dtype, rep_s=self._state.rep_s, **kw)
        return self._state.placer(bool(kw.get("warm_l2"))).predicted([rec])[0]


@pytest.fixture
def roofline(request: pytest.FixtureRequest) -> Roofline:
    """Time kernels and place them on the roofline: `rec = roofline(fn, flops=..., bytes=..., dtype=...,
    ref=...)` or `roofline(op="gemm", m=..., n=..., k=...)`; skips the test where nothing can be timed."""
    state = request.config.stash[STATE]
    return Roofline(state, request.node.nodeid, state.resolve())


# ---------------------------------------------------------------- the session's end
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Save and judge the session's records (before the terminal summary, which prints what happened)."""
    config = session.config
    state = config.stash.get(STATE, None)
    if state is None or (state.save is None and state.baseline is None):
        return
    if not state.records:
        state.say("no test timed anything: nothing " + ("saved" if state.save else "compared"))
        return
    from roofline.core.errors import RooflineError

    assert state.target is not None
    doc = state.target.document(state.records, extra={"command": ["pytest", *config.invocation_params.args]},
                                suite="pytest")
    failed = False
    try:
        if state.save:
            path = save_document(doc, state.save)
            state.say(f"saved {len(state.records)} record(s) to {path}")
        if state.baseline is not None:
            failed = _compare(state, doc, config)
    except RooflineError as exc:
        state.say(f"roofline: {exc}", red=True)
        failed = True
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _compare(state: RooflineSession, doc: Document, config: pytest.Config) -> bool:
    """Judge the session against the baseline; whether it regressed."""
    from roofline.ci.judge import judge, records_by_key

    assert state.baseline is not None and state.fail_on is not None
    if not records_by_key(doc, "results").keys() & records_by_key(state.baseline, "baseline").keys():
        state.say(f"no record of this session is in {state.baseline_path}: nothing compared (save a new "
                  "baseline with --roofline-save)", yellow=True)
        return False
    report = state.report = judge(doc, state.baseline, state.fail_on)
    if report.refused:  # the session compared too little to judge: said, and the session fails
        state.say(f"roofline: {report.refused}", red=True)
    state.say(f"compared with {state.baseline_path}: {report.summary()}", bold=True, red=not report.passed,
              green=report.passed)
    verbose = (config.getoption("verbose", 0) or 0) > 0
    for row in report.rows:
        if verbose or row.verdict in SHOWN_VERDICTS:
            state.say(f"{row.verdict.upper()} {row.name}: {row.reason}",
                      red=row.verdict in ("worse", "worse_busy_machine"))
    for note in report.notes:
        state.say(f"note: {note}")
    if report.regressions:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:  # the final line says "N regressed" beside "N passed"
            tr.stats.setdefault("regressed", []).extend(report.regressions)
    return not report.passed


def save_document(doc: Document, where: str) -> Path:
    """Write the document: to `where` when it names a .json file (refused if it exists), else as a new file
    in the folder `where` (created if missing), named after the session's start and never overwriting."""
    from roofline.core.document import write_document
    from roofline.core.errors import RooflineError

    if where.endswith(".json"):
        return write_document(doc, where)
    folder = Path(where)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflineError(f"--roofline-save {where}: cannot create the folder: {exc.strerror or exc}") from None
    stem = datetime.now(timezone.utc).strftime(SAVE_STEM)
    n = 1
    while True:
        path = folder / (f"{stem}.json" if n == 1 else f"{stem}_{n}.json")
        try:  # claim the name: a session finishing at the same second takes the next one
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            n += 1
            continue
        except OSError as exc:
            raise RooflineError(f"cannot write {path}: {exc.strerror or exc}") from None
        try:
            return write_document(doc, path, force=True)  # replaces the empty file just claimed
        except BaseException:
            path.unlink(missing_ok=True)
            raise


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The `roofline` section: the target's messages (as a command prints them), then what the session's end
    saved and judged."""
    state = config.stash.get(STATE, None)
    messages = state.target.messages if state is not None and state.target is not None else []
    if state is None or not (state.lines or messages):
        return
    terminalreporter.ensure_newline()
    terminalreporter.section("roofline")
    for message in messages:
        terminalreporter.write_line(message)
    for line, markup in state.lines:
        terminalreporter.write_line(line, **markup)
