"""The public Python API (`roofline.measure`, `roofline.analyze`, `roofline.occupancy`, the lazy names of
`roofline/__init__.py`): dtypes inferred from what the kernel returns or given as torch dtypes, GPUs by name,
one exception type. Runs on the CPU, against the seeded CPU roof of conftest.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from helpers import ROOT, run

import roofline
from roofline.analysis.compare import compare_op
from roofline.analysis.occupancy import carveouts_kib, occupancy, sweep
from roofline.ceilings.specs import resolve
from roofline.core.dtypes import DTYPES, get_dtype
from roofline.core.errors import RooflineError, UsageError
from roofline.measuring.runner import _measure_dtype, infer_dtype, measure_on
from roofline.measuring.target import resolve_target
from roofline.ops import make

# Small enough that one call takes microseconds on any CPU; the sampling budget is cut to keep tests fast.
N = 64
REP_S = 0.005


# ---------------------------------------------------------------- dtypes
@pytest.mark.parametrize(("given", "name"), [
    (torch.float64, "fp64"), (torch.float32, "fp32"), (torch.float16, "fp16"), (torch.bfloat16, "bf16"),
    (torch.float8_e4m3fn, "fp8"), (torch.float8_e5m2, "fp8"), (torch.int8, "int8"),
    ("float32", "fp32"), ("half", "fp16"), ("BF16", "bf16"), (DTYPES["tf32"], "tf32"),
])
def test_a_dtype_is_a_name_or_a_torch_dtype(given: object, name: str) -> None:
    assert get_dtype(given).name == name


@pytest.mark.parametrize(("given", "needle"), [
    (torch.int64, "unknown dtype 'torch.int64'"),  # a torch dtype with no roof
    (32, "not int 32"),
    (None, "not NoneType"),
])
def test_anything_else_is_one_usage_error(given: object, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        get_dtype(given)


def test_the_dtype_is_the_first_floating_point_output() -> None:
    x32, x16, i64 = torch.ones(2), torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.int64)
    assert infer_dtype(x32)[0].name == "fp32"
    # depth first, in order; integer tensors are skipped (their arithmetic has no FLOP roof here)
    dt, where = infer_dtype({"ids": i64, "out": [x16, x32]})
    assert dt.name == "fp16" and where == "output['out'][0] (float16)"
    for nothing in (None, i64, (i64, 3), "text"):
        with pytest.raises(RooflineError, match="pass dtype="):
            infer_dtype(nothing)


# ---------------------------------------------------------------- measure
def test_measure_infers_fp32_on_the_cpu_and_says_so() -> None:
    """An fp32 `a @ b` is judged against the CPU's FP32 roof (1e11 in conftest's seed), not fp16's (2e10)."""
    a, b = torch.randn(N, N), torch.randn(N, N)
    rec = roofline.measure(lambda: a @ b, flops=2 * N**3, bytes=3 * a.nbytes, rep_s=REP_S)
    assert rec.dtype == "fp32" and rec.compute_pipe == "cpu_fp32" and rec.peak_flops_per_s == 1e11
    assert rec.notes[0].startswith("dtype fp32: from the output (float32)")
    assert rec.timed and rec.clocks is None and rec.sm_clock_mhz is None  # the CPU has no SM clock


def test_measure_takes_a_torch_dtype_and_then_does_not_infer() -> None:
    a = torch.randn(N, N)
    rec = roofline.measure(lambda: a @ a, flops=2 * N**3, bytes=3 * a.nbytes, dtype=torch.bfloat16, rep_s=REP_S)
    assert rec.dtype == "bf16" and rec.compute_pipe == "cpu_bf16"
    assert not any(n.startswith("dtype") for n in rec.notes)
    # a given dtype is used as it is: the callable is not run to find one
    assert _measure_dtype(lambda: pytest.fail("called"), torch.float16, "k") == (DTYPES["fp16"], [])


def test_measure_refuses_what_it_cannot_place() -> None:
    with pytest.raises(RooflineError, match="returns no floating-point tensor"):
        roofline.measure(lambda: None, flops=1, bytes=8)
    with pytest.raises(RooflineError, match="unknown dtype"):
        roofline.measure(lambda: torch.ones(1), flops=1, bytes=8, dtype=torch.complex64)
    with pytest.raises(RooflineError, match="bytes must be > 0"):  # arguments first: nothing ran
        roofline.measure(lambda: pytest.fail("called"), flops=1, bytes=0)


def test_measure_on_infers_too() -> None:
    target = resolve_target(device="cpu")
    x = torch.randn(N, N, dtype=torch.float64)
    rec = measure_on(target, lambda: x + x, flops=N * N, bytes=3 * x.nbytes, rep_s=REP_S)
    assert rec.dtype == "fp64" and rec.compute_pipe == "cpu_fp64"


# ---------------------------------------------------------------- analyze
def test_analyze_is_the_analyze_command(capsys: pytest.CaptureFixture[str]) -> None:
    rec = roofline.analyze("gemm", m=4096, dtype=torch.bfloat16, gpu="h100", time=False)
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--dtype", "bf16", "--gpu", "h100", "--no-time",
                       "--json")
    assert code == 0
    assert rec.to_dict() == json.loads(out)["records"][0]
    # 2 x 4096^3 FLOP at the H100 SXM's dense BF16 peak, 989.4 TFLOP/s (specs/h100-sxm.toml)
    assert rec.bound == "compute" and rec.roofline_time_s == pytest.approx(2 * 4096**3 / 989.4e12)


def test_analyze_times_when_a_device_is_there() -> None:
    rec = roofline.analyze("relu", numel=4096, rep_s=REP_S)
    assert rec.timed and rec.dtype == "fp32" and rec.device_kind == "cpu"  # the CLI's default on the CPU
    assert rec.timing is not None and rec.timing.method == "cpu-perf-counter"
    assert rec.advice is not None  # with_advice ran, as in the command


def test_analyze_on_another_gpu_is_analytic_and_says_why() -> None:
    rec = roofline.analyze("gemm", m=256, gpu="a100")
    assert not rec.timed and rec.dtype == "fp16" and rec.gpu == "a100-sxm4-80gb"
    assert any("analytic only" in n for n in rec.notes)


def test_analyze_keeps_the_targets_messages_as_the_command_does(capsys: pytest.CaptureFixture[str]) -> None:
    """Another GPU's spec with timing asked for: the record says why nothing was timed, the command prints it
    too, and both give the same record (`roofline.session.place_ops`)."""
    rec = roofline.analyze("gemm", m=256, gpu="a100")
    code, out, err = run(capsys, "analyze", "gemm", "--m", "256", "--gpu", "a100", "--json")
    assert code == 0 and rec.notes[-1] in err
    assert rec.to_dict() == json.loads(out)["records"][0]


def test_analyze_takes_a_built_operator() -> None:
    op = make("rmsnorm", rows=8, cols=512)
    assert roofline.analyze(op, gpu="h200", time=False).key() == \
        roofline.analyze("rmsnorm", rows=8, cols=512, gpu="h200", time=False).key()


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"op": "nosuch"}, "unknown operator 'nosuch'"),
    ({"op": "gemm", "q": 3}, "unknown parameter(s) q"),
    ({"op": "gemm", "m": 0}, "must be >= 1"),
    ({"op": "gemm", "dtype": "fp7"}, "unknown dtype 'fp7'"),
    ({"op": "gemm", "timer": "fast"}, "timer must be one of"),
    ({"op": "gemm", "roof": "best"}, "roof must be one of"),
    ({"op": "gemm", "gpu": "h10"}, "unknown GPU 'h10' (closest: h100"),
    ({"op": make("gemm", m=8), "m": 16}, "already built"),
    ({"op": 3}, "operator name"),
])
def test_analyze_errors_are_one_exception_type(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(RooflineError) as info:
        roofline.analyze(time=False, **kwargs)  # type: ignore[arg-type]
    assert needle in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------- GPUs by name
def test_occupancy_takes_a_spec_name() -> None:
    spec = resolve("h100")
    by_name = occupancy("h100", 256, 64, "48KB")
    assert by_name == occupancy(spec, 256, 64, 48 * 1024)
    # registers: 65536 / (64 x 32) = 32 warps = 4 blocks of 8; shared memory: 233472 / (49152 + 1024) = 4
    assert by_name.active_blocks_per_sm == 4 and by_name.occupancy == 0.5
    assert [o.active_blocks_per_sm for o in sweep("h100", "registers", values=[32, 64])] == [8, 4]
    assert carveouts_kib("h100") == carveouts_kib(spec)
    with pytest.raises(UsageError, match="unknown GPU 'h10'"):
        occupancy("h10", 256, 64, 0)


def test_compare_takes_names_and_torch_dtypes() -> None:
    c = compare_op(make("gemm", m=1024), torch.bfloat16, "h100,h200", dbs={})  # one string: two GPUs, not nine
    assert [r.gpu for r in c.rows] == ["h100-sxm", "h200-sxm"] and c.dtype == "bf16"
    assert [r.gpu for r in compare_op(make("gemm", m=1024), "fp16", [resolve("a100"), "l4"]).rows] == \
        ["a100-sxm4-80gb", "l4"]


# ---------------------------------------------------------------- the lazy names
def test_every_public_name_loads() -> None:
    for name in roofline.__all__:
        assert getattr(roofline, name) is not None
    assert set(roofline.__all__) <= set(dir(roofline))
    assert roofline.RooflineError is RooflineError and issubclass(UsageError, roofline.RooflineError)
    assert roofline.UsageError is UsageError and roofline.GPUSpec is type(resolve("h100"))
    with pytest.raises(AttributeError):
        roofline.nosuch  # noqa: B018


def test_measure_and_analyze_are_the_facades_side_by_side() -> None:
    import roofline.api

    assert roofline.api.__all__ == ["analyze", "measure"]
    assert roofline.measure is roofline.api.measure and roofline.analyze is roofline.api.analyze


def test_the_package_ships_its_type_hints() -> None:
    """PEP 561: the marker is in the package, and the build's package-data ships it."""
    from roofline.core.tomlfile import read_toml

    assert (ROOT / "roofline" / "py.typed").is_file()
    data = read_toml(ROOT / "pyproject.toml", "pyproject.toml", RooflineError)
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["roofline"]


def test_type_checkers_see_every_public_name() -> None:
    """roofline/__init__.py loads its names on first use (`__getattr__`), which a type checker cannot follow:
    its TYPE_CHECKING block imports each one from the module `_API` names."""
    import ast

    tree = ast.parse((ROOT / "roofline" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    seen = {a.asname or a.name: n.module for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert seen == roofline._API


def test_importing_roofline_and_its_analytic_names_loads_no_torch() -> None:
    code = ("import sys, roofline\n"
            "roofline.occupancy('h100', 256, 32, 0); roofline.read_document; roofline.RooflineError\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'matplotlib')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
