"""The CI gate against crafted input (issue 50): results documents three times slower than their baseline, edited
so that the gate might pass them. Every row must be refused (exit 2, one line naming the record and the field) or
fail (exit 1, the record's row naming its verdict); none may pass.

The honest pair: a baseline of two records (gemm, relu) with 50 lognormal samples each (2% spread, seeded), and
results whose every sample is the baseline's times 3 (a +200% change, p far below 0.01: `worse`, exit 1). Each
row edits every record of the results as the issue's attacker did (an edit of one leaves the other failing; the
rows "on-the-gemm" show that), and
runs `check` against the honest baseline or `baseline update` from the edited results (refused: nothing
written).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import run

from roofline.ci.judge import MIN_COMPARED_SHARE, MIN_SAMPLES

GEMM = {"m": 4096, "n": 4096, "k": 4096, "batch": 1, "epilogue": "none"}
RELU = {"numel": 268435456}
SLOWER = 3.0  # the results' every sample is the baseline's times this: +200%
# A literal that JSON parses to a float past the largest double: Python reads it as inf, as it reads Infinity.
HUGE = "1e999"


def lognormal(n: int, center: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [center * rng.lognormvariate(0.0, 0.02) for _ in range(n)]


def record(op: str, params: dict[str, Any], samples: list[float]) -> dict[str, Any]:
    """A schema-v1 timed record on the H200, time_s the median of its samples (as the runner stores it)."""
    med = sorted(samples)[len(samples) // 2]
    return {"op": op, "variant": None, "params": dict(params), "dtype": "fp16", "flops": 1.0e11,
            "bytes_read": 6.7e7, "bytes_written": 3.3e7, "bytes": 1.0e8, "arithmetic_intensity": 1000.0,
            "gpu": "h200-sxm", "roof_source": "datasheet", "peak_flops_per_s": 989e12, "peak_bytes_per_s": 4.8e12,
            "ridge_point": 989e12 / 4.8e12, "bound": "compute", "roofline_time_s": 0.5e-3, "time_s": med,
            "time_samples_s": list(samples)}


def document(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schema_version": 1, "tool_version": "0.1.0", "created": "2026-12-01T00:00:00+00:00",
            "device": {"kind": "gpu", "spec_id": "h200-sxm", "name": "NVIDIA H200", "driver_version": "560.35.03"},
            "records": records}


def baseline() -> dict[str, Any]:
    return document([record("gemm", GEMM, lognormal(50, 1e-3, 1)), record("relu", RELU, lognormal(50, 2e-4, 3))])


def slower() -> dict[str, Any]:
    """The baseline's records, every sample (and time) three times longer."""
    doc = baseline()
    for rec in doc["records"]:
        rec["time_samples_s"] = [t * SLOWER for t in rec["time_samples_s"]]
        rec["time_s"] *= SLOWER
    return doc


# ---------------------------------------------------------------- the crafts: each edits every record in place
# (an edit of one record leaves the other failing, honestly 3x slower: the attacker edits them all), unless it
# says it edits the gemm alone
def gemm(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["records"][:1]


def each(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["records"])


Craft = Callable[[dict[str, Any]], None]


def samples(value: Any, n: int | None = None) -> Craft:
    """Every record's samples, all (or the first n) replaced by `value`."""
    def craft(doc: dict[str, Any]) -> None:
        for rec in each(doc):
            s = rec["time_samples_s"]
            rec["time_samples_s"] = [value] * len(s) if n is None else [value] * n + s[n:]
    return craft


def mapped(name: str, how: Callable[[float], Any]) -> Craft:
    """Every record's samples (`time_samples_s`) or time (`time_s`) passed through `how`."""
    def craft(doc: dict[str, Any]) -> None:
        for rec in each(doc):
            v = rec[name]
            rec[name] = [how(t) for t in v] if isinstance(v, list) else how(v)
    return craft


def field(name: str, value: Any, where: Callable[[dict[str, Any]], list[dict[str, Any]]] = each) -> Craft:
    """`name` set to `value` in every record (or the gemm alone); a value of `...` deletes the field."""
    def craft(doc: dict[str, Any]) -> None:
        for rec in where(doc):
            if value is ...:
                rec.pop(name, None)
            else:
                rec[name] = value
    return craft


def runs(make: Callable[[list[float]], Any]) -> Craft:
    """Every record's `run_samples_s` made from its (3x slower) samples."""
    def craft(doc: dict[str, Any]) -> None:
        for rec in each(doc):
            rec["run_samples_s"] = make(rec["time_samples_s"])
    return craft


def halves(s: list[float]) -> list[list[float]]:
    return [s[:25], s[25:]]


def baseline_like_runs(s: list[float]) -> list[list[float]]:
    """Two runs at the baseline's speed under 3x slower `time_samples_s`: the runs the gate read first."""
    return halves([t / SLOWER for t in s])


def noise(sd: float, runs_: int = 50) -> dict[str, Any]:
    return {"runs": runs_, "dof": runs_ - 1, "relative_sd": {k: sd for k in ("median", "mean", "min", "p90")}}


def device(key: str, value: str, records_gpu: str | None = None) -> Craft:
    def craft(doc: dict[str, Any]) -> None:
        doc["device"][key] = value
        for rec in each(doc):
            if records_gpu is not None:
                rec["gpu"] = records_gpu
    return craft


def energy(make: Callable[[int], list[Any]]) -> Craft:
    """Every record's energy samples (J per call) made by `make`; the baseline's are honest (`honest_energy`)."""
    def craft(doc: dict[str, Any]) -> None:
        for rec in each(doc):
            rec["energy"] = {"energy_j": 0.1, "samples_j": make(11)}
    return craft


def honest_energy(doc: dict[str, Any]) -> None:
    for rec in each(doc):
        rec["energy"] = {"energy_j": 0.1, "samples_j": [0.1 * (1 + 0.001 * i) for i in range(11)]}


def both(*crafts: Craft) -> Craft:
    def craft(doc: dict[str, Any]) -> None:
        for c in crafts:
            c(doc)
    return craft


def few(n: int) -> Craft:
    def craft(doc: dict[str, Any]) -> None:
        for rec in each(doc):
            rec["time_samples_s"] = rec["time_samples_s"][:n]
    return craft


def few_on_gemm(n: int) -> Craft:
    def craft(doc: dict[str, Any]) -> None:
        for rec in gemm(doc):
            rec["time_samples_s"] = rec["time_samples_s"][:n]
    return craft


def untimed_gemm(doc: dict[str, Any]) -> None:
    """The gemm untimed (the relu stays timed: a document with no timed record is refused on read)."""
    for rec in gemm(doc):
        rec.update(time_s=None, time_samples_s=None)


@dataclass(frozen=True)
class Attack:
    """One crafted input: how the results are edited, the command (`check` or `update`: `baseline update` of the
    edited results), its extra options, the exit status it must end with and what the one line (exit 2) or the
    failing row (exit 1: its op and verdict) must name."""

    id: str
    craft: Craft
    command: str
    code: int
    names: tuple[str, ...]
    args: tuple[str, ...] = ()
    base_craft: Craft | None = None  # the baseline's own (honest) edit, if any


REC0 = "record 0 (gemm)"
ATTACKS = [
    # samples that are no measurement: refused on read
    Attack("samples-infinity", samples(math.inf), "check", 2, (REC0, "time_samples_s", "Infinity")),
    Attack("one-sample-infinity", samples(math.inf, 1), "check", 2, (REC0, "time_samples_s[0]", "Infinity")),
    Attack("samples-nan", samples(math.nan), "check", 2, (REC0, "time_samples_s", "NaN")),
    Attack("samples-minus-infinity", samples(-math.inf, 3), "check", 2, (REC0, "time_samples_s[0]")),
    Attack("samples-huge-literal", samples(HUGE, 2), "check", 2, (REC0, "time_samples_s[0]", "Infinity")),
    Attack("samples-negative", mapped("time_samples_s", lambda t: -t), "check", 2, (REC0, "time_samples_s")),
    Attack("samples-zero", samples(0.0, 1), "check", 2, (REC0, "time_samples_s")),
    Attack("samples-strings", mapped("time_samples_s", str), "check", 2, (REC0, "time_samples_s")),
    Attack("samples-booleans", samples(True), "check", 2, (REC0, "time_samples_s")),
    Attack("samples-not-a-list", field("time_samples_s", "0.001"), "check", 2, (REC0, "time_samples_s")),
    Attack("time-infinity", field("time_s", math.inf), "check", 2, (REC0, "time_s", "Infinity")),
    Attack("time-nan", both(field("time_s", math.nan), field("time_samples_s", ...)), "check", 2,
           (REC0, "time_s", "NaN")),
    Attack("time-negative", both(field("time_s", -3e-3), field("time_samples_s", ...)), "check", 2, (REC0, "time_s")),
    Attack("time-string", both(field("time_s", "0.003"), field("time_samples_s", ...)), "check", 2, (REC0, "time_s")),
    Attack("time-string-beside-samples", field("time_s", "0.003"), "check", 2, (REC0, "time_s")),
    Attack("runs-infinity", runs(lambda s: [[math.inf] * 25, s[25:]]), "check", 2, (REC0, "run_samples_s")),
    Attack("runs-negative", runs(lambda s: [[-t for t in s[:25]], s[25:]]), "check", 2, (REC0, "run_samples_s")),
    Attack("runs-strings", runs(lambda s: [[str(t) for t in s[:25]], s[25:]]), "check", 2, (REC0, "run_samples_s")),
    Attack("runs-baseline-speed", runs(baseline_like_runs), "check", 2, (REC0, "run_samples_s", "time_samples_s")),
    Attack("runs-one-wild-run", runs(lambda s: [s[:25], [t * 40 for t in s[25:]]]), "check", 2,
           (REC0, "run_samples_s", "time_samples_s")),
    Attack("noise-faked", field("run_noise", noise(5.0)), "check", 2, (REC0, "run_noise")),
    Attack("noise-faked-beside-runs", both(runs(halves), field("run_noise", noise(5.0))), "check", 2,
           (REC0, "run_noise")),
    Attack("noise-infinity", field("run_noise", noise(math.inf)), "check", 2, (REC0, "run_noise")),
    # --metric fraction: the sample's fraction of the roofline is roofline_time_s / sample
    Attack("fraction-roof-nan", field("roofline_time_s", math.nan), "check", 2, (REC0, "roofline_time_s", "NaN"),
           ("--metric", "fraction")),
    Attack("fraction-roof-infinity", field("roofline_time_s", math.inf), "check", 2, (REC0, "roofline_time_s"),
           ("--metric", "fraction")),
    Attack("fraction-roof-zero", field("roofline_time_s", 0.0), "check", 2,
           ("0 of 2", "compared", "roofline time"), ("--metric", "fraction")),
    Attack("fraction-roof-zero-on-the-gemm", field("roofline_time_s", 0.0, gemm), "check", 1, ("relu", "worse"),
           ("--metric", "fraction")),
    Attack("fraction-roof-negative", field("roofline_time_s", -1e-3), "check", 2, (REC0, "roofline_time_s"),
           ("--metric", "fraction")),
    # --metric energy: J per call of each counter update
    Attack("energy-infinity", energy(lambda n: [math.inf] * n), "check", 2, (REC0, "samples_j"),
           ("--metric", "energy"), honest_energy),
    Attack("energy-negative", energy(lambda n: [-0.3] * n), "check", 2, (REC0, "samples_j"),
           ("--metric", "energy"), honest_energy),
    Attack("energy-strings", energy(lambda n: ["0.3"] * n), "check", 2, (REC0, "samples_j"),
           ("--metric", "energy"), honest_energy),
    # nothing compared: another device, GPU or driver on every record
    Attack("another-gpu", device("spec_id", "h100-sxm", "h100-sxm"), "check", 2,
           ("0 of 2", "compared", "GPU differs")),
    Attack("another-device-name", device("name", "NVIDIA H200 NVL"), "check", 2,
           ("0 of 2", "compared", "device differs")),
    Attack("another-driver", device("driver_version", "570.86.10"), "check", 2,
           ("0 of 2", "compared", "driver differs")),
    Attack("another-gpu-on-the-records", field("gpu", "h100-sxm"), "check", 2,
           ("0 of 2", "compared", "GPU differs")),
    Attack("another-gpu-on-the-gemm", field("gpu", "h100-sxm", gemm), "check", 1, ("relu", "worse")),
    Attack("spec-peak-edited", field("peak_flops_per_s", 990e12), "check", 2,
           ("0 of 2", "compared", "spec peak")),
    Attack("roof-source-edited", field("roof_source", "measured"), "check", 2,
           ("0 of 2", "compared", "roof differs")),
    # too few samples to judge: unjudged (failing), and with every record unjudged nothing was compared
    Attack("no-samples", field("time_samples_s", ...), "check", 2, ("0 of 2", "compared", "2 unjudged")),
    Attack("empty-samples", field("time_samples_s", []), "check", 2, ("0 of 2", "compared", "2 unjudged")),
    Attack("null-samples", field("time_samples_s", None), "check", 2, ("0 of 2", "compared", "2 unjudged")),
    Attack("fewer-than-the-minimum", few(MIN_SAMPLES - 1), "check", 2, ("0 of 2", "compared", "2 unjudged")),
    Attack("one-sample-each", few(1), "check", 2, ("0 of 2", "compared", "too few samples")),
    Attack("few-samples-on-the-gemm", few_on_gemm(2), "check", 1, ("gemm", "unjudged")),
    Attack("untimed-in-the-results", untimed_gemm, "check", 1, ("gemm", "unjudged")),
    Attack("unjudged-allowed-and-nothing-else", few(2), "check", 2, ("0 of 2", "compared", "unjudged"),
           ("--allow-unjudged",)),
    # thresholds from the results' own records: ignored (a bad one refused)
    Attack("threshold-500", field("threshold", "median:500%"), "check", 1, ("gemm", "worse")),
    Attack("threshold-500-beside-fail-on", field("threshold", "median:500%,p90:900%"), "check", 1,
           ("relu", "worse"), ("--fail-on", "median:5%")),
    Attack("threshold-unreadable", field("threshold", "median:lots"), "check", 2, ("gemm", "threshold")),
    # baseline update: refuses what check refuses (nothing written)
    Attack("update-from-infinity", samples(math.inf), "update", 2, (REC0, "time_samples_s", "Infinity")),
    Attack("update-from-nan-time", field("time_s", math.nan), "update", 2, (REC0, "time_s", "NaN")),
    Attack("update-from-negative", samples(-1e-3, 5), "update", 2, (REC0, "time_samples_s")),
    Attack("update-from-strings", field("time_s", "0.003"), "update", 2, (REC0, "time_s")),
    Attack("update-from-no-samples", field("time_samples_s", ...), "update", 2, ("gemm", "samples", "unjudged")),
    Attack("update-from-few-samples", few(MIN_SAMPLES - 1), "update", 2, ("gemm", "samples", "unjudged")),
    Attack("update-from-faked-noise", field("run_noise", noise(5.0)), "update", 2, (REC0, "run_noise")),
    Attack("update-from-faked-runs", runs(baseline_like_runs), "update", 2, (REC0, "run_samples_s")),
    Attack("update-from-nan-roof", field("roofline_time_s", math.nan), "update", 2, (REC0, "roofline_time_s")),
    Attack("update-from-bad-threshold", field("threshold", "median:lots"), "update", 2, ("gemm", "threshold")),
]


def write_json(path: Path, doc: dict[str, Any]) -> Path:
    """`doc` as JSON text, its non-finite floats as the Infinity/NaN tokens Python writes (the attacker's file),
    the HUGE string as a bare number literal."""
    path.write_text(json.dumps(doc, indent=1).replace(f'"{HUGE}"', HUGE))
    return path


def attempt(attack: Attack, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str, Path]:
    """Run the crafted row: (exit status, stdout, stderr, the path of the JSON report or the baseline written)."""
    base, res = baseline(), slower()
    if attack.base_craft is not None:
        attack.base_craft(base)
        attack.base_craft(res)
    attack.craft(res)
    results = write_json(tmp_path / "results.json", res)
    if attack.command == "update":
        target = tmp_path / "new_baseline.json"
        code, out, err = run(capsys, "baseline", "update", str(results), "--baseline", str(target), *attack.args)
        return code, out, err, target
    report = tmp_path / "check.json"
    code, out, err = run(capsys, "check", str(results), "--baseline", str(write_json(tmp_path / "base.json", base)),
                         "--json", str(report), *attack.args)
    return code, out, err, report


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
def test_a_crafted_document_is_refused_or_fails(attack: Attack, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err, written = attempt(attack, tmp_path, capsys)
    assert code == attack.code, (code, out, err)
    if code == 2:  # one line on stderr naming the record and the field; nothing written
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert all(n in err for n in attack.names), err
        if attack.command == "update":
            assert not written.exists()
        return
    rows = json.loads(written.read_text())["rows"]  # exit 1: the crafted record's row fails
    op, verdict = attack.names
    assert [r["verdict"] for r in rows if r["op"] == op and r["verdict"] == verdict], rows


def test_there_are_at_least_36_crafted_rows_across_check_and_update() -> None:
    assert len(ATTACKS) >= 36 and {a.command for a in ATTACKS} == {"check", "update"}
    assert len({a.id for a in ATTACKS}) == len(ATTACKS)


def test_the_honest_pair_fails_passes_and_updates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The controls: the untouched 3x slower results fail (worse), the baseline against itself passes, and
    `baseline update` of either writes it."""
    base = write_json(tmp_path / "base.json", baseline())
    res = write_json(tmp_path / "results.json", slower())
    code, out, err = run(capsys, "check", str(res), "--baseline", str(base))
    assert code == 1 and "worse" in out, err
    code, out, err = run(capsys, "check", str(base), "--baseline", str(base))
    assert code == 0 and "passed" in out, err
    code, out, err = run(capsys, "baseline", "update", str(res), "--baseline", str(tmp_path / "new.json"))
    assert code == 0 and (tmp_path / "new.json").read_bytes() == res.read_bytes(), err


def test_a_suite_threshold_the_baseline_stored_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Thresholds come from --fail-on and the baseline: a suite entry's `threshold`, stored by `baseline update`
    (it is in the baseline's record), loosens the rule for that record; the same field in the results alone does
    not."""
    base, res = baseline(), slower()
    for rec in each(base) + each(res):
        rec["threshold"] = "median:500%"  # 3x slower is +200%: within 500%
    code, out, err = run(capsys, "check", str(write_json(tmp_path / "r.json", res)), "--baseline",
                         str(write_json(tmp_path / "b.json", base)))
    assert code == 0 and "passed" in out, err


def test_a_record_timed_with_too_few_samples_passes_only_when_allowed(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """--allow-unjudged reports the unjudged record without failing, as long as enough records were judged:
    one of two (the share MIN_COMPARED_SHARE asks for at most half)."""
    assert MIN_COMPARED_SHARE <= 0.5
    base, res = baseline(), baseline()  # the results: the baseline's own samples, relu cut to 2
    each(res)[1]["time_samples_s"] = each(res)[1]["time_samples_s"][:2]
    r, b = write_json(tmp_path / "r.json", res), write_json(tmp_path / "b.json", base)
    code, out, err = run(capsys, "check", str(r), "--baseline", str(b))
    assert code == 1 and "unjudged" in out, err
    code, out, err = run(capsys, "check", str(r), "--baseline", str(b), "--allow-unjudged")
    assert code == 0 and "unjudged" in out, err
