"""Writing the user's files: never over something they stored unless asked, never half-written."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from roofline.core.errors import RooflineError, UsageError
from roofline.core.validate import a_noun

# A temporary file is named `.{name}.{pid}.{host}.{random}.roofline-tmp` beside the file it becomes: a leftover (its
# writer killed by SIGKILL or a power cut, where no handler runs) is known as ours, and whose; the next write of the
# same file on the same machine removes those whose process is gone (`_remove_leftovers`).
TMP_SUFFIX = ".roofline-tmp"
# The host's name in a temporary file's name (a folder shared over NFS tells two hosts' leftovers apart by it) is
# at most this many characters: a file name is at most 255 bytes and the target's own name takes most of them.
HOST_CHARS = 16
# Where a folder cannot be locked itself (flock on a folder's descriptor fails on NFS, which emulates flock by
# byte-range locks that need a file open for writing), this file in it is locked instead; it stays (removing a
# lock file lets two writers lock two files).
LOCK_FILE = ".roofline.lock"
# The errors of flock on a folder that mean "this file system locks files, not folders": then LOCK_FILE.
_NO_FOLDER_LOCK = (errno.EBADF, errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP, errno.EACCES, errno.EPERM)
# The errors of link(2) on a file system without hard links (FAT, some FUSE mounts): then a claimed name.
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK)


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
    force=True from Python), or something other than a regular file is there (a folder, a symbolic link, a FIFO, a
    device: never replaced, --force or not), or it cannot be written (a missing or read-only folder): then a
    one-line RooflineError, so a long run never ends in one. Writers that race past it are told apart by
    `atomic_write` (exclusive creation, or the folder's lock)."""
    p = Path(path)
    _refuse_special(p)
    if os.path.lexists(p) and not force:
        raise RooflineError(f"{p} exists: not overwriting it (pass {flag} to replace it)")
    folder = p.parent
    if not folder.is_dir():
        why = f"{folder} is a file, not a folder" if folder.exists() else f"no folder {folder}"
        raise RooflineError(f"cannot write {p}: {why}")
    if not os.access(folder, os.W_OK):
        raise RooflineError(f"cannot write {p}: the folder {folder} is not writable")
    return p


def _refuse_special(p: Path) -> None:
    """A one-line RooflineError when something other than a regular file is at `p` (lstat: a link is a link)."""
    try:
        mode = os.lstat(p).st_mode
    except OSError:  # nothing there, or a folder above it that is not one (said by the caller)
        return
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise RooflineError(f"cannot write {p}: it is a folder")
    kind = ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device")
    raise RooflineError(f"cannot write {p}: it is {kind} (only a regular file is replaced)")


# The folders each thread holds locked (`locked`), so that a write inside a locked read-modify-write does not wait
# for itself.
_HELD = threading.local()


@contextlib.contextmanager
def locked(path: str | os.PathLike[str], make_parents: bool = False) -> Iterator[Path]:
    """Hold the advisory lock of `path`'s folder for the block (blocking while another roofline process holds it):
    a read-modify-write of `path` inside it (a database merged, a store entry added, a baseline updated) sees no
    other writer's change between its read and its rename. `atomic_write` takes it too, so a write inside the block
    does not wait for itself. Missing folders are an error unless `make_parents`. Errors are one-line
    RooflineErrors. The lock binds roofline's writers only: a program that ignores it is not stopped."""
    p = Path(path)
    try:
        if make_parents:
            p.parent.mkdir(parents=True, exist_ok=True)
        key = os.path.realpath(p.parent)
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    held: set[str] = _HELD.__dict__.setdefault("folders", set())
    if key in held:  # this thread holds it already (the outer block releases it)
        yield p
        return
    fd = _lock_folder(p)
    held.add(key)
    try:
        yield p
    finally:
        held.discard(key)
        os.close(fd)  # closing the descriptor releases the lock


def _lock_folder(p: Path) -> int:
    """A descriptor holding an exclusive flock on `p`'s folder, or on LOCK_FILE in it where the folder cannot be
    locked (NFS)."""
    import fcntl

    folder = p.parent
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        if exc.errno not in _NO_FOLDER_LOCK:
            raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
        fd = -1
    if fd >= 0:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return fd
        except OSError as exc:
            os.close(fd)
            if exc.errno not in _NO_FOLDER_LOCK:
                raise RooflineError(f"cannot lock {folder}: {exc.strerror or exc}") from None
        except BaseException:  # Ctrl-C while waiting
            os.close(fd)
            raise
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, _new_file_mode())
    except OSError as exc:
        raise RooflineError(f"cannot lock {folder}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):
            raise RooflineError(f"cannot lock {folder}: {exc.strerror or exc}") from None
        raise
    return fd


def atomic_write(path: str | os.PathLike[str], text: str | bytes, make_parents: bool = False,
                 exclusive: bool = False) -> Path:
    """Write `text` (or bytes) to a temporary file beside `path`, then move it into place: readers see the old
    file or the whole new one, never part of it. `exclusive`: the file is created only if none is there when it
    lands (a hard link of the whole temporary file: atomic), else a one-line refusal, so that of writers racing to
    one new name exactly one succeeds and none says "written" for a file another then replaced. Otherwise it
    replaces a regular file (anything else there, a symbolic link, a FIFO, a device, is refused), under the
    folder's lock (`locked`). Missing folders are an error unless `make_parents` (CI report paths, where creating
    `reports/` is the convention). Errors are one-line RooflineErrors; the temporary file is removed on any error
    and on KeyboardInterrupt (Ctrl-C, and SIGTERM: roofline.core.process)."""
    p = Path(path)
    try:
        if make_parents:
            p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    _refuse_special(p)  # before writing the whole file (again under the lock, before the rename)
    _remove_leftovers(p)
    tmp = _temp_name(p)  # named before it is made: a signal at any point after is inside the try that removes it
    try:
        _write_temp(tmp, text)
        if exclusive:
            _link_new(tmp, p)
        else:
            with locked(p):
                _refuse_special(p)
                os.replace(tmp, p)
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)  # after a link, the name is the file's second; after a rename, gone already
    return p


def _temp_name(p: Path) -> Path:
    """A new temporary file's name beside `p`: `.{name}.{pid}.{host}.{random}` + TMP_SUFFIX (no other process
    makes a name with this one's pid, and the random part keeps this process's writes apart)."""
    return p.parent / f".{p.name}.{os.getpid()}.{_host()}.{os.urandom(4).hex()}{TMP_SUFFIX}"


def _write_temp(tmp: Path, data: str | bytes) -> None:
    """`data` in the new file `tmp` (O_EXCL), flushed to the disk, with a new file's mode (the umask's)."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _new_file_mode())
    with os.fdopen(fd, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())


def _link_new(tmp: Path, p: Path) -> None:
    """Give the whole file `tmp` the new name `p`, only if nothing is there: a hard link (atomic; where the file
    system has none, the name claimed with O_EXCL, then the file moved over the claim)."""
    exists = RooflineError(f"{p} exists: not overwriting it (another writer made it while this one ran; pass "
                           "--force to replace it)")
    try:
        os.link(tmp, p)
        return
    except FileExistsError:
        raise exists from None
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
    _claim_then_replace(tmp, p, exists)


def _claim_then_replace(tmp: Path, p: Path, exists: RooflineError) -> None:
    """`_link_new` where there are no hard links: the name claimed (O_EXCL, empty until the move), then `tmp`
    moved over the claim."""
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _new_file_mode())
    except FileExistsError:
        raise exists from None
    claim = os.fstat(fd).st_ino
    os.close(fd)
    try:
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            if os.lstat(p).st_ino == claim:  # the empty claim, never a file a forced writer put there since
                p.unlink()
        raise


def _host() -> str:
    """This machine's name as a temporary file's name holds it: letters, digits and '-', HOST_CHARS at most (a
    longer one cut, with a checksum of the whole, so `node-partition-gpu-01` and `-02` stay apart)."""
    import zlib

    name = os.uname().nodename
    safe = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in name) or "host"
    if len(safe) <= HOST_CHARS:
        return safe
    return f"{safe[:HOST_CHARS - 9]}-{zlib.crc32(name.encode()):08x}"


def _remove_leftovers(p: Path) -> None:
    """Remove the temporary files of `p` that a writer on this machine left when it was killed (its process gone);
    another host's, a live writer's and anything not named as ours are kept."""
    head, host = f".{p.name}.", _host()
    try:
        names = os.listdir(p.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(head) and name.endswith(TMP_SUFFIX)):
            continue
        parts = name[len(head):-len(TMP_SUFFIX)].split(".")
        if len(parts) == 3 and parts[0].isdigit() and parts[1] == host and not _alive(int(parts[0])):
            with contextlib.suppress(OSError):
                os.unlink(p.parent / name)


def _alive(pid: int) -> bool:
    """Whether process `pid` runs on this machine (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it runs, as another user
        return True
    return True


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
