"""The change-point algorithm (roofline.history.changes) on synthetic series of known change points, and what
`history detect` says of each change (roofline.history.detect): size, direction, confidence, what else changed,
the gate. Series are seeded (numpy's default_rng), so every expected index is fixed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from roofline.core.errors import UsageError
from roofline.core.stats import mann_whitney_u
from roofline.history import changes
from roofline.history.changes import change_points, noise
from roofline.history.detect import also_changed, gate_threshold, judge_series
from roofline.history.series import Point, Run, Series


def series(n: int, sd: float, steps: dict[int, float], seed: int) -> list[float]:
    """n runs of 100 µs with relative noise `sd`, the level multiplied by each step's factor from its index on."""
    rng = np.random.default_rng(seed)
    level = np.ones(n)
    for at, factor in steps.items():
        level[at:] *= factor
    return list(1e-4 * level * (1 + rng.normal(0, sd, n)))


def test_noise_is_the_mad_of_differences_over_root_two() -> None:
    # differences 1, -1, 1, -1: median 0, MAD 1 -> 1.4826 * 1 / sqrt(2)
    assert noise([10.0, 11.0, 10.0, 11.0, 10.0]) == pytest.approx(1.4826 / math.sqrt(2))
    # one step moves one difference only: 10,10,10,20,20,20 -> differences 0,0,10,0,0: MAD 0 -> the floor
    assert noise([10.0, 10.0, 10.0, 20.0, 20.0, 20.0]) == pytest.approx(changes.NOISE_FLOOR * 15)


@pytest.mark.parametrize("seed", range(20))
def test_no_change_is_found_in_a_flat_series(seed: int) -> None:
    assert change_points(series(30, 0.01, {}, seed)) == []


@pytest.mark.parametrize("seed", range(10))
def test_a_5_percent_step_over_1_percent_noise_is_found_where_it_is(seed: int) -> None:
    at = 8 + seed
    found = change_points(series(30, 0.01, {at: 1.05}, seed))
    assert len(found) == 1 and abs(found[0].index - at) <= 2
    assert found[0].size == pytest.approx(0.05, abs=0.02)


def test_two_steps_and_their_sizes() -> None:
    values = series(40, 0.005, {12: 1.10, 26: 1 / 1.10}, seed=3)
    found = change_points(values)
    assert [c.index for c in found] == [12, 26]
    assert found[0].size == pytest.approx(0.10, abs=0.01) and found[1].size == pytest.approx(-0.0909, abs=0.01)
    # the confidence is the rank test of the segments either side, 1 - p
    assert found[0].p_value == mann_whitney_u(values[:12], values[12:26]).p_value
    assert found[0].confidence == 1 - found[0].p_value and found[0].p_value < changes.ALPHA


def test_a_lone_outlier_is_no_step() -> None:
    values = series(30, 0.01, {}, seed=5)
    values[15] *= 1.5
    assert change_points(values) == []


def test_too_short_or_not_finite_is_no_change() -> None:
    assert change_points([1.0, 2.0, 3.0]) == []
    assert change_points([1.0] * 10 + [math.nan] + [2.0] * 10) == []


def test_a_noise_free_step_is_found_once() -> None:
    assert [(c.index, c.before, c.after) for c in change_points([1.0] * 6 + [1.2] * 6)] == [(6, 1.0, 1.2)]


# ---------------------------------------------------------------- detect: direction, context, the gate
def _run(i: int, driver: str = "550", machine: str = "a") -> Run:
    return Run(i, "2026-12-07T00:00:00+00:00", "2026-12-07T00:00:00+00:00", f"c{i}", "main", machine, "NVIDIA H100",
               driver)


def _series(values: list[float], clocks: list[float], roof: float | None = None, drivers: list[str] | None = None
            ) -> Series:
    pts = tuple(Point(_run(i, (drivers or ["550"] * len(values))[i]), v, v * 0.99, v * 1.01, 10, roof, roof, c, 700.0)
                for i, (v, c) in enumerate(zip(values, clocks, strict=True)))
    return Series(1, "k", "h100-sxm", "gemm", "gemm bf16", pts)


def test_a_slowdown_with_the_clock_says_so_and_fraction_at_clock_sees_none() -> None:
    # 10 runs at 1980 MHz then 10 at 1584 MHz (-20%); time 100 µs -> 125 µs, and the roof at each run's clock
    # scales with it (a compute-bound kernel): 50 µs -> 62.5 µs, so the fraction stays 0.5
    times = [1e-4] * 10 + [1.25e-4] * 10
    clocks = [1980.0] * 10 + [1584.0] * 10
    pts = tuple(Point(_run(i), t, t, t, 10, 5e-5, t / 2, c, 700.0)
                for i, (t, c) in enumerate(zip(times, clocks, strict=True)))
    s = Series(1, "k", "h100-sxm", "gemm", "gemm bf16", pts)
    timed = judge_series(s, "time", 0.05)
    [f] = timed.changes
    assert (f.direction, f.failed, f.run.commit, f.previous.commit) == ("worse", True, "c10", "c9")
    assert f.change.size == pytest.approx(0.25) and f.also == ("SM clock 1980 -> 1584 MHz",)
    assert judge_series(s, "fraction", 0.05).changes == ()


def test_a_driver_change_is_named_and_better_never_fails() -> None:
    values = [1e-4] * 8 + [0.9e-4] * 8
    s = _series(values, [1980.0] * 16, drivers=["550"] * 8 + ["560"] * 8)
    [f] = judge_series(s, "time", 0.05).changes
    assert (f.direction, f.failed, f.also) == ("better", False, ("driver 550 -> 560",))


def test_a_change_under_the_threshold_is_reported_but_passes() -> None:
    s = _series([1e-4] * 8 + [1.03e-4] * 8, [1980.0] * 16)
    [f] = judge_series(s, "time", 0.05).changes
    assert f.worse and not f.failed
    assert judge_series(s, "time", 0.02).changes[0].failed


def test_too_few_runs_or_no_roof_is_not_judged() -> None:
    assert judge_series(_series([1e-4] * 3, [1980.0] * 3), "time", 0.05).skipped == "3 runs: a change needs 4 or more"
    assert "no roofline time" in (judge_series(_series([1e-4] * 8, [1980.0] * 8), "fraction", 0.05).skipped or "")


def test_also_changed_reads_the_power_cap_and_machine() -> None:
    before = [Point(_run(i), 1.0, 1.0, 1.0, 1, None, None, None, 700.0) for i in range(3)]
    after = [Point(_run(i, machine="b"), 1.0, 1.0, 1.0, 1, None, None, None, 500.0) for i in range(3, 6)]
    assert also_changed(before, after) == ("power cap 700 -> 500 W", "machine a -> b")


def test_the_gate_takes_median_rules_only() -> None:
    assert gate_threshold("median:5%") == 0.05
    with pytest.raises(UsageError, match="judges each run's median"):
        gate_threshold("p90:10%")
    with pytest.raises(UsageError, match="expected STAT:PCT%"):
        gate_threshold("5%")


def test_changes_are_looked_for_in_the_last_runs_and_indexed_from_the_first() -> None:
    # 150 runs: a 10% step at run 20 (index 20) and another back down at index 130, noise-free
    values = [1e-4] * 20 + [1.1e-4] * 110 + [1e-4] * 20
    s = _series(values, [1980.0] * 150)
    assert [f.change.index for f in judge_series(s, "time", 0.05).changes] == [130]  # DETECT_RUNS = 100: runs 50..
    assert [f.change.index for f in judge_series(s, "time", 0.05, runs=None).changes] == [20, 130]
    [f] = judge_series(s, "time", 0.05).changes
    assert (f.run.commit, f.previous.commit, f.change.n_before) == ("c130", "c129", 80)  # 130 - 50 runs before
