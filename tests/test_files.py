"""Output files (roofline.core.files): an output path is refused, in one line, before any work starts."""

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
