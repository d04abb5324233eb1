"""SOL-ExecBench's format beside KernelBench's (measuring/solexec_format.py, measuring/solexec.py): its public samples
(tests/data/solexec/, from NVIDIA/SOL-ExecBench, README there) read and validated with one-line errors, each workload
a Problem of the plain convention whose bounds are checked against hand arithmetic, its inputs as SOL-ExecBench
makes them, its solutions run as ModelNew; the SOL-Score and fast_p (analysis/sol.py) against hand values; the
`roofline sol DIR` rows (on the GPU: test_solexec_gpu.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA, run

SAMPLES = DATA / "solexec"
RMSNORM, MATMUL, ROPE = SAMPLES / "rmsnorm", SAMPLES / "custom_inputs_matmul", SAMPLES / "flux_rope"
# The H100 SXM's datasheet (specs/h100-sxm.toml): FP32 66.9 TFLOP/s, HBM3 3352 GB/s.
FP32 = 66.9e12
DRAM = 3352e9




def _copy(src: Path, dst: Path, definition: Any = None, workloads: list[Any] | None = None) -> Path:
    """The sample folder `src` under `dst`, with its definition or workloads replaced when given."""
    dst.mkdir(parents=True, exist_ok=True)
    d = definition if definition is not None else json.loads((src / "definition.json").read_text())
    (dst / "definition.json").write_text(d if isinstance(d, str) else json.dumps(d))
    lines = workloads if workloads is not None else (src / "workload.jsonl").read_text().splitlines()
    (dst / "workload.jsonl").write_text("\n".join(w if isinstance(w, str) else json.dumps(w) for w in lines) + "\n")
    return dst


# -- reading the samples
def test_the_samples_read_as_one_row_per_workload() -> None:
    from roofline.measuring.solexec import rows

    norm, mm, rope = rows(RMSNORM), rows(MATMUL), rows(ROPE)
    assert (len(norm), len(mm), len(rope)) == (14, 3, 3)  # the lines of each workload.jsonl
    assert norm[0].label == "rmsnorm_h4096 batch_size=7"  # its first line: {"batch_size": 7}
    assert [r.label for r in mm] == ["custom_matmul M=128 K=256 N=128", "custom_matmul M=256 K=512 N=256",
                                     "custom_matmul M=64 K=128 N=64"]
    assert len({r.label for r in norm}) == 14
    d = rope[0].definition
    assert [(a.name, a.kind) for a in d.axes][-1] == ("half_head_dim", "expr")
    assert [t.name for t in d.inputs] == ["query_or_key", "freqs_cos", "freqs_sin"]


def test_axes_resolve_consts_vars_and_expressions() -> None:
    from roofline.measuring.solexec import rows
    from roofline.measuring.solexec_format import shape_of, sizes

    r = rows(ROPE)[1]  # {"batch_size": 4, "seq_len": 256}; attention_head_dim const 128; half = 128 // 2
    values = sizes(r.definition, r.workload)
    assert values == {"num_attention_heads": 24, "attention_head_dim": 128, "batch_size": 4, "seq_len": 256,
                      "half_head_dim": 64}
    assert shape_of(r.definition.inputs[0], values) == [4, 256, 24, 128]


def test_the_arithmetic_of_axes_takes_no_calls_or_attributes() -> None:
    from roofline.measuring.solexec_format import NotArithmetic, evaluate

    assert evaluate("H_kv * H_r", {"H_kv": 8, "H_r": 4}) == 32
    assert evaluate("len_indptr == batch_size + 1", {"len_indptr": 5, "batch_size": 4}) is True
    assert evaluate("-(a // 3) ** 2 % 7", {"a": 10}) == -9 % 7  # -(3 ** 2) % 7 = 5
    for bad in ("__import__('os')", "a.real", "kv_indptr[-1].item()", "b"):
        with pytest.raises(NotArithmetic):
            evaluate(bad, {"a": 1})


# (what is broken, the definition's change, the workload's first line's change, the words of the one-line error)
BROKEN: list[tuple[str, Any, Any, str]] = [
    ("not JSON", "{nope", None, "definition.json: not JSON"),
    ("no reference", lambda d: d.pop("reference"), None, "the definition has no 'reference'"),
    ("run's parameters", lambda d: d.update(reference="def run(x, weight):\n    return x\n"), None,
     "must take the inputs in order: run(hidden_states, weight)"),
    ("no run", lambda d: d.update(reference="def go(hidden_states, weight):\n    pass\n"), None,
     "defines no top-level function run"),
    ("reference syntax", lambda d: d.update(reference="def run(:\n"), None, "the reference is not Python"),
    ("dtype", lambda d: d["inputs"]["weight"].update(dtype="float7"), None, "dtype 'float7' is not one of"),
    ("shape axis", lambda d: d["inputs"]["weight"].update(shape=["hidden"]), None,
     "input 'weight''s shape names hidden, not an axis"),
    ("axis kind", lambda d: d["axes"]["hidden_size"].update(type="fixed"), None, "type must be one of const"),
    ("negative const", lambda d: d["axes"]["hidden_size"].update(value=-1), None, "value must be 0 or more"),
    ("input and output", lambda d: d["outputs"].update(weight=d["inputs"]["weight"]), None,
     "'weight' is both an input and an output"),
    ("custom entrypoint", lambda d: d.update(custom_inputs_entrypoint="make"), None,
     "custom_inputs_entrypoint 'make' is not a top-level function"),
    ("missing var axis", None, lambda w: w["axes"].clear(), "workload.jsonl line 1: no value for the var axis"),
    ("const given", None, lambda w: w["axes"].update(hidden_size=8), "axis 'hidden_size' is not a var axis"),
    ("axis value", None, lambda w: w["axes"].update(batch_size=-3), "must be a whole number, 0 or more"),
    ("input type", None, lambda w: w["inputs"]["weight"].update(type="zeros"), "type must be one of random"),
    ("missing input", None, lambda w: w["inputs"].pop("weight"), "no source for the input 'weight'"),
    ("unknown input", None, lambda w: w["inputs"].update(bias={"type": "random"}), "'bias' is not an input"),
    ("mixed custom", None, lambda w: w["inputs"].update(weight={"type": "custom"}),
     "custom inputs and others in one workload"),
    ("scalar for a tensor", None, lambda w: w["inputs"].update(weight={"type": "scalar", "value": 1}),
     "a 'scalar' source for a tensor input"),
    ("safetensors key", None, lambda w: w["inputs"].update(weight={"type": "safetensors", "path": "w.st"}),
     "input 'weight' has no 'tensor_key'"),
    ("tolerance field", None, lambda w: w.update(tolerance={"rtol": 1}), "tolerance has no field 'rtol'"),
    ("uuid", None, lambda w: w.pop("uuid"), "the workload has no 'uuid'"),
]


@pytest.mark.parametrize(("what", "change_def", "change_work", "words"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_problem_is_one_line_naming_its_file(tmp_path: Path, what: str, change_def: Any, change_work: Any,
                                                      words: str) -> None:
    from roofline.core.errors import UsageError
    from roofline.measuring.solexec import rows

    d: Any = json.loads((RMSNORM / "definition.json").read_text())
    works = [json.loads(line) for line in (RMSNORM / "workload.jsonl").read_text().splitlines()]
    if isinstance(change_def, str):
        d = change_def
    elif change_def is not None:
        change_def(d)
    if change_work is not None:
        change_work(works[0])
    folder = _copy(RMSNORM, tmp_path / "p", d, works)
    with pytest.raises(UsageError) as info:
        rows(folder)
    message = str(info.value)
    assert words in message and "\n" not in message
    assert message.startswith(str(folder / ("definition.json" if change_def is not None else "workload.jsonl")))


def test_workload_file_errors_name_the_line(tmp_path: Path) -> None:
    from roofline.core.errors import UsageError
    from roofline.measuring.solexec import rows

    lines = (RMSNORM / "workload.jsonl").read_text().splitlines()
    for broken, words in (([lines[0], "", lines[0]], "line 3: uuid '33bf737d-3b37-4e38-be80-ea39b4b46ae6' is given "
                                                     "twice"),
                          ([lines[0], "[1, 2]"], "line 2: a workload must be a JSON object"),
                          ([""], "workload.jsonl: no workload in this file")):
        with pytest.raises(UsageError, match=words):
            rows(_copy(RMSNORM, tmp_path / f"p{len(words)}", workloads=broken))
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "definition.json").write_text((RMSNORM / "definition.json").read_text())
    with pytest.raises(UsageError, match=r"no workload\.jsonl beside definition\.json"):
        rows(tmp_path / "only")


def test_constraints_on_axes_are_checked_and_those_on_data_left_to_the_reference(tmp_path: Path) -> None:
    from roofline.core.errors import UsageError
    from roofline.measuring.solexec import rows

    d = json.loads((MATMUL / "definition.json").read_text())
    d["constraints"] = ["K == 2 * M", "A[0].sum() > 0"]  # holds on every line (256 = 2 x 128, ...); reads data
    assert len(rows(_copy(MATMUL, tmp_path / "holds", d))) == 3
    d["constraints"] = ["K < 500"]
    with pytest.raises(UsageError, match=r"line 2: the constraint 'K < 500' does not hold for M=256 K=512 N=256"):
        rows(_copy(MATMUL, tmp_path / "fails", d))


# -- the analytic bounds
@pytest.fixture(scope="module")
def h100() -> Any:
    from roofline.measuring.target import resolve_target

    return resolve_target(gpu="h100", device=None, time=False)


def test_each_workload_is_bounded_as_a_kernelbench_problem_of_its_shape(h100: Any) -> None:
    from roofline.capture.sol import analyse
    from roofline.measuring.solexec import rows

    norm = rows(RMSNORM)[0]  # batch_size 7, hidden 4096, bf16
    s, _, shapes = analyse(norm.load(), h100)
    assert shapes == [[7, 4096], [4096]]
    # read: x 7 x 4096 x 2 B = 57,344 + weight 4096 x 2 B = 8,192; written: y 7 x 4096 x 2 B = 57,344;
    # 122,880 B / 3352 GB/s = 36.66 ns (memory-bound: ~115 kFLOP are nothing beside it)
    assert (s.read_bytes, s.written_bytes) == (65_536, 57_344)
    assert s.fused_s == pytest.approx(122_880 / DRAM) and s.fused_bound == "memory" and s.complete
    mm = rows(MATMUL)[0]  # A 128 x 256 @ B 256 x 128, fp32
    s, dtype, _ = analyse(mm.load(), h100)
    # 2 x 128 x 256 x 128 = 8,388,608 FLOP / 66.9e12 = 125.4 ns > (131,072 x 2 + 65,536) B / 3352 GB/s = 97.8 ns
    assert dtype == "fp32" and s.flops == 8_388_608
    assert s.fused_s == pytest.approx(8_388_608 / FP32) and s.fused_bound == "compute"


# -- inputs as SOL-ExecBench makes them
def test_inputs_follow_the_seed_and_custom_ones_come_from_the_entrypoint() -> None:
    import torch

    from roofline.measuring.problem import make_inputs
    from roofline.measuring.solexec import rows

    p = rows(MATMUL)[0].load()  # generate_inputs: randn(M, K) / K ** 0.5, randn(K, N) / K ** 0.5, K = 256
    a, b = make_inputs(p, 1, "cpu")
    assert list(a.shape) == [128, 256] and list(b.shape) == [256, 128]
    assert 0.05 < float(a.std()) < 0.08  # 1 / 16 = 0.0625, not randn's 1
    assert all(torch.equal(x, y) for x, y in zip(make_inputs(p, 1, "cpu"), (a, b), strict=True))
    assert not torch.equal(make_inputs(p, 2, "cpu")[0], a)
    x, w = make_inputs(rows(RMSNORM)[1].load(), 1, "cpu")  # random bf16 of the definition's shapes
    assert (x.dtype, list(x.shape), list(w.shape)) == (torch.bfloat16, [1, 4096], [4096])


def _typed_problem(tmp_path: Path, inputs: dict[str, Any], sources: dict[str, Any], shape: list[str]) -> Path:
    d = {"name": "typed", "axes": {"n": {"type": "var"}},
         "inputs": inputs, "outputs": {"y": {"shape": shape, "dtype": "float32"}},
         "reference": f"import torch\n\ndef run({', '.join(inputs)}):\n    return {next(iter(inputs))}.float() * 2\n"}
    return _copy(MATMUL, tmp_path / "typed", d, [{"uuid": "u1", "axes": {"n": 6}, "inputs": sources}])


def test_random_integers_bools_and_scalars_take_their_kinds(tmp_path: Path) -> None:
    import torch

    from roofline.measuring.problem import make_inputs
    from roofline.measuring.solexec import rows

    folder = _typed_problem(tmp_path, {"i": {"shape": ["n", "64"], "dtype": "int8"},
                                       "j": {"shape": ["n"], "dtype": "int32"},
                                       "m": {"shape": ["n"], "dtype": "bool"},
                                       "eps": {"shape": None, "dtype": "float32"}},
                            {"i": {"type": "random"}, "j": {"type": "random"}, "m": {"type": "random"},
                             "eps": {"type": "scalar", "value": 1e-5}}, ["n", "64"])
    i, j, m, eps = make_inputs(rows(folder)[0].load(), 3, "cpu")
    assert i.dtype == torch.int8 and list(i.shape) == [6, 64] and int(i.min()) < 0  # [-128, 128): 384 draws
    assert j.dtype == torch.int32 and -1024 <= int(j.min()) and int(j.max()) < 1024
    assert m.dtype == torch.bool and eps == 1e-5


def test_safetensors_inputs_are_read_and_shaped_only_in_the_analytic_run(tmp_path: Path) -> None:
    pytest.importorskip("safetensors", reason="safetensors (with transformers: .ci/run installs it) writes the file")
    import torch
    from safetensors.torch import save_file

    from roofline.capture.fake import fake_mode
    from roofline.measuring.problem import ProblemError, make_inputs
    from roofline.measuring.solexec import rows

    spec = {"x": {"shape": ["n"], "dtype": "float32"}}
    folder = _typed_problem(tmp_path, spec, {"x": {"type": "safetensors", "path": "blob/x.st", "tensor_key": "x"}},
                            ["n"])
    p = rows(folder)[0].load()
    with fake_mode():  # no file needed: the declared shape, n = 6
        assert list(make_inputs(p, 1, "cpu")[0].shape) == [6]
    with pytest.raises(ProblemError, match=r"blob/x\.st is not in"):
        make_inputs(p, 1, "cpu")
    (tmp_path / "blob").mkdir()  # above the problem folder: paths are relative to the dataset's root
    save_file({"x": torch.arange(6, dtype=torch.float32)}, str(tmp_path / "blob" / "x.st"))
    assert make_inputs(p, 1, "cpu")[0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    save_file({"x": torch.arange(5, dtype=torch.float32)}, str(tmp_path / "blob" / "x.st"))
    with pytest.raises(ProblemError, match=r"x.st\[x\] is \[5\] torch.float32, the definition says \[6\]"):
        make_inputs(p, 1, "cpu")


# -- candidates
def _outputs(problem_py: Path, candidate_py: Path, seed: int = 1) -> tuple[Any, Any]:
    """The reference's and the candidate's outputs on the inputs of `seed`, loaded as the child loads them."""
    import torch

    from roofline.measuring.problem import build_model, load_problem, make_inputs

    p = load_problem(problem_py, candidate_py)
    xs = make_inputs(p, seed, "cpu")
    with torch.no_grad():
        return build_model(p, 0, "cpu")(*xs), build_model(p, 0, "cpu", candidate=True)(*xs)


def test_a_solution_runs_as_modelnew_from_the_childs_two_files(tmp_path: Path) -> None:
    import torch

    from roofline.measuring.solexec import child_files, rows

    row = rows(MATMUL, MATMUL / "solution_python.json")[2]  # SOL-ExecBench's own: run(A, B) returns A @ B
    problem_py, candidate_py = child_files(row, tmp_path)
    ref, new = _outputs(problem_py, candidate_py)
    assert list(ref.shape) == [64, 64] and torch.allclose(ref, new)
    assert (tmp_path / "solution" / "kernel.py").is_file()  # its sources, written for the child


def test_destination_passing_gets_its_outputs_allocated(tmp_path: Path) -> None:
    import torch

    from roofline.measuring.solexec import child_files, rows

    sol = json.loads((MATMUL / "solution_python.json").read_text())
    sol["spec"]["destination_passing_style"] = True  # run(A, B, C) writes C
    sol["sources"][0]["content"] = "import torch\n\ndef run(A, B, C):\n    torch.matmul(A, B, out=C)\n"
    (tmp_path / "dps.json").write_text(json.dumps(sol))
    ref, new = _outputs(*child_files(rows(MATMUL, tmp_path / "dps.json")[0], tmp_path / "files"))
    assert list(new.shape) == [128, 128] and torch.allclose(ref, new)


@pytest.mark.parametrize(("change", "words"), [
    (lambda s: s.update(definition="other"), "solves 'other', not 'custom_matmul'"),
    (lambda s: s["spec"].update(languages=["cuda_cpp"]), "only Python solutions run here"),
    (lambda s: s["spec"].update(entry_point="kernel.py"), "must be FILE.py::FUNCTION"),
    (lambda s: s["spec"].update(entry_point="main.py::run"), "entry_point's file 'main.py' is not among"),
    (lambda s: s["sources"][0].update(path="../kernel.py"), "must be relative, without '..'"),
], ids=["definition", "language", "entry point", "entry file", "source path"])
def test_a_broken_solution_is_one_line_on_load(tmp_path: Path, change: Any, words: str) -> None:
    from roofline.core.errors import UsageError
    from roofline.measuring.solexec import rows

    sol = json.loads((MATMUL / "solution_python.json").read_text())
    change(sol)
    (tmp_path / "s.json").write_text(json.dumps(sol))
    with pytest.raises(UsageError, match=words):
        rows(MATMUL, tmp_path / "s.json")


# -- the SOL-Score and fast_p
def test_the_sol_score_is_solexecbenchs() -> None:
    from roofline.analysis.sol import sol_score

    # NVIDIA/SOL-ExecBench src/sol_execbench/sol_score.py: S = 1 / (1 + (T_k - T_sol) / (T_b - T_sol));
    # "S=0.5 when T_k=T_b, S=1 when T_k=T_SOL"
    assert sol_score(8.0, 8.0, 1.0) == 0.5
    assert sol_score(1.0, 8.0, 1.0) == 1.0
    assert sol_score(4.0, 8.0, 1.0) == pytest.approx(0.7)  # 1 / (1 + 3 / 7)
    assert sol_score(15.0, 8.0, 1.0) == pytest.approx(1 / 3)  # 1 / (1 + 14 / 7)
    assert (sol_score(1.0, 1.0, 2.0), sol_score(3.0, 1.0, 2.0)) == (1.0, 0.0)  # no gap: at or below T_sol or not


def test_a_candidates_verdict_carries_its_sol_score_against_the_fused_bound() -> None:
    from roofline.analysis.sol import SpeedOfLight, judge

    s = SpeedOfLight(flops=0.0, op_bytes=1e9, read_bytes=6e8, written_bytes=4e8, dram_bytes_per_s=1e12,
                     unfused_s=2e-3, fused_compute_s=0.0)  # fused bound 1 GB / 1 TB/s = 1 ms
    v = judge(4e-3, s, hard=True, reference_s=8e-3)
    assert v.ok and v.speedup == 2.0 and v.sol_score == pytest.approx(0.7)  # 1 / (1 + (4 - 1) / (8 - 1))
    assert judge(8e-3, s, hard=True).sol_score is None  # the reference: no baseline to score against


def test_fast_p_counts_every_candidate_in_its_denominator() -> None:
    from roofline.analysis.sol import FAILED, OK, WRONG, Verdict, fast_p

    verdicts = [Verdict(OK, speedup=2.0), Verdict(OK, speedup=0.9), Verdict(OK, speedup=1.0), Verdict(WRONG),
                Verdict(FAILED)]
    assert fast_p(verdicts, 0.0) == 0.6  # three correct of five (KernelBench's fast_0)
    assert fast_p(verdicts, 1.0) == 0.2  # one correct and faster: 1.0x is not (speedup > p)
    assert fast_p([], 1.0) is None


def test_the_folder_table_shows_the_score_and_fast_p(h100: Any) -> None:
    from roofline.analysis.sol import SpeedOfLight, judge
    from roofline.capture.sol import ProblemResult, SolRun
    from roofline.measuring.untrusted import Timed
    from roofline.report.sol import fast_line, run_table
    from roofline.report.text import show

    s = SpeedOfLight(flops=0.0, op_bytes=1e9, read_bytes=6e8, written_bytes=4e8, dram_bytes_per_s=1e12,
                     unfused_s=2e-3, fused_compute_s=0.0)
    results = [ProblemResult(Path(f"{n}.py"), Path("c.py"), sol=s, dtype="fp32",
                             reference=Timed("reference", "cpu", [8e-3]), candidate=Timed("candidate", "cpu", [t]),
                             verdicts={"reference": judge(8e-3, s, hard=True),
                                       "candidate": judge(t, s, hard=True, reference_s=8e-3)})
               for n, t in (("a", 4e-3), ("b", 1.6e-2))]
    doc = SolRun(results, h100, timed=True).document()
    assert fast_line(doc.records) is not None and fast_line(doc.records).startswith(  # type: ignore[union-attr]
        "fast_0 100.0%, fast_1 50.0% of 2 candidates")
    table = run_table(doc)
    assert "SOL-Score" in [c.header for c in table.columns]
    # fused bound 1 ms, reference 8 ms: a at 4 ms 1 / (1 + 3 / 7) = 0.700, b at 16 ms 1 / (1 + 15 / 7) = 0.318
    assert [row[-2] for row in table.rows] == ["-", "0.700", "-", "0.318"]
    show(table)  # renders


# -- the command line, once capture/sol.py reads the format
def test_roofline_sol_reads_a_problem_folder_one_row_per_workload(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "sol", str(ROPE), "--gpu", "h100", "--json")
    assert code == 0, err
    records = json.loads(out)["records"]
    assert [r["op"] for r in records] == [f"black-forest-labs_FLUX.1-schnell_flux_rope_apply_rotation {a}" for a in
                                         ("batch_size=1 seq_len=128", "batch_size=4 seq_len=256",
                                          "batch_size=2 seq_len=211")]
    assert records[1]["params"]["axes"] == {"batch_size": 4, "seq_len": 256}
    # batch 4: q 4 x 256 x 24 x 128 x 2 B = 6,291,456 + cos and sin 2 x 256 x 128 x 2 B = 131,072 read
    assert records[1]["sol"]["read_bytes"] == 6_422_528


def test_a_broken_folder_is_exit_2_and_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = _copy(RMSNORM, tmp_path / "p", workloads=['{"uuid": "x", "axes": {}}'])
    code, out, err = run(capsys, "sol", str(folder), "--gpu", "h100")
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "workload.jsonl line 1: no value for the var axis 'batch_size'" in err


def test_timed_on_the_cpu_each_row_has_its_sol_score(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "sol", str(MATMUL), "--time", "--candidate", str(MATMUL / "solution_python.json"),
                         "--json")
    assert code == 0, err
    doc = json.loads(out)
    candidates = [r["sol"]["verdict"] for r in doc["records"] if r["variant"] == "candidate"]
    assert len(candidates) == 3 and all(v["status"] == "ok" for v in candidates), candidates
    # each its own score: 1 / (1 + (T_k - T_sol) / (T_b - T_sol)) from the row's own times
    for r in (r for r in doc["records"] if r["variant"] == "candidate"):
        ref = next(x for x in doc["records"] if x["op"] == r["op"] and x["variant"] == "reference")
        t_k, t_b, t_sol = r["sol"]["verdict"]["time_s"], ref["sol"]["verdict"]["time_s"], r["sol"]["fused_s"]
        # a reference at or under the bound (a CPU roof measured on a busy machine can read low): no gap to close,
        # 1 at the bound, else 0 (sol_score.py's rule)
        expected = (1.0 if t_k <= t_sol else 0.0) if t_b <= t_sol else 1 / (1 + (t_k - t_sol) / (t_b - t_sol))
        assert r["sol"]["verdict"]["sol_score"] == pytest.approx(expected)


def test_a_folder_of_problem_folders_is_one_run_with_a_solution_per_folder(tmp_path: Path) -> None:
    from roofline.core.errors import UsageError
    from roofline.measuring.solexec import is_problem, rows

    for src in (RMSNORM, MATMUL):
        _copy(src, tmp_path / "set" / src.name)
    assert is_problem(tmp_path / "set") and not is_problem(tmp_path)  # `set` holds problem folders; tmp_path one
    assert len(rows(tmp_path / "set")) == 17  # 3 + 14 workloads, folders in name order
    (tmp_path / "solutions").mkdir()
    with pytest.raises(UsageError, match=r"no NAME\.json or NAME\.py for any problem folder NAME here"):
        rows(tmp_path / "set", tmp_path / "solutions")
    (tmp_path / "solutions" / "custom_inputs_matmul.json").write_text((MATMUL / "solution_python.json").read_text())
    found = rows(tmp_path / "set", tmp_path / "solutions")
    assert [r.candidate is not None for r in found] == [True] * 3 + [False] * 14
