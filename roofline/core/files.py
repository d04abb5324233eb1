"""Writing the user's files: never over something they stored unless asked, never half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from roofline.core.errors import RooflineError, UsageError
from roofline.core.validate import a_noun


def existing_file(path: str | os.PathLike[str], what: str) -> Path:
    """The path of a file the user names (`what`: 'script'), else a one-line UsageError: '{path}: no such
    script', or for a folder '{path}: a folder, not a script'."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{path}: a folder, not a {what}")
    if not p.is_file():
        raise UsageError(f"{path}: no such {what}")
    return p


def read_text(path: str | os.PathLike[str], what: str, error: type[RooflineError] = UsageError,
              missing: str | None = None, newline: str | None = None) -> str:
    """The text of a file the user names (`what`: 'results file'), decompressed when its name ends in .gz (a
    database or a results file kept gzipped: roofline/_opdata's, docs/results'); one that is missing (`missing`, default
    'no such results file'), a folder ('/tmp: a folder, not a results file'), unreadable or a broken gzip stream
    is one `error` line naming the path once. Text that is not UTF-8 raises UnicodeDecodeError, which each reader
    words."""
    import gzip

    p = Path(path)
    try:
        if p.suffix == ".gz":
            with gzip.open(p, "rt", encoding="utf-8", newline=newline) as fh:
                return fh.read()
        with open(p, encoding="utf-8", newline=newline) as fh:
            return fh.read()
    except (gzip.BadGzipFile, EOFError) as exc:  # not gzip, or cut short
        raise error(f"{p}: cannot read: not a whole gzip file ({exc or 'it ends early'})") from None
    except FileNotFoundError:
        raise error(f"{p}: {missing or f'no such {what}'}") from None
    except IsADirectoryError:
        raise error(f"{p}: a folder, not {a_noun(what)}") from None
    except OSError as exc:
        raise error(f"{p}: cannot read: {exc.strerror or exc}") from None


def refuse_existing(path: str | os.PathLike[str], force: bool, flag: str = "--force") -> Path:
    """The path, unless a file is there and the user did not pass --force (`flag`: how the caller spells it,
    force=True from Python), or it cannot be written (a missing or read-only folder): then a one-line
    RooflineError, so a long run never ends in one."""
    p = Path(path)
    if p.exists() and not force:
        raise RooflineError(f"{p} exists: not overwriting it (pass {flag} to replace it)")
    if p.is_dir():
        raise RooflineError(f"cannot write {p}: it is a folder")
    folder = p.parent
    if not folder.is_dir():
        why = f"{folder} is a file, not a folder" if folder.exists() else f"no folder {folder}"
        raise RooflineError(f"cannot write {p}: {why}")
    if not os.access(folder, os.W_OK):
        raise RooflineError(f"cannot write {p}: the folder {folder} is not writable")
    return p


def atomic_write(path: str | os.PathLike[str], text: str, make_parents: bool = False) -> Path:
    """Write `text` to a temporary file beside `path`, then rename it over `path`: readers see the old file or
    the whole new one. Missing folders are an error unless `make_parents` (CI report paths, where creating
    `reports/` is the convention). Errors are one-line RooflineErrors."""
    p = Path(path)
    try:
        if make_parents:
            p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode())  # mkstemp makes it owner-only; results and reports are shared
        os.replace(tmp, p)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def _new_file_mode() -> int:
    """The mode `open()` would give a new file: 0o666 less the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


# The package's root folder (roofline/), whose data folders an installed wheel holds (pyproject.toml's
# package-dir maps each to its folder of the source tree).
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def data_dir(packaged: str, checkout: str, package_root: Path = PACKAGE_ROOT) -> Path:
    """A data folder of the project: `roofline/<packaged>` inside an installed wheel (importlib.resources'
    answer, without its import), else `<checkout>` in the source tree holding the package."""
    inside = package_root / packaged
    return inside if inside.is_dir() else package_root.parent / checkout
