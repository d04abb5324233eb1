"""The Python API's bad arguments: each one UsageError (docs/api.md, "Errors"), raised before anything runs,
that names the argument as Python spells it (`m`, not the command line's `--m`), checked in one place
(`roofline.core.validate`)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from helpers import ROOT, run

import roofline
from roofline.core import validate
from roofline.core.errors import UsageError

A = torch.randn(8, 8)
SOL = ROOT / "suites" / "sol"  # the kernel-benchmark problems (docs/sol.md)


def _never() -> Any:
    pytest.fail("the callable ran although an argument was bad")


@pytest.mark.parametrize(("call", "needle"), [
    (lambda: roofline.analyze("gemm", m=64, gpu=100, time=False), "gpu must be a non-empty string or a GPUSpec"),
    (lambda: roofline.analyze("gemm", m=64, device=0, time=False), "device must be a non-empty string"),
    (lambda: roofline.analyze("gemm", m=64, rep_s=0, time=False), "analyze: rep_s must be > 0, got 0"),
    (lambda: roofline.measure(_never, flops="1e9", bytes=100), "measure: flops must be a number, got '1e9'"),
    (lambda: roofline.measure(_never, flops=None, bytes=100), "measure: flops must be a number, got None"),
    (lambda: roofline.measure(_never, flops=1, bytes="8"), "measure: bytes must be a number"),
    (lambda: roofline.measure(_never, flops=float("nan"), bytes=8), "flops must be a finite number"),
    (lambda: roofline.measure(A, flops=1, bytes=100), "measure: fn must be a callable, got a tensor"),
    (lambda: roofline.measure(_never, flops=1, bytes=100, ref=A), "measure: ref must be a callable"),
    (lambda: roofline.measure(_never, flops=1, bytes=100, rep_s=-1), "measure: rep_s must be > 0, got -1"),
    (lambda: roofline.measure(_never, flops=1, bytes=100, bytes_written=200), "bytes_written must be between"),
    (lambda: roofline.profile(42), "profile: fn must be a callable, got an int"),
    (lambda: roofline.profile(_never, warmup=-1), "profile: warmup must be >= 0"),
    (lambda: roofline.analyze("gemm", m=0, time=False), "gemm: m must be >= 1, got 0"),
    (lambda: roofline.analyze("attention", head_dim="x", time=False), "attention: head_dim must be an integer"),
    (lambda: roofline.analyze("rope", head_dim=63, time=False), "rope: head_dim must be even"),
    (lambda: roofline.analyze("attention", heads=8, kv_heads=3, time=False), "kv_heads 3 must divide heads 8"),
    # the new-user pass of issue 30: each of these was accepted, or raised a raw TypeError/AttributeError
    (lambda: roofline.analyze("gemm", m=64, time="no"), "analyze: time must be True or False, got 'no'"),  # timed
    (lambda: roofline.analyze("attention", causal="yes", time=False), "attention: causal must be True or False"),
    (lambda: roofline.analyze("conv2d", bias=1, time=False), "conv2d: bias must be True or False, got 1"),
    (lambda: roofline.measure(_never, flops=1, bytes=100, params=[1]), "measure: params must be a dict"),
    (lambda: roofline.measure(_never, flops=1, bytes=100, name=5), "measure: name must be a non-empty string"),
    (lambda: roofline.measure(_never, flops=1, bytes=100, warm_l2="yes"), "measure: warm_l2 must be True or False"),
    (lambda: roofline.profile(_never, regions="fwd"), "profile: regions is a list of region names, e.g. "
                                                       "regions=['fwd']"),  # it looked for regions 'f', 'w', 'd'
    (lambda: roofline.profile(_never, time="no"), "profile: time must be True or False"),
    (lambda: roofline.advise("gemm", "h100"), "advise: record must be a roofline.Record"),
    (lambda: roofline.read_document(5), "read_document: path must be a path"),
    (lambda: roofline.write_document({"records": []}, "x.json"), "write_document: doc must be a roofline.Document"),
    (lambda: roofline.write_document(roofline.Document(device={}, records=[1]), "x.json"),
     "write_document: record 0 is an int, not a roofline.Record"),
    (lambda: roofline.sol(5), "sol: path must be a path"),
    # the second new-user pass: a database given as a number raised TypeError (expected str, bytes or os.PathLike)
    (lambda: roofline.analyze("add", numel=1024, gpu="h200", time=False, db=5), "db must be a path"),
    (lambda: roofline.profile(_never, gpu="h200", time=False, db=5), "db must be a path"),
    (lambda: roofline.sol(SOL, dtype="fp9"), "sol: dtype must be one of"),
    (lambda: roofline.sol(SOL, candidate="x.py"), "candidate= is timed: pass time=True"),
    # the third new-user pass: m=None (a parameter whose default is a number) raised a bare AssertionError
    (lambda: roofline.analyze("gemm", m=None, time=False), "gemm: m must be an integer, got None"),
])
def test_a_bad_argument_is_one_usage_error_in_python_terms(call: Any, needle: str, tmp_path: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a refused write_document writes nothing
    with pytest.raises(UsageError) as info:
        call()
    assert list(tmp_path.iterdir()) == []
    msg = str(info.value)
    assert needle in msg and "\n" not in msg and "--" not in msg


@pytest.mark.parametrize(("call", "message"), [
    # the third new-user pass: these named the command line's --energy and --roof measured
    (lambda: roofline.analyze("gemm", m=64, energy=True),
     "energy=True needs an NVIDIA GPU with an energy counter (NVML): the device 'cpu' has none"),
    (lambda: roofline.measure(_never, flops=1, bytes=100, dtype="fp32", energy=True),
     "energy=True needs an NVIDIA GPU with an energy counter (NVML): the device 'cpu' has none"),
    (lambda: roofline.analyze("gemm", m=64, gpu="h100", roof="measured", time=False),
     "roof='measured': no calibration for NVIDIA H100 SXM5 80GB here (run `roofline calibrate`)"),
])
def test_an_option_the_device_cannot_serve_is_named_as_python_sets_it(call: Any, message: str) -> None:
    with pytest.raises(roofline.RooflineError) as info:  # conftest: no GPU, no calibration of an H100
        call()
    assert str(info.value) == message


def test_a_region_needs_a_name() -> None:
    with pytest.raises(UsageError, match="region: name must be a non-empty string"):
        with roofline.region(5):  # type: ignore[arg-type]
            pass


def test_the_command_line_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", "attention", "--head-dim", "0", "--gpu", "h100", "--no-time")
    assert code == 2 and "--head-dim must be >= 1" in err
    assert validate.arg_name("head_dim") == "head_dim"  # the command line's naming ends with its command


def test_an_integer_kernel_on_the_cpu_is_told_what_works() -> None:
    """The inferred-dtype refusal no longer sends a CPU user to dtype='int8', which the CPU cannot place; the
    refusal of int8 there says what can."""
    ints = torch.ones(4, dtype=torch.int32)
    with pytest.raises(UsageError) as info:
        roofline.measure(lambda: ints + ints, flops=4, bytes=48)
    assert "on a GPU" in str(info.value)
    with pytest.raises(UsageError) as info:
        roofline.measure(lambda: ints + ints, flops=4, bytes=48, dtype=torch.int8, rep_s=0.001)
    msg = str(info.value)
    assert "no CPU rate for int8" in msg and "give dtype one of those" in msg and "fp32" in msg


def test_an_existing_file_is_kept_and_the_message_says_force_as_python_spells_it(tmp_path: Any) -> None:
    # write_document's refusal said "(pass --force to replace it)", a flag no Python caller has
    path = tmp_path / "mine.json"
    path.write_text("{}")
    with pytest.raises(roofline.RooflineError) as info:
        roofline.write_document(roofline.Document(device={}, records=[]), path)
    assert "force=True" in str(info.value) and "--force" not in str(info.value) and path.read_text() == "{}"
