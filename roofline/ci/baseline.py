"""`roofline baseline update`: make a results document the baseline, the only code that writes one."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from roofline.ci.judge import device_differences, load_for_check, record_name, records_by_key
from roofline.core.document import Document
from roofline.core.errors import UsageError
from roofline.core.files import atomic_write
from roofline.core.record import Key


@dataclass(frozen=True)
class BaselineUpdate:
    """What `update_baseline` did, for the CLI to print (`lines()`)."""

    path: Path
    created: bool
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: int = 0
    device_changes: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        if self.created:
            return [f"baseline {self.path} created with {len(self.added)} record(s)"]
        out = [f"baseline {self.path} replaced: {len(self.added)} added, {len(self.removed)} removed, "
               f"{self.kept} kept (with new samples)"]
        out += [f"  + {k}" for k in self.added] + [f"  - {k}" for k in self.removed]
        out += [f"  device: {d}" for d in self.device_changes]
        return out


def _names(doc: Document, where: str) -> dict[Key, str]:
    return {k: record_name(r, k[4]) for k, r in records_by_key(doc, where).items()}


def update_baseline(results_path: str | os.PathLike[str], baseline_path: str | os.PathLike[str], *,
                    force: bool = False) -> BaselineUpdate:
    """Make `results_path` the baseline: running `roofline baseline update` is the user asking for it.

    - The results must be a valid, timed results document (else UsageError; the baseline is untouched).
    - No baseline yet: it is created (and its folder). A baseline there: it is replaced by the results file's
      exact bytes, written to a temp file beside it and moved into place (never half-written; a failed
      write is a one-line RooflineError).
    - Refused without `force`: replacing a baseline recorded on another GPU (spec or device name), so a run on
      the wrong machine cannot silently re-point baselines/h200.json; and replacing an unreadable baseline.
    The returned BaselineUpdate lists the records added and removed. `check` never writes a baseline.
    """
    res_path, base_path = Path(results_path), Path(baseline_path)
    results = load_for_check(res_path)
    text = res_path.read_text(encoding="utf-8")
    cur_names = _names(results, str(res_path))
    if not base_path.exists():
        atomic_write(base_path, text, make_parents=True)
        return BaselineUpdate(base_path, True, added=tuple(cur_names.values()))
    try:
        old = load_for_check(base_path)
    except UsageError as exc:
        if not force:
            raise UsageError(f"the existing baseline is unreadable ({exc}): pass --force to replace it") from None
        atomic_write(base_path, text, make_parents=True)
        return BaselineUpdate(base_path, False, added=tuple(cur_names.values()),
                              device_changes=("the old baseline was unreadable",))
    diffs = device_differences(results, old)
    other_gpu = [d for d in diffs if not d.startswith("driver")]
    if other_gpu and not force:
        raise UsageError(f"{base_path} was recorded on another GPU ({'; '.join(other_gpu)}): pass --force to "
                         "replace it, or write a baseline per GPU")
    old_names = _names(old, str(base_path))
    atomic_write(base_path, text, make_parents=True)
    return BaselineUpdate(base_path, False, added=tuple(v for k, v in cur_names.items() if k not in old_names),
                          removed=tuple(v for k, v in old_names.items() if k not in cur_names),
                          kept=len(cur_names.keys() & old_names.keys()), device_changes=tuple(diffs))

