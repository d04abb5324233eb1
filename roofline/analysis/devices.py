"""Several GPUs of one host, one suite each (`roofline run --devices`): merging their documents into one, and
naming a GPU that is slower than its peers by more than the noise.

A record of the merged document carries its GPU's index (`Record.device_index`, part of `Record.key`), so
`check` and the charts tell the GPUs apart. A GPU is named slower on an entry when, against the median of its
peers' medians (every other GPU on the same entry), its median is slower by more than SLOW_MIN_FRACTION and by
more than the noise (NOISE_IQRS half-interquartile ranges of its own samples), and its samples are slower than
the peers' pooled samples on a one-sided Mann-Whitney U test at ALPHA. Pure: no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roofline.core.document import Document
from roofline.core.errors import UsageError
from roofline.core.record import Record, shape_text
from roofline.core.stats import mann_whitney_u, median, quantile

# Same significance level as the CI check (ci.judge.ALPHA): tens of entries x GPUs are tested per run.
ALPHA = 0.01
# Identical GPUs of one host differ by 1-2% in clock and memory under the same load (binning, temperature):
# a difference below 3% is not worth naming.
SLOW_MIN_FRACTION = 0.03
# A difference must also exceed this many half-IQRs of the GPU's own samples (its run-to-run noise).
NOISE_IQRS = 2.0


@dataclass(frozen=True)
class SlowGPU:
    """GPU `device` ran `label` `fraction` slower than its peers' median (p-value of the one-sided test)."""

    device: int
    label: str
    fraction: float
    noise: float
    p_value: float

    def sentence(self) -> str:
        return (f"GPU {self.device} is {self.fraction:.1%} slower than its peers on {self.label} (noise "
                f"±{self.noise:.1%}, p={self.p_value:.2g})")


def parse_devices(text: str, count: int) -> list[int]:
    """'all' or '0,1,3' as GPU indices on a machine of `count` GPUs; 'none' as []."""
    t = text.strip().lower()
    if t == "none":
        return []
    if count == 0:
        raise UsageError(f"--devices {text}: no GPU on this machine (NVML sees none); leave --devices out or "
                         "give none")
    if t == "all":
        return list(range(count))
    try:
        picked = [int(p) for p in t.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"--devices takes all, none or GPU indices such as 0,1; got {text!r}") from None
    bad = [i for i in picked if i < 0 or i >= count]
    if bad or not picked:
        raise UsageError(f"--devices {text}: this machine has {count} GPU(s), indices 0 to {count - 1}")
    return list(dict.fromkeys(picked))


def merge_devices(docs: Sequence[tuple[int, Document]], mode: str) -> Document:
    """One document of every GPU's records (each with its device_index), the first GPU's device block with
    every GPU's block under `devices`."""
    if not docs:
        raise UsageError("no device documents to merge")
    records: list[Record] = []
    for index, doc in docs:
        records += [dataclasses.replace(r, device_index=index) for r in doc.records]
    first = docs[0][1]
    device = {**first.device, "devices": [{"index": i, **d.device} for i, d in docs], "devices_mode": mode}
    return Document(device=device, records=records, extra=dict(first.extra))


def _peers_key(r: Record) -> Any:
    return dataclasses.replace(r, device_index=None).key()


def slow_devices(records: Sequence[Record]) -> list[SlowGPU]:
    """Every (GPU, entry) whose time is slower than its peers past SLOW_MIN_FRACTION, the noise and ALPHA."""
    groups: dict[Any, list[Record]] = {}
    for r in records:
        if r.device_index is not None and r.time_samples_s:
            groups.setdefault(_peers_key(r), []).append(r)
    found = []
    for recs in groups.values():
        if len(recs) < 2:
            continue
        for r in recs:
            peers = [p for p in recs if p is not r]
            mine = r.time_samples_s or []
            peer_median = median([median(p.time_samples_s or []) for p in peers])
            m = median(mine)
            fraction = m / peer_median - 1
            noise = (quantile(mine, 0.75) - quantile(mine, 0.25)) / 2 / m
            if fraction <= max(SLOW_MIN_FRACTION, NOISE_IQRS * noise):
                continue
            pooled = [t for p in peers for t in (p.time_samples_s or [])]
            p = mann_whitney_u(mine, pooled, alternative="greater").p_value
            if p < ALPHA:
                found.append(SlowGPU(r.device_index or 0, f"{r.label} {shape_text(r.params)}", fraction, noise, p))
    return found
