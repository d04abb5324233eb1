"""Suite files (roofline.analysis.suite): entries validated on load, CPU and GPU shapes and dtypes; a suite's
run (roofline.session.place_ops) places each entry as `roofline analyze` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import SUITES, run, write

from roofline.analysis.suite import load_suite
from roofline.core.errors import UsageError

GOOD = """
[suite]
name = "tiny"

[[entry]]
op = "gemm"
params = { m = 256 }
gpu_params = { m = 4096 }
gpu_dtype = "bf16"
threshold = "median:8%"

[[entry]]
op = "softmax"
dtype = "fp16"
"""


def test_entries_give_cpu_and_gpu_shapes_and_dtypes(tmp_path: Path) -> None:
    s = load_suite(write(tmp_path / "s.toml", GOOD))
    gemm, softmax = s.entries
    assert s.name == "tiny" and gemm.threshold == "median:8%"
    assert gemm.operator(False).params()["m"] == 256 and gemm.operator(True).params()["m"] == 4096
    assert (gemm.dtype_for(False), gemm.dtype_for(True)) == ("fp32", "bf16")  # defaults: fp32 on the CPU
    assert (softmax.dtype_for(False), softmax.dtype_for(True)) == ("fp16", "fp16")  # dtype used on both


@pytest.mark.parametrize(("body", "match"), [
    ("[suite]\nname = 'x'\n", "at least one"),
    ("[[entry]]\nparams = { m = 2 }\n", "needs op"),
    ("[[entry]]\nop = 'gemm'\nshape = 2\n", "unknown key"),
    ("[[entry]]\nop = 'gemm'\nparams = { m = -1 }\n", "entry 1"),
    ("[[entry]]\nop = 'no_such_op'\n", "entry 1"),
    ("[[entry]\nop = 'gemm'\n", "malformed TOML"),
    # the new-user pass of issue 30: a bad dtype was named without its file and entry; a quoted "false" was True
    ("[[entry]]\nop = 'gemm'\ndtype = 'fp9'\n", r"bad.toml: entry 1: unknown dtype 'fp9'"),
    ("[[entry]]\nop = 'gemm'\ngpu_dtype = 'bf17'\n", r"bad.toml: entry 1: unknown dtype 'bf17'"),
    ("[[entry]]\nop = 'gemm'\ntensor_cores = 'false'\n", r"entry 1: tensor_cores must be true or false \(a TOML"),
    ("[[entry]]\nop = 'attention'\nparams = { causal = 'yes' }\n", "entry 1: attention: causal must be True or False"),
])
def test_bad_suites_fail_on_load_with_one_line(tmp_path: Path, body: str, match: str) -> None:
    with pytest.raises(UsageError, match=match) as info:
        load_suite(write(tmp_path / "bad.toml", body))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("path", sorted(SUITES.glob("*.toml")), ids=lambda p: p.name)
def test_shipped_suites_load(path: Path) -> None:
    assert load_suite(path).entries


def test_entries_that_coincide_on_one_device_are_refused(tmp_path: Path) -> None:
    # the same CPU stand-in for two GPU shapes: two records `check` could not tell apart on the CPU
    body = ("[[entry]]\nop = 'gemm'\nparams = { m = 256 }\ngpu_params = { m = 4096 }\n\n"
            "[[entry]]\nop = 'gemm'\nparams = { m = 256 }\ngpu_params = { m = 8192 }\n")
    with pytest.raises(UsageError, match="entries 1 and 2 are the same on the CPU"):
        load_suite(write(tmp_path / "dup.toml", body))
    gpu_dup = body.replace("m = 8192", "m = 4096").replace("params = { m = 256 }\ngpu_params = { m = 4096 }\n\n[[",
                                                           "params = { m = 128 }\ngpu_params = { m = 4096 }\n\n[[")
    with pytest.raises(UsageError, match="entries 1 and 2 are the same on a GPU"):
        load_suite(write(tmp_path / "dup_gpu.toml", gpu_dup))


def test_a_suite_keeps_the_targets_messages_as_notes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`roofline run` places its entries as `roofline analyze` places an operator (`roofline.session.place_ops`):
    what the target says (here: the H100's roof cannot be timed on this machine) is printed once and kept in
    every record's notes, where a suite used to drop it."""
    suite = write(tmp_path / "s.toml", GOOD)
    code, out, err = run(capsys, "run", str(suite), "--gpu", "h100", "--json")
    assert code == 0, err
    said = "analytic only: the NVIDIA H100 SXM5 80GB roof cannot be timed on this machine (no such GPU here)"
    assert err.count(said) == 1
    records = json.loads(out)["records"]
    assert [r["op"] for r in records] == ["gemm", "softmax"] and not any(r.get("time_s") for r in records)
    assert all(r["notes"][-1] == said for r in records)
    assert records[0]["dtype"] == "bf16" and records[1]["dtype"] == "fp16"  # the GPU's dtypes: gpu_dtype, dtype
    assert [r["suite_entry"] for r in records] == [1, 2] and records[0]["threshold"] == "median:8%"


def test_a_suite_entry_is_the_analyze_commands_record(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """One use case for both commands: the suite's record of an entry is `analyze`'s record of that shape, bar
    the suite's own fields (its entry's number and threshold)."""
    suite = write(tmp_path / "s.toml", GOOD)
    _, out, _ = run(capsys, "run", str(suite), "--gpu", "a100", "--json")
    from_suite = json.loads(out)["records"][0]
    _, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--dtype", "bf16", "--gpu", "a100", "--json")
    (from_analyze,) = json.loads(out)["records"]
    assert {k: v for k, v in from_suite.items() if k not in ("suite_entry", "threshold")} == from_analyze


def test_a_parameter_beside_op_is_pointed_to_params(tmp_path: Path) -> None:
    """A new user's first suite put `m = 4096` beside `op`: the error said only 'unknown key(s) m'."""
    path = write(tmp_path / "s.toml", "[[entry]]\nop = 'gemm'\nm = 4096\n")
    with pytest.raises(UsageError) as err:
        load_suite(path)
    assert "unknown key(s) m (an operator's parameters go in params = {...}); an entry takes dtype," in str(err.value)
    with pytest.raises(UsageError, match=r"unknown key\(s\) shape; an entry takes"):  # no parameter of gemm
        load_suite(write(tmp_path / "t.toml", "[[entry]]\nop = 'gemm'\nshape = 2\n"))
