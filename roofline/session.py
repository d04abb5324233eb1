"""The use case every front end shares: catalog operators placed on a target's roof. `roofline analyze` and `roofline
run` (the CLI), `roofline.analyze` (the API) and the `roofline(op=...)` fixture (the pytest plugin) all call
`place_ops` or a `Placer`; nothing else wires timing, advice, counters, predictions and energy together. One
behaviour for all of them:

- a dtype not given is the target's default (`default_dtype`: fp16 on a GPU's roof, fp32 on the CPU's);
- each operator is built and timed on the target's device when it has one (`measuring.runner.measure_op`), and is
  the analytic model alone otherwise; its record carries the advice `roofline analyze` prints;
- what the target had to say (a CPU roofline measured now, "analytic only: ...") is kept last among each record's
  notes as `Note`s of the target's codes, so a command that printed them once leaves them out of its views by code;
- with `counters`, each record gets Nsight Compute's counts (and its advice again: rules read them); with
  `energy`, its joules per call;
- every record with a roofline time gets its predicted time from the operator database of the options (or the
  device's own), for an op timed alone: never "inside a model's sequence", which only a profile is
  (`analysis.predict.Predictor`); a warm L2 (`warm_l2`) predicts from the warm points;
- the results document is built by the target (`Target.document`).

The options are checked before anything is timed: refusals that need no device first (`check_options`), then those
that need the target (`Placer`: the energy counter, a CUDA device for counters, a bad database). The measuring code
is imported only when something is timed: the analytic path stays light.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from roofline.analysis.advice import with_advice
from roofline.analysis.placing import analytic
from roofline.core import validate
from roofline.core.dtypes import DEFAULT_DTYPE, DType, get_dtype
from roofline.core.errors import RooflineError, UsageError
from roofline.core.notes import Note
from roofline.core.progress import QUIET, Reporter
from roofline.core.record import Record, evolve
from roofline.measuring.choices import DEFAULT_POWER

if TYPE_CHECKING:
    from roofline.analysis.predict import Predictor
    from roofline.analysis.suite import Suite
    from roofline.ceilings.opdb import OpDB
    from roofline.core.document import Document
    from roofline.measuring.target import RoofChoice, Target
    from roofline.ops.base import Operator

# Note codes of what placing says once (the target's own are the target's).
TRANSFERRED = "predict.transferred"


def default_dtype(target: Target) -> DType:
    """The dtype an operator is placed in on `target` when none is given (`core.dtypes.DEFAULT_DTYPE`)."""
    return get_dtype(DEFAULT_DTYPE[target.ceilings.kind])


@dataclass(frozen=True)
class Options:
    """How operators are placed, as every front end spells it: `warm_l2` keeps the L2 warm between samples,
    `timer` and `power` choose how a GPU is timed, `kernels` records the kernels' names, `rep_s` is the sampling
    budget in seconds (None: the timers' default), `energy` and `counters` add joules and Nsight Compute's counts,
    `db` is the operator database of the predicted times (None: the device's own, else the bound)."""

    warm_l2: bool = False
    timer: str = "auto"
    power: str = DEFAULT_POWER
    kernels: bool = True
    rep_s: float | None = None
    energy: bool = False
    counters: bool = False
    db: str | os.PathLike[str] | OpDB | None = None


@dataclass(frozen=True)
class Entry:
    """One operator to place: its shape and dtype, the roof it may use (`tensor_cores=False`: the CUDA-core pipe),
    and a suite entry's threshold and number."""

    op: Operator
    dtype: DType
    tensor_cores: bool = True
    threshold: str | None = None
    suite_entry: int | None = None

    @property
    def label(self) -> str:
        return f"{self.op.name} {self.dtype.name}"


@dataclass(frozen=True)
class Placement:
    """What placing returns: the records (in the entries' order), their results document, the target they were
    placed on, and the notes a front end says once (the target's messages, a transferred database)."""

    records: list[Record]
    document: Document
    target: Target
    notes: list[Note] = field(default_factory=list)


def no_time() -> str:
    """The analytic-only setting as the caller spells it: `--no-time` on the command line, `time=False` in Python."""
    return "--no-time" if validate.arg_name("x") == "--x" else "time=False"


def check_options(options: Options, time: bool) -> str | None:
    """The refusals that need no device, before a target is resolved (a CPU calibration can take seconds): energy
    or counters without timing; counters without Nsight Compute on PATH. Returns the ncu to run (None without
    counters)."""
    if options.energy:
        refuse_energy_untimed(time)
    return ncu_to_run(time) if options.counters else None


def refuse_energy_untimed(time: bool) -> None:
    """Energy without timing: nothing runs, so nothing draws power to measure (a usage error)."""
    if not time:
        raise UsageError(f"{validate.setting('energy')} measures the operator on a GPU: it cannot go with {no_time()}")


def ncu_to_run(time: bool, runs: str = "the operator") -> str:
    """The Nsight Compute to run `runs` under (counters), checked before any work: a usage error without timing
    (nothing runs on a GPU to count) or without ncu on PATH."""
    if not time:
        raise UsageError(f"{validate.setting('counters')} runs {runs} under Nsight Compute: it cannot go with "
                         f"{no_time()} (nothing runs on a GPU to count)")
    from roofline.ncu.run import find_ncu

    return find_ncu()


class Placer:
    """Operators placed on one target with one set of options, for a command, a suite, a Python call or a pytest
    session. Built once: the checks that need the target run then, before anything is timed."""

    def __init__(self, target: Target, options: Options, ncu: str | None = None) -> None:
        from roofline.analysis.predict import predictor_for
        from roofline.ceilings.opdb import l2_state

        self.target, self.options = target, options
        self.ncu = ncu if ncu is not None else check_options(options, target.time_device is not None)
        # a bad database is refused here, before any timing; a warm L2 is predicted from the warm points
        self.predictor: Predictor = predictor_for(target.ceilings.device_id, options.db, l2_state(options.warm_l2))
        if self.ncu is not None:
            from roofline.ncu.run import require_cuda

            require_cuda(target.time_device)
        if options.energy:
            from roofline.measuring.energy import require_counter

            require_counter(target.time_device)

    @property
    def notes(self) -> list[Note]:
        """What a front end says once: the target's messages, and a database transferred from another GPU."""
        db = self.predictor.db
        moved = [Note(TRANSFERRED, f"predicted times: {db.path} transferred ({db.transferred})")] \
            if db is not None and db.transferred else []
        return [*self.target.messages, *moved]

    def record(self, entry: Entry, progress: Reporter = QUIET) -> Record:
        """One entry's record on the target's roof: timed on its device when it has one, the analytic model
        otherwise; with its advice, and the target's messages last among its notes (no prediction yet)."""
        o, target = self.options, self.target
        if target.time_device is None:
            return target.noted(analytic(entry.op, entry.dtype, target.ceilings, target.spec, entry.tensor_cores))
        from roofline.measuring import runner

        budget = {} if o.rep_s is None else {"rep_s": o.rep_s}
        record = runner.measure_op(entry.op, entry.dtype, target, warm_l2=o.warm_l2, method=o.timer,
                                   tensor_cores=entry.tensor_cores, power=o.power, kernels=o.kernels,
                                   progress=progress, **budget)
        return target.noted(with_advice(record, target.spec))

    def one(self, entry: Entry, progress: Reporter = QUIET) -> Record:
        """One entry's finished record (`record`, then `finish`), without a document."""
        return self.finish([self.record(entry, progress)], [entry])[0]

    def finish(self, records: list[Record], entries: Sequence[Entry]) -> list[Record]:
        """The records with what comes after their timing: Nsight Compute's counters (and the advice again),
        the predicted times, the joules per call."""

        pairs = [(e.op, e.dtype) for e in entries]
        if self.ncu is not None:
            from roofline.ncu.run import attach_counters
            from roofline.report.progress import StatusLine

            name = str(self.target.device_info.get("name") or "")
            with StatusLine(shorter="leave out --counters: the timing alone takes a second") as line:
                records = attach_counters(records, pairs, line, self.ncu, name)
            records = [with_advice(r, self.target.spec) for r in records]
        records = self.predicted(records)
        if self.options.energy:
            from roofline.measuring.energy import attach_energy
            from roofline.report.progress import StatusLine

            assert self.target.time_device is not None
            with StatusLine(shorter="leave out --energy: the timing alone is quicker") as line:
                records = attach_energy(records, pairs, self.target.time_device, line, self.target.spec)
        return records

    def predicted(self, records: list[Record]) -> list[Record]:
        """The records with their predicted times (a user's own kernels too: the bound, said in the source)."""
        from roofline.analysis.predict import predicted

        return predicted(records, self.predictor)

    def place(self, entries: Sequence[Entry], progress: Reporter = QUIET,
              each: Callable[[int, Entry], None] | None = None, extra: dict[str, Any] | None = None,
              **device_fields: Any) -> Placement:
        """Every entry placed (`record`, then `finish`), each record with its entry's threshold and number, in one
        results document (`extra` and `device_fields` as `Target.document` takes them; with `energy`, the stored
        energy model). `each(i, entry)` hears of each entry before it is placed (0-based)."""
        records = []
        for i, entry in enumerate(entries):
            if each is not None:
                each(i, entry)
            try:
                record = self.record(entry, progress)
            except RooflineError as exc:  # which entry could not run (out of memory, a dtype the roof lacks)
                if entry.suite_entry is None:
                    raise
                raise type(exc)(f"entry {entry.suite_entry} ({entry.label}): {exc}") from None
            if entry.suite_entry is not None:
                record = evolve(record, threshold=entry.threshold or None, suite_entry=entry.suite_entry)
            records.append(record)
        records = self.finish(records, entries)
        if self.options.energy:
            from roofline.measuring.energy import device_fields as energy_fields

            device_fields = {**device_fields, **energy_fields(self.target.time_device)}
        return Placement(records, self.target.document(records, extra=extra, **device_fields), self.target,
                         self.notes)


@dataclass(frozen=True)
class Where:
    """Which roof and where to time, as every front end takes them: a GPU spec (another GPU's: analytic only),
    a device, whether to time, which roof (datasheet, measured, both)."""

    gpu: str | None = None
    device: str | None = None
    time: bool = True
    roof: RoofChoice | None = None


def resolve(where: Where, shorter: str = "") -> Target:
    """The target of `where`, under a status line (a CPU without a stored roofline measures it now)."""
    from roofline.measuring.target import resolve_target
    from roofline.report.progress import StatusLine

    with StatusLine(shorter=shorter) as line:
        return resolve_target(gpu=where.gpu, device=where.device, time=where.time, roof=where.roof,
                              progress=line.status)


def place_ops(entries: Callable[[Target], list[Entry]], where: Where, options: Options, *,
              say: Callable[[str], None] = lambda _: None, shorter: str = "",
              step: Callable[[Entry], str] | None = None, extra: dict[str, Any] | None = None,
              **device_fields: Any) -> Placement:
    """The whole use case: the options checked, the target resolved, what it says said once (`say`), the entries
    (built for the target: their default dtype is its) placed under a progress line, one results document.
    `step(entry)`: the progress bar's words for each entry when there are several and they are timed."""
    from roofline.report.progress import StatusLine

    ncu = check_options(options, where.time)
    target = resolve(where, shorter)
    for msg in target.messages:
        say(msg)
    placer = Placer(target, options, ncu)
    for msg in placer.notes[len(target.messages):]:
        say(msg)
    todo = entries(target)
    bar = step is not None and len(todo) > 1 and target.time_device is not None
    with StatusLine(total=len(todo) if bar else None, shorter=shorter) as line:
        def tick(i: int, entry: Entry) -> None:
            if bar and step is not None:
                line.step(i, step(entry))

        return placer.place(todo, line, tick, extra, **device_fields)


def suite_entries(suite: Suite, target: Target) -> list[Entry]:
    """A suite's entries in their shapes and dtypes for the target's kind of roof, numbered from 1."""
    on_gpu = not target.is_cpu
    out = []
    for i, e in enumerate(suite.entries, start=1):
        out.append(Entry(e.operator(on_gpu), get_dtype(e.dtype_for(on_gpu)), e.tensor_cores, e.threshold or None, i))
    return out


def op_entries(ops: Sequence[Operator], dtype: str | DType | None,
               tensor_cores: bool = True) -> Callable[[Target], list[Entry]]:
    """Entries of `ops` in `dtype` (None: the target's default), for `place_ops`. A bad dtype is refused now,
    before any target is resolved."""
    given = None if dtype is None else get_dtype(dtype)

    def build(target: Target) -> list[Entry]:
        dt = given or default_dtype(target)
        return [Entry(op, dt, tensor_cores) for op in ops]

    return build
