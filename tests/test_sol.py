"""`roofline sol`: the speed of light of the problems of suites/sol (against the H200's datasheet, no data),
checked against hand arithmetic; the verdicts on times against it; the command line and the results document
that `check`, `plot` and `report` read. The timer itself: tests/test_sol_timer.py (CPU), test_sol_gpu.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, run

SUITE = ROOT / "suites" / "sol"
REDTEAM = ROOT / "tests" / "data" / "sol_redteam"
# The H200 SXM's datasheet (specs/h200-sxm.toml): FP32 66.9 TFLOP/s, HBM3e 4.8 TB/s.
FP32 = 66.9e12
DRAM = 4.8e12
MIB = 1 << 20


@pytest.fixture(scope="module")
def suite() -> dict[str, object]:
    """Every problem of suites/sol at SOL_SCALE 1, on the H200's roof (one analytic run, ~3 s)."""
    from roofline.capture.sol import sol

    result = sol(SUITE, gpu="h200")
    return {r.name: r for r in result.results}


def test_the_suite_holds_30_problems_and_every_op_has_a_formula(suite: dict[str, object]) -> None:
    kinds = {p.stem: p.read_text().split(":", 1)[0].strip('"') for p in SUITE.glob("*.py")}
    assert len(suite) >= 30 and set(suite) == set(kinds)
    assert {k: sum(1 for v in kinds.values() if v == k) >= 6
            for k in ("Single op", "Fused pair", "Small network")} == {"Single op": True, "Fused pair": True,
                                                                        "Small network": True}
    assert [n for n, r in suite.items() if r.error] == []
    assert [n for n, r in suite.items() if not r.sol.complete] == []  # every op of them has a formula
    assert all(r.sol.notes() == [] for r in suite.values())


# (problem, FLOPs, fused bytes read, fused bytes written, unfused SoL, fused SoL): by hand, at SOL_SCALE 1, on the
# H200's FP32 (tensor cores off: fp32 is fp32) and DRAM roofs. A GEMM's bias add is on no roof (its extra FLOPs).
HAND = [
    # C = A @ B, 64^3: 2 x 64^3 = 524,288 FLOPs; A and B 2 x 64^2 x 4 = 32,768 B read, C 16,384 B written;
    # memory 49,152 / 4.8e12 = 10.24 ns > compute 524,288 / 66.9e12 = 7.84 ns, one op: both bounds 10.24 ns
    ("matmul", 524_288, 32_768, 16_384, 49_152 / DRAM, 49_152 / DRAM),
    # relu over 256 x 1024 fp32: 1 MiB read, 1 MiB written, 2 MiB / 4.8e12 = 436.9 ns
    ("relu", 262_144, MIB, MIB, 2 * MIB / DRAM, 2 * MIB / DRAM),
    # x + y: 2 MiB read, 1 MiB written: 3 MiB / 4.8e12 = 655.4 ns
    ("add", 262_144, 2 * MIB, MIB, 3 * MIB / DRAM, 3 * MIB / DRAM),
    # relu(A @ B) 64^3: unfused = the mm's 10.24 ns + relu's 2 x 16,384 B / 4.8e12 = 6.83 ns; fused: A, B read,
    # C written once (49,152 B, 10.24 ns) against (524,288 + 4,096) FLOPs / 66.9e12 = 7.90 ns
    ("matmul_relu", 528_384, 32_768, 16_384, 49_152 / DRAM + 32_768 / DRAM, 49_152 / DRAM),
    # (A @ B).sum(1): unfused 10.24 ns + (16,384 + 256) B / 4.8e12 = 3.47 ns; fused: 33,024 B is 6.88 ns, below the
    # FLOPs' (524,288 + 4,096) / 66.9e12 = 7.90 ns: compute-bound as one kernel
    ("matmul_sum", 528_384, 32_768, 256, 49_152 / DRAM + 16_640 / DRAM, 528_384 / FP32),
    # sum over dim 1 of 256 x 1024: 1 MiB read, 256 x 4 B written
    ("sum_dim", 262_144, MIB, 1_024, (MIB + 1_024) / DRAM, (MIB + 1_024) / DRAM),
    # Linear(1024, 1024) on 16 rows: 2 x 16 x 1024^2 = 33,554,432 FLOPs; x 65,536 + W 4,194,304 + b 4,096 B read,
    # 65,536 B written: 4,329,472 / 4.8e12 = 902.0 ns > 33,554,432 / 66.9e12 = 501.6 ns
    ("linear", 33_554_432, 4_263_936, 65_536, 4_329_472 / DRAM, 4_329_472 / DRAM),
    # MLP 1024 -> 2048 -> 2048 -> 1024 on 16 rows: 2 x 16 x (2 + 4 + 2) Mi weights = 268,435,456 FLOPs, plus two
    # relus of 16 x 2048 = 65,536. Op by op every layer is memory-bound at 16 rows: fc1 65,536 + 8,388,608 + 8,192
    # + 131,072 B, relu 2 x 131,072, fc2 131,072 + 16,777,216 + 8,192 + 131,072, relu 2 x 131,072, fc3 131,072 +
    # 8,388,608 + 4,096 + 65,536: 34,754,560 B / 4.8e12 = 7.240 us. As one kernel: the weights 8 Mi x 4 B =
    # 33,554,432 + biases 5,120 x 4 + x 65,536 = 33,640,448 B read, 65,536 written: 7.022 us
    ("mlp", 268_500_992, 33_640_448, 65_536, 34_754_560 / DRAM, 33_705_984 / DRAM),
    # embedding 32000 x 512 fp32, 4 x 128 ids (int64): the gathered rows 512 x 512 x 4 = 1 MiB and the ids 4,096 B
    # read (not the 62.5 MiB table), 1 MiB written; no FLOPs: (1,052,672 + 1 MiB) / 4.8e12 = 437.8 ns
    ("embedding", 0, 1_052_672, MIB, (1_052_672 + MIB) / DRAM, (1_052_672 + MIB) / DRAM),
    # conv 3x3, 16 -> 32 channels, 2 x 32 x 32 outputs: 2 x 65,536 x 16 x 9 = 18,874,368 FLOPs (bias: extra);
    # input 131,072 + weight 18,432 + bias 128 B read, 262,144 written; 18,874,368 / 66.9e12 = 282.1 ns > memory
    ("conv2d", 18_874_368, 149_632, 262_144, 18_874_368 / FP32, 18_874_368 / FP32),
    # x.t().contiguous(): a copy, 1 MiB each way, no FLOPs
    ("transpose_copy", 0, MIB, MIB, 2 * MIB / DRAM, 2 * MIB / DRAM),
]


@pytest.mark.parametrize(("name", "flops", "read", "written", "unfused", "fused"), HAND, ids=[h[0] for h in HAND])
def test_the_speed_of_light_against_hand_arithmetic(suite: dict[str, object], name: str, flops: int, read: int,
                                                   written: int, unfused: float, fused: float) -> None:
    s = suite[name].sol
    assert s.flops == flops
    assert (s.read_bytes, s.written_bytes) == (read, written)
    assert s.fused_s == pytest.approx(fused, rel=1e-9)
    assert s.unfused_s == pytest.approx(unfused, rel=1e-9)
    assert s.dram_bytes_per_s == DRAM


def test_the_fused_bound_is_never_above_the_unfused_sum(suite: dict[str, object]) -> None:
    # inputs read once <= every op reading them; FLOPs at peak <= each op's max(FLOPs, bytes) time
    assert [n for n, r in suite.items() if r.sol.fused_s > r.sol.unfused_s * (1 + 1e-12)] == []
    shares = {n: sum(o.share for o in r.sol.ops) for n, r in suite.items() if r.sol.unfused_s}
    assert all(v == pytest.approx(1.0) for v in shares.values())


def test_a_network_fuses_its_intermediates_away(suite: dict[str, object]) -> None:
    """manual_softmax's five ops move 5 tensors' worth op by op; as one kernel, 1 MiB in and 1 MiB out."""
    s = suite["manual_softmax"].sol
    assert (s.read_bytes, s.written_bytes) == (MIB, MIB)
    assert s.op_bytes > 4 * s.fused_bytes  # amax, sub, exp, sum, div each read 1 MiB
    assert s.unfused_s > 2 * s.fused_s


def test_dtype_casts_the_model_and_its_inputs() -> None:
    """--dtype bf16 halves every byte and puts the GEMM on the bf16 tensor pipe (989.4 TFLOP/s on the H200)."""
    from roofline.capture.sol import sol

    r = sol(SUITE / "matmul.py", gpu="h200", dtype="bf16").results[0]
    assert r.dtype == "bf16"
    assert (r.sol.read_bytes, r.sol.written_bytes) == (16_384, 8_192)  # 2 x 64^2 x 2, 64^2 x 2
    assert r.sol.fused_compute_s == pytest.approx(524_288 / 989.4e12)


def test_an_op_without_a_formula_is_listed_and_the_bound_says_what_it_counts(tmp_path: Path) -> None:
    from roofline.capture.sol import sol

    # an FFT: no formula (capture/formulas_untagged.py leaves _fft_r2c out on purpose)
    (tmp_path / "fft.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.fft.rfft(x).abs().relu()\n\n\ndef get_inputs():\n    return [torch.randn(64, 64)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    r = sol(tmp_path / "fft.py", gpu="h200").results[0]
    assert not r.sol.complete
    assert r.sol.without_formula == (("aten::_fft_r2c", 1),)
    assert "bounds what is counted" in r.sol.notes()[0]
    assert r.sol.fused_s > 0  # the relu still counts; the output is written once


# -- verdicts (pure)
def _bound(**kw: float) -> object:
    from roofline.analysis.sol import SpeedOfLight

    # 1 GB in and out at 1 TB/s: a memory floor of 1 ms; 2e12 FLOPs taking 2 ms at peak
    base = dict(flops=2e12, op_bytes=3e9, read_bytes=6e8, written_bytes=4e8, dram_bytes_per_s=1e12,
                unfused_s=4e-3, fused_compute_s=2e-3)
    return SpeedOfLight(**{**base, **kw})


def test_a_time_below_the_fused_bound_is_refused_with_what_it_implies() -> None:
    from roofline.analysis.sol import IMPOSSIBLE, OK, judge

    s = _bound()
    assert s.fused_memory_s == pytest.approx(1e-3) and s.fused_s == pytest.approx(2e-3)
    below_memory = judge(0.5e-3, s, hard=True, reference_s=4e-3)
    assert below_memory.status == IMPOSSIBLE and below_memory.speedup is None
    assert "output was not computed" in below_memory.reason and "1 GB" in below_memory.reason
    below_flops = judge(1.5e-3, s, hard=True)
    assert below_flops.status == IMPOSSIBLE and "fewer FLOPs" in below_flops.reason
    v = judge(2.5e-3, s, hard=True, reference_s=5e-3)
    assert v.status == OK and v.speedup == pytest.approx(2.0)  # 5 / 2.5
    assert v.of_fused == pytest.approx(0.8) and v.of_unfused == pytest.approx(1.6)  # 2 / 2.5, 4 / 2.5
    soft = judge(0.5e-3, s, hard=False)  # measured roofs (a CPU): reported, with a note
    assert soft.status == OK and soft.of_fused == pytest.approx(4.0) and "measured" in soft.notes[0]


def test_outputs_the_l2_can_hold_are_left_out_of_the_refusal() -> None:
    """A kernel's dirty lines can reach DRAM after it ends: with a 0.5 GB L2 the memory floor is the 0.6 GB read
    (0.6 ms at 1 TB/s), so 0.8 ms stands (125% of the fused bound), where without the allowance it is refused."""
    from roofline.analysis.sol import IMPOSSIBLE, OK, judge, memory_floor_s

    s = _bound(fused_compute_s=0.0)  # memory-bound: fused bound 1 ms (0.6 GB read + 0.4 GB written)
    assert memory_floor_s(s, l2_bytes=5e8) == pytest.approx(0.6e-3)  # 0.4 GB written all fit in 0.5 GB
    assert memory_floor_s(s, l2_bytes=1e8) == pytest.approx(0.9e-3)  # 0.6 + (0.4 - 0.1) GB
    assert judge(0.8e-3, s, hard=True, l2_bytes=5e8).status == OK
    assert judge(0.8e-3, s, hard=True).status == IMPOSSIBLE
    assert "less the 400 MB of outputs the L2 can hold" in judge(0.5e-3, s, hard=True, l2_bytes=5e8).reason


def test_the_verdict_names_the_first_problem_in_order_failed_refused_wrong() -> None:
    from roofline.analysis.sol import FAILED, REFUSED, WRONG, judge, verdict_line

    s = _bound()
    assert judge(3e-3, s, hard=True, failed="x", refused=["y"], wrong="z").status == FAILED
    assert judge(3e-3, s, hard=True, refused=["y"], wrong="z").status == REFUSED
    assert judge(3e-3, s, hard=True, wrong="z").reason == "z"
    assert judge(3e-3, s, hard=True, wrong="z").status == WRONG
    assert judge(0.0, s, hard=True).status == REFUSED
    assert verdict_line(judge(4e-3, s, hard=True, reference_s=8e-3)) == "ok: 2x the reference, 50.0% of the fused " \
                                                                         "speed of light"


def test_external_reads_count_each_input_once_at_its_largest_counted_read() -> None:
    from roofline.analysis.sol import external_reads, written_outputs

    calls = [(((1, 100.0), (2, 40.0)), ((3, 50.0),), True),  # reads inputs 1 and 2, writes 3
             (((1, 60.0), (3, 50.0)), ((4, 10.0),), True),   # 1 again (60 < 100), 3 is not an input
             (((5, 999.0),), ((6, 1.0),), False)]            # an op without a formula sets nothing
    assert external_reads(calls) == 140.0  # 100 + 40
    assert written_outputs(calls, [(4, 10.0), (4, 10.0), (1, 100.0)]) == 10.0  # once; an input returned: 0


# -- the command line and the document
def test_the_command_prints_the_bounds_and_each_ops_share(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "sol", str(SUITE / "matmul_relu.py"), "--gpu", "h200")
    assert code == 0, err
    assert "fused SoL" in out and "unfused SoL" in out and "mm" in out and "60.0%" in out  # 10.24 / 17.07 ns


def test_a_folder_is_one_table_and_one_document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "sol.json"
    code, out, err = run(capsys, "sol", str(SUITE), "--gpu", "h200", "-o", str(out_file))
    assert code == 0, err
    doc = json.loads(out_file.read_text())
    assert len(doc["records"]) == len(list(SUITE.glob("*.py")))  # one record per problem
    rec = next(r for r in doc["records"] if r["op"] == "matmul")
    assert rec["variant"] == "reference" and rec["roofline_time_s"] == pytest.approx(49_152 / DRAM)
    assert rec["sol"]["fused_s"] == rec["roofline_time_s"] and rec["sol"]["complete"] is True
    assert doc["sol"]["problems"] == len(doc["records"]) and doc["sol"]["failed"] == []
    assert "matmul_relu" in out and "fused" in out


def test_a_problem_that_fails_is_one_line_and_the_run_goes_on(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    for name in ("relu.py", "add.py"):
        (tmp_path / name).write_text((SUITE / name).read_text())
    (tmp_path / "broken.py").write_text("import torch\nraise RuntimeError('no such kernel')\n")
    (tmp_path / "nomodel.py").write_text("x = 1\n")
    code, out, err = run(capsys, "sol", str(tmp_path), "--gpu", "h200", "--json")
    assert code == 1  # a problem met: the document is still written in full
    doc = json.loads(out)
    assert sorted(r["op"] for r in doc["records"]) == ["add", "relu"]
    failed = {f["problem"]: f["error"] for f in doc["sol"]["failed"]}
    assert "RuntimeError: no such kernel" in failed["broken"]
    assert failed["nomodel"].startswith("not a problem file: it defines no Model, get_inputs, get_init_inputs")
    assert "nomodel.py: nomodel" not in err  # the problem named once per line
    assert err.count("\n") <= 6 and "error:" in err  # one line each, then the exit line


def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = [(["sol", str(tmp_path / "nope.py")], "no such problem file"),
             (["sol", str(SUITE / "relu.py"), "--dtype", "int3"], "--dtype"),
             (["sol", str(SUITE / "relu.py"), "--candidate", str(REDTEAM / "honest.py")], "add --time"),
             (["sol", str(tmp_path)], "no problem files"),
             (["sol", str(SUITE / "relu.py"), "--time", "--gpu", "b200"], "cannot be timed on this machine")]
    for argv, said in cases:
        code, _, err = run(capsys, *argv)
        assert (code, err.count("\n")) == (2, 1), (argv, err)
        assert said in err


def test_check_plot_and_report_read_a_sol_document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A timed document (the reference alone, timed in this process on the CPU): one record with its samples."""
    doc = tmp_path / "sol.json"
    code, _, err = run(capsys, "sol", str(SUITE / "relu.py"), "--time", "-o", str(doc))
    assert code == 0, err
    rec = json.loads(doc.read_text())["records"][0]
    assert rec["time_s"] > 0 and len(rec["time_samples_s"]) >= 10 and rec["timing"]["method"] == "untrusted-cpu"
    assert run(capsys, "check", str(doc), "--baseline", str(doc))[0] == 0
    assert run(capsys, "plot", str(doc), "-o", str(tmp_path / "sol.png"))[0] == 0
    assert run(capsys, "report", str(doc), "-o", str(tmp_path / "sol.html"))[0] == 0
    assert (tmp_path / "sol.png").stat().st_size > 0 and "relu" in (tmp_path / "sol.html").read_text()


def test_the_api_names_sol() -> None:
    import roofline

    result = roofline.sol(SUITE / "relu.py", gpu="h200")
    assert result.ok and result.results[0].sol.fused_s == pytest.approx(2 * MIB / DRAM)
    assert result.document().records[0].op == "relu"


def test_on_a_cpu_the_fused_bound_is_placed_on_the_cache_its_ops_are(tmp_path: Path) -> None:
    """A CPU whose L3 (1e11 B/s, seeded here) holds the problem: its ops are placed on the L3 roof
    (core/model.choose_memory), so the fused bound must be too, or it reads above the unfused sum."""
    from helpers import SEED_CPU

    from roofline.capture.sol import sol
    from roofline.ceilings import store
    from roofline.core.model import Ceilings
    from roofline.measuring.device import cpu_description

    info = cpu_description()
    store.save(store.cpu_key(info["name"], info["cores"]),
               Ceilings(device_id="cpu", device_name=info["name"], kind="cpu", source="measured",
                        compute=dict(SEED_CPU), memory={"dram": 2e10, "l3": 1e11}, cache_bytes={"l3": 32 * MIB}),
               {"seeded_by": "tests"})
    s = sol(SUITE / "manual_softmax.py").results[0].sol
    assert s.fused_memory_s == pytest.approx(2 * MIB / 1e11)  # 1 MiB in, 1 MiB out at the L3's rate
    assert s.fused_s <= s.unfused_s


def test_a_problem_that_runs_no_operator_is_refused_not_bounded_at_zero(tmp_path: Path) -> None:
    """A Model whose forward computes nothing on tensors (returns an int) has no speed of light: a 0 us bound
    reported as ok would let any candidate through."""
    from roofline.capture.sol import sol
    from roofline.measuring.problem import ProblemError

    p = tmp_path / "noop.py"
    p.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return 3\n"
                 "def get_inputs():\n    return [torch.randn(8)]\ndef get_init_inputs():\n    return []\n")
    with pytest.raises(ProblemError, match="ran no torch operator"):
        sol(p, gpu="h200")


def test_a_negative_or_nan_tolerance_and_a_candidate_folder_without_the_problem_are_bad_input(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--rtol -1 would call every output wrong; a folder of candidates holding none of the problems' names
    would time the reference alone and exit 0 as if the candidates had passed."""
    cases = [(["--rtol", "-1"], "--rtol"), (["--atol", "nan"], "--atol"),
             (["--candidate", str(tmp_path)], "no candidate named relu.py")]
    for extra, said in cases:
        code, _, err = run(capsys, "sol", str(SUITE / "relu.py"), "--time", *extra)
        assert (code, err.count("\n")) == (2, 1), (extra, err)
        assert said in err


def test_with_json_a_problems_prints_go_to_stderr(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """stdout carries the document alone, as `profile --json` keeps it: a problem that prints must not break it."""
    p = tmp_path / "chatty.py"
    p.write_text("import torch\nprint('loading chatty')\nclass Model(torch.nn.Module):\n"
                 "    def forward(self, x):\n        print('forward!')\n        return x * 3\n"
                 "def get_inputs():\n    return [torch.randn(32)]\ndef get_init_inputs():\n    return []\n")
    code, out, err = run(capsys, "sol", str(p), "--gpu", "h200", "--json")
    assert code == 0, err
    assert json.loads(out)["records"][0]["op"] == "chatty"
    assert "loading chatty" in err and "forward!" in err
