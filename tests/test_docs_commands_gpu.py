"""On a CUDA GPU: every line of the README's and docs/*.md's runnable and ```sh gpu blocks, as written (timed, full
calibration, the profiles), in one scratch folder; tests/test_docs_commands.py says which blocks run and runs the
runnable ones on the CPU with small settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import run
from test_docs_commands import commands, scratch

pytestmark = pytest.mark.gpu


def test_every_documented_command_runs_as_written_on_a_gpu(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU: every line of the runnable and the ```sh gpu blocks, as written (timed, full calibration,
    the profiles)."""
    scratch(tmp_path, monkeypatch)
    failed = []  # every command runs, so one GPU session shows every failure
    pages = os.environ.get("DOCS_PAGES", "").split()  # e.g. DOCS_PAGES="profile.md", to rerun one page's lines
    for where, argv in commands(("", "gpu")):
        if pages and where.split(":")[0] not in pages:
            continue
        code, _, err = run(capsys, *argv)
        if code != 0:
            failed.append(f"{where}: exit {code}\n{err}")
    assert not failed, "\n".join(failed)
