"""The claims table of docs/measurements.md, read from the evidence files under docs/results.

Each claim names the files its current figure comes from and computes the figure from the JSON (or CSV) its run
wrote; where a run wrote only a text log, the figure is read from the log's lines and the table says so. An
accuracy figure says whether the cases were in the sample the rule was tuned on (in-sample) or not (held out).

    python scripts/claims.py            # print the table
    python scripts/claims.py --write    # put it into docs/measurements.md, between its two marker lines
    python scripts/claims.py --check    # exit 1 when the page's table is not what the files give, or when a file
                                        # under docs/results is cited by no page of docs/ or README.md
"""

from __future__ import annotations

import ast
import fnmatch
import itertools
import json
import re
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "measurements.md"
BEGIN = "<!-- claims table: made by scripts/claims.py from the files under docs/results; edit those, not this -->"
END = "<!-- end of the claims table -->"
TEXT_LOG = " (read from a text log: the run wrote no JSON)"
# The bounds the figures are counted against, as the issues that asked for them set them.
NCU_BOUND = 0.03  # issue 4: a kernel's time within 3% of Nsight Compute's
RUNS_BOUND = 0.02  # two runs of a suite within 2% of each other
STEP_BOUND = 0.05  # issue 32: a predicted step within 5% of the measured one
ENERGY_BOUND = 0.10  # issue 33: a kernel's modelled energy within 10% of the measured
ENERGY_CV_BOUND = 0.02  # issue 33: joules per call repeat within 2% (coefficient of variation over windows)
# A glob in a page cites files only when its file name, extension left out, keeps this many literal characters:
# `summary-h100-0742*` names one run's files, `*.json.gz` or `s*.txt` none.
GLOB_LITERAL = 6


@dataclass(frozen=True)
class Claim:
    """One row of the table: what the docs claim, the current figure and where it was measured."""

    title: str  # as the section's heading says it
    anchor: str  # the section's anchor in measurements.md
    figure: str
    gpu: str
    date: str
    evidence: tuple[str, ...]  # paths under docs/results the figure is read from
    text_log: bool = False  # the figure is read from a text log (the run wrote no JSON)


CLAIMS: dict[str, Callable[[], Claim]] = {}


def claim(fn: Callable[[], Claim]) -> Callable[[], Claim]:
    """Register a claim's reader (in table order); a name registered twice is a mistake."""
    if fn.__name__ in CLAIMS:
        raise ValueError(f"claim {fn.__name__} registered twice")
    CLAIMS[fn.__name__] = fn
    return fn


# ---------------------------------------------------------------- reading the evidence
def text(rel: str) -> str:
    from roofline.core.files import read_text

    return read_text(RESULTS / rel, "evidence file", missing="no such evidence file (docs/results)")


def load(rel: str) -> Any:
    return json.loads(text(rel))


def records(rel: str) -> list[Any]:
    from roofline.core.document import read_document

    return list(read_document(RESULTS / rel).records)


def header(rel: str) -> tuple[str, str]:
    """(date, GPU) of a gpu_check summary's first line: `== 2026-12-01T04:08:53Z NVIDIA H200, 580.159.04, ...`."""
    m = re.match(r"== (\d{4}-\d\d-\d\d)T[\d:]+Z (.+?),", text(rel))
    if not m:
        raise ValueError(f"{rel}: no `== DATE GPU,` first line")
    return m.group(1), gpu_name(m.group(2))


def gpu_name(name: str) -> str:
    """The short name of a device name the files carry: 'NVIDIA H100 80GB HBM3' -> 'H100'."""
    m = re.search(r"\b([A-Z]+\d{2,4})\b", name)
    return m.group(1) if m else name


def lines(rel: str, pattern: str) -> list[re.Match[str]]:
    found = [m for line in text(rel).splitlines() if (m := re.search(pattern, line))]
    if not found:
        raise ValueError(f"{rel}: no line matches {pattern!r}")
    return found


def pct(x: float, signed: bool = True, digits: int = 1) -> str:
    return f"{x * 100:{'+' if signed else ''}.{digits}f}%"


def span(values: Iterable[float], fmt: Callable[[float], str]) -> str:
    vals = sorted(values)
    return fmt(vals[0]) if fmt(vals[0]) == fmt(vals[-1]) else f"{fmt(vals[0])} to {fmt(vals[-1])}"


# ---------------------------------------------------------------- the claims, in the table's order
@claim
def kernel_times() -> Claim:
    from roofline.ncu.read_csv import read_raw_csv, split_calls

    one, two, ncu = ("timing-vs-ncu/2026-11-30_kernels1.json", "timing-vs-ncu/2026-11-30_kernels2.json",
                     "timing-vs-ncu/2026-11-30_ncu.csv.gz")
    recs = records(one)
    calls = split_calls(read_raw_csv(RESULTS / ncu), "spin")  # scripts/ncu_compare.py's marker kernel
    repeats = len(calls) // len(recs)
    ratios = [r.time_s / statistics.median(c.time_s for c in calls[i * repeats:(i + 1) * repeats]) - 1
              for i, r in enumerate(recs)]
    worst = max(range(len(recs)), key=lambda i: abs(ratios[i]))
    runs = max(abs(b.time_s / a.time_s - 1) for a, b in zip(recs, records(two), strict=True))
    date, gpu = header("timing-vs-ncu/2026-11-30_summary.txt")
    return Claim("kernel times against Nsight Compute", "kernel-times-against-nsight-compute",
                 f"{sum(abs(x) <= NCU_BOUND for x in ratios)} of {len(recs)} kernels within {pct(NCU_BOUND, False, 0)} "
                 f"of Nsight Compute's time (median of {repeats} profiled calls; worst {recs[worst].op} "
                 f"{pct(ratios[worst])}); two runs within {pct(runs, False, 2)}", gpu, date, (one, two, ncu))


@claim
def timer_overhead() -> Claim:
    pairs = [float(m.group(1)) for m in lines("timer-settings/empty_pair.txt", r"empty event pair after the flush: "
                                                                             r"([\d.]+) µs")]
    return Claim("the timer's settings", "the-timers-settings-and-what-they-rest-on",
                 f"an empty event pair costs {span(pairs, lambda x: f'{x:.2f}')} µs ({len(pairs)} readings), "
                 "subtracted from every sample" + TEXT_LOG, "H200", "2026-11-29",  # the files carry no date
                 ("timer-settings/empty_pair.txt",), text_log=True)


@claim
def kernel_framing() -> Claim:
    """scripts/experiments/framing_truth.py's comparison: each tool's median reading less the spin's own span."""
    from roofline.ncu.read_csv import read_raw_csv

    def by_cycles(rows: list[dict[str, Any]], key: str) -> dict[int, float]:
        out: dict[int, list[float]] = {}
        for r in rows:
            out.setdefault(r["cycles"], []).append(r[key] / 1e3)
        return {c: statistics.median(v) for c, v in out.items()}

    cupti_rows, own_rows = load("kernel-framing/framing_cupti.json"), load("kernel-framing/framing_own_all.json")
    spins = [k for k in read_raw_csv(RESULTS / "kernel-framing/framing_ncu_all.csv.gz") if k.name.startswith("spin")]
    for k, r in zip(spins[len(spins) - len(own_rows):], own_rows, strict=True):  # the first spins warm up
        r["ncu_ns"] = k.duration_s * 1e9
    own, cupti = by_cycles(cupti_rows, "own_ns"), by_cycles(cupti_rows, "cupti_ns")
    ncu, ncu_own = by_cycles(own_rows, "ncu_ns"), by_cycles(own_rows, "own_ns")
    over_cupti = {c: cupti[c] - own[c] for c in own}
    over_ncu = {c: ncu[c] - ncu_own[c] for c in own}
    longer = [over_ncu[c] - over_cupti[c] for c in own]
    def us(x: float) -> str:
        return f"{x:.2f}"

    date, gpu = header("kernel-framing/summary.txt")
    return Claim("which tool's time is the kernel's", "which-tools-time-is-the-kernels",
                 f"Nsight Compute frames a kernel {span(longer, us)} µs longer than CUPTI ({len(own)} spin lengths; "
                 f"over the spin's own span CUPTI reads +{span(over_cupti.values(), us)} µs, ncu "
                 f"+{span(over_ncu.values(), us)} µs)", gpu, date,
                 ("kernel-framing/framing_cupti.json", "kernel-framing/framing_own_all.json",
                  "kernel-framing/framing_ncu_all.csv.gz"))


@claim
def small_kernels() -> Claim:
    one, two, checks = ("small-kernels/decode_small_run1.json.gz", "small-kernels/decode_small_run2.json.gz",
                        "small-kernels/aa_checks.txt")
    a, b = records(one), records(two)
    within = sum(abs(y.time_s / x.time_s - 1) <= RUNS_BOUND for x, y in zip(a, b, strict=True))
    sections = re.split(r"^== ", text(checks), flags=re.M)
    pairs = [s for s in sections if s.startswith("A/A pair")]
    passed = sum(bool(re.search(r"^roofline check passed", s, re.M)) for s in pairs)
    date, gpu = header("small-kernels/summary_0350.txt")
    return Claim("small kernels and the gate's false alarms", "small-kernels-and-the-gates-false-alarms",
                 f"two runs of decode-small: {within} of {len(a)} entries within {pct(RUNS_BOUND, False, 0)}; "
                 f"A/A: {passed} of {len(pairs)} checks against a 5-run baseline pass (read from a text log)",
                 gpu, date, (one, two, checks))


@claim
def regression_gate() -> Claim:
    summary, slow = "regression-gate/summary_1133.txt", "regression-gate/check_slow_1135.txt"
    exits = [int(m.group(1)) for m in lines(summary, r"^pair \d+: exit (\d+)")]
    (slowed,) = lines(summary, r"^slowed: exit (\d+)")
    (worse,) = lines(slow, r"│ (\w+) .*│ +([+-][\d.]+%) │ [^│]+│ [^│]+│ worse ")
    date, gpu = header(summary)
    return Claim("the regression check on the GPU", "the-regression-check-on-the-gpu",
                 f"{exits.count(0)} of {len(exits)} A/A pairs of the smoke suite exit 0; an injected 7% slowdown "
                 f"exits {slowed.group(1)} ({worse.group(1)} `worse`, {worse.group(2)})" + TEXT_LOG,
                 gpu, date, (summary, slow), text_log=True)


@claim
def ceilings() -> Claim:
    runs = [f"calibration/cal_final{i}.json.gz" for i in (1, 2, 3)]
    figures: dict[str, list[float]] = {}
    for run in runs:
        for f in load(run)["details"]["figures"]:
            figures.setdefault(f["name"], []).append(f["value"])
    spread = max(max(v) / min(v) - 1 for v in figures.values())
    bf16, hbm = statistics.median(figures["bf16 matmul"]), statistics.median(figures["HBM read"])
    return Claim("measured ceilings", "measured-ceilings-roofline-calibrate",
                 f"{len(figures)} figures, each within {pct(spread, False)} over {len(runs)} runs; bf16 matmul "
                 f"{bf16 / 1e12:.0f} TFLOP/s, HBM read {hbm / 1e12:.2f} TB/s (medians)", "H200", "2026-11-29",
                 tuple(runs))  # the calibration files carry no date


@claim
def model_profiles() -> Claim:
    log = "model-profiles/profile_summary_0408.txt"
    coverage = [float(m.group(1)) for m in lines(log, r"^coverage ([\d.]+) ")]
    ratios = [ast.literal_eval(m.group(1))["ratio"] for m in lines(log, r"^ncu (\{.*\})$")]
    plain, ours, ncu = (sum(float(m.group(1)) for m in lines(log, f"^{what} process.*: ([\\d.]+) s$"))
                        for what in ("plain python", "roofline profile", "ncu"))
    date, gpu = header(log)
    return Claim("whole-model profiles",
                 "whole-model-profiles-against-torchprofiler-flopcountermode-and-nsight-compute",
                 f"coverage {span(coverage, lambda x: f'{x:.1f}')} on {len(coverage)} models (Llama 1B prefill, "
                 f"ResNet-50, ViT-B/16); attributed kernel time {', '.join(f'{x:.3f}' for x in ratios)} of ncu's "
                 f"sum; process time beyond the plain scripts' {ours - plain:.1f} s, ncu's {ncu - plain:.1f} s"
                 + TEXT_LOG, gpu, date, (log,), text_log=True)


@claim
def compiled_models() -> Claim:
    doc = load("compiled-models/compiled_mlp_compiled.json.gz")
    p = doc["profile"]
    return Claim("compiled models", "compiled-models-in-profiles",
                 f"a torch.compile'd block: coverage {p['coverage']:.1f}, {p['compiled']['triton_launches']} Triton "
                 f"launches attributed, {len(p['compiled']['unattributed_launches'])} unattributed", gpu_name(
                     doc["device"]["name"]), doc["created"][:10], ("compiled-models/compiled_mlp_compiled.json.gz",))


@claim
def counters() -> Claim:
    run, cost = "counters/ours_call3.json.gz", "counters/summary_call5.txt"
    doc = load(run)
    excess = [r["counters"]["excess_traffic"] for r in doc["records"] if r["bound"] == "memory"]
    (passes,) = lines(cost, r"^full: exit 0, [\d.]+ s,\s+\d+ (\d+) passes")
    return Claim("counters", "counters-from-nsight-compute-what-repeats-excess-traffic-cost",
                 f"excess traffic {span(excess, lambda x: f'{x:.3f}')} on the {len(excess)} memory-bound kernels of "
                 f"kernels-h200; {passes.group(1)} ncu passes a kernel (read from a text log)",
                 gpu_name(doc["device"]["name"]), doc["created"][:10], (run, cost))


@claim
def collectives() -> Claim:
    run, log = "collectives/comm.json.gz", "collectives/summary.txt"
    doc = load(run)
    top = max((r for r in doc["records"] if r["op"] == "all_reduce"), key=lambda r: r["params"]["bytes"])
    c, gib = top["collective"], top["params"]["bytes"] / 2**30
    plain = [float(m.group(1)) / 100 for m in lines(log, r"busbw plain .* roofline .* ([+-][\d.]+)%$")]
    return Claim("collectives on two GPUs", "collectives-on-two-h200s",
                 f"all_reduce {c['busbw_bytes_per_s'] / 1e9:.0f} GB/s busbw at {gib:.0f} GiB "
                 f"({pct(c['busbw_bytes_per_s'] / c['link_bytes_per_s_one_way'], False, 0)} of the link); against a "
                 f"plain torch.distributed loop, worst {pct(max(plain, key=abs))} over {len(plain)} sizes "
                 "(read from a text log)", f"{c['ranks']} x {gpu_name(doc['device']['name'])}", doc["created"][:10],
                 (run, log))


@claim
def speed() -> Claim:
    log, startup = "timing-vs-ncu/2026-11-30_summary.txt", "model-profiles/summary_0408.txt"
    (ours,) = lines(log, r"^wall time, one command, --no-kernels: ([\d.]+) s")
    (ncu,) = lines(log, r"^ncu --set roofline wall time: ([\d.]+) s")
    (first,) = lines(startup, r"^analyze gemm +([\d.]+) s")
    date, gpu = header(log)
    return Claim("speed and start-up", "speed-the-suite-against-nsight-compute-and-start-up",
                 f"the 16 kernels in {ours.group(1)} s against ncu's {ncu.group(1)} s "
                 f"({float(ours.group(1)) / float(ncu.group(1)):.2f}); `analyze --no-time` {first.group(1)} s "
                 "(median of 20)" + TEXT_LOG, gpu, date, (log, startup), text_log=True)


@claim
def training_steps() -> Claim:
    run = "training-steps/call4_training_steps.json"
    doc = load(run)
    names = {"resnet50": "ResNet-50", "vit": "ViT-B/16", "llama": "GQA Llama", "decode": "decode"}
    date, gpu = header("training-steps/call4_summary.txt")
    return Claim("training and decode steps", "training-and-decode-steps",
                 "kernel time against a plain torch.profiler: " + ", ".join(
                     f"{pct(doc[k]['kernel_vs_plain'], digits=2)} ({n})" for k, n in names.items())
                 + f"; coverage {span((doc[k]['ours']['coverage'] for k in names), lambda x: f'{x:.1f}')}",
                 gpu, date, (run,))


@claim
def profiling_cost() -> Claim:
    run = "training-steps/call5_profile_cost.json"
    doc = load(run)
    first = {k: v["first"]["ratio"] for k, v in doc["results"].items()}
    worst = max(first, key=lambda k: first[k])
    date, gpu = header("training-steps/call5_profile_cost_summary.txt")
    return Claim("cost of profiling", "cost-of-profiling-issue-28",
                 f"the first profile in a fresh process at most {first[worst]:.2f}x a plain torch.profiler "
                 f"({worst}; target {doc['target_ratio']:.0f}x), {len(first)} cases", gpu, date, (run,))


@claim
def speed_of_light() -> Claim:
    run = "sol/sol_check.json.gz"
    doc = load(run)
    of_fused = [r["reference"]["of_fused"] for r in doc["problems"]["rows"] if r["reference"]["of_fused"]]
    red = doc["red_team"]
    return Claim("speed of light of benchmark problems", "speed-of-light-of-kernel-benchmark-problems-roofline-sol",
                 f"{len(of_fused)} references at {span(of_fused, lambda x: pct(x, False))} of their fused SoL (median "
                 f"{pct(statistics.median(of_fused), False)}); an algebraic shortcut refused as "
                 f"{doc['shortcut']['got']}; {sum(r['pass'] for r in red)} of {len(red)} red-team verdicts as expected",
                 gpu_name(doc["gpu"]), "2026-12-01", (run,))  # the check's files carry no date


def step_figure(rel: str) -> str:
    """The steps of a predict_accuracy.py run: how many within the bound, their mean and worst error, and the
    share of each case's ops inside their predicted interval."""
    results = load(rel)["results"]
    errors = [r["step_error"] for r in results]
    mean = statistics.mean(map(abs, errors))
    return (f"{sum(abs(e) <= STEP_BOUND for e in errors)} of {len(errors)} steps within {pct(STEP_BOUND, False, 0)} "
            f"(mean absolute error {pct(mean, False)}, worst {pct(max(errors, key=abs))}); ops inside their "
            f"interval {span((r['in_interval'] for r in results), lambda x: pct(x, False, 0))}")


@claim
def predicted_steps_h100() -> Claim:
    run, first, repeat = ("predict/predict_accuracy-h100-0742-lazyfix.json.gz",
                          "predict/predict_accuracy-h100-0718-scratch.json.gz",
                          "predict/predict_accuracy-h100-0727-repeat.json.gz")
    figure = step_figure(run)
    again = {r["case"]: r["step_error"] for r in load(repeat)["results"]}
    apart = max(abs(r["step_error"] - again[r["case"]]) for r in load(first)["results"])
    created = load("predict/profiles-h100-0742/resnet50.json.gz")["created"]
    return Claim("predicted step times", "predicted-step-times-issue-32",
                 f"in-sample (the predictor was tuned on these cases): {figure}; the cases twice from one database: "
                 f"every step within {apart * 100:.1f} points", gpu_name(load(run)["device"]["name"]), created[:10],
                 (run, first, repeat))


@claim
def predicted_steps_h200() -> Claim:
    run = "predict/predict_accuracy-1708-copy.json.gz"
    figure = step_figure(run)
    date, gpu = header("predict/summary-1708-copy.txt")
    return Claim("predicted step times", "predicted-step-times-issue-32", f"in-sample: {figure}", gpu, date, (run,))


@claim
def predicted_training_step() -> Claim:
    """The rule for a step with a backward phase was chosen on the 4 x 1024 step; the 2 x 1536 step was added to
    the cases before it ran and measured after the rule was built."""
    run = "predict/predict_accuracy-2232-training.json.gz"
    errors = {r["case"]: r["step_error"] for r in load(run)["results"]}
    return Claim("predicted step times", "a-training-step-from-the-flushed-points",
                 f"a training step from the flushed points: held out (2 x 1536) {pct(errors['llama_train_b2_s1536'])}; "
                 f"in-sample (4 x 1024, the rule chosen on it) {pct(errors['llama_train'])}",
                 gpu_name(load(run)["device"]["name"]), "2026-12-02", (run,))  # the run's files carry no date


@claim
def gpu_tests() -> Claim:
    log = "gpu-tests/summary-2026-12-06-h100-0557-tests-docs.txt"
    tests, docs = (m.group(1) for m in lines(log, r"^(\d+ passed(?:, \d+ (?:skipped|failed))*)"))
    date, gpu = header(log)
    return Claim("GPU tests and the documented commands", "gpu-tests-and-the-documented-commands",
                 f"`pytest -m gpu`: {tests}; every documented command on the GPU: {docs}" + TEXT_LOG,
                 gpu, date, (log,), text_log=True)


@claim
def occupancy() -> Claim:
    table = "occupancy/occupancy_check.md"
    (result,) = lines(table, r"^(\d+) of (\d+) cases match")
    (device,) = lines(table, r"vs the CUDA occupancy API on (.+)$")
    return Claim("occupancy", "occupancy-against-the-cuda-occupancy-api",
                 f"{result.group(1)} of {result.group(2)} kernels match the CUDA occupancy API (read from the "
                 "Markdown table the script wrote: a text log, no JSON)", gpu_name(device.group(1)), "2026-11-29",
                 (table,), text_log=True)  # the table carries no date


@claim
def charts() -> Claim:
    docs = sorted(str(p.relative_to(RESULTS)) for p in (RESULTS / "charts").glob("*.json.gz"))
    created = sorted(load(d)["created"][:10] for d in docs)
    return Claim("charts", "charts",
                 f"`docs/images/h200-*.png`, drawn from {len(docs)} documents "
                 f"({sum(len(load(d)['records']) for d in docs)} records)", "H200", span(created, str), tuple(docs))


@claim
def zoo() -> Claim:
    runs = ("zoo-analytic/torchvision.json.gz", "zoo-analytic/timm_hf.json.gz")
    counts = [load(r)["counts"] for r in runs]
    models, exact = sum(c["models"] for c in counts), sum(c["exact"] for c in counts)
    failed, without = sum(c["failed"] for c in counts), sum(c["with_ops_without_formula"] for c in counts)
    return Claim("zoo validation, analytic", "zoo-validation-analytic-issue-29",
                 f"{exact} of {models} models' matrix FLOPs exact against FlopCounterMode or the closed form; "
                 f"{failed} failed, {without} with an op without a formula", "CPU", load(runs[0])["date"], runs)


@claim
def zoo_gpu() -> Claim:
    log = "zoo-gpu/summary-0326-zoo-newuser.txt"
    rows = [json.loads(m.group(0)) for m in lines(log, r'^\{"model": .*\}$')]
    date, gpu = header(log)
    return Claim("zoo validation, timed", "zoo-validation-analytic-issue-29",
                 ", ".join(f"{r['model'].capitalize()} FLOPs {r['ratio']:.1f}x the closed form, coverage "
                           f"{pct(r['coverage'], False)}" for r in rows) + " (read from the JSON lines of a text log)",
                 gpu, date, (log,), text_log=True)


def energy_figure(rel: str) -> str:
    """scripts/energy_accuracy.py's run: the repeatability of joules per call over windows, the model against the
    suite's kernels (its terms fitted on `calibrate energy`'s own kernels) and the power roof's clock."""
    doc = load(rel)
    repeated = [k["cv"] for k in doc["kernels"] if len(k["windows"]) > 1]
    errors = [k["model_error"] for k in doc["kernels"] if k.get("model_error") is not None]
    steady, right = sum(cv <= ENERGY_CV_BOUND for cv in repeated), sum(abs(e) <= ENERGY_BOUND for e in errors)
    return (f"J per call repeats within {pct(ENERGY_CV_BOUND, False, 0)} on {steady} of {len(repeated)} kernels "
            f"(median CV {pct(statistics.median(repeated), False, 2)}); held out (fitted on the calibration's "
            f"kernels, none of the suite's): {right} of {len(errors)} suite kernels within "
            f"{pct(ENERGY_BOUND, False, 0)} (median absolute error {pct(statistics.median(map(abs, errors)), False)}); "
            f"power roof's clock {pct(doc['long_gemm']['clock_error'])}")


@claim
def energy_h100() -> Claim:
    run = "energy/energy_accuracy-2026-12-06-h100-0605.json.gz"
    date, gpu = header("energy/summary-2026-12-06-h100-0605.txt")
    return Claim("energy", "energy-issue-33", energy_figure(run), gpu, date, (run,))


@claim
def energy_h200() -> Claim:
    run = "energy/energy_accuracy-2026-12-02-2144.json.gz"
    date, gpu = header("energy/summary-2026-12-02-2144.txt")
    return Claim("energy", "energy-issue-33", energy_figure(run) + " (the model before its power cap)", gpu, date,
                 (run,))


# ---------------------------------------------------------------- the table and the page
def table(claims: list[Claim]) -> str:
    rows = ["| claim | current figure | GPU | date | evidence |", "|---|---|---|---|---|"]
    for c in claims:
        links = ", ".join(f"[{Path(e).name}](results/{e})" for e in c.evidence)
        rows.append(f"| [{c.title}](#{c.anchor}) | {c.figure} | {c.gpu} | {c.date} | {links} |")
    return "\n".join(rows)


def block(claims: list[Claim]) -> str:
    return f"{BEGIN}\n{table(claims)}\n{END}"


def page_block(page: str) -> str:
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{PAGE.name}: no claims table between its marker lines")
    return page[start:end + len(END)]


# ---------------------------------------------------------------- every file cited by a page
def expand(token: str) -> list[str]:
    """`token` with its brace lists expanded (`a{1,2}b` -> a1b, a2b), as the shell would."""
    parts = re.split(r"\{([^{}]*)\}", token)
    return ["".join(c) for c in itertools.product(*[[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)])]


def cited_tokens(pages: Iterable[Path]) -> set[str]:
    """Every path-like word of the pages' code spans, link targets and fenced blocks, braces expanded, without a
    leading docs/ or results/."""
    found: set[str] = set()
    for page in pages:
        body = page.read_text()
        spans = re.findall(r"`([^`\n]+)`", body) + re.findall(r"\]\(([^)\s]+)\)", body)
        spans += re.findall(r"^```[^\n]*\n(.*?)^```", body, re.S | re.M)
        for word in itertools.chain.from_iterable(re.findall(r"[\w./*?{},+-]+", s) for s in spans):
            for token in expand(word.strip(".,;:")):
                found.add(re.sub(r"^(\.\./)*(docs/)?(results/)?", "", token))
    return found


def is_cited(rel: str, tokens: set[str]) -> bool:
    """A file under docs/results (`rel`, from there) that a page names, by its path's tail or a glob of it, or by
    its folder where that folder is one run's (below a claim's folder)."""
    parent = str(Path(rel).parent)
    for t in tokens:
        name = t.rstrip("/").rsplit("/", 1)[-1]
        if t.endswith("/") or not re.search(r"[.*?]", name):  # a folder's name
            if "/" in parent and (parent == t.rstrip("/") or parent.endswith("/" + t.rstrip("/"))):
                return True
            continue
        if re.search(r"[*?]", name) and len(re.sub(r"[*?]", "", name.split(".", 1)[0])) < GLOB_LITERAL:
            continue  # a glob of an extension or of almost nothing (`*.json.gz`, `a*`) names no file
        if fnmatch.fnmatch(rel, t) or fnmatch.fnmatch(rel, "*/" + t):
            return True
    return False


def uncited(pages: Iterable[Path] | None = None) -> list[str]:
    pages = list(pages) if pages is not None else [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    tokens = cited_tokens(pages)
    files = sorted(str(p.relative_to(RESULTS)) for p in RESULTS.rglob("*") if p.is_file())
    return [f for f in files if not is_cited(f, tokens)]


def claims() -> list[Claim]:
    return [read() for read in CLAIMS.values()]


def problems(page: str, found: list[Claim]) -> list[str]:
    """What `--check` fails on: the page's table is not the one the files give, or a file is cited by no page."""
    bad = []
    if page_block(page) != block(found):
        bad.append(f"{PAGE.relative_to(ROOT)}: its claims table is not what the files give: "
                   "run `python scripts/claims.py --write` and read the diff")
    return bad + [f"docs/results/{f}: cited by no page of docs/ or README.md" for f in uncited()]


def main(argv: list[str]) -> int:
    found = claims()
    if "--write" in argv:
        page = PAGE.read_text()
        PAGE.write_text(page.replace(page_block(page), block(found)))
        print(f"wrote the claims table of {PAGE.relative_to(ROOT)} ({len(found)} claims)")
        return 0
    if "--check" in argv:
        bad = problems(PAGE.read_text(), found)
        print("\n".join(bad) or f"{len(found)} claims as the files give them; every file under docs/results cited")
        return 1 if bad else 0
    print(table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
