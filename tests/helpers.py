"""What several test modules need: the checkout's root, running the CLI in-process, writing a fixture file."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SUITES = ROOT / "suites"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`roofline ARGS` in this process: (exit code, stdout, stderr)."""
    from roofline.cli.app import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, text: str) -> Path:
    """Write `text` to `path` and return the path."""
    path.write_text(text)
    return path
