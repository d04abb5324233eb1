"""Reading the project's TOML data files (specs, suites, prices) with one-line errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.files import read_text
from roofline.core.validate import input_file

# A TOML data file is refused, unread, past this size: the largest the project reads (a suite of hundreds of
# entries, a spec, a price list) is a few KB; a file of 16 MiB is another file named by mistake.
MAX_TOML_BYTES = 16 * 2**20


def read_toml(path: str | os.PathLike[str], what: str, error: type[RooflineError] = RooflineError) -> dict[str, Any]:
    """Parse a TOML file; a missing, unreadable or malformed file is one `error` naming the file."""
    if sys.version_info >= (3, 11):  # imported here: the spec files are read from a cache on most starts
        import tomllib
    else:  # pragma: no cover - Python 3.10
        # tomli is installed only under Python 3.10 (pyproject's marker), which mypy targets: where mypy runs on a
        # later Python it is absent (import-not-found); where it is installed the ignore has nothing to hide.
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

    p = Path(path)
    input_file(p, what, MAX_TOML_BYTES, error)  # a FIFO or a device never ends; refused unread
    try:
        return tomllib.loads(read_text(p, what, error))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{p}: malformed TOML: {exc}") from None
    except RecursionError:  # a = [[[[...]]]] nested past the interpreter's limit
        raise error(f"{p}: malformed TOML: nested deeper than Python reads") from None
