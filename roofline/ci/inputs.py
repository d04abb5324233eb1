"""What the gate accepts: a results document or baseline read for `check` and `baseline update`, its records by
key and by name, and the samples a record needs to be judged.

Bad input is one UsageError (exit 2) naming the file, the record and the field: what the document reader refuses
(`core.document`: non-finite, negative or non-numeric times and samples), a document with no timed record, runs
that are not the record's samples (`ci.runs.check_runs`), a threshold that does not parse, two records that
share a key; read as results (`as_results`), also a stored between-run noise that is not what the record's own
runs show (`ci.runs.check_noise`). `baseline update` refuses, besides, a record of a suite with fewer than
MIN_SAMPLES samples (`too_few_samples`): `check` could never judge it.
"""

from __future__ import annotations

import math
import os
from typing import Any

from roofline.ci.rules import FailOn, parse_fail_on
from roofline.ci.runs import RUN_SAMPLES, check_noise, check_runs, run_samples
from roofline.ci.verdicts import where_text
from roofline.core import validate
from roofline.core.document import Document, read_document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.record import Key, Record

# Below this many samples per side a record is not judged: with 4 against 4 the smallest two-sided exact
# p-value of the Mann–Whitney U test is 2/C(8,4) = 0.029 > ALPHA (0.01), so significance could never be shown;
# 5 against 5 gives 2/252 = 0.0079. A record of a suite with fewer is `unjudged`, and fails the check unless
# allowed; a profile's op called fewer times is judged on the threshold alone (its region's row gates it).
MIN_SAMPLES = 5


def load_for_check(path: str | os.PathLike[str], *, as_results: bool = False) -> Document:
    """Read a results document or baseline for `check`; anything unusable is a one-line UsageError (exit 2).
    `as_results`: the document is the results of a check or the input of `baseline update`, whose stored
    `run_noise` must be what its own runs show (a baseline's may hold A/A history beyond its runs)."""
    try:
        doc = read_document(path)
    except UsageError:
        raise
    except RooflineError as exc:
        raise UsageError(str(exc)) from None
    require_timed(doc, str(path))
    for i, rec in enumerate(doc.records):
        problem = check_runs(rec) or (check_noise(rec) if as_results else None)
        if problem:
            raise UsageError(f"{path}: record {i} ({rec.op}): {problem}")
        record_rules(rec)
    records_by_key(doc, str(path))
    return doc


def require_timed(doc: Document, where: str) -> None:
    """A side of the check must hold timed records: a document with none (a run that crashed before its first
    record, a truncated write) would otherwise pass the gate, every record of the other side new or missing."""
    if not doc.records:
        raise UsageError(f"{where}: a results document with no records (did the run fail?): a check and a "
                         "baseline need timed records")
    if not doc.timed:  # `baseline update` reads its inputs here too: the words fit both commands
        raise UsageError(f"{where}: no timed record (analytic only: was it run with --no-time?): a check and a "
                         "baseline need timed records")


def record_rules(rec: Record) -> FailOn | None:
    """The record's own `threshold` (from its suite entry) parsed; None when it has none. One that does not
    parse is a UsageError naming the record, on either side (the gate reads the baseline's alone)."""
    if not rec.threshold:
        return None
    try:
        return parse_fail_on(str(rec.threshold))
    except UsageError as exc:
        raise UsageError(f"{record_name(rec)}: bad threshold: {exc}") from None


def _times(values: list[Any]) -> bool:
    """Whether `values` are times or energies a measurement gives: finite numbers above 0 (sum and min run in C:
    a record holds up to thousands of samples; a string raises TypeError)."""
    try:
        return not values or (math.isfinite(sum(values)) and min(values) > 0)
    except (TypeError, OverflowError):
        return False


def measurement_problem(rec: Record) -> str | None:
    """What of the numbers the gate reads is no measurement (a non-finite, non-positive or non-numeric time,
    sample, run sample or J-per-call sample; a non-finite roofline time), as the field's name and what it must
    be; None when all are. The reader refuses these in a file (`core.document.check_record`); this is the same
    rule for a document built in memory (the pytest plugin's, the API's)."""
    runs = rec.extra.get(RUN_SAMPLES)
    for name, values in (("time_s", [] if rec.time_s is None else [rec.time_s]),
                         ("time_samples_s", rec.time_samples_s or []),
                         (RUN_SAMPLES, [t for r in runs for t in r] if isinstance(runs, list) and all(
                             isinstance(r, list) for r in runs) else runs or []),
                         ("energy.samples_j", (rec.energy or {}).get("samples_j") or [])):
        if not isinstance(values, list) or not _times(values):
            return f"{name} must be finite numbers above 0"
    roof = rec.roofline_time_s
    if roof is not None and (isinstance(roof, bool) or not isinstance(roof, (int, float)) or not math.isfinite(roof)
                             or roof < 0):
        return "roofline_time_s must be a finite number, 0 or more"
    return None


def sample_count(rec: Record) -> int:
    """How many time samples the record holds (all runs'; a time without samples is one); 0 when untimed."""
    return sum(len(run) for run in run_samples(rec) or [])


def too_few_samples(doc: Document, where: str) -> list[str]:
    """The timed records of a suite (not a profile's ops) with fewer than MIN_SAMPLES samples, each as
    'record 3 (gemm fp16 m=...): 2 samples': `check` reports them unjudged."""
    return [f"{where}: record {i} ({record_name(rec)}): {n} sample{'s' * (n != 1)}"
            for i, rec in enumerate(doc.records)
            if rec.timed and rec.count is None and (n := sample_count(rec)) < MIN_SAMPLES]


def record_name(rec: Record, case: str = "") -> str:
    """'gemm fp16 m=4096 n=4096 k=4096', with the case that tells two such records apart: ' [tensor_cores=False]';
    a profile record's with where it ran: ' in step: fc1'."""
    where = f" in {where_text(rec.module, rec.region)}" if rec.count is not None else ""
    return f"{rec.label} {rec.shape}{where}" + (f" [{case}]" if case else "")


def _profile_cases(recs: list[Record]) -> list[str]:
    """Cases telling apart profile records that share a key (one op, module and inputs; e.g. two reductions
    over other dims): their output shapes, then input dtypes, then their order in the program."""
    cases = [f"out={r.output_shapes}" for r in recs]
    cases = [c if cases.count(c) == 1 else f"{c} in={r.input_dtypes}" for c, r in zip(cases, recs, strict=True)]
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        seen[c] = seen.get(c, 0) + 1
        out.append(c if cases.count(c) == 1 else f"{c} #{seen[c]}")
    return out


def records_by_key(doc: Document, where: str) -> dict[Key, Record]:
    """Records by `Record.key()`. Records sharing a key are told apart by their tensor_cores flag (profile
    records: by `_profile_cases`), else UsageError."""
    groups: dict[Key, list[Record]] = {}
    for rec in doc.records:
        groups.setdefault(rec.key(), []).append(rec)
    out: dict[Key, Record] = {}
    for key, recs in groups.items():
        if len(recs) > 1 and all(r.count is not None for r in recs):
            for rec, case in zip(recs, _profile_cases(recs), strict=True):
                out[rec.key(case)] = rec
            continue
        flags = [r.tensor_cores for r in recs]
        if len(recs) > 1 and len(set(flags)) < len(flags):
            raise UsageError(f"{where}: two records for {record_name(recs[0])}: records must be unique by operator, "
                             "variant, shape and dtype (and tensor-core use)")
        for rec in recs:
            out[key if len(recs) == 1 else rec.key(f"tensor_cores={rec.tensor_cores}")] = rec
    return out


def rules_arg(rules: Any, name: str) -> FailOn:
    """The failure rules given as text ('median:5%') or parsed (a FailOn); anything else is a UsageError (5 was
    taken for rules, and raised AttributeError deep in the judging)."""
    if isinstance(rules, str):
        return parse_fail_on(rules)
    if isinstance(rules, FailOn):
        return rules
    raise UsageError(f"{validate.arg_name(name)} must be failure rules as text, such as 'median:5%' (or a "
                     f"FailOn), got {validate.brief(rules)}")


def judge_args(results: Any, baseline: Any, rules: Any, *, allow_missing: Any, allow_unjudged: Any) -> FailOn:
    """`judge`'s arguments checked (a path or a dict where a document is, a number for the rules, 'no' for a
    flag: each a UsageError, not an AttributeError in the judging); the rules parsed."""
    for doc, what in ((results, "results"), (baseline, "baseline")):
        if not isinstance(doc, Document):  # run_check reads files, judge takes documents
            raise UsageError(f"judge: {what} must be a roofline.Document (read_document(path), or run_check with "
                             f"paths), got {validate.a_noun(type(doc).__name__)}")
    for flag, value in (("allow_missing", allow_missing), ("allow_unjudged", allow_unjudged)):
        validate.boolean("judge", flag, value)
    return rules_arg(rules, "rules")
