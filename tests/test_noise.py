"""Between-run noise in the CI check: Student's t and pooled spreads (core.stats), runs kept per record (ci.runs),
merging runs (ci.baseline.merge_runs), the three-condition verdict (ci.judge), `baseline update` with several
files and `--keep-noise`, and `run --repeat`.

The A/A model of the tests: three decode-sized kernels (4, 8 and 20 µs); each run of each record gets its own
offset, uniform in +-3% (clock, placement, flush state: what the samples of one run share), and 200 samples
around it with 2% lognormal scatter. Seeded numpy, so every test is deterministic. In 100 seeds of this model
(`_pair` with seeds 0-99, judged at median:3%) against a 10-run baseline, no A/A result of 5 runs failed and
one A/A result of one run did (the t-test's ALPHA at work: about 0.5% per record), and a 5% slowdown in a 5-run
result was caught in 97. One run against one, the rule without runs failed 26 of the 100 A/A pairs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import run, write

from roofline.ci.baseline import merge_runs, update_baseline
from roofline.ci.judge import SAME, WORSE, WORSE_NOT_SIGNIFICANT, judge, load_for_check, noise_factor
from roofline.ci.runs import RUN_NOISE, RUN_SAMPLES, Noise, learn_noise, noise_of, pool_noise, run_samples
from roofline.cli.run_many import child_args
from roofline.core import stats
from roofline.core.document import Document, dumps
from roofline.core.errors import UsageError
from roofline.core.record import Record
from roofline.report.check import to_json

OFFSET = 0.03  # each run's own offset: uniform in +-3%
SCATTER = 0.02  # lognormal sigma of the samples within a run
N = 200
KERNELS = {"relu": (4e-6, {"numel": 65536}), "rmsnorm": (8e-6, {"rows": 64, "cols": 4096}),
           "gemv": (20e-6, {"m": 1, "n": 4096, "k": 4096})}
DEVICE = {"kind": "gpu", "spec_id": "h200-sxm", "name": "NVIDIA H200", "driver_version": "560.35.03"}
BASELINE_RUNS, CURRENT_RUNS, RULE = 10, 5, "median:3%"


def record(op: str, samples: list[float], **extra: object) -> Record:
    """A timed schema-v1 record of one of KERNELS; time_s is the median, as the runner stores it."""
    _, params = KERNELS[op]
    return Record.from_dict({
        "op": op, "variant": None, "params": params, "dtype": "bf16", "flops": 1e6, "bytes_read": 1e6,
        "bytes_written": 1e6, "bytes": 2e6, "arithmetic_intensity": 0.5, "gpu": "h200-sxm", "roof_source": "datasheet",
        "peak_flops_per_s": 989e12, "peak_bytes_per_s": 4.8e12, "ridge_point": 206.0, "bound": "memory",
        "roofline_time_s": 2e6 / 4.8e12, "time_s": float(np.median(samples)), "time_samples_s": list(samples),
        **extra})


def document(records: list[Record], driver: str = "560.35.03") -> Document:
    return Document(device={**DEVICE, "driver_version": driver}, records=records, created="2026-01-01T00:00:00+00:00",
                    extra={"command": ["roofline", "run", "small.toml"]})


def one_run(rng: np.random.Generator, slow: dict[str, float] | None = None) -> Document:
    """One run of the three kernels: each its own offset, then N samples; `slow` multiplies a kernel's time."""
    recs = []
    for op, (t, _) in KERNELS.items():
        level = t * (1 + rng.uniform(-OFFSET, OFFSET)) * (1 + (slow or {}).get(op, 0.0))
        recs.append(record(op, [float(x) for x in level * np.exp(rng.normal(0.0, SCATTER, N))]))
    return document(recs)


def runs(rng: np.random.Generator, k: int, slow: dict[str, float] | None = None) -> Document:
    """k runs in one document, as `roofline run --repeat k` writes it (one run: a plain document)."""
    docs = [(f"run {i}", one_run(rng, slow)) for i in range(k)]
    return docs[0][1] if k == 1 else merge_runs(docs)


def first_run(doc: Document) -> Document:
    """The document's first run alone: what a one-run baseline or result would have held."""
    return document([record(r.op, run_samples(r)[0]) for r in doc.records])


def _pair(seed: int) -> tuple[Document, Document, Document, Document]:
    """A baseline of BASELINE_RUNS runs, an A/A result of CURRENT_RUNS runs, one with relu 5% slower, and an
    A/A result of one run (a CI job that runs the suite once)."""
    rng = np.random.default_rng(seed)
    return (runs(rng, BASELINE_RUNS), runs(rng, CURRENT_RUNS), runs(rng, CURRENT_RUNS, {"relu": 0.05}),
            one_run(rng))


# ---------------------------------------------------------------- Student's t, pooled spreads
@pytest.mark.parametrize(("p", "dof", "expected"), [
    # two-sided 1% and 5% critical values from any table of Student's t (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2)
    (0.995, 1, 63.657), (0.995, 2, 9.925), (0.995, 4, 4.604), (0.995, 9, 3.250), (0.995, 30, 2.750),
    (0.975, 10, 2.228), (0.975, 1, 12.706)])
def test_t_quantile_matches_the_tables(p: float, dof: int, expected: float) -> None:
    assert stats.t_quantile(p, dof) == pytest.approx(expected, abs=1e-3)
    assert stats.t_quantile(1 - p, dof) == pytest.approx(-expected, abs=1e-3)
    assert stats.t_sf(expected, dof) == pytest.approx(1 - p, rel=1e-3)


def test_t_matches_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for dof in (1, 3, 7, 13, 60):
        for t in (-2.5, 0.0, 0.7, 4.0, 30.0):
            assert stats.t_sf(t, dof) == pytest.approx(scipy_stats.t.sf(t, dof), rel=1e-9, abs=1e-15)
        assert stats.t_quantile(0.995, dof) == pytest.approx(scipy_stats.t.ppf(0.995, dof), rel=1e-9)


def test_relative_sd_by_hand() -> None:
    # one group 0.98, 1.00, 1.02 around its mean 1.0: (0.02^2 + 0 + 0.02^2) / 2 = 0.0004, sd 0.02, 2 dof
    assert stats.relative_sd([[0.98, 1.0, 1.02]]) == pytest.approx((0.02, 2))
    # a second group 2.0, 2.04 around its own mean 2.02 (its level is not noise): 2 * (0.02/2.02)^2 more, 1 dof more
    sd, dof = stats.relative_sd([[0.98, 1.0, 1.02], [2.0, 2.04]])
    assert dof == 3 and sd == pytest.approx(((0.0008 + 2 * (0.02 / 2.02) ** 2) / 3) ** 0.5)
    assert stats.relative_sd([[1.0], [2.0]]) is None  # no group with two runs: unknown
    # pooling 1% over 2 dof with 2% over 6 dof: (2 * 1 + 6 * 4) / 8 = 3.25 (%^2)
    assert stats.pool_sd([(0.01, 2), (0.02, 6)]) == pytest.approx((0.0325 ** 0.5 / 10, 8))


# ---------------------------------------------------------------- runs in a record
def test_runs_and_noise_of_a_record() -> None:
    plain = record("relu", [1.0, 2.0, 3.0])
    assert run_samples(plain) == [[1.0, 2.0, 3.0]] and noise_of(plain) is None
    # run medians 2, 2.2, 1.8: relative sd 0.1 over 2 dof, as in test_relative_sd_by_hand
    several = record("relu", [1.0, 2.0, 3.0, 2.2, 1.8, 1.8], **{RUN_SAMPLES: [[1.0, 2.0, 3.0], [2.2], [1.8, 1.8]]})
    noise = noise_of(several)
    assert noise is not None and noise.dof == 2 and noise.runs == 3
    assert noise.relative_sd["median"] == pytest.approx(0.1)
    assert Noise.from_dict(noise.to_dict()) == noise
    stored = record("relu", [1.0], **{RUN_NOISE: {"runs": 10, "dof": 9, "relative_sd": dict.fromkeys(
        ("median", "mean", "min", "p90"), 0.01)}})
    assert noise_of(stored) == Noise(dict.fromkeys(("median", "mean", "min", "p90"), 0.01), 9, 10)
    for bad in ({"dof": 0, "relative_sd": {}}, {"dof": 3, "relative_sd": {"median": 0.01}}, "x"):
        assert Noise.from_dict(bad) is None
    pooled = pool_noise([noise, None, noise_of(stored)])
    assert pooled is not None and pooled.dof == 11 and pooled.runs == 13
    assert learn_noise([[[1.0]]]) is None


def test_merge_runs_keeps_every_run(tmp_path: Path) -> None:
    a = document([record("relu", [1.0, 1.1, 1.2]), record("gemv", [5.0, 5.0, 5.0])])
    b = document([record("relu", [1.3, 1.4])])
    c = merge_runs([("c1", document([record("relu", [0.9])])), ("c2", document([record("relu", [1.0])]))])
    merged = merge_runs([("a", a), ("b", b), ("c", c)])
    relu, gemv = merged.records
    assert relu.extra[RUN_SAMPLES] == [[1.0, 1.1, 1.2], [1.3, 1.4], [0.9], [1.0]]
    assert relu.time_samples_s == [1.0, 1.1, 1.2, 1.3, 1.4, 0.9, 1.0]
    # the mean of the runs' medians, as check reads a side (core.stats.of_runs): (1.1 + 1.35 + 0.9 + 1.0) / 4
    assert relu.time_s == pytest.approx(1.0875)
    assert relu.achieved_flops_per_s == pytest.approx(1e6 / 1.0875)  # rates follow the new time
    assert noise_of(relu) is not None and noise_of(relu).dof == 3  # 4 runs, one group
    assert gemv == a.records[1]  # in one run only: kept as it was
    assert [r["created"] for r in merged.extra["runs"]] == ["2026-01-01T00:00:00+00:00"] * 4
    # the merged document reads back as it was written (the run fields are kept on a round trip)
    path = write(tmp_path / "m.json", dumps(merged))
    from roofline.core.document import read_document
    again = read_document(path)
    assert run_samples(again.records[0]) == relu.extra[RUN_SAMPLES]


def test_merge_runs_keeps_the_counters_of_the_run_that_has_most() -> None:
    # baseline update of three runs, only the third made with stored_bytes: its counters are kept (the first
    # run's were, and a stored_bytes gate on the baseline then found nothing to compare)
    from dataclasses import replace

    from roofline.core.record import Counters

    old, new = Counters(dram_bytes=1.0), Counters(dram_bytes=1.0, stored_bytes=2.0)
    runs = [document([replace(record("relu", [1.0, 1.1]), counters=c)]) for c in (old, None, new)]
    merged = merge_runs([(f"r{i}", d) for i, d in enumerate(runs)])
    assert merged.records[0].counters == new
    merged = merge_runs([("a", runs[0]), ("b", runs[1])])
    assert merged.records[0].counters == old  # a run without counters takes none away


def test_merge_runs_refuses_other_machines_and_profiles() -> None:
    a = document([record("relu", [1.0])])
    with pytest.raises(UsageError, match=r"driver differs.*one machine"):
        merge_runs([("a", a), ("b", document([record("relu", [1.0])], driver="570.86.10"))])
    edited = document([record("relu", [1.0], peak_bytes_per_s=3.35e12)])
    with pytest.raises(UsageError, match="spec peak bytes/s differs"):
        merge_runs([("a", a), ("b", edited)])
    profile = document([record("relu", [1.0], count=3, module="mlp")])
    with pytest.raises(UsageError, match="profile"):
        merge_runs([("a", a), ("p", profile)])


# ---------------------------------------------------------------- the verdict
def test_ten_aa_pairs_pass_and_a_five_percent_slowdown_is_caught() -> None:
    caught, one_run_failures = 0, 0
    for seed in range(10):
        base, same, slow, once = _pair(seed)
        report = judge(same, base, RULE)
        assert report.passed, [r.reason for r in report.rows if r.verdict != SAME]
        assert judge(once, base, RULE).passed
        assert all(r.runs_baseline == BASELINE_RUNS and r.runs_current == CURRENT_RUNS for r in report.rows)
        assert all(r.noise_floor is not None and r.noise_dof == BASELINE_RUNS + CURRENT_RUNS - 2 for r in report.rows)
        slowed = judge(slow, base, RULE)
        caught += [r.op for r in slowed.regressions] == ["relu"]
        # the rule of a one-run baseline, on the first run of each side: the run offsets alone fail some pairs
        one_run_failures += not judge(first_run(same), first_run(base), RULE).passed
    assert caught >= 9  # 97 of 100 seeds catch it (module docstring): 9 of 10 leaves room for a seed's luck
    assert one_run_failures >= 1


def test_a_slowdown_the_runs_confirm_is_worse() -> None:
    base, _, slow, _ = _pair(0)
    row = next(r for r in judge(slow, base, RULE).rows if r.op == "relu")
    assert row.verdict == WORSE and "past the between-run noise" in row.reason
    assert row.change is not None and row.noise_floor is not None and row.change > max(0.03, row.noise_floor)


def test_within_the_between_run_noise_is_not_significant() -> None:
    # baseline runs at 0.97, 1.00, 1.03 ms (sd 3% over 2 dof), the result 6% slower than their mean: past the
    # 5% threshold and far past the samples' scatter, but three runs allow t(0.995, 2) * 3% * sqrt(1/3 + 1)
    # = 9.925 * 0.03 * 1.1547 = 34.4%
    rng = np.random.default_rng(7)

    def samples(level: float) -> list[float]:
        return [float(x) for x in level * 1e-3 * np.exp(rng.normal(0.0, 0.002, N))]

    base = merge_runs([(f"r{i}", document([record("relu", samples(level))])) for i, level in
                       enumerate((0.97, 1.00, 1.03))])
    row = judge(document([record("relu", samples(1.06))]), base, "median:5%").rows[0]
    assert row.verdict == WORSE_NOT_SIGNIFICANT and "within the between-run noise" in row.reason
    assert row.p_value is not None and row.p_value < 1e-10  # the samples alone would have called it worse
    assert row.run_noise == pytest.approx(0.03, rel=0.02) and row.noise_dof == 2
    assert row.noise_floor == pytest.approx(9.925 * row.run_noise * (1 / 3 + 1) ** 0.5, rel=1e-3)
    assert noise_factor(noise_of(base.records[0]), 3, 1, 0.01) == pytest.approx(9.925 * (4 / 3) ** 0.5, rel=1e-4)


def test_a_one_run_baseline_behaves_as_before() -> None:
    rng = np.random.default_rng(3)
    base, cur = one_run(rng), one_run(rng, {"rmsnorm": 0.07})
    report = judge(cur, base, "median:5%")
    # as the check without runs: rmsnorm 7% slower (+-3% offsets: 1% to 13%) with 200 vs 200 samples is worse
    rows = {r.op: r for r in report.rows}
    assert rows["rmsnorm"].verdict == WORSE
    assert "between-run noise unknown" in rows["rmsnorm"].reason
    assert all(r.noise_floor is None and r.run_noise is None and r.runs_baseline == 1 for r in report.rows)
    assert any("between-run noise unknown for 3 of 3" in n for n in report.notes)
    # the verdicts are those of threshold + rank test alone: no row was held back by noise
    assert not any("within the between-run noise" in r.reason for r in report.rows)


def test_a_stored_noise_figure_sets_the_floor() -> None:
    # history: a median spread of 1% over 9 dof, stored on a one-run baseline; a one-run result:
    # floor t(0.995, 9) * 1% * sqrt(1 + 1) = 3.250 * 0.01 * 1.4142 = 4.60%
    rng = np.random.default_rng(5)
    history = {"runs": 10, "dof": 9, "relative_sd": dict.fromkeys(("median", "mean", "min", "p90"), 0.01)}
    base = document([record("relu", [float(x) for x in 1e-3 * np.exp(rng.normal(0, 0.002, N))], run_noise=history)])
    for change, verdict in ((0.04, WORSE_NOT_SIGNIFICANT), (0.055, WORSE)):
        cur = document([record("relu", [float(x) for x in 1e-3 * (1 + change) * np.exp(rng.normal(0, 0.002, N))])])
        row = judge(cur, base, "median:3%").rows[0]
        assert row.noise_floor == pytest.approx(3.250 * 0.01 * 2 ** 0.5, rel=1e-3)
        assert row.verdict == verdict, row.reason


def test_the_results_cannot_bring_their_own_noise(tmp_path: Path) -> None:
    # The same history stored on the results instead: before issue 50 it was pooled with the baseline's (none)
    # and a 5.5% slowdown, past median:3%, fell within a floor of 4.6% (or any floor the file chose). Now the
    # results' noise is what their runs show (one run: unknown), and a file storing another is refused.
    rng = np.random.default_rng(5)
    history = {"runs": 10, "dof": 9, "relative_sd": dict.fromkeys(("median", "mean", "min", "p90"), 0.01)}
    base = document([record("relu", [float(x) for x in 1e-3 * np.exp(rng.normal(0, 0.002, N))])])
    cur = document([record("relu", [float(x) for x in 1.055e-3 * np.exp(rng.normal(0, 0.002, N))],
                           run_noise=history)])
    row = judge(cur, base, "median:3%").rows[0]
    assert row.verdict == WORSE and row.noise_floor is None, row.reason
    path = write(tmp_path / "cur.json", dumps(cur))
    with pytest.raises(UsageError, match=r"record 0 \(relu\): run_noise on a record of one run: a results "
                       "document's between-run noise is learned from its runs"):
        load_for_check(path, as_results=True)
    assert load_for_check(path).records[0].extra[RUN_NOISE] == history  # as a baseline: A/A history, kept


def test_a_results_noise_must_be_what_its_runs_show(tmp_path: Path) -> None:
    merged = runs(np.random.default_rng(3), 3)  # run --repeat 3: each record's run_noise learned from its runs
    honest = write(tmp_path / "honest.json", dumps(merged))
    assert load_for_check(honest, as_results=True).records == merged.records
    data = json.loads(honest.read_text())
    data["records"][1][RUN_NOISE]["relative_sd"]["median"] *= 10
    with pytest.raises(UsageError, match=r"record 1 \(rmsnorm\): run_noise \(median sd .*\) is not what its 3 "
                       "runs show"):
        load_for_check(write(tmp_path / "edited.json", json.dumps(data)), as_results=True)


def test_runs_must_be_the_records_samples(tmp_path: Path) -> None:
    # `with_runs` writes time_samples_s as the runs one after another; runs that are not (a run at the
    # baseline's speed under slower samples) would be judged in their place: refused on load, ignored by judge
    slow = [2e-3] * 10
    forged = record("relu", slow, **{RUN_SAMPLES: [[1e-3] * 5, [1e-3] * 5]})
    assert run_samples(forged) == [slow]
    with pytest.raises(UsageError, match=r"record 0 \(relu\): run_samples_s does not hold the record's samples"):
        load_for_check(write(tmp_path / "r.json", dumps(document([forged]))))


def test_baseline_update_refuses_records_check_cannot_judge(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    few = write(tmp_path / "few.json", dumps(document([record("relu", [1e-3, 1.1e-3]), record("gemv", [2e-3] * 9)])))
    base = tmp_path / "b.json"
    code, _, err = run(capsys, "baseline", "update", str(few), "--baseline", str(base))
    assert code == 2 and not base.exists() and len(err.strip().splitlines()) == 1
    assert "record 0 (relu bf16 numel=65536): 2 samples, fewer than the 5 samples check needs" in err
    code, out, err = run(capsys, "baseline", "update", str(few), "--baseline", str(base), "--allow-unjudged")
    assert code == 0 and base.read_bytes() == few.read_bytes(), err
    # a suite entry's threshold is stored, and said: check reads it in place of --fail-on
    own = write(tmp_path / "own.json", dumps(document([record("gemv", [2e-3] * 9, threshold="median:8%")])))
    code, out, err = run(capsys, "baseline", "update", str(own), "--baseline", str(tmp_path / "t.json"))
    assert code == 0 and "thresholds of their own, which check uses in place of --fail-on: median:8% (1 record)" \
        in " ".join(out.split()), out


def test_json_report_has_the_runs_and_the_floor() -> None:
    base, same, _, _ = _pair(1)
    rows = to_json(judge(same, base, RULE))["rows"]
    assert {(r["runs_baseline"], r["runs_current"]) for r in rows} == {(BASELINE_RUNS, CURRENT_RUNS)}
    assert all(r["noise_floor"] > 0 and r["run_noise"] > 0 and r["noise_dof"] == 13 for r in rows)


# ---------------------------------------------------------------- baseline update, check, run --repeat
def test_baseline_update_of_one_run_fits_80_columns(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 30: the line on a one-run baseline's unknown noise was 171 columns on an 80-column terminal
    monkeypatch.setenv("COLUMNS", "80")
    one = write(tmp_path / "one.json", dumps(runs(np.random.default_rng(3), 1)))
    code, out, _ = run(capsys, "baseline", "update", str(one), "--baseline", str(tmp_path / "b.json"))
    assert code == 0 and "between-run noise unknown for 3 record(s)" in " ".join(out.split())
    first, *noise = out.splitlines()
    assert first.startswith("baseline ") and str(tmp_path) in first  # the path whole, however long
    assert len(noise) > 1 and max(map(len, noise)) <= 80 and noise[1].startswith("    ")  # a hanging indent


def test_baseline_update_with_several_files_then_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    files = [write(tmp_path / f"aa{i}.json", dumps(runs(rng, 5))) for i in range(2)]
    base = tmp_path / "baselines" / "h200.json"
    code, out, _ = run(capsys, "baseline", "update", *map(str, files), "--baseline", str(base))
    assert code == 0 and "created with 3 record(s) from 10 runs" in out and "between-run noise of 3 of 3" in out
    stored = json.loads(base.read_text())
    assert all(len(r[RUN_SAMPLES]) == 10 and r[RUN_NOISE]["dof"] == 9 for r in stored["records"])
    assert len(stored["runs"]) == 10
    same = write(tmp_path / "same.json", dumps(runs(rng, 5)))
    slow = write(tmp_path / "slow.json", dumps(runs(rng, 5, {"relu": 0.05})))
    code, out, _ = run(capsys, "check", str(same), "--baseline", str(base), "--fail-on", RULE)
    assert code == 0, out
    code, out, _ = run(capsys, "check", str(slow), "--baseline", str(base), "--fail-on", RULE, "--json",
                       str(tmp_path / "c.json"))
    assert code == 1
    report = json.loads((tmp_path / "c.json").read_text())
    assert [r["op"] for r in report["rows"] if r["verdict"] == WORSE] == ["relu"]


def test_baseline_update_keep_noise(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    base = tmp_path / "h200.json"
    update_baseline(write(tmp_path / "five.json", dumps(runs(rng, 5))), base)
    assert all(r[RUN_NOISE]["dof"] == 4 for r in json.loads(base.read_text())["records"])
    single = write(tmp_path / "one.json", dumps(one_run(rng)))
    dropped = update_baseline(single, base)
    assert base.read_bytes() == single.read_bytes()  # one file, no --keep-noise: its exact bytes, as before
    assert any("dropped" in n for n in dropped.noise) and any("unknown for 3" in n for n in dropped.noise)
    update_baseline(write(tmp_path / "five2.json", dumps(runs(rng, 5))), base)
    kept = update_baseline(single, base, keep_noise=True)
    records = json.loads(base.read_text())["records"]
    assert all(r[RUN_NOISE]["dof"] == 4 and RUN_SAMPLES not in r for r in records)  # the old 4 dof, one new run
    assert kept.kept == 3 and any("between-run noise of 3 of 3" in n for n in kept.noise)


def test_bad_runs_are_usage_errors(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", dumps(document([record("relu", [1.0, 1.1])])))
    with pytest.raises(UsageError, match="given twice"):
        update_baseline([good, tmp_path / "." / "good.json"], tmp_path / "b.json")
    for runs_field in ([[1.0], []], [[1.0, -2.0]], "1.0", [["x"]]):
        bad = write(tmp_path / "bad.json", dumps(document([record("relu", [1.0], **{RUN_SAMPLES: runs_field})])))
        with pytest.raises(UsageError, match=r"record 0 \(relu\): run_samples_s must be a list of runs"):
            load_for_check(bad)
    assert not (tmp_path / "b.json").exists()


def test_run_repeat_passes_its_options_to_each_run() -> None:
    assert child_args(gpu=None, device="cuda:1", warm_l2=True, timer="events", power="sustained",
                      kernels=False) == ["--device", "cuda:1", "--warm-l2", "--timer", "events", "--power",
                                         "sustained", "--no-kernels"]
    assert child_args(gpu="h200", device=None, warm_l2=False, timer="auto", power="sustained", kernels=True,
                      db=Path("h200-ops.json"))[-2:] == ["--db", "h200-ops.json"]  # each run predicts alike


def test_run_repeat_in_fresh_processes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from roofline.ceilings import opdb

    suite = write(tmp_path / "tiny.toml", '[[entry]]\nop = "relu"\nparams = { numel = 4096 }\n')
    out = tmp_path / "r.json"
    # a CPU operator database of two relu points at half their roof: every run's record is predicted from it
    db = opdb.OpDB(device={"kind": "cpu", "id": "cpu", "name": "test CPU"}, path=tmp_path / "cpu-ops.json")
    db.points += [opdb.Point(family="elementwise", op="relu", dtype="fp32", params={"numel": n}, flops=n,
                             bytes=8 * n, roofline_time_s=n * 1e-9, time_s=n * 2e-9) for n in (1024, 65536)]
    opdb.write(db)
    code, _, err = run(capsys, "run", str(suite), "--repeat", "2", "--no-kernels", "-o", str(out), "--db",
                       str(db.path))
    assert code == 0, err
    assert "run 2 of 2" in err and "between-run noise of 1 of 1" in err
    doc = json.loads(out.read_text())
    rec = doc["records"][0]
    assert len(rec[RUN_SAMPLES]) == 2 and rec["time_samples_s"] == rec[RUN_SAMPLES][0] + rec[RUN_SAMPLES][1]
    assert rec[RUN_NOISE]["runs"] == 2 and len(doc["runs"]) == 2
    assert doc["command"] != doc["runs"][0]["command"]  # the command that merged them, not the first run's
    assert rec["prediction_source"].startswith("elementwise fp32: 2 of 2 points")
    assert rec["predicted_time_s"] == pytest.approx(2 * rec["roofline_time_s"])  # efficiency 0.5 at both ends
    code, _, err = run(capsys, "run", str(suite), "--repeat", "2", "--no-time")
    assert code == 2 and "--repeat needs timed runs" in err


def test_a_child_process_imports_this_roofline_from_any_folder(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # `run --repeat` / `--devices` and the ncu targets start `python -m roofline...`: from another folder and
    # without the caller's PYTHONPATH, the child must still import the roofline this process imported (on the
    # GPU machine the source tree is not installed: a child in a scratch folder found no roofline at all).
    import subprocess
    import sys

    import roofline
    from roofline.core.process import child_env

    monkeypatch.delenv("PYTHONPATH", raising=False)
    got = subprocess.run([sys.executable, "-c", "import roofline; print(roofline.__file__)"], cwd=tmp_path,
                         env=child_env(), capture_output=True, text=True, check=True).stdout.strip()
    assert Path(got).resolve() == Path(roofline.__file__).resolve()
