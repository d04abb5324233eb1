"""Warnings where the numbers are (issue 52): a table of times says, under it, when they were taken on a busy
machine or spread widely, and when its predictions come from a database too sparse to use; `run --repeat` shows
a record's time as check reads it (the mean of its runs' medians) with the spread between its runs; a CPU timing
far below its roof on a busy machine suggests fewer threads. Records built by hand, rendered at 80 columns."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import rendered

from roofline.analysis.advice import advise
from roofline.analysis.predict import WIDE_INTERVAL, wide_interval_note
from roofline.ci.baseline import merge_runs, noise_summary
from roofline.ci.judge import judge
from roofline.core.document import Document
from roofline.core.record import BUSY_NOTE, Record, Timing
from roofline.core.stats import NOISY_IQR_FRACTION, summarize
from roofline.report.caveats import BUSY_ROOF_NOTE, timing_caveats
from roofline.report.sol import timing_table
from roofline.report.text import records_table

DEVICE = {"kind": "cpu", "spec_id": "cpu", "name": "Test CPU"}
BUSY = f"{BUSY_NOTE} (other processes used at least 70% of 2 CPUs): the time may be slow"


def record(op: str, samples: list[float], notes: list[str] | None = None, **fields: object) -> Record:
    """A timed CPU record of 1 MFLOP over 2 MB, its time the median of `samples` and its stats theirs, as the
    runner stores them."""
    s = summarize(samples)
    return Record.from_dict({
        "op": op, "variant": None, "params": {"numel": 65536}, "dtype": "fp32", "flops": 1e6, "bytes_read": 1e6,
        "bytes_written": 1e6, "bytes": 2e6, "arithmetic_intensity": 0.5, "gpu": "cpu", "device_kind": "cpu",
        "roof_source": "measured", "peak_flops_per_s": 1e11, "peak_bytes_per_s": 2e10, "ridge_point": 5.0,
        "bound": "memory", "roofline_time_s": 1e-4, "time_s": s.median, "time_samples_s": samples,
        "timing": Timing(method="cpu-perf-counter", stats=s.to_dict()).to_dict(), "notes": notes or [], **fields})


QUIET = [1.0e-3, 1.01e-3, 1.02e-3, 0.99e-3]  # IQR 0.015 ms of a 1.005 ms median: 1.5%, quiet
# quartiles by linear interpolation: 2 and 4 ms around a 3 ms median: IQR 2/3 = 66.7%, ±33% as the tables show it
NOISY = [1e-3, 2e-3, 3e-3, 4e-3, 5e-3]


def test_a_run_table_says_under_it_that_its_times_were_taken_on_a_busy_machine_and_spread_widely() -> None:
    """Issue 52: the run table printed 280 µs ± 10489.6% on a busy machine without a word (the notes were in the
    JSON only)."""
    x = summarize(NOISY).relative_iqr
    assert x == pytest.approx(2 / 3) and x > NOISY_IQR_FRACTION  # (4 - 2) / 3
    recs = [record("relu", QUIET, [BUSY]), record("gemv", NOISY, [BUSY]), record("add", QUIET)]
    text = " ".join(rendered(records_table(recs, title="t")).split())
    assert "warning: busy machine while timing 2 of 3 records (how busy: each record's notes, --json)" in text
    assert "warning: noisy: the samples spread over ±5% of the median (IQR/2) in 1 of 3 records (gemv ±33%)" in text
    assert "33.3%" in text  # the table's own ± IQR/2 of gemv: the warning quotes it as the table shows it
    quiet = rendered(records_table([record("relu", QUIET), record("add", QUIET)], title="t"))
    assert "warning" not in quiet


def test_a_roof_measured_on_a_busy_machine_is_said_once() -> None:
    recs = [record(op, QUIET, [f"{BUSY_ROOF_NOTE} (other processes used 83% of 2 CPUs): may be low"])
            for op in ("relu", "add")]
    lines = timing_caveats(recs)
    assert lines == ["the CPU roof was measured on a busy machine: it may be low, and % of roof high; run "
                     "`roofline calibrate` when the machine is quiet"]


def test_the_roof_note_is_the_one_the_calibration_writes() -> None:
    from roofline.measuring.calibrate import CALIBRATION_WARNING

    assert BUSY_ROOF_NOTE == CALIBRATION_WARNING  # the view reads it as text: the two must not drift apart


def test_sol_s_timing_table_says_its_samples_spread_widely() -> None:
    """sol's records keep their samples but no stats (`time_samples_s` only): the spread is computed from them."""
    r = replace(record("add", NOISY), variant="reference", timing=None,
                extra={"sol": {"timing": {"measured_s": 2.5e-3}, "verdict": {"status": "ok", "time_s": 2.5e-3}}})
    text = " ".join(rendered(timing_table([r])).split())
    assert "warning: noisy: the samples spread over ±5% of the median (IQR/2) in the record (reference ±33%)" in text


def test_run_repeat_shows_the_mean_of_the_runs_medians_as_check_reads_it_with_their_spread() -> None:
    """Issue 52: `run --repeat 5` printed a record's median over all samples pooled (168 µs) where check read the
    same document as the mean of each run's median (15.2 ms; runs' medians 0.17-28 ms). Three runs: one of 100
    fast samples, two of 3 slow ones: pooled, the fast run's samples outvote the others."""
    fast, slow, slower = [0.17e-3] * 100, [28e-3] * 3, [17.4e-3] * 3
    docs = [(f"run {i}", Document(device=DEVICE, records=[record("relu", run)], created="2026-01-01T00:00:00+00:00"))
            for i, run in enumerate((fast, slow, slower))]
    merged = merge_runs(docs)
    rec = merged.records[0]
    assert rec.time_s == pytest.approx((0.17e-3 + 28e-3 + 17.4e-3) / 3)  # 15.19 ms (pooled: 0.17 ms)
    row = judge(merged, merged, "median:5%").rows[0]
    assert row.baseline_value == pytest.approx(rec.time_s)  # check reads the same number
    pooled = sorted(fast + slow + slower)[len(fast + slow + slower) // 2]
    assert pooled == 0.17e-3  # what the table showed
    text = " ".join(rendered(records_table(merged.records, title="t", wide=True), width=200).split())
    assert " 15.2 ms " in text
    assert "± sd of runs" in text and "measured time: the mean of the 3 runs' medians (as check reads it)" in text
    assert "170 µs-28 ms" in text  # the run medians' range (--wide; at 80 columns it gives way)
    # sd of the three medians around their mean, relative: sqrt(((0.17 / 15.19 - 1)^2 + (28 / 15.19 - 1)^2
    # + (17.4 / 15.19 - 1)^2) / 2) = sqrt((0.9778 + 0.7112 + 0.0212) / 2) = 92.5%, as the noise line says it
    assert "92.5%" in text
    assert any("largest 92.5%" in line for line in noise_summary(merged))


def test_a_cpu_timing_far_below_its_roof_on_a_busy_machine_suggests_fewer_threads() -> None:
    """Issue 52: a 256^3 GEMM read 1% of its roof on 2 threads of a busy 2-CPU machine and 49% with --threads 1;
    nothing suggested it. A record at 1% of its roof, timed busy: the advice; quiet, or at its roof: none."""
    slow = replace(record("relu", QUIET, [BUSY]), roofline_fraction=0.01)
    said = [a for a in advise(slow).items if a["rule"] == "cpu-threads"]
    assert len(said) == 1 and "--threads 1" in said[0]["message"] and said[0]["message"].startswith("Timed at 1% ")
    assert not [a for a in advise(replace(slow, notes=[])).items if a["rule"] == "cpu-threads"]
    assert not [a for a in advise(replace(slow, roofline_fraction=0.8)).items if a["rule"] == "cpu-threads"]


def test_predictions_from_a_sparse_database_are_said_too_wide_to_use() -> None:
    """Issue 52: a database swept with --budget 10s predicted '0.178 µs - 2.34e+03 s' without a word. An interval
    over WIDE_INTERVAL (10x) is said, once, with the widest; a database's usual interval (x/÷1.5: 2.25x) is not."""
    def predicted(low: float, high: float) -> Record:
        return replace(record("relu", QUIET), predicted_time_s=(low * high) ** 0.5, predicted_low_s=low,
                       predicted_high_s=high, prediction_source="elementwise fp32: 6 of 6 points",
                       prediction_kind="db")

    sparse = predicted(0.178e-6, 2.34e3)  # 1.31e10x
    ok = predicted(1e-3 / 1.5, 1e-3 * 1.5)
    note = wide_interval_note([sparse, ok])
    assert note is not None and f"1 of 2 predictions span more than {WIDE_INTERVAL:g}x" in note
    assert "up to 1.31e+10x" in note and "roofline calibrate ops" in note
    assert wide_interval_note([ok]) is None
    assert f"warning: {note}" in " ".join(rendered(records_table([sparse, ok], title="t")).split())
    from roofline.report.rows import record_rows

    assert ("warning", wide_interval_note([sparse])) in record_rows(sparse)  # `analyze` shows it in its box


def test_a_profile_timed_on_a_busy_machine_notes_it_on_each_timed_record() -> None:
    """Issue 52: `profile` did not detect a busy machine at all. The load over its timed run (the measuring
    layer's `Load`: here other processes took 60% of 2 CPUs over 3 s, over OTHERS_BUSY_SHARE's 10%) marks each
    timed record as the CPU timer marks its own, so that the views and `check` read it by the same prefix; a
    quiet window, and untimed records, are left as they were."""
    from roofline.core.stats import busy_marked, busy_note
    from roofline.measuring.machine_load import OTHERS_BUSY_SHARE, Load

    load = Load(wall_s=3.0, cpus=2, others_share=0.6, steal_share=0.0, load1=1.2, machine_cpus=2)
    assert load.busy and 0.6 > OTHERS_BUSY_SHARE
    quiet = Load(wall_s=3.0, cpus=2, others_share=0.01, steal_share=0.0, load1=0.1, machine_cpus=2)
    untimed = replace(record("add", QUIET), time_s=None, time_samples_s=None, timing=None)
    recs = [record("mm", QUIET), record("relu", QUIET, [BUSY]), untimed]
    marked = busy_marked(recs, load.reasons)
    assert marked[0].notes == ["busy machine while timing (other processes used 60% of 2 CPUs): the time may be slow"]
    assert marked[0].notes == [busy_note(load.reasons)]
    assert marked[1].notes == [BUSY] and marked[2] == untimed  # said already; not timed
    assert busy_marked(recs, quiet.reasons) == recs and busy_note([]) is None
    lines = timing_caveats(marked)
    assert lines[0].startswith("busy machine while timing both records (how busy: each record's notes, --json)")
    assert lines[0].endswith("or with fewer torch threads than idle cores (run, analyze: --threads 1)")
