"""`roofline calibrate` and its modes as sub-commands (issue 47): `calibrate` alone measures the ceilings,
`calibrate ops` sweeps the operators, `calibrate energy` fits the energy model, each with its own options;
the old spellings `calibrate --ops` and `calibrate --energy` run the same mode with one note more. The library
calls are faked here (the real sweep on the CPU is tests/test_opdb.py's, the ceilings tests/test_docs_api.py's):
what is asserted is what the command line passed to them and what it printed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers import DATA, run
from rich.cells import cell_len

OPS_NOTE = "note: `calibrate --ops` is the old spelling: use `roofline calibrate ops`"
ENERGY_NOTE = "note: `calibrate --energy` is the old spelling: use `roofline calibrate energy`"


@pytest.fixture
def fake_sweep(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """`measuring.opsweep.calibrate_ops` measuring nothing: each call's arguments, and a database of 3 points
    of which this run measured 2."""
    import roofline.measuring.opsweep

    calls: list[tuple[Any, ...]] = []

    def calibrate_ops(suite: Path | None, device: str | None, db: Path | None, budget_s: float,
                      progress: Any) -> tuple[Any, Any]:
        calls.append((suite, device, db, budget_s))
        store = SimpleNamespace(path=db, device={"kind": "cpu"}, points=[1, 2, 3])
        return store, SimpleNamespace(measured=2, skipped_known=1, retimed=0, skipped=0, left=0, seconds=1.5)

    monkeypatch.setattr(roofline.measuring.opsweep, "calibrate_ops", calibrate_ops)
    return calls


@pytest.fixture
def fake_energy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """One GPU on this machine and `calibrate_and_store` returning the H200 smoke fixture's energy model: each
    call's (GPU index, replace)."""
    import roofline.measuring.device
    import roofline.measuring.energy_calibrate
    from roofline.core.document import read_document
    from roofline.core.energy import EnergyModel

    model = EnergyModel.from_dict(read_document(DATA / "energy_smoke_h200.json").device["energy_model"])
    calls: list[tuple[int, bool]] = []

    def calibrate_and_store(index: int, progress: Any, replace: bool = False) -> tuple[Any, dict[str, Any]]:
        calls.append((index, replace))
        return model, {"kernels": 10}

    monkeypatch.setattr(roofline.measuring.device, "detect_gpus", lambda: [object()])
    monkeypatch.setattr(roofline.measuring.energy_calibrate, "calibrate_and_store", calibrate_and_store)
    return calls


def test_calibrate_ops_is_the_old_calibrate_dash_dash_ops(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          fake_sweep: list[tuple[Any, ...]]) -> None:
    db = tmp_path / "cpu.json"
    options = ("--suite", "tiny.toml", "--device", "cpu", "--budget", "1m30s", "--db", str(db), "--json")
    new = run(capsys, "calibrate", "ops", *options)
    old = run(capsys, "calibrate", "--ops", *options)
    assert new[0] == old[0] == 0, (new, old)
    # both passed the same arguments: 1m30s = 60 + 30 = 90 s
    assert fake_sweep == [(Path("tiny.toml"), "cpu", db, 90.0)] * 2
    assert new[1] == old[1] and json.loads(new[1])["measured"] == 2 and json.loads(new[1])["points"] == 3
    assert new[2] == f"note: operator database: {db}\n"
    assert old[2] == f"{OPS_NOTE}\n{new[2]}"  # the old spelling: one line more, before the work


def test_calibrate_energy_is_the_old_calibrate_dash_dash_energy(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                                fake_energy: list[tuple[int, bool]]) -> None:
    written = [tmp_path / "new.json", tmp_path / "old.json"]
    new = run(capsys, "calibrate", "energy", "--json", "-o", str(written[0]), "--replace")
    old = run(capsys, "calibrate", "--energy", "--json", "-o", str(written[1]), "--replace")
    assert new[0] == old[0] == 0, (new, old)
    assert fake_energy == [(0, True)] * 2  # cuda:0, the one GPU; --replace passed on
    assert new[1] == old[1] and json.loads(new[1])["details"] == {"kernels": 10}
    assert [json.loads(p.read_text()) for p in written] == [json.loads(new[1])] * 2  # -o writes what --json prints
    assert new[2].startswith("note: stored in ") and new[2].rstrip().endswith(f"written to {written[0]}")
    assert old[2].splitlines()[0] == ENERGY_NOTE and len(old[2].splitlines()) == 2


@pytest.mark.parametrize("args", [
    ("calibrate", "ops", "--quick"), ("calibrate", "ops", "-o", "x.json"), ("calibrate", "ops", "--threads", "2"),
    ("calibrate", "energy", "--suite", "x.toml"), ("calibrate", "energy", "--quick"),
    ("calibrate", "energy", "--threads", "2"),
])
def test_a_mode_takes_only_its_own_options(capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and err == f"error: No such option: {args[2]}\n"


@pytest.mark.parametrize(("args", "flag"), [
    (("calibrate", "--device", "cpu", "ops"), "--device"), (("calibrate", "--quick", "energy"), "--quick"),
    (("calibrate", "--ops", "ops"), "--ops"),
])
def test_options_before_a_mode_are_a_usage_error(capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                                                 flag: str, fake_sweep: list[tuple[Any, ...]]) -> None:
    code, out, err = run(capsys, *args)
    mode = args[-1]
    assert code == 2 and out == "" and fake_sweep == []
    assert err == f"error: {flag} before `{mode}`: a mode's options go after it (roofline calibrate {mode} --help)\n"


@pytest.mark.parametrize(("args", "said"), [
    (("calibrate", "--ops", "--energy"), "--ops and --energy are two calibrations: run one at a time"),
    (("calibrate", "--ops", "--quick"), "--quick is not an option of --ops (its database is --db FILE)"),
    (("calibrate", "--energy", "--db", "x.json"), "--db is an option of --ops"),
    (("calibrate", "--suite", "x.toml"), "--suite is an option of --ops"),
    (("calibrate", "ops", "--device", "tpu"), "unknown device 'tpu' (use cpu, cuda or cuda:N)"),
    (("calibrate", "--ops", "--device", "tpu"), "unknown device 'tpu' (use cpu, cuda or cuda:N)"),
])
def test_bad_combinations_are_one_line_without_the_note(capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                                                        said: str, fake_sweep: list[tuple[Any, ...]]) -> None:
    """A refused command line says only what is wrong with it: the note on the old spelling comes once the
    options are checked, before the work."""
    assert run(capsys, *args) == (2, "", f"error: {said}\n")
    assert fake_sweep == []


def test_energy_without_a_gpu_is_refused_in_either_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    said = "error: --energy needs an NVIDIA GPU with an energy counter (NVML): the device 'cpu' has none\n"
    assert run(capsys, "calibrate", "energy") == run(capsys, "calibrate", "--energy") == (2, "", said)


@pytest.mark.parametrize("mode", [(), ("ops",), ("energy",)])
def test_each_help_reads_in_80_columns_and_hides_the_old_spellings(capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   mode: tuple[str, ...]) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "calibrate", *mode, "--help")
    assert code == 0 and max(cell_len(line) for line in out.splitlines()) <= 80
    options = {word for line in out.splitlines() for word in line.split() if word.startswith("--")}
    own = {(): {"--quick", "--device", "--json", "--output", "--force", "--threads", "--replace"},
           ("ops",): {"--suite", "--device", "--budget", "--db", "--json"},
           ("energy",): {"--device", "--json", "--output", "--force", "--replace"}}[mode]
    assert {o.rstrip(".,;:)") for o in options} - {"--help"} >= own  # the help's sentences may name others
    if not mode:  # the modes listed as commands; the old flags, hidden, nowhere
        assert "Commands" in out and "│ ops " in out and "│ energy " in out
        assert not {"--ops", "--energy", "--suite", "--budget", "--db"} & options
