"""`roofline profile --counters` on the CPU: ncu's kernels joined to a profile's by position and name, on real H200
data. tests/data/ncu_forward.csv is `ncu --nvtx --nvtx-include forward/` of `examples/cnn.py --preset tiny` (110
kernels); tests/data/ holds a real H200 profile of examples/vit.py (vit_profile.json, CUPTI's
kernel names through torch.profiler) and ncu's CSV of the same forward (vit_ncu.csv.gz): the two tools' own
spellings of the same kernels. Then the per-call counters, the entry gate of the child, the CLI's refusals and
the counter gate on a profile document."""

from __future__ import annotations

import csv
import gzip
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import DATA, ROOT, run, write

from roofline.core.record import Record
from roofline.core.summary import ProfileSummary, RegionSummary, UnattributedKernel
from roofline.ncu.join import JoinError, Launches, is_copy, kernel_key, pair, record_counters
from roofline.ncu.read_csv import DRAM_READ, DRAM_WRITE, read_raw_csv
from roofline.ncu.target_profile import EntryGate

FORWARD = DATA / "ncu_forward.csv"
VIT = DATA  # vit_profile.json and vit_ncu.csv.gz


def cupti_form(name: str) -> str:
    """An ncu kernel name as CUPTI (torch.profiler) spells the same kernel, by the differences seen between
    vit_profile.json and vit_ncu.csv.gz: at::native:: for at::, (anonymous namespace) for <unnamed>, no space
    before '*', '> >' for '>>', and the parameter types written out instead of T1, T2."""
    head, _, _ = name.partition("(")
    head = head.replace("at::<unnamed>::", "at::native::(anonymous namespace)::").replace("at::", "at::native::")
    head = head.replace("at::native::native::", "at::native::").replace(" *", "*").replace(">>", "> >")
    return f"{head}(at::TensorIteratorBase&, float const*)" if "(" in name else head


def single_calls(kernels: list) -> list[Launches]:
    """One call per kernel, each its own record, in CUPTI's spelling."""
    return [Launches(i, (cupti_form(k.name),)) for i, k in enumerate(kernels)]


# ---------------------------------------------------------------- names
def test_the_key_reads_both_tools_spellings_of_the_real_vit_forward() -> None:
    doc = json.loads((VIT / "vit_profile.json").read_text())
    cupti = {n for r in doc["records"] for n in r.get("kernels") or [] if not is_copy(n)}
    with gzip.open(VIT / "vit_ncu.csv.gz", "rt") as fh:
        ncu = {k.name for k in read_raw_csv_lines(fh.read())}
    assert cupti != ncu  # spelled differently: 'cudnn::engines_precompiled::' vs 'cudnn::', '(anonymous ...)'
    assert {kernel_key(n) for n in cupti} == {kernel_key(n) for n in ncu}
    assert len({kernel_key(n) for n in ncu}) == 10  # conv (3 cudnn kernels), cat, add, layer norm, ... 10 kinds


def read_raw_csv_lines(text: str) -> list:
    from roofline.ncu.read_csv import parse_raw_csv

    return parse_raw_csv(text.splitlines(), "vit_ncu.csv.gz")


@pytest.mark.parametrize("name, key", [
    ("void at::<unnamed>::max_pool_forward_nhwc<c10::BFloat16, int>(const T1 *, int)", "max_pool_forward_nhwc"),
    ("void at::native::(anonymous namespace)::max_pool_forward_nhwc<c10::BFloat16, int>(c10::BFloat16 const*, int)",
     "max_pool_forward_nhwc"),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_",
     "vectorized_elementwise_kernel"),  # mangled: the last nested name
    ("_Z3fooPf", "foo"),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_warpgroupsize1x1x1_g1_"
     "execute_segment_k_off_kernel__5x_cudnn", "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_"
     "tilesize64x64x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn"),
    ("triton_poi_fused_add_relu_0", "triton_poi_fused_add_relu_0"),
])
def test_kernel_key(name: str, key: str) -> None:
    assert kernel_key(name) == key


# ---------------------------------------------------------------- the join on the real cnn forward
def _dram_total() -> float:
    """DRAM bytes read + written over the CSV's rows, read with the csv module (not roofline's parser)."""
    with open(FORWARD, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["ID"]]
    return sum(float(r[DRAM_READ].replace(",", "")) + float(r[DRAM_WRITE].replace(",", "")) for r in rows)


def test_the_real_forward_joins_kernel_by_kernel_and_keeps_every_byte() -> None:
    kernels = read_raw_csv(FORWARD)
    assert len(kernels) == 110
    calls = single_calls(kernels)
    # CUPTI lists a call's memcpy and memset among its kernels; ncu profiles kernels only: they are skipped
    calls[0] = Launches(0, ("Memset (Device)", *calls[0].kernels, "Memcpy DtoD (Device -> Device)"))
    got = record_counters(calls, kernels, source="ncu")
    assert len(got) == 110 and all(c.kernels == 1 and c.source == "ncu" for c in got.values())
    assert sum(c.dram_bytes for c in got.values()) == pytest.approx(_dram_total())  # 27,060,224 B
    # ID 108, reduce_kernel (the average pool): dram__bytes_read 77,824, write 0, 5.888 µs in the CSV
    assert kernel_key(kernels[108].name) == "reduce_kernel"
    assert got[108].dram_bytes == 77_824 and got[108].duration_s == pytest.approx(5.888e-6)


def test_a_record_of_several_calls_gets_the_mean_call() -> None:
    """Counters are per call, as a record's FLOPs, bytes and time are: the calls' sum over their number."""
    kernels = read_raw_csv(FORWARD)
    picked = [kernels[7], kernels[108]]  # max_pool 137,472 B in 17.536 µs; reduce 77,824 B in 5.888 µs
    calls = [Launches(0, (cupti_form(k.name),)) for k in picked]
    (c,) = record_counters(calls, picked).values()
    assert c.dram_bytes == pytest.approx((137_472 + 77_824) / 2)  # 107,648
    assert c.duration_s == pytest.approx((17.536e-6 + 5.888e-6) / 2) and c.kernels == 1
    assert c.sm_clock_mhz is not None  # the clock is not scaled


def test_a_call_of_several_kernels_sums_them() -> None:
    kernels = read_raw_csv(FORWARD)
    # the first conv: two nhwcAddPaddingKernel (input and weight padded) then the cudnn kernel (IDs 0, 1, 2)
    calls = [Launches(0, tuple(cupti_form(k.name) for k in kernels[:3])),
             *(Launches(i, (cupti_form(k.name),)) for i, k in enumerate(kernels[3:], 1))]
    got = record_counters(calls, kernels)
    assert got[0].kernels == 3
    assert got[0].dram_bytes == pytest.approx(sum(kernels[i].metrics[DRAM_READ] + kernels[i].metrics[DRAM_WRITE]
                                                  for i in range(3)))


def test_a_missing_kernel_joins_nothing() -> None:
    kernels = read_raw_csv(FORWARD)
    with pytest.raises(JoinError, match="ncu profiled 109 kernels where the profile saw 110"):
        pair(single_calls(kernels), kernels[:50] + kernels[51:])


def test_a_renamed_kernel_joins_nothing() -> None:
    kernels = read_raw_csv(FORWARD)
    calls = single_calls(kernels)
    calls[50] = Launches(50, ("void at::native::some_other_kernel<float>(float*)",))
    with pytest.raises(JoinError, match=r"kernel 51 of 110 differs: the profile ran .some_other_kernel."):
        record_counters(calls, kernels)


# ---------------------------------------------------------------- attaching to a profile
def _fake_profile(kernels: list, regions: bool = True) -> SimpleNamespace:
    """A Profile's fields as ncu.profile reads them: 110 calls, one record each, in region 'forward'
    entered twice (calls 0-109 the first entry, 110-219 the second); each record has 1,000 minimum bytes."""
    calls, records = [], []
    for entry in range(2 if regions else 1):
        for i, k in enumerate(kernels):
            calls.append(SimpleNamespace(call=SimpleNamespace(index=entry * 110 + i, region="forward" if regions
                                                              else None),
                                         kernels=((cupti_form(k.name), 1e-6),), record=i))
    records = [Record(op="aten::x", variant=None, params={}, dtype="bf16", flops=1e6, bytes_read=500.0,
                      bytes_written=500.0, bytes=1000.0, kernels=["k"], count=2) for _ in kernels]
    return SimpleNamespace(calls=calls, records=records, target=None,
                           region_spans={"forward": [(0, 110), (110, 220)]} if regions else {},
                           summary=ProfileSummary(regions={"forward": RegionSummary()} if regions else {}))


def test_the_last_entry_is_joined_and_each_record_derived() -> None:
    from roofline.ncu.profile import JOINED, attach, chosen_entries, launches

    kernels = read_raw_csv(FORWARD)
    prof = _fake_profile(kernels)
    entries = chosen_entries(prof)
    assert entries == {"forward": 1}  # the last of two entries (0-based)
    assert len(launches(prof, entries)) == 110  # the second entry's calls only
    attach(prof, kernels, entries, "ncu (test)")
    rec = prof.records[108]
    assert rec.counters is not None and rec.counters.excess_traffic == pytest.approx(77.824)  # 77,824 / 1,000
    assert prof.summary.counters.records == 110
    assert "region 'forward' (entry 2 of 2)" in prof.summary.counters.profiled
    assert [n.code for n in prof.summary.notes] == [JOINED]
    assert prof.records[108].advice is not None  # advice redone with the counters


def test_without_regions_the_whole_run_is_joined() -> None:
    from roofline.ncu.profile import chosen_entries, launches

    prof = _fake_profile(read_raw_csv(FORWARD), regions=False)
    assert chosen_entries(prof) is None and len(launches(prof, None)) == 110


def test_a_mismatch_leaves_every_record_without_counters_and_says_why() -> None:
    from roofline.ncu.profile import LEFT_OFF, attach

    kernels = read_raw_csv(FORWARD)
    prof = _fake_profile(kernels)
    prof.summary = replace(prof.summary, unattributed=(UnattributedKernel("triton_poi_fused_0", 3, 1e-5),))
    attach(prof, kernels[:-1], {"forward": 1}, "ncu (test)")
    assert all(r.counters is None for r in prof.records)
    (msg,) = prof.summary.notes
    assert msg.code == LEFT_OFF and prof.summary.counters.error in msg
    assert msg.startswith("counters left off: ncu profiled 109 kernels where the profile saw 110")
    assert "3 kernel launch(es) ran outside any recorded op" in msg


def test_through_a_stand_in_ncu_the_csv_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child-process path with a shell script for ncu that prints the real forward CSV: the command line it
    got, the plan, and --ncu-csv's copy of the CSV."""
    from roofline.ncu.profile import add_counters

    ncu = write(tmp_path / "ncu", f"""#!/bin/sh
case "$1" in
  --version) echo "Version 2025.3.1.0" ;;
  --query-metrics) echo "dram__bytes_read Counter byte" ;;
  *) echo "$@" > {tmp_path}/args; cp "$(eval echo \\${{$#}})" {tmp_path}/plan.json; cat {FORWARD} ;;
esac
""")
    ncu.chmod(0o755)
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    prof = _fake_profile(read_raw_csv(FORWARD))
    prof.target = SimpleNamespace(device_info={"name": "NVIDIA H200"}, spec=None)
    keep = tmp_path / "forward.csv"
    add_counters(prof, ROOT / "examples" / "cnn.py", ["--preset", "tiny"], str(ncu), keep_csv=keep)
    assert prof.summary.counters.records == 110 and keep.read_text() == FORWARD.read_text()
    args = (tmp_path / "args").read_text().split()
    assert args[:8] == ["--profile-from-start", "off", "--clock-control", "none", "--print-units", "base", "--nvtx",
                        "--metrics"]
    assert args[8] == DRAM_READ and args[-2] == "roofline.ncu.target_profile"  # only what the chip offers
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["entries"] == {"forward": 1} and plan["args"] == ["--preset", "tiny"]
    assert plan["script"].endswith("examples/cnn.py")


# ---------------------------------------------------------------- the child's gate
class _Profiler:
    def __init__(self) -> None:
        self.log: list[str] = []

    def start(self) -> None:
        self.log.append("start")

    def stop(self) -> None:
        self.log.append("stop")


def test_the_gate_profiles_only_the_chosen_entry_and_pauses_in_other_regions() -> None:
    p = _Profiler()
    gate = EntryGate({"step": 1}, p)
    gate.enter("step")  # entry 0: not chosen
    gate.exit("step")
    assert p.log == []
    gate.enter("step")  # entry 1: chosen
    gate.enter("inner")  # a region the profile did not keep: its kernels are not step's
    gate.exit("inner")
    gate.exit("step")
    gate.enter("step")  # entry 2: after the chosen one
    gate.exit("step")
    assert p.log == ["start", "stop", "start", "stop"] and not gate.on


# ---------------------------------------------------------------- the CLI's refusals
SCRIPT = str(ROOT / "tests" / "scripts" / "tiny_mlp.py")


def test_counters_without_ncu_is_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    code, out, err = run(capsys, "profile", SCRIPT, "--counters")
    assert code == 2 and "ncu" in err and len(err.strip().splitlines()) == 1, err
    assert "tiny_mlp done" not in out  # refused before the script ran


def test_counters_with_no_time_or_a_lone_ncu_csv_is_exit_2(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    code, _, err = run(capsys, "profile", SCRIPT, "--counters", "--no-time")
    assert code == 2 and "--no-time" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "profile", SCRIPT, "--ncu-csv", str(tmp_path / "x.csv"))
    assert code == 2 and "--counters" in err


def test_counters_on_the_cpu_is_exit_2_before_the_script(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write(tmp_path / "ncu", "#!/bin/sh\nexit 0\n").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = run(capsys, "profile", SCRIPT, "--counters", "--device", "cpu")
    assert code == 2 and "NVIDIA GPU" in err and "tiny_mlp done" not in out, err
    assert "profiling" not in err  # refused before it announces the run


# ---------------------------------------------------------------- the counter gate on a profile document
def _vit_with_dram(tmp_path: Path, name: str, scale_first: float) -> Path:
    """The real vit profile with DRAM counter bytes on every record: 2x its minimum bytes, the first x scale."""
    doc = json.loads((VIT / "vit_profile.json").read_text())
    for i, rec in enumerate(doc["records"]):
        if rec.get("bytes"):
            rec["counters"] = {"source": "ncu", "dram_bytes": 2 * rec["bytes"] * (scale_first if i == 0 else 1)}
    return write(tmp_path / name, json.dumps(doc))


def test_check_fails_on_dram_bytes_of_a_profile_document(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    base = _vit_with_dram(tmp_path, "base.json", 1.0)
    cur = _vit_with_dram(tmp_path, "cur.json", 1.2)  # the patch-embedding conv moves 20% more
    rep = tmp_path / "r.json"
    code, _, err = run(capsys, "check", str(cur), "--baseline", str(base), "--fail-on", "dram_bytes:1%",
                       "--json", str(rep))
    assert code == 1, err
    rows = json.loads(rep.read_text())["rows"]
    worse = [r for r in rows if r["verdict"] == "worse"]
    assert len(worse) == 1 and worse[0]["change"] == pytest.approx(0.2)
    code, _, err = run(capsys, "check", str(base), "--baseline", str(base), "--fail-on", "dram_bytes:1%")
    assert code == 0, err


def test_the_order_inside_one_call_may_differ() -> None:
    """CUPTI's list orders a call's kernels by the profiler's events, not by launch: a call is checked as a set."""
    kernels = read_raw_csv(FORWARD)
    first = tuple(cupti_form(k.name) for k in kernels[:3])  # padding, padding, cudnn kernel (IDs 0-2)
    rest = [Launches(i, (cupti_form(k.name),)) for i, k in enumerate(kernels[3:], 1)]
    got = record_counters([Launches(0, (first[2], first[0], first[1])), *rest], kernels)
    assert got[0].kernels == 3
    # ... but a call whose kernels are another's is not
    with pytest.raises(JoinError, match="kernels 1-3 of 110 differ"):
        pair([Launches(0, (first[0], first[0], first[0])), *rest], kernels)


def test_the_chart_draws_the_levels_of_a_profile_record(tmp_path: Path) -> None:
    from roofline.core.document import read_document
    from roofline.report.chart.model import chart_model

    doc = json.loads((VIT / "vit_profile.json").read_text())
    rec = doc["records"][0]  # the patch-embedding conv of the real vit profile
    rec["counters"] = {"dram_bytes": 2 * rec["bytes"], "l2_bytes": 4 * rec["bytes"], "l1_bytes": 8 * rec["bytes"]}
    chart = chart_model([read_document(write(tmp_path / "v.json", json.dumps(doc)))])
    point = next(p for p in chart.points if p.record == 0)
    levels = {v.level: v for v in chart.levels}
    assert set(levels) == {"L1", "L2", "DRAM"} and all(v.record == 0 for v in chart.levels)
    assert levels["DRAM"].ai == pytest.approx(point.ai / 2)  # FLOPs over twice the minimum bytes


def test_the_child_runs_the_script_and_gates_the_chosen_entry(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m roofline.ncu.target_profile PLAN` in this process, on the CPU, with a recorder for
    cudaProfilerStart/Stop: tests/scripts/mlp_steps.py enters region 'step' 6 times; entry 6 is profiled."""
    from roofline.ncu.target import run_main
    from roofline.ncu.target_profile import PROGRAM, main, write_plan

    log = _Profiler()
    plan = tmp_path / "plan.json"
    write_plan(ROOT / "tests" / "scripts" / "mlp_steps.py", ["--steps", "6"], {"step": 5}, plan)
    assert run_main(PROGRAM, lambda path: main(path, log), ["target_profile", str(plan)]) == 0
    assert log.log == ["start", "stop"]
    out, err = capsys.readouterr()
    assert out == "" and "mlp_steps done" in err  # stdout is ncu's CSV: the script's output goes to stderr
    write_plan(ROOT / "tests" / "scripts" / "mlp_steps.py", ["--steps", "2"], {"step": 5}, plan)
    assert run_main(PROGRAM, lambda path: main(path, log), ["target_profile", str(plan)]) == 3  # entry 6 never reached
    assert "did not reach step (entry 6, entered 2 times)" in capsys.readouterr().err


def test_a_script_that_fails_inside_the_profiled_range_still_stops_it(tmp_path: Path) -> None:
    """The whole run (no region) and a chosen entry alike: the range is stopped on the way out of an error."""
    from roofline.core.errors import RooflineError
    from roofline.ncu.target_profile import WHOLE_RUN, EntryGate, main, write_plan

    script = write(tmp_path / "fails.py", "import roofline\nwith roofline.region('step'):\n    raise SystemExit(4)\n")
    for entries in (WHOLE_RUN, {"step": 0}):
        log = _Profiler()
        write_plan(script, [], entries, tmp_path / "plan.json")
        with pytest.raises(RooflineError, match="exited with status 4"):
            main(str(tmp_path / "plan.json"), log)
        assert log.log == ["start", "stop"], entries
    gate = EntryGate({"step": 0}, log := _Profiler())
    gate.enter("step")
    gate.close()  # the script ended inside the chosen entry
    assert log.log == ["start", "stop"] and not gate.on


def test_a_target_program_without_its_plan_says_how_to_call_it(capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.ncu import target_ops, target_profile
    from roofline.ncu.target import run_main

    for program in (target_ops.PROGRAM, target_profile.PROGRAM):
        assert run_main(program, lambda path: 0, [program.module]) == 2
        assert capsys.readouterr().err == f"usage: python -m {program.module} PLAN.json\n"


def test_the_operators_plan_names_each_operator_its_fields_and_dtype(tmp_path: Path) -> None:
    from roofline.core.dtypes import get_dtype
    from roofline.ncu.target import load_plan
    from roofline.ncu.target_ops import write_plan
    from roofline.ops import make

    write_plan([(make("gemm", m=64), get_dtype("bf16"))], tmp_path / "plan.json")
    (entry,) = load_plan(tmp_path / "plan.json")["ops"]
    assert entry["op"] == "gemm" and entry["dtype"] == "bf16" and entry["fields"]["m"] == 64
    assert make(entry["op"], **entry["fields"]) == make("gemm", m=64)  # what the program builds


def test_a_real_profile_knows_each_entrys_calls() -> None:
    """A CPU profile of tests/scripts/mlp_steps.py (2 blocks, region 'step' entered 3 times): the last entry's
    calls are one forward's, and they reach every record (each aggregates the 3 steps' calls)."""
    from roofline.capture.script import profile_script
    from roofline.ncu.profile import chosen_entries, launches

    prof = profile_script(ROOT / "tests" / "scripts" / "mlp_steps.py", ["--steps", "3"], device="cpu")
    spans = prof.region_spans["step"]
    assert len(spans) == 3 and spans[0][1] <= spans[1][0] and spans[1][1] <= spans[2][0]
    entries = chosen_entries(prof)
    assert entries == {"step": 2}
    last = launches(prof, entries)
    assert len(last) == len(prof.calls) // 3 and {c.record for c in last} == set(range(len(prof.records)))
    assert all(r.count == 3 for r in prof.records)


def test_the_top_table_shows_dram_over_the_minimum_at_80_columns() -> None:
    from rich.console import Console

    from roofline.analysis.profile_view import profile_view
    from roofline.core.document import validate_document
    from roofline.report.profile import top_table

    doc = json.loads((VIT / "vit_profile.json").read_text())
    for rec in doc["records"]:
        if rec.get("bytes"):  # 1.36x the minimum on every record (the LayerNorm of issue 17)
            rec["counters"] = {"dram_bytes": 1.36 * rec["bytes"], "excess_traffic": 1.36}
    d = validate_document(doc, "vit_profile.json")
    con = Console(width=80, record=True)
    con.print(top_table(profile_view(d, top=5), width=80))
    text = con.export_text()
    assert "×min" in text and "1.36" in text and max(len(line) for line in text.splitlines()) <= 80
    # counters without stored bytes (documents made before it): the caption says the ratio is DRAM bytes'
    assert "ncu DRAM bytes / minimum" in " ".join(text.split())
    for rec in doc["records"]:
        if rec.get("bytes"):
            rec["counters"].update(dram_bytes_read=rec["bytes"], stored_bytes=0.36 * rec["bytes"])
    d = validate_document(doc, "vit_profile.json")
    con = Console(width=80, record=True)
    con.print(top_table(profile_view(d, top=5), width=80))
    assert "ncu DRAM reads + stored bytes / minimum" in " ".join(con.export_text().split())


def test_the_h200_profile_keeps_every_counted_byte_of_the_csv_it_joined() -> None:
    # A matched pair recorded on the H200 (2026-12-01, scripts/gpu_check.sh profile-counters):
    # `roofline profile examples/cnn.py --counters --ncu-csv ... -- --preset tiny` and the ncu CSV it joined
    # (110 kernels of the region 'forward'). Each record holds its mean call's counters, so the sum over
    # records of counters x count must give back ncu's totals, byte for byte (any kernel dropped, joined
    # twice or divided by the wrong count breaks it).
    from roofline.core.counters import combined
    from roofline.ncu.read_csv import counters_from_kernel, parse_raw_csv

    doc = json.loads(gzip.decompress((DATA / "profile_counters_cnn.json.gz").read_bytes()))
    text = gzip.decompress((DATA / "profile_counters_cnn_ncu.csv.gz").read_bytes()).decode()
    kernels = parse_raw_csv(text.splitlines())
    assert len(kernels) == 110 and doc["profile"]["counters"]["kernels"] == 110
    total = combined([counters_from_kernel(k) for k in kernels])
    counted = [r for r in doc["records"] if r.get("counters")]
    assert len(counted) == 60  # every record but aten::as_strided_, which launched no kernel
    for field in ("dram_bytes", "l2_bytes", "flops", "duration_s"):
        joined = sum(r["counters"][field] * r["count"] for r in counted if r["counters"].get(field) is not None)
        assert joined == pytest.approx(getattr(total, field), rel=1e-9), field
    # the kernels each record names are the ones ncu profiled, by both tools' spellings
    ours = {kernel_key(k) for r in counted for k in r["kernels"] or [] if not is_copy(k)}
    assert ours == {kernel_key(k.name) for k in kernels}
