"""`roofline baseline update`: make one or more results documents the baseline, the only code that writes one;
and the merge of several runs into one document that it shares with `roofline run --repeat`."""

from __future__ import annotations

import dataclasses
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from roofline.ci.inputs import MIN_SAMPLES, load_for_check, record_name, records_by_key, too_few_samples
from roofline.ci.judge import device_differences, record_differences
from roofline.ci.runs import learn_noise, noise_of, pool_noise, run_count, run_samples, with_noise, with_runs
from roofline.core.document import Document, dumps, now_iso
from roofline.core.errors import UsageError
from roofline.core.files import atomic_write, locked
from roofline.core.record import Counters, Key, Record

RUNS = "runs"  # the document's list of its runs' provenance (ci.runs)


@dataclass(frozen=True)
class BaselineUpdate:
    """What `update_baseline` did, for the CLI to print (`lines()`)."""

    path: Path
    created: bool
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: int = 0
    device_changes: tuple[str, ...] = ()
    runs: int = 1  # the most runs any record of the new baseline holds
    noise: tuple[str, ...] = ()  # what the new baseline knows of its records' between-run noise
    thresholds: tuple[str, ...] = ()  # the records' own thresholds the baseline stores ('median:8% (2 records)')

    def lines(self, width: int | None = None) -> list[str]:
        """What was done, a line each; `width`: the noise lines (prose, no path) wrapped to it under a hanging
        indent (the first line keeps the baseline's path whole, for copying)."""
        runs = f" from {self.runs} runs" if self.runs > 1 else ""
        if self.created:
            out = [f"baseline {self.path} created with {len(self.added)} record(s){runs}"]
        else:
            out = [f"baseline {self.path} replaced: {len(self.added)} added, {len(self.removed)} removed, "
                   f"{self.kept} kept (with new samples){runs}"]
            out += [f"  + {k}" for k in self.added] + [f"  - {k}" for k in self.removed]
            out += [f"  device: {d}" for d in self.device_changes]
        said = list(self.noise)
        if self.thresholds:  # check reads them in place of --fail-on: said, so the reviewer of the commit sees them
            said.append("thresholds of their own, which check uses in place of --fail-on: "
                        + ", ".join(self.thresholds))
        if width is None:
            return out + [f"  {n}" for n in said]
        return out + [w for n in said for w in textwrap.wrap(
            n, width, initial_indent="  ", subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)]


def _names(doc: Document, where: str) -> dict[Key, str]:
    return {k: record_name(r, k[4]) for k, r in records_by_key(doc, where).items()}


# ---------------------------------------------------------------- merging runs
def _provenance(doc: Document) -> list[dict[str, object]]:
    """A document's runs as {created, command}: its own `runs` list when it already holds several, else itself."""
    runs = doc.extra.get(RUNS)
    if isinstance(runs, list) and runs and all(isinstance(r, dict) for r in runs):
        return list(runs)
    return [{"created": doc.created, "command": doc.extra.get("command")}]


def _known_counters(counters: Counters) -> int:
    return sum(v is not None for v in dataclasses.asdict(counters).values())


def merge_runs(docs: Sequence[tuple[str, Document]]) -> Document:
    """One document holding every run of `docs` ((where, document) pairs, in run order; each may itself hold
    several runs). The runs must be A/A runs of one suite on one machine: each record keeps every run's samples
    apart (`run_samples_s`) and learns its between-run noise from them (`run_noise`, ci.runs); its other fields
    are the first run's. Refused (UsageError): another device or driver, another roof or spec peak for a record,
    a profile document (its regions are summed over one program run and do not merge)."""
    if not docs:
        raise UsageError("no results document to merge")
    first_where, first = docs[0]
    indexed: list[tuple[str, dict[Key, Record]]] = []
    for where, doc in docs:
        if any(r.count is not None for r in doc.records):
            raise UsageError(f"{where}: a profile document: profiles are not merged into runs (one profile per "
                             "baseline)")
        diffs = device_differences(doc, first)
        if diffs:
            raise UsageError(f"{where} was not run on the machine of {first_where} ({'; '.join(diffs)}): runs merged "
                             "into one document come from one machine and driver")
        indexed.append((where, records_by_key(doc, where)))
    order: dict[Key, None] = {}
    for _, idx in indexed:
        order.update(dict.fromkeys(idx))
    records = []
    for key in order:
        recs = [(where, idx[key]) for where, idx in indexed if key in idx]
        # the counters of the run that has the most of them (one profiled call each: not merged)
        counted = [rec.counters for _, rec in recs if rec.counters is not None]
        head = replace(recs[0][1], counters=max(counted, key=_known_counters, default=None))
        runs: list[list[float]] = []
        notes: list[str] = []
        for where, rec in recs:
            diffs = record_differences(rec, head)
            if diffs:
                raise UsageError(f"{where}: {record_name(rec, key[4])}: {'; '.join(diffs)}: its runs cannot be merged")
            runs += run_samples(rec) or []
            notes += [n for n in rec.notes if n not in notes]
        if len(runs) < 2:  # untimed, or in one run only: kept as it is
            records.append(head)
            continue
        records.append(replace(with_runs(head, runs, learn_noise([runs])), notes=notes))
    extra = {k: v for k, v in first.extra.items() if k != RUNS}
    extra[RUNS] = [p for _, doc in docs for p in _provenance(doc)]
    return Document(device=dict(first.device), records=records, created=now_iso(), extra=extra)


def _with_old_noise(doc: Document, old: Document, where: str) -> Document:
    """`doc` with each record's between-run noise pooled with the old baseline's for the same record: A/A
    history kept across baseline updates (each side's spread is around its own mean, so an intended change
    between the two does not count as noise)."""
    old_idx = records_by_key(old, where)
    records = []
    for key, rec in records_by_key(doc, "results").items():
        prior = old_idx.get(key)
        noise = pool_noise([noise_of(rec), noise_of(prior) if prior is not None else None])
        records.append(with_noise(rec, noise) if rec.timed and noise is not None else rec)
    return replace(doc, records=records)


def noise_summary(doc: Document) -> tuple[str, ...]:
    """What a document knows of its records' between-run noise, in a line or two (for `run --repeat` and
    `baseline update`)."""
    return _noise_lines(doc, None, False)


def _noise_lines(doc: Document, old: Document | None, keep_noise: bool) -> tuple[str, ...]:
    """One line on the new baseline's between-run noise: what it holds, or that it is unknown."""
    noises = [(record_name(r), n) for r in doc.records if (n := noise_of(r)) is not None]
    timed = [r for r in doc.records if r.timed]
    out = []
    if noises:
        sds = sorted((n.relative_sd["median"], name) for name, n in noises)
        runs = max(n.runs for _, n in noises)
        out.append(f"between-run noise of {len(noises)} of {len(timed)} records (sd of a run's median, from up to "
                   f"{runs} runs): median {sds[len(sds) // 2][0]:.1%}, largest {sds[-1][0]:.1%} ({sds[-1][1]})")
    if len(noises) < len(timed):
        out.append(f"between-run noise unknown for {len(timed) - len(noises)} record(s) (one run): check falls back "
                   "to the threshold and the samples; `roofline run SUITE --repeat 5` or several results files give it")
    if old is not None and not keep_noise and not noises and any(noise_of(r) for r in old.records):
        out.append("the old baseline's between-run noise was dropped (--keep-noise pools it with the new runs)")
    return tuple(out)


# ---------------------------------------------------------------- baseline update
def update_baseline(results_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                    baseline_path: str | os.PathLike[str], *, force: bool = False,
                    keep_noise: bool = False, allow_unjudged: bool = False) -> BaselineUpdate:
    """Make the results the baseline: running `roofline baseline update` is the user asking for it.

    - `results_path`: one results document, or several (A/A runs of one suite on one machine, e.g. from
      `roofline run --repeat` or repeated `roofline run`), merged into one baseline holding every run
      (`merge_runs`); each record learns its between-run noise from them.
    - The results must be valid, timed results documents, read as `check` reads its results (else UsageError;
      the baseline is untouched): what check refuses is never stored. A record of a suite with fewer than
      MIN_SAMPLES samples, which check could never judge, is refused too unless `allow_unjudged`.
    - No baseline yet: it is created (and its folder). A baseline there: it is replaced, written to a temp file
      beside it and moved into place (never half-written; a failed write is a one-line RooflineError). One
      results file and no `keep_noise`: the baseline is that file's exact bytes.
    - `keep_noise`: each record's between-run noise is pooled with the old baseline's (A/A history across
      updates; see `_with_old_noise`).
    - Refused without `force`: replacing a baseline recorded on another GPU (spec or device name), so a run on
      the wrong machine cannot silently re-point baselines/h200.json; and replacing an unreadable baseline. Both
      are a UsageError, exit status 2 (docs/guide.md): the inputs do not fit together, as `check`'s do not when it
      compares another GPU's records.
    The returned BaselineUpdate lists the records added and removed. `check` never writes a baseline.
    """
    paths = [Path(results_path)] if isinstance(results_path, (str, os.PathLike)) else [Path(p) for p in results_path]
    if not paths:
        raise UsageError("no results document to make the baseline")
    if len({p.resolve() for p in paths}) < len(paths):
        raise UsageError("a results file is given twice: each run counts once in the between-run noise")
    base_path = Path(baseline_path)
    docs = [(str(p), load_for_check(p, as_results=True)) for p in paths]
    merged = len(paths) > 1 or keep_noise
    results = merge_runs(docs) if len(paths) > 1 else docs[0][1]
    few = too_few_samples(results, str(paths[0]) if len(paths) == 1 else "the merged runs")
    if few and not allow_unjudged:
        more = f" (and {len(few) - 1} more record{'s' * (len(few) > 2)})" if len(few) > 1 else ""
        raise UsageError(f"{few[0]}, fewer than the {MIN_SAMPLES} samples check needs to judge a record{more}: it "
                         "would be unjudged; time it with more repetitions, or pass --allow-unjudged to store it")
    with locked(base_path, make_parents=True):  # two updates at once run one after the other: the second reads the
        return _replace(base_path, results, paths[0], merged, force, keep_noise)  # first's baseline and GPU guard


def _replace(base_path: Path, results: Document, first: Path, merged: bool, force: bool,
             keep_noise: bool) -> BaselineUpdate:
    """`update_baseline` from the read of the old baseline to the rename, under the baseline's lock."""
    paths = [first]
    cur_names = _names(results, str(paths[0]))
    old: Document | None = None
    if base_path.exists():
        try:
            old = load_for_check(base_path)
        except UsageError as exc:
            if not force:
                raise UsageError(f"the existing baseline is unreadable ({exc}): pass --force to replace it") from None
            _write(base_path, results, paths[0], merged)
            return BaselineUpdate(base_path, False, added=tuple(cur_names.values()),
                                  device_changes=("the old baseline was unreadable",), runs=_most_runs(results),
                                  noise=_noise_lines(results, None, keep_noise), thresholds=_thresholds(results))
    if old is None:
        _write(base_path, results, paths[0], merged)
        return BaselineUpdate(base_path, True, added=tuple(cur_names.values()), runs=_most_runs(results),
                              noise=_noise_lines(results, None, keep_noise), thresholds=_thresholds(results))
    diffs = device_differences(results, old)
    other_gpu = [d for d in diffs if not d.startswith("driver")]
    if other_gpu and not force:
        raise UsageError(f"{base_path} was recorded on another GPU ({'; '.join(other_gpu)}): pass --force to "
                         "replace it, or write a baseline per GPU")
    old_names = _names(old, str(base_path))
    if keep_noise:
        results = _with_old_noise(results, old, str(base_path))
    _write(base_path, results, paths[0], merged)
    return BaselineUpdate(base_path, False, added=tuple(v for k, v in cur_names.items() if k not in old_names),
                          removed=tuple(v for k, v in old_names.items() if k not in cur_names),
                          kept=len(cur_names.keys() & old_names.keys()), device_changes=tuple(diffs),
                          runs=_most_runs(results), noise=_noise_lines(results, old, keep_noise),
                          thresholds=_thresholds(results))


def _write(path: Path, doc: Document, source: Path, merged: bool) -> None:
    """The baseline: the one results file's exact bytes, or the merged document."""
    atomic_write(path, dumps(doc) if merged else source.read_text(encoding="utf-8"), make_parents=True)


def _most_runs(doc: Document) -> int:
    return max((run_count(r) for r in doc.records), default=1)



def _thresholds(doc: Document) -> tuple[str, ...]:
    """The records' own thresholds (their suite entries'), each with how many records carry it."""
    counts: dict[str, int] = {}
    for rec in doc.records:
        if rec.threshold:
            counts[str(rec.threshold)] = counts.get(str(rec.threshold), 0) + 1
    return tuple(f"{t} ({n} record{'s' * (n != 1)})" for t, n in counts.items())
