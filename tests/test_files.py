"""The user's files (roofline.core.files): an output path is refused, in one line, before any work starts; an input
that is a folder says so, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.core.errors import RooflineError
from roofline.core.files import refuse_existing


def test_an_output_under_a_file_says_the_file_is_not_a_folder(tmp_path: Path) -> None:
    # `profile ... -o c.json/x.json` with c.json a file said "no folder c.json", which is there
    (tmp_path / "c.json").write_text("{}")
    with pytest.raises(RooflineError, match=r"c.json is a file, not a folder$"):
        refuse_existing(tmp_path / "c.json" / "x.json", force=False)
    with pytest.raises(RooflineError, match=r"no folder .*nope$"):
        refuse_existing(tmp_path / "nope" / "x.json", force=False)


def test_a_folder_given_for_a_file_to_read_says_so_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30: `roofline.read_document("/tmp")` said "/tmp: cannot read: [Errno 21] Is a directory: '/tmp'"
    (the path twice), `run` on a folder "cannot read: Is a directory"."""
    from helpers import SUITES, run

    import roofline
    from roofline.core.errors import UsageError

    with pytest.raises(UsageError) as caught:
        roofline.read_document(tmp_path)
    assert str(caught.value) == f"{tmp_path}: a folder, not a results file"
    smoke = str(SUITES / "smoke.toml")
    for args, what in ((["run", str(tmp_path)], "a suite file"),
                       (["report", str(tmp_path), "-o", "r.html"], "a results file"),
                       (["import-ncu", str(tmp_path)], "a CSV export of an Nsight Compute report"),
                       (["run", smoke, "--no-time", "--db", str(tmp_path)], "an operator database")):
        code, _, err = run(capsys, *args)
        assert (code, err) == (2, f"error: {tmp_path}: a folder, not {what}\n"), args
