"""`roofline profile SCRIPT.py -- ARGS` on the CPU, on tests/scripts/tiny_mlp.py: a 2-layer MLP (64 -> 256 -> 64,
batch 8) with one forward in region "step"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, run, write

SCRIPT = str(ROOT / "tests" / "scripts" / "tiny_mlp.py")
# fc1: 2 x 8 x 64 x 256 = 262,144; relu 2,048; fc2: 2 x 8 x 256 x 64 = 262,144 (the bias adds, 8 x 256 = 2,048
# and 8 x 64 = 512, are the addmm records' extra_flops: on no roof)
MLP_FLOPS = 262_144 + 2_048 + 262_144


def profile_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:
    code, out, err = run(capsys, "profile", SCRIPT, "--json", *args)
    # stdout is the document alone: the script's own print ("tiny_mlp done") goes to stderr with --json
    return code, (json.loads(out) if code == 0 else {}), err


def test_the_region_is_profiled_with_module_paths_and_flops(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = profile_json(capsys)
    assert code == 0, err
    recs = doc["records"]
    assert {r["region"] for r in recs} == {"step"}  # the warm-up outside the region is not there
    assert sum(r["flops"] * r["count"] for r in recs) == MLP_FLOPS
    assert {r["module"] for r in recs if r["op"].startswith("aten::addmm")} == {"fc1", "fc2"}
    assert doc["profile"]["coverage"] == 1.0 and all(r["time_s"] > 0 for r in recs)
    assert "roofline: profiling" in err  # progress on stderr, the script's own output on stdout


def test_with_json_the_scripts_prints_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = profile_json(capsys)
    assert code == 0 and doc["profile"]["name"] == "tiny_mlp" and "tiny_mlp done" in err


def test_script_arguments_after_the_separator(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = profile_json(capsys, "--", "--batch", "16")
    assert code == 0, err
    assert sum(r["flops"] * r["count"] for r in doc["records"]) == 2 * MLP_FLOPS  # every term scales with batch


def test_analytic_run_without_data_gives_the_same_flops(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = profile_json(capsys, "--no-time", "--gpu", "h100")
    assert code == 0, err
    assert sum(r["flops"] * r["count"] for r in doc["records"]) == MLP_FLOPS
    assert all(r.get("time_s") is None for r in doc["records"]) and doc["device"]["spec_id"] == "h100-sxm"


def test_views_print_at_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "profile", SCRIPT, "--by", "module", "--top", "3")
    assert code == 0, err
    assert "tiny_mlp done" in out and "fc1" in out and "fc2" in out


def test_output_is_written_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    assert run(capsys, "profile", SCRIPT, "-o", str(out), "--json")[0] == 0
    assert json.loads(out.read_text())["profile"]["name"] == "tiny_mlp"
    code, _, err = run(capsys, "profile", SCRIPT, "-o", str(out))
    assert code == 1 and "exists" in err and "profiling" not in err  # refused before the script runs


def test_a_failing_script_shows_its_traceback_then_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "profile", SCRIPT, "--", "--fail")
    assert code == 1
    assert "Traceback" in err and "the model failed on purpose" in err and "tiny_mlp.py" in err
    assert "runpy" not in err and "roofline/capture" not in err  # the script's frames, not ours
    assert err.strip().splitlines()[-1] == "error: tiny_mlp.py raised ValueError (its traceback is above)"


@pytest.mark.parametrize(("args", "code", "message"), [
    (("--", "--exit", "3"), 1, "exited with status 3"),
    (("--region", "decode"), 2, "region 'decode' was never entered (regions entered: step)"),
    (("--by", "layer"), 2, "--by must be one of op, module, kernel"),
])
def test_bad_runs_are_one_line(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], code: int,
                               message: str) -> None:
    got, _, err = run(capsys, "profile", SCRIPT, *args)
    assert got == code and message in err and "Traceback" not in err


def test_a_script_that_does_not_exist(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "profile", str(tmp_path / "nope.py"))
    assert code == 2 and "no such script" in err


def test_a_folder_is_not_a_script(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Issue 30: `roofline profile examples/` said 'examples: no such script', though the folder is there; the
    API's profile_script says the same line."""
    from roofline.capture.script import profile_script
    from roofline.core.errors import UsageError

    code, _, err = run(capsys, "profile", str(tmp_path), "--", "--preset", "tiny")
    assert code == 2 and err.strip() == f"error: {tmp_path}: a folder, not a script"
    with pytest.raises(UsageError, match="a folder, not a script"):
        profile_script(tmp_path)


def test_a_script_that_is_not_python_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    s = write(tmp_path / "bad.py", "import torch\ndef f(:\n")
    code, _, err = run(capsys, "profile", str(s), "--no-time", "--gpu", "h200")
    assert code == 2, err
    assert err.strip().splitlines()[-1] == "error: bad.py: not valid Python: invalid syntax (line 2)"
    assert "Traceback" not in err and "runpy" not in err


def test_a_scripts_traceback_leaves_roofline_frames_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An error raised inside a torch call passes through roofline's tracing hooks (capture/trace.py): those
    frames say nothing about the user's error."""
    s = write(tmp_path / "cuda.py", "import torch\nx = torch.ones(3)\nx.cuda()\n")
    code, _, err = run(capsys, "profile", str(s), "--no-time", "--gpu", "h200")
    assert code == 1 and "cuda.py\", line 3" in err, err
    assert "roofline/capture" not in err and err.strip().splitlines()[-1].startswith("error: cuda.py raised")


def test_sys_exit_zero_keeps_the_profile(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = profile_json(capsys, "--", "--exit", "0", "--no-region")
    assert code == 0, err
    assert doc["profile"]["calls"] > 0  # the whole run, model construction included, when no region is marked


def test_a_script_in_a_file_written_here(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    s = write(tmp_path / "s.py", "import torch\nx = torch.ones(4, 4)\ny = (x @ x).sum()\n")
    code, out, err = run(capsys, "profile", str(s), "--json")
    assert code == 0, err
    ops = [r["op"] for r in json.loads(out)["records"]]
    assert any(o.startswith("aten::mm") for o in ops) and any(o.startswith("aten::sum") for o in ops)


def test_profile_refuses_bad_flags_before_importing_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    # each refusal is one line and exit 2 without the 3 s of `import torch` (a 2-core VM) that came first before
    code = ("import sys; from roofline.cli.app import main\n"
            "for args in (['profile', 'x.py', '--ncu-csv', 'n.csv'], ['profile', 'no_such_script.py'],\n"
            "             ['profile', 'x.py', '--counters', '--no-time']):\n"
            "    print(main(args), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.split("\n")[:3] == ["2 False"] * 3, out.stdout + out.stderr
    assert "add --counters" in out.stderr and "no such script" in out.stderr and "--no-time" in out.stderr


def test_a_missing_operator_database_is_refused_before_the_script_runs(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """New-user pass (issue 30): `--db missing.json` was refused after "profiling ... (the script's output
    follows)", as if the script had run; the file is checked with the target, before the script starts."""
    ran = tmp_path / "ran"
    script = write(tmp_path / "s.py", f"open({str(ran)!r}, 'w').close()\nimport torch\ntorch.ones(2).relu()\n")
    code, _, err = run(capsys, "profile", str(script), "--db", str(tmp_path / "missing.json"))
    assert code == 2 and "no such operator database" in err
    assert "profiling" not in err and not ran.exists()


def test_the_first_line_says_analytic_when_the_gpu_is_not_here(capsys: pytest.CaptureFixture[str]) -> None:
    """New-user pass (issue 30, 2026-12-02): `--gpu h200` on a machine without one said "profiling ... (timed;"
    and then "note: analytic only": the first line now says what the run is."""
    code, _, err = run(capsys, "profile", SCRIPT, "--gpu", "h200")
    assert code == 0 and "(analytic; the script's output follows)" in err and "(timed;" not in err
    code, _, err = run(capsys, "profile", SCRIPT)
    assert code == 0 and "(timed; the script's output follows)" in err
