"""Counter truth (issue 17): Nsight Compute's counters as `record.counters`, derived fields, `import-ncu` of a real
H200 CSV (tests/data/ncu_smoke_roofline.csv: `ncu --set roofline` of suites/smoke.toml's 8 kernels between spin
markers, trimmed to the columns read here) and of a .ncu-rep through a stand-in for NVIDIA's ncu_report module,
and bad reports (one line, exit 2)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import DATA, run, write

from roofline.core.counters import combined, derive, with_counters
from roofline.core.record import Counters, Record
from roofline.ncu.join import kernel_key
from roofline.ncu.read_csv import (
    COUNTER_METRICS,
    DRAM_READ,
    DRAM_WRITE,
    DURATION,
    L1_BYTES,
    L2_BYTES,
    SCALAR,
    SM_CLOCK,
    STORED,
    TENSOR,
    NcuKernel,
    counters_from_kernel,
)
from roofline.ncu.read_rep import read_ncu_rep
from roofline.ncu.records import read_report

SMOKE = DATA / "ncu_smoke_roofline.csv"


def test_the_metric_list_says_why_for_each_and_counts_fma_as_two() -> None:
    assert all(why for why in COUNTER_METRICS.values())
    assert {DURATION, SM_CLOCK["avg"], DRAM_READ, DRAM_WRITE, L2_BYTES, L1_BYTES, STORED} <= COUNTER_METRICS.keys()
    assert len(TENSOR) == 6 and sum(len(v) for v in SCALAR.values()) == 9
    # 7 named (time, clock, DRAM read/write, L2, L1, stored) + 6 tensor + 9 CUDA-core = 22
    assert len(COUNTER_METRICS) == 22
    assert SCALAR["fp32"]["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 2


def test_counters_from_one_kernel_in_si_units() -> None:
    k = NcuKernel(0, "layer_norm", {DURATION: 100e-6, SM_CLOCK["avg"]: 1.98e9, DRAM_READ: 300.0, DRAM_WRITE: 100.0,
                                    L2_BYTES: 800.0, L1_BYTES: None, TENSOR["bf16"]: 0.0,
                                    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 10.0,
                                    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 5.0})
    c = counters_from_kernel(k, "x")
    assert c.dram_bytes == 400.0  # 300 read + 100 written
    assert c.l1_bytes is None  # n/a stays unknown, never 0
    assert c.fp32_flops == 25.0  # 10 FFMA x 2 + 5 FADD x 1
    assert c.fp64_flops is None  # not collected
    assert c.flops == 25.0  # 0 bf16 tensor + 25 fp32
    assert c.sm_clock_mhz == pytest.approx(1980.0)


def test_derived_fields_against_the_model() -> None:
    c = Counters(dram_bytes=136.0, l2_bytes=200.0, l1_bytes=400.0, flops=200.0)
    d = derive(c, flops=100.0, min_bytes=100.0)
    assert d.excess_traffic == pytest.approx(1.36)  # 136 DRAM bytes / 100 minimum
    assert d.flops_ratio == pytest.approx(2.0)  # 200 counted / 100 modelled
    # one FLOP count over three byte counts: 200/136, 200/200, 200/400
    assert (d.intensity_dram, d.intensity_l2, d.intensity_l1) == pytest.approx((200 / 136, 1.0, 0.5))
    assert derive(c, None, None).excess_traffic is None  # no model: nothing to hold the bytes against


def test_reads_are_held_against_the_minimum_reads() -> None:
    # The H200 profile of examples/cnn.py --preset tiny (tests/data/profile_counters_cnn.json.gz): the
    # maxpool reads 131,072 B and writes 163,840 B at least; ncu counted 137,728 B read from DRAM and 0 B
    # written (its output stayed in the L2). All traffic: 137,728 / 294,912 = 0.467, below the minimum;
    # reads against reads: 137,728 / 131,072 = 1.051.
    c = Counters(dram_bytes_read=137_728.0, dram_bytes_written=0.0, dram_bytes=137_728.0)
    d = derive(c, flops=None, min_bytes=294_912.0, min_bytes_read=131_072.0)
    assert d.excess_traffic == pytest.approx(0.467, abs=1e-3) and d.read_excess == pytest.approx(1.051, abs=1e-3)
    assert derive(c, None, 294_912.0).read_excess is None  # no minimum read known


def test_a_multi_kernel_call_sums_bytes_and_weights_the_clock() -> None:
    a = Counters(kernels=1, duration_s=10e-6, sm_clock_mhz=1000.0, dram_bytes=100.0, l2_bytes=None,
                 tensor_flops={"bf16": 4.0})
    b = Counters(kernels=1, duration_s=30e-6, sm_clock_mhz=2000.0, dram_bytes=50.0, l2_bytes=7.0,
                 tensor_flops={"bf16": 6.0})
    c = combined([a, b])
    assert c.kernels == 2 and c.dram_bytes == 150.0 and c.l2_bytes == 7.0 and c.tensor_flops == {"bf16": 10.0}
    assert c.duration_s == pytest.approx(40e-6)
    assert c.sm_clock_mhz == pytest.approx(1750.0)  # (10 x 1000 + 30 x 2000) / 40


def test_counters_round_trip_on_a_record() -> None:
    data = json.loads((DATA / "results_h200.json").read_text())["records"][0]
    rec = Record.from_dict(data)
    rec2 = with_counters(rec, Counters(source="ncu", dram_bytes=2 * (rec.bytes or 1), flops=rec.flops))
    assert rec2.counters is not None and rec2.counters.excess_traffic == pytest.approx(2.0)
    back = Record.from_dict(json.loads(json.dumps(rec2.to_dict())))
    assert back == rec2 and back.counters == rec2.counters
    assert back.to_dict() == rec2.to_dict()


def test_the_real_h200_csv_counts_gemm_flops_two_per_fma() -> None:
    kernels = read_report(SMOKE)
    assert len(kernels) == 17  # 8 operators between 9 spin markers
    gemm = counters_from_kernel(kernels[1])
    assert gemm.tensor_flops and gemm.tensor_flops["bf16"] == 2 * 4096**3  # 137,438,953,472
    assert gemm.duration_s == pytest.approx(178.208e-6)  # "178.208000" us
    assert gemm.sm_clock_mhz == pytest.approx(1581.655)  # "1.581655" Ghz
    # the roofline set gives DRAM as a rate: 0.992454 Tbyte/s x 178.208 us = 176.86 MB
    assert gemm.dram_bytes == pytest.approx(0.992454e12 * 178.208e-6)


def test_import_ncu_writes_one_record_per_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "doc.json"
    code, _, err = run(capsys, "import-ncu", str(SMOKE), "-o", str(out))  # GPU named by the report
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["device"]["spec_id"] == "h200-sxm"
    recs = doc["records"]
    assert len(recs) == 17 and recs[1]["params"] == {"kernel": "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
                                                     "id": 1}
    g = recs[1]
    assert g["dtype"] == "bf16" and g["flops"] == 2 * 4096**3 and g["flops_source"] == "ncu"
    # achieved = 2 x 4096^3 / 178.208 us = 771.2 TFLOP/s
    assert g["achieved_flops_per_s"] == pytest.approx(771.23e12, rel=1e-4)
    assert recs[0]["params"]["kernel"] == "spin_kernel"
    code, _, err = run(capsys, "import-ncu", str(SMOKE), "-o", str(out))
    assert code == 1 and "--force" in err  # never overwritten without --force


def test_an_imported_kernel_is_named_by_its_own_name() -> None:
    """import-ncu names a record by `kernel_key`, the name profile --counters joins by."""
    assert kernel_key("void at::native::vectorized_elementwise_kernel<8, F>(int, T2)") == \
        "vectorized_elementwise_kernel"
    assert kernel_key("cuda::<unnamed>::spin_kernel(long)") == "spin_kernel"
    assert kernel_key("_ZN2at6native13reduce_kernelIfEEvT_") == "reduce_kernel"  # a mangled name, demangled
    assert kernel_key("(anonymous namespace)::") == "(anonymous namespace)::"  # nothing left: kept whole


@pytest.mark.parametrize("text, says", [
    ("", "empty file"),
    ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","us"\n', "no kernel"),
    ("name,time\nfoo,1\n", "no CSV rows"),  # another tool's CSV
    ('"a","b"\n"1","2"\n', "not an Nsight Compute raw CSV"),
    ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","us"\n"0","k","1.0"\n"1","k2"\n', "truncated"),
    ('"ID","Kernel Name","gpu__time_dur', "truncated"),  # cut inside its header (said "no kernel")
    ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","us"\n"0","k","1.', "truncated"),
])
def test_bad_reports_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                         says: str) -> None:
    code, _, err = run(capsys, "import-ncu", str(write(tmp_path / "r.csv", text)), "--gpu", "h200")
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_a_missing_report_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "import-ncu", str(tmp_path / "none.csv"), "--gpu", "h200")
    assert code == 2 and "no such file" in err


def _fake_ncu_report(kernels: list[tuple[str, dict[str, tuple[float, str]], list[str]]]) -> SimpleNamespace:
    """A stand-in for NVIDIA's ncu_report with its API's names (load_report, range_by_idx, action_by_idx,
    metric_by_name, as_double, unit, nvtx_state)."""
    def action(name: str, metrics: dict[str, tuple[float, str]], nvtx: list[str]) -> SimpleNamespace:
        def metric(n: str) -> SimpleNamespace | None:
            if n not in metrics:
                return None
            v, u = metrics[n]
            return SimpleNamespace(as_double=lambda: v, unit=lambda: u)
        dom = SimpleNamespace(push_pop_ranges=lambda: tuple(nvtx))
        state = SimpleNamespace(domains=lambda: (0,), domain_by_id=lambda i: dom)
        return SimpleNamespace(name=lambda: name, metric_by_name=metric, nvtx_state=lambda: state)
    acts = [action(*k) for k in kernels]
    rng = SimpleNamespace(num_actions=lambda: len(acts), action_by_idx=lambda i: acts[i])
    ctx = SimpleNamespace(num_ranges=lambda: 1, range_by_idx=lambda i: rng)
    return SimpleNamespace(load_report=lambda path: ctx)


def test_an_ncu_rep_reads_through_the_module_with_units_and_nvtx(tmp_path: Path) -> None:
    rep = write(tmp_path / "r.ncu-rep", "binary")
    mod = _fake_ncu_report([("gemm", {DURATION: (178208.0, "nsecond"), DRAM_READ: (100.0, "Mbyte")},
                             ["forward", "layer1"])])
    (k,) = read_ncu_rep(rep, [DURATION, DRAM_READ, L2_BYTES], module=mod)
    assert k.duration_s == pytest.approx(178.208e-6)  # 178208 ns
    assert k.metrics[DRAM_READ] == pytest.approx(100e6) and L2_BYTES not in k.metrics  # Mbyte -> bytes
    assert k.text["NVTX Range"] == "layer1"  # the innermost range


def test_a_real_ncu_rep_and_its_csv_import_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tests/data/ncu_tiny.ncu-rep and ncu_tiny.csv: one ncu 2025.3.1 run on the H200 (2026-12-01,
    scripts/ncu_fixture.py: three torch fills, then a Triton axpy once outside and twice inside the NVTX range
    `step`) and its `ncu --import ... --csv --page raw --print-units base`. Read through NVIDIA's ncu_report
    (the [ncu] extra; CI installs it) and as CSV, the documents hold the same records."""
    pytest.importorskip("ncu_report")
    docs = []
    for name in ("ncu_tiny.ncu-rep", "ncu_tiny.csv"):
        out = tmp_path / f"{name}.json"
        code, _, err = run(capsys, "import-ncu", str(DATA / name), "--gpu", "h200", "-o", str(out))
        assert code == 0, err
        docs.append(json.loads(out.read_text())["records"])
    rep, csv_ = docs
    assert len(rep) == len(csv_) == 6
    for a, b in zip(rep, csv_, strict=True):
        assert (a["params"], a.get("region"), a["time_s"]) == (b["params"], b.get("region"), b["time_s"])
        assert a["counters"]["dram_bytes"] == b["counters"]["dram_bytes"]
    # the axpy inside `step`: 5.376 µs; read 8,391,936 B (x and y, 2 x 4 MiB, and a little more)
    assert rep[4]["params"]["kernel"] == "axpy" and rep[4]["region"] == "step"
    assert rep[4]["time_s"] == pytest.approx(5.376e-6) and rep[4]["counters"]["dram_bytes_read"] == 8391936


# ---------------------------------------------------------------- --counters (the ncu child run)
QUERY = """Chip gh100
---------------------------------- --------------- --------------- ------------------
Metric Name                        Metric Type     Metric Unit     Metric Description
---------------------------------- --------------- --------------- ------------------
FBSP.TriageCompute.dramc__cycles_elapsed       Counter         cycle
dram__bytes_read                   Counter         byte            # of bytes read from DRAM
                                                                   wrapped description line
gpu__time_duration                 Counter         ns              elapsed
sm__cycles_elapsed                 Counter         cycle           # of cycles
"""


def test_the_metric_list_is_cut_to_what_the_chip_offers() -> None:
    from roofline.ncu.run import parse_query_metrics, usable_metrics

    names = parse_query_metrics(QUERY)  # lines copied from `ncu --query-metrics --chip gh100` (H200)
    assert names == {"dramc__cycles_elapsed", "dram__bytes_read", "gpu__time_duration", "sm__cycles_elapsed"}
    assert usable_metrics(names) == [DURATION, SM_CLOCK["avg"], DRAM_READ]
    assert usable_metrics(set()) == list(COUNTER_METRICS)  # the query failed: ask for all, ncu says what it lacks


def _profile_csv(calls: list[list[tuple[str, float, float]]]) -> str:
    """ncu's raw CSV of marker + kernels per call + closing marker: (name, ns, DRAM bytes read) per kernel."""
    rows, i = [], 0
    for call in [*calls, []]:
        for name, ns, b in [("spin_kernel", 1000.0, 0.0), *call]:
            rows.append(f'"{i}","{name}","{ns:,.0f}","{b:,.0f}","0","1.98"')
            i += 1
    head = f'"ID","Kernel Name","{DURATION}","{DRAM_READ}","{DRAM_WRITE}","{SM_CLOCK["avg"]}"'
    return "\n".join(["==PROF== Connected", head, '"","","nsecond","byte","byte","Ghz"', *rows]) + "\n"


def test_ncu_output_is_split_per_call_and_summed() -> None:
    from roofline.ncu.run import counters_from_output

    text = _profile_csv([[("gemm", 10_000, 1_000)], [("a", 2_000, 300), ("b", 3_000, 700)]])
    one, two = counters_from_output(text, "", 0, 2, "ncu")
    assert one.kernels == 1 and one.dram_bytes == 1000 and one.duration_s == pytest.approx(10e-6)
    assert two.kernels == 2 and two.dram_bytes == 1000  # 300 + 700 read, 0 written
    assert two.duration_s == pytest.approx(5e-6)  # 2 + 3 µs


def test_a_failed_or_short_ncu_run_is_one_line() -> None:
    from roofline.core.errors import RooflineError
    from roofline.ncu.run import counters_from_output

    with pytest.raises(RooflineError, match=r"exit status 1\): ==ERROR== ERR_NVGPUCTRPERM"):
        counters_from_output("", "==ERROR== ERR_NVGPUCTRPERM", 1, 1, "ncu")
    with pytest.raises(RooflineError, match="1 calls for 2 operators"):
        counters_from_output(_profile_csv([[("gemm", 10_000, 1_000)]]), "", 0, 2, "ncu")


def test_counters_attach_through_a_stand_in_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole child-process path on the CPU: a shell script stands in for ncu (version, metric query and a
    profile that prints a canned CSV); the command line it got is checked."""
    from roofline.ceilings.specs import gpu_ceilings
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record
    from roofline.ncu.run import attach_counters
    from roofline.ops import make

    op, dt = make("gemm", m=64), get_dtype("bf16")
    rec = analytic_record(op, dt, gpu_ceilings("h200"))
    # gemm 64^3 bf16: minimum bytes 3 x 64 x 64 x 2 = 24,576; the stand-in reports 49,152 read: 2.0x
    assert rec.bytes == 24576
    write(tmp_path / "profile.csv", _profile_csv([[("gemm", 10_000, 49_152)]]))
    ncu = write(tmp_path / "ncu", f"""#!/bin/sh
case "$1" in
  --version) echo "Version 2025.3.1.0" ;;
  --query-metrics) printf '%s' '{QUERY}' ;;
  *) echo "$@" > {tmp_path}/args; cat {tmp_path}/profile.csv ;;
esac
""")
    ncu.chmod(0o755)
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    (got,) = attach_counters([rec], [(op, dt)], ncu=str(ncu), gpu_name="NVIDIA H200")
    assert got.counters is not None and got.counters.excess_traffic == pytest.approx(2.0)  # 49,152 / 24,576
    args = (tmp_path / "args").read_text().split()
    assert args[:7] == ["--profile-from-start", "off", "--clock-control", "none", "--print-units", "base",
                        "--metrics"]
    assert args[7] == f"{DURATION},{SM_CLOCK['avg']},{DRAM_READ}"  # only what the chip offers
    assert args[-3:-1] == ["-m", "roofline.ncu.target_ops"]
    plan = json.loads(Path(args[-1]).read_text()) if Path(args[-1]).exists() else None
    assert plan is None  # the plan lives in a temporary directory, gone after the run
    assert list((tmp_path / "cache" / "ncu_metrics").iterdir())  # the query is cached


def test_counters_without_ncu_is_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu here
    code, _, err = run(capsys, "analyze", "gemm", "--m", "64", "--gpu", "h200", "--counters")
    assert code == 2 and "ncu" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run(capsys, "run", str(DATA.parent.parent / "suites" / "smoke.toml"), "--counters")
    assert code == 2 and "ncu" in err


def test_counters_with_no_time_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", "gemm", "--m", "64", "--no-time", "--counters")
    assert code == 2 and "--no-time" in err


# ---------------------------------------------------------------- check --fail-on dram_bytes:1%
def _doc_with_dram(tmp_path: Path, name: str, dram: list[float | None]) -> Path:
    """tests/data/results_h200.json with DRAM counter bytes set per record (None: no counters)."""
    doc = json.loads((DATA / "results_h200.json").read_text())
    for rec, b in zip(doc["records"], dram, strict=False):
        if b is not None:
            rec["counters"] = {"source": "ncu", "dram_bytes": b}
    return write(tmp_path / name, json.dumps(doc))


def test_the_counter_gate_fails_on_20_percent_more_dram_bytes(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    base = _doc_with_dram(tmp_path, "base.json", [1e6] * 6)
    # record 1: +20% (1.2e6), record 2: +0.5% (within 1%), record 3: -10% (better); times are identical
    cur = _doc_with_dram(tmp_path, "cur.json", [1.2e6, 1.005e6, 0.9e6, 1e6, 1e6, 1e6])
    rep = tmp_path / "r.json"
    code, _, err = run(capsys, "check", str(cur), "--baseline", str(base), "--fail-on", "dram_bytes:1%",
                       "--json", str(rep))
    assert code == 1, err
    rows = json.loads(rep.read_text())["rows"]
    verdicts = [r["verdict"] for r in rows]
    assert verdicts[:3] == ["worse", "same", "better"] and verdicts[3:] == ["same"] * 3
    assert rows[0]["change"] == pytest.approx(0.2) and "no noise test" in rows[0]["reason"]
    # with a time rule beside it, the same times pass and the counter rule still fails record 1
    code, _, _ = run(capsys, "check", str(cur), "--baseline", str(base), "--fail-on", "median:5%,dram_bytes:1%",
                     "--json", str(rep))
    assert code == 1 and json.loads(rep.read_text())["rows"][0]["verdict"] == "worse"


def test_a_few_hundred_bytes_on_a_small_kernel_are_not_a_change(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # The H200's two profiles of examples/cnn.py --preset tiny: an add_ of 2048 elements read 14,592 then
    # 14,848 DRAM bytes (+256 B = +1.75%, past 1%): under COUNTER_BYTES_FLOOR (4096 B), so `same`. Record 2
    # moves 14,592 -> 19,456 B (+4,864 B, +33%): past the floor, so `worse`.
    base = _doc_with_dram(tmp_path, "base.json", [14_592, 14_592] + [1e6] * 4)
    cur = _doc_with_dram(tmp_path, "cur.json", [14_848, 19_456] + [1e6] * 4)
    rep = tmp_path / "r.json"
    code, _, err = run(capsys, "check", str(cur), "--baseline", str(base), "--fail-on", "dram_bytes:1%",
                       "--json", str(rep))
    rows = json.loads(rep.read_text())["rows"]
    assert [r["verdict"] for r in rows[:2]] == ["same", "worse"] and code == 1, err
    assert "256 B" in rows[0]["reason"]


def test_the_counter_gate_without_counters_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # no record on a side has counters: the gate would compare nothing and pass, so it is refused (exit 2)
    base = _doc_with_dram(tmp_path, "base.json", [None] * 6)
    code, _, err = run(capsys, "check", str(base), "--baseline", str(base), "--fail-on", "dram_bytes:1%")
    assert code == 2 and "have none: make them with --counters" in err and len(err.strip().splitlines()) == 1
    # half the records with counters: those without are not_comparable, the others judged (fewer than half
    # compared is refused: ci.verdicts.MIN_COMPARED_SHARE)
    cur = _doc_with_dram(tmp_path, "cur.json", [1e6, 1e6, 1e6, None, None, None])
    rep = tmp_path / "r.json"
    code, _, _ = run(capsys, "check", str(cur), "--baseline", str(cur), "--fail-on", "dram_bytes:1%",
                     "--json", str(rep))
    verdicts = [r["verdict"] for r in json.loads(rep.read_text())["rows"]]
    assert code == 0 and verdicts == ["same"] * 3 + ["not_comparable"] * 3
    code, _, err = run(capsys, "check", str(base), "--baseline", str(base), "--fail-on", "dram:1%")
    assert code == 2 and "dram_bytes" in err  # the unknown name lists the counter rules too


# ---------------------------------------------------------------- advice on counters
def _timed(op_name: str, dtype: str, counters: Counters, **shape: int) -> Record:
    from roofline.ceilings.specs import gpu_ceilings
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record, with_time
    from roofline.ops import make

    rec = analytic_record(make(op_name, **shape), get_dtype(dtype), gpu_ceilings("h200"))
    return with_counters(with_time(rec, 2 * rec.roofline_time_s), counters)


def _rules(rec: Record) -> dict[str, dict]:
    from roofline.analysis.advice import advise

    return {a["rule"]: a for a in advise(rec).items}


def test_excess_traffic_says_how_many_times_and_the_likely_cause() -> None:
    shape = {"rows": 4096, "cols": 8192}
    minimum = _timed("layernorm", "fp32", Counters(), **shape).bytes or 0
    # read x 4096 x 8192 x 4 + weight and bias 2 x 8192 x 4 = 134,283,264; write y 4096 x 8192 x 4 = 134,217,728
    assert minimum == 134_283_264 + 134_217_728
    # the H200 figure: torch's fp32 LayerNorm of 4096x8192 reads 1.36x the minimum
    rec = _timed("layernorm", "fp32", Counters(dram_bytes=1.36 * minimum, l1_bytes=1.4 * minimum), **shape)
    a = _rules(rec)["excess-traffic"]
    assert a["excess_traffic"] == pytest.approx(1.36) and "1.36x" in a["message"]
    assert "read more than once" in a["message"]
    # L1 bytes 5x DRAM (over the 4x threshold): uncoalesced access
    rec = _timed("layernorm", "fp32", Counters(dram_bytes=1.36 * minimum, l1_bytes=5 * 1.36 * minimum), **shape)
    assert "uncoalesced" in _rules(rec)["excess-traffic"]["message"]
    # 1.1x the minimum: under the 1.2 threshold, no advice
    assert "excess-traffic" not in _rules(_timed("layernorm", "fp32", Counters(dram_bytes=1.1 * minimum), **shape))


def test_counter_flops_twice_the_model_is_padding_or_recompute() -> None:
    rec0 = _timed("gemm", "bf16", Counters(), m=4096)
    flops = rec0.flops or 0  # 2 x 4096^3
    rec = _timed("gemm", "bf16", Counters(flops=2 * flops, dram_bytes=rec0.bytes), m=4096)
    a = _rules(rec)["flop-count"]
    assert a["flops_ratio"] == pytest.approx(2.0) and "padding" in a["message"]
    assert "flop-count" not in _rules(_timed("gemm", "bf16", Counters(flops=1.05 * flops), m=4096))  # within 10%


# ---------------------------------------------------------------- the hierarchical roofline chart
def test_the_chart_puts_each_level_at_the_records_height_and_the_minimum_beside_them(tmp_path: Path) -> None:
    from roofline.core.document import read_document
    from roofline.report.chart.draw import build_figure
    from roofline.report.chart.model import chart_model

    doc = json.loads((DATA / "results_h200.json").read_text())
    rec = doc["records"][0]  # gemm bf16 4096^3: 2 x 4096^3 FLOPs, minimum 3 x 4096^2 x 2 = 100,663,296 bytes
    assert rec["bytes"] == 3 * 4096**2 * 2
    rec["counters"] = {"dram_bytes": 2 * rec["bytes"], "l2_bytes": 4 * rec["bytes"], "l1_bytes": 8 * rec["bytes"]}
    path = write(tmp_path / "c.json", json.dumps(doc))
    chart = chart_model([read_document(path)])
    point = next(p for p in chart.points if p.record == 0)
    levels = {v.level: v for v in chart.levels}
    assert set(levels) == {"L1", "L2", "DRAM"} and all(v.record == 0 for v in chart.levels)
    assert all(v.flops_per_s == point.flops_per_s for v in levels.values())  # one horizontal line
    # FLOPs over each level's bytes: the minimum's intensity / 2, / 4, / 8
    assert levels["DRAM"].ai == pytest.approx(point.ai / 2)
    assert levels["L2"].ai == pytest.approx(point.ai / 4) and levels["L1"].ai == pytest.approx(point.ai / 8)
    fig = build_figure([read_document(path)])
    gids = {a.get_gid() for a in fig.findobj() if a.get_gid()}
    assert {"level:0:0:L1", "level:0:0:L2", "level:0:0:DRAM", "levels:0:0"} <= gids
    assert not any(g.startswith("level:0:1:") for g in gids)  # record 1 has no counters: no level points


def test_the_record_view_and_the_run_table_show_the_counters() -> None:
    from roofline.report.text import record_rows, records_table

    rec = _timed("layernorm", "fp32", Counters(kernels=2, duration_s=100e-6, sm_clock_mhz=1980.0,
                                               dram_bytes_read=300.0, dram_bytes_written=100.0, dram_bytes=400.0,
                                               l2_bytes=800.0, flops=1000.0, fp32_flops=1000.0), rows=10, cols=10)
    rows = dict(record_rows(rec))
    # layernorm 10x10 fp32: minimum 10 x 10 x 4 read + 2 x 10 x 4 weights + 10 x 10 x 4 written = 880 bytes
    assert rows["ncu DRAM bytes"] == "400 (read 300, written 100)"
    assert rows["ncu bytes / min"] == "0.45x the minimum (DRAM)"  # 400 / 880: no stored-bytes counter
    assert "ncu stored bytes" not in rows
    assert rows["ncu L2 / L1 bytes"] == "800 / -"
    assert rows["ncu intensity"] == "L2 1.25, DRAM 2.5 FLOP/byte"  # 1000 / 800, 1000 / 400
    assert "2 kernels" in rows["ncu time"] and "1980 MHz" in rows["ncu time"]
    table = records_table([rec])
    assert table.rows[0][-1] == "0.45"
    # with the stored bytes: (300 read + 480 stored) / 880 = 0.89, and the row names what it adds
    rec = _timed("layernorm", "fp32", Counters(dram_bytes_read=300.0, dram_bytes_written=100.0, dram_bytes=400.0,
                                               stored_bytes=480.0), rows=10, cols=10)
    rows = dict(record_rows(rec))
    assert rows["ncu bytes / min"] == "0.89x the minimum (DRAM reads + stored)"
    assert rows["ncu stored bytes"].startswith("480 ")


def test_the_gpu_checks_import_comparison_passes_on_equal_documents_and_fails_on_a_change(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from helpers import ROOT

    spec = importlib.util.spec_from_file_location("counters_compare", ROOT / "scripts" / "counters_compare.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    a = tmp_path / "a.json"
    assert run(capsys, "import-ncu", str(SMOKE), "-o", str(a))[0] == 0
    assert mod.imports(str(a), str(a)) == 0
    doc = json.loads(a.read_text())
    doc["records"][1]["counters"]["duration_s"] *= 1.01  # one kernel's time 1% off
    b = write(tmp_path / "b.json", json.dumps(doc))
    assert mod.imports(str(a), str(b)) == 1


def test_a_damaged_ncu_rep_through_the_real_module_is_exit_2(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ncu_report")  # the [ncu] extra; it loads reports without a GPU
    rep = write(tmp_path / "bad.ncu-rep", "not a report")
    code, _, err = run(capsys, "import-ncu", str(rep), "--gpu", "h200")
    assert code == 2 and "holds no kernel" in err


def test_the_nvtx_range_of_a_real_forward_csv() -> None:
    """tests/data/ncu_forward.csv: `ncu --nvtx --nvtx-include forward/ ... --csv --page raw` of examples/cnn.py
    --preset tiny on the H200 (2026-12-01): its NVTX column reads `2494  "<default domain>:forward:none:..."`
    on each of the 110 kernels; the range is `forward`, as the .ncu-rep of the same run gives it."""
    from roofline.ncu.read_csv import nvtx_range, read_raw_csv

    kernels = read_raw_csv(DATA / "ncu_forward.csv")
    assert len(kernels) == 110 and {nvtx_range(k) for k in kernels} == {"forward"}


def test_ncu_starts_after_this_process_gives_its_cached_gpu_memory_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_ncu empties torch's caching allocator first (the child gets the memory a plain ncu run has), and only
    where CUDA is initialised: a torch that never touched the GPU is left alone. A stand-in torch records the
    calls; a real one has no GPU here."""
    import subprocess
    import sys

    from roofline.ncu import run as ncu_mod

    calls: list[str] = []

    def fake_torch(initialized: bool) -> SimpleNamespace:
        return SimpleNamespace(cuda=SimpleNamespace(is_initialized=lambda: initialized,
                                                    empty_cache=lambda: calls.append("empty_cache")))

    def fake_run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        calls.append("ncu")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setitem(sys.modules, "torch", fake_torch(True))
    ncu_mod.run_ncu(["ncu"])
    assert calls == ["empty_cache", "ncu"]
    calls.clear()
    monkeypatch.setitem(sys.modules, "torch", fake_torch(False))
    ncu_mod.run_ncu(["ncu"])
    assert calls == ["ncu"]


def test_the_dram_read_gate_and_notes_on_rules_tighter_than_a_counter_moves(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # dram_bytes_read reads the reads alone: +20% reads fails while the (noisier) total is not asked about
    doc = json.loads((DATA / "results_h200.json").read_text())
    for rec in doc["records"]:
        rec["counters"] = {"source": "ncu", "dram_bytes_read": 1e6, "dram_bytes": 1.5e6, "l2_bytes": 4e6}
    base = write(tmp_path / "base.json", json.dumps(doc))
    doc["records"][0]["counters"]["dram_bytes_read"] = 1.2e6
    cur = write(tmp_path / "cur.json", json.dumps(doc))
    rep = tmp_path / "r.json"
    code, out, err = run(capsys, "check", str(cur), "--baseline", str(base), "--fail-on", "dram_bytes_read:1%",
                         "--json", str(rep))
    report = json.loads(rep.read_text())
    assert code == 1 and [r["verdict"] for r in report["rows"]][:2] == ["worse", "same"], err
    assert report["notes"] == []  # 1% is looser than the 0.68% DRAM reads moved on the H200 (ci.rules)
    # l2_bytes:1% and dram_bytes:1% are tighter than those counters moved between runs (12%, 2.2%): a note each,
    # naming the steady one; the verdicts are the rules' own (all the same here)
    code, out, err = run(capsys, "check", str(base), "--baseline", str(base), "--fail-on",
                         "l2_bytes:1%,dram_bytes:1%", "--json", str(rep))
    notes = json.loads(rep.read_text())["notes"]
    assert code == 0 and len(notes) == 2 and all("dram_bytes_read" in n for n in notes), notes
    assert "up to 12%" in notes[0] and "up to 2.2%" in notes[1] and "repeats to 0.68%" in notes[0]
    assert "l2_bytes:1% is tighter" in out + err
    # stored_bytes (the SMs' writes into the L2) repeated to the sector over six runs: its own gate, no note
    for rec in doc["records"]:
        rec["counters"]["stored_bytes"] = 5e5
    doc["records"][1]["counters"]["stored_bytes"] = 6e5  # an intermediate now written: +20%
    cur = write(tmp_path / "cur2.json", json.dumps(doc))
    code, _, err = run(capsys, "check", str(cur), "--baseline", str(cur), "--fail-on", "stored_bytes:1%")
    assert code == 0, err
    doc["records"][1]["counters"]["stored_bytes"] = 5e5
    base2 = write(tmp_path / "base2.json", json.dumps(doc))
    code, _, err = run(capsys, "check", str(cur), "--baseline", str(base2), "--fail-on", "stored_bytes:1%",
                       "--json", str(rep))
    report = json.loads(rep.read_text())
    assert code == 1 and report["rows"][1]["verdict"] == "worse" and report["notes"] == [], err


def test_stored_bytes_are_the_minimum_writes_on_the_h200(tmp_path: Path) -> None:
    """A plain ncu run of suites/kernels-h200.toml on the H200 (2026-12-01, `gpu_check.sh counters-l2`, with the
    L2 metrics beside --counters' own: tests/data/ncu_kernels_h200_l2.csv.gz). The sectors the SMs wrote, x32,
    are the model's minimum writes to four digits on the elementwise kernels (relu: 268,435,456 bf16 = 536,870,912
    B), where DRAM writes are 4% short (lines still dirty in the L2 at the kernel's end); so DRAM reads + stored
    bytes hold the whole minimum (excess_traffic >= 1) where DRAM bytes alone read below it."""
    from roofline.analysis.suite import load_suite
    from roofline.ceilings.specs import gpu_ceilings
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record
    from roofline.ncu.read_csv import read_raw_csv, split_groups

    csv = tmp_path / "plain.csv"
    csv.write_bytes(gzip.decompress((DATA / "ncu_kernels_h200_l2.csv.gz").read_bytes()))
    calls = split_groups(read_raw_csv(csv), "spin")
    suite = load_suite(Path(__file__).resolve().parents[1] / "suites" / "kernels-h200.toml")
    assert len(calls) == len(suite.entries) == 16
    memory_bound = 0
    for entry, group in zip(suite.entries, calls, strict=True):
        rec = analytic_record(entry.operator(True), get_dtype(entry.dtype_for(True)), gpu_ceilings("h200"))
        c = with_counters(rec, combined([counters_from_kernel(k) for k in group])).counters
        assert c is not None and c.stored_bytes is not None
        if rec.bound != "memory":
            continue
        memory_bound += 1
        assert 1.0 <= c.stored_bytes / rec.bytes_written < 1.01, rec.label  # layernorm 1.0078: its fp32 stats
        assert c.read_excess is not None and 0.9999 <= c.read_excess < 1.03, rec.label
        assert 1.0 <= c.excess_traffic < 1.02, rec.label  # type: ignore[operator]
        if rec.op == "relu":
            assert c.stored_bytes == 536_870_912
            assert c.dram_bytes_written < 0.97 * rec.bytes_written  # type: ignore[operator]
            assert c.dram_bytes / rec.bytes < 0.99  # type: ignore[operator]  # the old DRAM-only ratio
    assert memory_bound == 10


def test_causal_attention_counts_its_diagonal_tiles_on_the_h200(tmp_path: Path) -> None:
    """The same H200 run: the flash kernel of SDPA 8x32x4096x128 bf16 does the model's FLOPs without a mask
    (4 x 8 x 32 x 4096^2 x 128 = 2,199,023,255,552) and 4224/4097 = 1.031 x them under the causal mask: it
    computes whole 64x128 tiles on the diagonal (1056 of them a head: 8,650,752 pairs), the model the exact
    triangle with its diagonal (4096 x 4097 / 2 = 8,390,656). So the counters do not meet a 2% bound there, by
    the kernel's tiling."""
    from roofline.analysis.suite import load_suite
    from roofline.ncu.read_csv import read_raw_csv, split_groups

    csv = tmp_path / "plain.csv"
    csv.write_bytes(gzip.decompress((DATA / "ncu_kernels_h200_l2.csv.gz").read_bytes()))
    calls = split_groups(read_raw_csv(csv), "spin")
    suite = load_suite(Path(__file__).resolve().parents[1] / "suites" / "kernels-h200.toml")
    ratios = {}
    for entry, group in zip(suite.entries, calls, strict=True):
        op = entry.operator(True)
        if op.name == "attention":
            tensor = sum(combined([counters_from_kernel(k) for k in group]).tensor_flops.values())  # type: ignore
            ratios[op.causal] = tensor / op.flops()
    assert ratios[False] == pytest.approx(1.0, abs=1e-6)
    assert ratios[True] == pytest.approx(1056 * 64 * 128 / (4096 * 4097 / 2), abs=1e-6)  # = 4224 / 4097


def test_a_counter_one_record_lacks_does_not_hide_another_rules_regression(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A new user's find: with dram_bytes:1%,stored_bytes:1%, a record whose counters lack stored_bytes was
    # not_comparable and its +20% DRAM bytes passed. Record 0: +20% DRAM, no stored_bytes; record 1 has both.
    doc = json.loads((DATA / "results_h200.json").read_text())
    for rec in doc["records"]:
        rec["counters"] = {"source": "ncu", "dram_bytes": 1e6}
    doc["records"][1]["counters"]["stored_bytes"] = 4e5
    base = write(tmp_path / "base.json", json.dumps(doc))
    doc["records"][0]["counters"]["dram_bytes"] = 1.2e6
    cur = write(tmp_path / "cur.json", json.dumps(doc))
    rep = tmp_path / "r.json"
    code, out, err = run(capsys, "check", str(cur), "--baseline", str(base), "--fail-on",
                         "stored_bytes:1%,dram_bytes:1%", "--json", str(rep))
    rows = json.loads(rep.read_text())["rows"]
    assert code == 1 and rows[0]["verdict"] == "worse" and rows[0]["statistic"] == "dram_bytes", out + err
    assert "counters have no stored_bytes" in rows[0]["reason"] and rows[1]["verdict"] == "same"
    # with a time rule beside it, the row the counter decides keeps the time's medians and samples
    code, out, err = run(capsys, "check", str(cur), "--baseline", str(base), "--fail-on",
                         "median:5%,dram_bytes:1%", "--json", str(rep))
    row = json.loads(rep.read_text())["rows"][0]
    assert code == 1 and row["verdict"] == "worse" and row["statistic"] == "dram_bytes"
    assert row["baseline_median"] is not None and row["n_baseline"] > 1 and "median +0.0%" in row["reason"]
    assert "threshold: median:5%, dram_bytes:1%" in out
    # a rule on a counter no record of a side has would judge nothing and pass: refused, one line, exit 2
    for rec in doc["records"]:
        rec["counters"].pop("stored_bytes", None)
    bare = write(tmp_path / "bare.json", json.dumps(doc))
    code, _, err = run(capsys, "check", str(bare), "--baseline", str(base), "--fail-on", "stored_bytes:1%")
    assert code == 2 and "no record of the results has" in err and len(err.strip().splitlines()) == 1


def test_below_roof_with_counters_says_what_they_rule_out_instead_of_profile_it() -> None:
    # kernels-h200's softmax on the H200: 26% of its roofline, DRAM reads + stored 1.00x the minimum; the
    # fallback said "Profile the kernel: ncu ..." though the counters were there (a new user's find)
    from roofline.ceilings.specs import gpu_ceilings
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record, with_time
    from roofline.ops import make

    rec = analytic_record(make("softmax", rows=16384, cols=4096), get_dtype("bf16"), gpu_ceilings("h200"))
    rec = with_time(rec, rec.roofline_time_s / 0.26)
    assert "Profile the kernel" in _rules(rec)["below-roof"]["message"]
    counted = with_counters(rec, Counters(dram_bytes_read=rec.bytes_read, stored_bytes=rec.bytes_written,
                                          flops=rec.flops))
    message = _rules(counted)["below-roof"]["message"]
    assert "Profile the kernel" not in message and "counters show 1.00x the minimum bytes" in message


def test_the_terminal_chart_of_an_imported_report_names_its_kernels(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # import-ncu of the H200's plain run of kernels-h200 (33 kernels: 17 marker spins, 16 operators). A new
    # user's finds: the legend read "kernel fp32 id=13" (no kernel name), the "not drawn" line repeated the
    # spins 17 times, the x axis ran to 10000k for level points the terminal chart does not draw, and the
    # legend's heading named an intensity column it had dropped.
    from roofline.core.document import read_document
    from roofline.report.terminal import render_terminal

    csv = tmp_path / "plain.csv"
    csv.write_bytes(gzip.decompress((DATA / "ncu_kernels_h200_l2.csv.gz").read_bytes()))
    code, _, err = run(capsys, "import-ncu", str(csv), "--gpu", "h200", "-o", str(tmp_path / "imp.json"))
    assert code == 0, err
    text = render_terminal([read_document(tmp_path / "imp.json")], width=80)
    assert "cunn_SoftMaxForwardReg fp32" in text and "   kernel fp32 id=" not in text
    assert "spin_kernel fp32: no finite arithmetic intensity (x17)" in " ".join(text.split())
    assert "10000k" not in text and "counters: the L1, L2 and DRAM points of 15 record(s)" in text
    assert "points (letter: operator, FLOP/s" in text  # at 80 columns the AI column is left out, and unnamed
    assert max(len(line) for line in text.splitlines()) <= 80
    # the heading names the intensity where its column is shown (a suite's short labels leave room at 100)
    doc = read_document(tmp_path / "imp.json")
    short = doc.__class__(device=doc.device, records=[r for r in doc.records if r.params.get("kernel") ==
                                                     "cunn_SoftMaxForwardReg"], extra=doc.extra)
    wide = render_terminal([short], width=100)
    assert "(letter: operator, arithmetic intensity, FLOP/s" in wide and " AI " in wide
