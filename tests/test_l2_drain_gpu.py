"""The L2 write-back measurement on a real GPU (measuring/l2_drain.py): its readings are a valid database field,
and writing the L2's size before the add costs it time a clean start does not (on the H100, 2026-12-06, ~6 us of
its 18.5: scripts/experiments/l2_drain.py)."""

from __future__ import annotations

import statistics

import pytest

pytestmark = pytest.mark.gpu


def test_an_add_after_writes_elsewhere_pays_their_write_back() -> None:
    import torch

    from roofline.analysis.l2_drain import drain_model
    from roofline.ceilings.opdb import l2_drain_from
    from roofline.measuring.l2_drain import DRAIN_SAMPLES, DRAIN_WRITES_L2, measure_l2_drain

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    raw = l2_drain_from(measure_l2_drain("cuda", l2))
    assert [s["written_bytes"] for s in raw["samples"]] == [int(f * l2) // 2 * 2 for f in DRAIN_WRITES_L2]
    assert all(len(s["times_s"]) == DRAIN_SAMPLES for s in raw["samples"])
    clean, full = (statistics.median(s["times_s"]) for s in (raw["samples"][0], raw["samples"][-2]))
    assert full > 1.05 * clean, (clean, full)
    d = drain_model(raw)
    assert d is not None and 0 < d.keep <= 2 and 0 < d.cap_bytes <= 2 * l2
