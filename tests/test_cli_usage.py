"""Small command-line usage points: operator names forgiven, a script's own exit message, an empty profile,
honest huge counts, sizes with units, --timer's one list, a suite entry named in its refusal, --repeat's
notes said once and its temporary files not shown."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import ROOT, run, write

from roofline.cli import run_many as run_cli
from roofline.core.errors import RooflineError
from roofline.core.format import count
from roofline.measuring.choices import METHODS, TIMER_HELP


def test_a_mistyped_operator_gets_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", "gemmm", "--m", "4", "--gpu", "h100", "--no-time")
    assert code == 2 and "unknown operator 'gemmm' (closest: gemm" in err


def test_an_operator_name_is_case_insensitive(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "GEMM", "--m", "64", "--gpu", "h100", "--no-time", "--json")
    assert code == 0 and json.loads(out)["records"][0]["op"] == "gemm"


def test_a_scripts_text_exit_is_its_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = write(tmp_path / "needs.py", 'import sys\nsys.exit("this example needs a GPU")\n')
    code, _, err = run(capsys, "profile", str(script))
    assert code == 1 and "error: needs.py: this example needs a GPU" in err and "status" not in err


def test_a_script_without_torch_ops_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = write(tmp_path / "plain.py", 'print("hello")\n')
    code, out, err = run(capsys, "profile", str(script))
    assert code == 1 and "plain.py ran no torch operator: nothing to profile" in err and "│" not in out


def test_a_step_without_torch_ops_is_refused_by_the_api_as_by_the_command() -> None:
    """Issue 30: `roofline.profile(lambda: 3)` returned an empty Profile where the command says 'ran no torch
    operator: nothing to profile' (exit 1). A `with` block that runs none still gives an empty Profile
    (test_capture_models' in-place views rely on it)."""
    import roofline

    with pytest.raises(RooflineError) as caught:
        roofline.profile(lambda: 3)
    assert type(caught.value) is RooflineError
    assert str(caught.value) == "profile: fn ran no torch operator: nothing to profile"
    with roofline.profile(name="empty") as prof:
        pass
    assert prof.records == []


def test_a_count_a_float_cannot_hold_reads_as_rounded(capsys: pytest.CaptureFixture[str]) -> None:
    assert count(2**40) == "1,099,511,627,776"
    assert count(2e60) == "about 2e+60"
    # the largest size torch holds (2**63 - 1, validate.MAX_WHOLE), n and k following m: 2 * m**3 = 1.56928e+57
    code, out, _ = run(capsys, "analyze", "gemm", "--m", str(2**63 - 1), "--gpu", "h100", "--no-time")
    assert code == 0 and "about 1.56928e+57" in out and "1,569,275" not in out  # not the exact-looking digits
    code, _, err = run(capsys, "analyze", "gemm", "--m", "99999999999999999999", "--gpu", "h100", "--no-time")
    assert code == 2 and "--m must be <= 9223372036854775807" in err  # past it: no tensor's size (issue 52)


def test_a_collectives_size_takes_units(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "all_reduce", "--bytes", "256MiB", "--gpu", "h100", "--no-time", "--json")
    assert code == 0 and json.loads(out)["records"][0]["params"]["bytes"] == 256 * 2**20
    code, out, _ = run(capsys, "analyze", "all_reduce", "--bytes", "1MiB:4MiB:x2", "--gpu", "h100", "--no-time",
                       "--json")
    assert code == 0 and [r["params"]["bytes"] for r in json.loads(out)["records"]] == [2**20, 2**21, 2**22]


def test_timer_help_and_error_list_the_same_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert all(m in TIMER_HELP for m in METHODS)
    code, _, err = run(capsys, "analyze", "gemm", "--timer", "nope", "--gpu", "h100", "--no-time")
    assert code == 2 and all(m in err for m in METHODS)


def test_a_failing_suite_entry_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline.measuring import runner

    def no_memory(need: float, device: str, what: str) -> None:
        raise RooflineError(f"{what} needs about 9.0 GiB but {device} has 1.0 GiB free: use a smaller shape")

    monkeypatch.setattr(runner, "guard_memory", no_memory)
    suite = write(tmp_path / "s.toml", '[suite]\nname = "s"\n\n[[entry]]\nop = "relu"\nparams = { numel = 64 }\n')
    code, _, err = run(capsys, "run", str(suite))
    assert code == 1 and "entry 1 (relu fp32): relu fp32 needs about 9.0 GiB" in err


def test_repeat_says_each_note_once_and_hides_its_temporary_files(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    child = write(tmp_path / "child.py", "import sys\nsys.stderr.write('note: same every run\\n')\n"
                  "sys.stderr.write('note: results written to ' + sys.argv[1] + '/run1.json\\n')\n"
                  "sys.stderr.write('progress\\n')\n")
    seen: set[str] = set()
    for _ in range(3):
        assert run_cli._run_child([__import__("sys").executable, str(child), str(tmp_path)], seen,
                                  hide=str(tmp_path)) == 0
    err = capsys.readouterr().err
    assert err.count("note: same every run") == 1 and str(tmp_path) not in err and err.count("progress") == 3


def test_the_readme_does_not_count_the_operators() -> None:
    assert "18 operators" not in (ROOT / "README.md").read_text()
    assert "do not record their command line" not in (ROOT / "docs" / "report.md").read_text()


@pytest.mark.parametrize("flag", ["--json", "--junit", "--markdown", "--html"])
def test_a_check_report_never_replaces_the_documents_it_reads(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                              flag: str) -> None:
    # `check res.json --baseline base.json --json base.json` (--json prints the document in analyze and profile,
    # here it is a report's path) replaced the baseline with the check's JSON report, and exited 0
    res, base = tmp_path / "res.json", tmp_path / "base.json"
    for p in (res, base):
        p.write_bytes((ROOT / "tests" / "data" / "kernels_h200.json").read_bytes())
    before = {p: p.read_bytes() for p in (res, base)}
    for target in (base, res):
        code, _, err = run(capsys, "check", str(res), "--baseline", str(base), flag, str(target))
        assert code == 2 and f"{flag} {target}" in err and "never replaces" in err, err
    assert {p: p.read_bytes() for p in (res, base)} == before


def test_a_scripts_option_before_the_separator_is_told_where_it_goes(capsys: pytest.CaptureFixture[str]) -> None:
    # `roofline profile examples/train_step.py --preset tiny` said only "No such option: --preset"
    code, _, err = run(capsys, "profile", str(ROOT / "examples" / "train_step.py"), "--no-time", "--preset", "tiny")
    assert code == 2 and "No such option: --preset" in err and "go after --" in err
    code, _, err = run(capsys, "analyze", "gemm", "--preset", "tiny")  # no script there: no such hint
    assert code == 2 and "No such option" in err and "go after --" not in err


@pytest.mark.parametrize("args", [("calibrate", "--device", "cuda:x"), ("calibrate", "--energy", "--device", "cuda:x"),
                                  ("calibrate", "--device", "cuda"), ("calibrate", "--device", "cuda:1")])
def test_calibrate_refuses_a_device_this_machine_lacks_as_analyze_does(args: tuple[str, ...],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # the third new-user pass: `cuda:x` was a ValueError traceback, and a missing GPU exit 1 (docs/guide.md: 2)
    code, _, err = run(capsys, *args)  # conftest hides every GPU
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(("error: unknown device 'cuda:x' (use cpu, cuda or cuda:N)",
                           f"error: --device {args[-1]}: no NVIDIA GPU found on this machine")), err


class _HeadPipe(io.StringIO):
    """stdout piped into `head`: the reader leaves once it has seen the command list, and every later write
    meets a closed pipe."""

    def write(self, text: str) -> int:
        if "Commands" in self.getvalue():
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_groups_help_piped_into_head_is_no_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    # the third new-user pass: `roofline analyze | head` (the group's help, no operator given) ended in a
    # BrokenPipeError traceback from the help's last newline
    monkeypatch.setattr("sys.stdout", _HeadPipe())
    from roofline.cli.app import main

    assert main(["analyze"]) == 0


@pytest.mark.parametrize(("args", "flag", "least", "value"), [
    (["run", "suites/smoke.toml"], "--repeat", 1, "0"),
    (["run", "suites/smoke.toml"], "--repeat", 1, "two"),
    (["profile", "examples/llm_gqa.py"], "--top", 1, "0"),
    (["profile", "examples/llm_gqa.py"], "--depth", 1, "1.5"),
    (["profile", "examples/llm_gqa.py"], "--tokens", 1, "0"),
    (["sol", "suites/sol"], "--scale", 1, "0"),
    (["sol", "suites/sol"], "--top", 1, "0"),
    (["import-ncu", "tests/data/ncu_forward.csv"], "--top", 0, "-1"),
])
def test_a_whole_number_option_below_its_minimum_reads_as_threads_does(
        capsys: pytest.CaptureFixture[str], args: list[str], flag: str, least: int, value: str) -> None:
    """Issue 30: `run --repeat 0` and `profile --top 0` said typer's "Invalid value for '--repeat': Input should
    be greater than or equal to 1"; every whole-number option with a minimum says the line --threads says, exit
    2, before anything runs."""
    code, _, err = run(capsys, *[str(ROOT / a) if a.startswith(("suites/", "examples/", "tests/")) else a
                                 for a in args], f"{flag}={value}")
    assert code == 2, err
    assert err.strip() == f"error: {flag} must be a whole number of at least {least}, got {value}"


@pytest.mark.parametrize(("labels", "said"), [(["a"], "once"), (["a", "b", "c"], "3 times")])
@pytest.mark.parametrize("command", ["report", "plot"])
def test_a_label_count_that_does_not_match_the_files_is_said_in_words(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, labels: list[str], said: str) -> None:
    """Issue 30: `report a.json b.json --label a` said '--label given 1 times for 2 results files'."""
    data = ROOT / "tests" / "data"
    chart = tmp_path / ("r.html" if command == "report" else "r.png")
    code, _, err = run(capsys, command, str(data / "results_analytic.json"), str(data / "results_h200.json"),
                       *(a for label in labels for a in ("--label", label)), "-o", str(chart))
    assert code == 2, err
    assert err.strip() == f"error: --label given {said} for 2 results files"


@pytest.mark.parametrize("command", ["analyze", "profile"])
def test_a_first_cpu_calibration_is_said_once(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """Issue 30: with no cached CPU calibration, `analyze` said "measured this CPU's roofline (cached in ...)"
    twice, as a table note and on stderr (profile too, in its header). Every command says a target's messages
    on stderr (run and sol only there), so analyze's table and profile's header leave them out; the document
    keeps them."""
    from roofline.ceilings import store
    from roofline.measuring import calibrate

    seeded = store.lookup(calibrate._this_cpu_key())
    assert seeded is not None
    monkeypatch.setattr(calibrate, "lookup", lambda key: None)  # no calibration cached: measured "now"
    monkeypatch.setattr(calibrate, "measure_cpu", lambda say, plan: (seeded[0], {}))
    monkeypatch.setattr(calibrate, "save", lambda key, ceilings, details: store.store_path())  # written there
    said = f"measured this CPU's roofline (cached in {store.store_path()})"
    doc = tmp_path / "out.json"
    script = write(tmp_path / "step.py", "import torch\ntorch.ones(8) + 1\n")
    args = (["analyze", "gemm", "--m", "16", "--n", "16", "--k", "16"] if command == "analyze"
            else ["profile", str(script)])
    code, out, err = run(capsys, *args, "-o", str(doc))
    assert code == 0, err
    assert "measured this CPU's roofline" not in " ".join(out.split())  # the view: said once, on stderr
    assert " ".join(err.split()).count("measured this CPU's roofline") == 1
    got = json.loads(doc.read_text())
    assert said in (got["records"][0]["notes"] if command == "analyze" else got["profile"]["notes"])
