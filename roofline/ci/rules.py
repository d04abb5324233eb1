"""The failure rules of `roofline check` (`--fail-on median:5%,p90:10%`, a suite entry's `threshold`): their
grammar, parsed into frozen rules."""

from __future__ import annotations

import re
from dataclasses import dataclass

from roofline.ci.runs import STATISTICS as STATISTICS  # the statistics a rule can name
from roofline.core.errors import UsageError

DEFAULT_FAIL_ON = "median:5%"
# Rules on a record's Nsight Compute counters (`--counters`), by the Counters field they read. A counter is one
# value per side, judged against the threshold alone: no noise test applies (`ci.judge`).
COUNTERS = {"dram_bytes": "dram_bytes", "dram_bytes_read": "dram_bytes_read", "stored_bytes": "stored_bytes",
            "l2_bytes": "l2_bytes", "l1_bytes": "l1_bytes", "counter_flops": "flops"}
# How far each counter moved between runs of unchanged code on the H200: the worst call of suites/kernels-h200
# over twelve runs (seven plain ncu runs, two beside another process holding 20 or 40 GiB, and five `run
# --counters`), and the worst kernel past COUNTER_BYTES_FLOOR of two `profile examples/cnn.py --counters`, twice
# (docs/counters.md "What repeats"). FLOPs (but for
# data-dependent branches: GELU's erf), L1 bytes, stores and DRAM reads are the kernel's; DRAM writes (which
# output lines are still in the L2 when the kernel ends) and L2 bytes (which of the L2's two partitions holds
# a line: a miss in the near one is looked up again in the far one) depend on where the data landed. A rule
# tighter than its counter's spread gets a note.
COUNTER_SPREAD = {"dram_bytes": 0.0223, "dram_bytes_read": 0.0068, "stored_bytes": 0.0, "l2_bytes": 0.118,
                  "l1_bytes": 0.0006, "counter_flops": 5.3e-6}
# Byte counters repeat to the sector on large kernels but not on a few-KB one: an add_ of 2048 elements read
# 14,592 then 14,848 DRAM bytes in two profiles of one script (+256 B, 1.8%; H200). A byte change smaller
# than this is never judged a change, whatever its percentage (FLOP counts have no floor: they repeat).
COUNTER_BYTES_FLOOR = 4096


@dataclass(frozen=True)
class Rule:
    """One failure rule: the relative change of `statistic` beyond which a record has changed (0.05 = 5%)."""

    statistic: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.statistic}:{self.threshold * 100:g}%"


@dataclass(frozen=True)
class FailOn:
    """The parsed `--fail-on` value: one or more rules, each statistic at most once."""

    rules: tuple[Rule, ...]

    @property
    def timing(self) -> FailOn:
        """The rules on time statistics (judged on samples)."""
        return FailOn(tuple(r for r in self.rules if r.statistic not in COUNTERS))

    @property
    def counters(self) -> FailOn:
        """The rules on counters (judged on one value per side)."""
        return FailOn(tuple(r for r in self.rules if r.statistic in COUNTERS))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.rules)


_RULE_RE = re.compile(r"^\s*([a-z0-9_]+)\s*:\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(%?)\s*$")


_NAMES = (*STATISTICS, *COUNTERS)


def parse_fail_on(text: str) -> FailOn:
    """Parse `median:5%`, `median:0.05`, `p90:10%,min:3%`; bad grammar raises a one-line UsageError."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("--fail-on is empty: expected STAT:PCT%, e.g. median:5%")
    rules: list[Rule] = []
    for part in text.split(","):
        m = _RULE_RE.match(part)
        if m is None:
            raise UsageError(f"--fail-on {part.strip()!r}: expected STAT:PCT% or STAT:FRACTION "
                             f"(STAT one of {', '.join(_NAMES)}), e.g. median:5% or median:0.05")
        stat, number, pct = m.group(1), float(m.group(2)), m.group(3) == "%"
        if stat not in _NAMES:
            raise UsageError(f"--fail-on {part.strip()!r}: unknown statistic {stat!r} (use {', '.join(_NAMES)})")
        if not pct and number >= 1:
            raise UsageError(f"--fail-on {part.strip()!r} is ambiguous: write {number:g}% or {number / 100:g}")
        threshold = number / 100 if pct else number
        if not 0 < threshold < 10:
            raise UsageError(f"--fail-on {part.strip()!r}: the threshold must be above 0 and below 1000%")
        if any(r.statistic == stat for r in rules):
            raise UsageError(f"--fail-on {text.strip()!r}: {stat} appears twice")
        rules.append(Rule(stat, threshold))
    return FailOn(tuple(rules))
