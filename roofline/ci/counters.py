"""Counter rules in the CI check (`--fail-on dram_bytes:1%`, on documents made with --counters): a gate that
would compare nothing is refused, each record's counters are judged against the rules, and the check notes a
rule tighter than its counter moves between runs of unchanged code.

Nsight Compute profiles one call a side, so a counter has one value per side: a relative change past the
threshold is worse (more) or better (fewer) with no significance test; byte counters that move by less than
`ci.rules.COUNTER_BYTES_FLOOR` are the same. The rules' names and spreads are in `ci.rules`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from roofline.ci.rules import COUNTER_BYTES_FLOOR, COUNTER_SPREAD, COUNTERS, FailOn
from roofline.ci.verdicts import BETTER, NOT_COMPARABLE, SAME, SEVERITY, WORSE, Row
from roofline.core.document import Document
from roofline.core.errors import UsageError
from roofline.core.format import count, percent
from roofline.core.record import Record


def require_counters(fail_on: FailOn, results: Document, baseline: Document) -> None:
    """A counter gate over documents without that counter would compare nothing and pass: refused (UsageError)."""
    for doc, side in ((results, "results"), (baseline, "baseline")):
        counted = [r.counters for r in doc.records if r.counters]
        if fail_on.counters.rules and not counted:
            raise UsageError(f"--fail-on {fail_on.counters} reads Nsight Compute counters and the {side} have none: "
                             "make them with --counters")
        for rule in fail_on.counters.rules:
            if not any(getattr(c, COUNTERS[rule.statistic], None) is not None for c in counted):
                raise UsageError(f"--fail-on {rule} reads the counter {rule.statistic}, which no record of the "
                                 f"{side} has (made by an older roofline, or by an ncu without its metric): make "
                                 "it again with --counters, or gate on a counter both have")


def judge_counters(cur: Record, base: Record, common: dict[str, Any], rules: FailOn) -> Row:
    """Counter rules (`dram_bytes_read:1%`): one value per side (ncu profiles one call), so a relative change past
    the threshold is WORSE (more) or BETTER (less) with no significance test (bytes: unless under
    COUNTER_BYTES_FLOOR); how far each counter moves on its own is in the check's notes (`spread_notes`). The
    most severe verdict of the rules both sides can be judged by stands, the others' reasons beside it; a record
    that no rule can judge (no counters, or none of the rules' counters, on a side) is not_comparable."""
    best: tuple[int, Row] | None = None
    missing: list[str] = []
    for rule in rules.rules:
        field = COUNTERS[rule.statistic]
        b = getattr(base.counters, field, None) if base.counters else None
        c = getattr(cur.counters, field, None) if cur.counters else None
        row_common = {**common, "threshold": str(rule), "statistic": rule.statistic}
        if b is None or c is None:
            side, rec = ("baseline", base) if b is None else ("results", cur)
            missing.append(f"the {side} record has no counters (none of its kernels was profiled)"
                           if rec.counters is None else f"the {side} record's counters have no {rule.statistic}")
            continue
        change = (c - b) / b if b else (0.0 if c == b else math.inf)
        word = "more" if change > 0 else "fewer"
        if abs(change) <= rule.threshold:
            verdict, reason = SAME, f"{rule.statistic} {change * 100:+.1f}%, within {percent(rule.threshold)}"
        elif field != "flops" and abs(c - b) < COUNTER_BYTES_FLOOR:
            verdict, reason = SAME, (f"{rule.statistic} {change * 100:+.1f}%, but {count(abs(c - b))} B: under "
                                     f"the {count(COUNTER_BYTES_FLOOR)} B a small kernel's counters move")
        else:
            verdict = WORSE if change > 0 else BETTER
            reason = (f"{rule.statistic} {percent(abs(change))} {word} ({count(b)} -> {count(c)}), past "
                      f"{percent(rule.threshold)}; one profiled call a side: no noise test")
        row = Row(**row_common, verdict=verdict, reason=reason, baseline_value=b, current_value=c, change=change,
                  n_baseline=1, n_current=1)
        if best is None or SEVERITY[verdict] > best[0]:
            best = (SEVERITY[verdict], row)
    if best is None:
        return Row(**{**common, "threshold": str(rules)}, verdict=NOT_COMPARABLE,
                   reason="; ".join(dict.fromkeys(missing)))
    row = best[1]
    return replace(row, reason="; ".join([row.reason, *dict.fromkeys(missing)]))


def spread_notes(fail_on: FailOn) -> list[str]:
    """A note for each counter rule tighter than the counter moves between runs of unchanged code
    (`ci.rules.COUNTER_SPREAD`): such a rule can fail on where the data landed, not on a change of the code."""
    notes = []
    for rule in fail_on.counters.rules:
        spread = COUNTER_SPREAD[rule.statistic]
        if rule.threshold < spread:
            steady = ("; dram_bytes_read (DRAM reads) repeats to "
                      f"{COUNTER_SPREAD['dram_bytes_read'] * 100:.2g}%" if rule.statistic in ("dram_bytes", "l2_bytes")
                      else "")
            notes.append(f"{rule} is tighter than {rule.statistic} moves between runs of unchanged code (up to "
                         f"{spread * 100:.2g}% on the H200: docs/counters.md, What repeats){steady}")
    return notes
