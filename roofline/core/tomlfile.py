"""Reading the project's TOML data files (specs, suites, prices) with one-line errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError


def read_toml(path: str | os.PathLike[str], what: str, error: type[RooflineError] = RooflineError) -> dict[str, Any]:
    """Parse a TOML file; a missing, unreadable or malformed file is one `error` naming the file."""
    if sys.version_info >= (3, 11):  # imported here: the spec files are read from a cache on most starts
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    p = Path(path)
    try:
        return tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise error(f"{p}: no such {what}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{p}: malformed TOML: {exc}") from None
    except OSError as exc:
        raise error(f"{p}: cannot read: {exc.strerror or exc}") from None
