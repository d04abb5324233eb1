"""The sandbox of a candidate's process (`roofline sol --time --candidate`), Linux; docs/sol.md says what it does
and does not cover.

- a fresh, empty working directory of its own (also its HOME and TMPDIR), removed afterwards and never read;
- Python in isolated mode (`python -I`: no working directory, script folder, user site or PYTHON* variables
  on the path), the harness's package loaded from this roofline's own folder by its file, not from a path
  entry a candidate could plant a module in;
- an environment reduced to what CUDA and torch need (ENV_ALLOWED, ENV_PREFIXES): no tokens, no keys;
- its own session and process group, and this process a child subreaper (PR_SET_CHILD_SUBREAPER): a
  grandchild that double-forks and calls setsid is reparented here instead of to init, so `end_tree` finds and
  kills it with the rest (polling /proc until none is left) before the caller reads any result or writes any
  output.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

# Variables a candidate's process keeps, by name: the loader, the locale, the terminal, and CUDA's device choice.
ENV_ALLOWED = frozenset({"PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ",
                         "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH",
                         "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "OMP_NUM_THREADS",
                         "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "SOL_SCALE"})
# ... and by prefix: the CUDA runtime's and the allocator's settings (CUDA_LAUNCH_BLOCKING, CUDA_MODULE_LOADING,
# PYTORCH_CUDA_ALLOC_CONF, NCCL_*, TORCH_CUDA_ARCH_LIST). A name holding one of ENV_SECRET_WORDS is dropped anyway.
ENV_PREFIXES = ("CUDA_", "NVIDIA_", "PYTORCH_", "TORCH_", "NCCL_", "CUBLAS_", "CUDNN_", "TRITON_")
ENV_SECRET_WORDS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL", "AUTH")
# prctl(2): PR_SET_CHILD_SUBREAPER.
PR_SET_CHILD_SUBREAPER = 36
# prctl(2): PR_SET_DUMPABLE; 0 makes this process's /proc entries (fd, cwd, mem, environ) closed to processes of
# the same user without CAP_SYS_PTRACE.
PR_SET_DUMPABLE = 4
# Rounds of killing the tree before giving up (each round kills every process found; a fork bomb faster than
# that is beyond this sandbox: docs/sol.md).
KILL_ROUNDS = 200

_lock = threading.Lock()
_live: set[int] = set()  # the sandboxes' own child processes now running (their pids)
_subreaper = False
_running = 0  # sandboxes running now: this process is not dumpable while any is


def sandbox_env(environ: dict[str, str], extra: dict[str, str], home: Path) -> dict[str, str]:
    """The candidate's environment: `environ` reduced to the allow-list, `extra` (SOL_SCALE), and its home,
    caches and temporary files in its own folder."""
    def allowed(name: str) -> bool:
        if any(w in name.upper() for w in ENV_SECRET_WORDS):
            return False
        return name in ENV_ALLOWED or name.startswith(ENV_PREFIXES)

    env = {k: v for k, v in environ.items() if allowed(k)}
    env.update(extra)
    for name in ("HOME", "TMPDIR", "XDG_CACHE_HOME", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
                 "CUDA_CACHE_PATH"):
        env[name] = str(home)
    return env


def python_command(module: str, *args: str) -> list[str]:
    """`python -I` running `module`'s main(argv) from this roofline's folder: the package is loaded from its
    __init__.py by path (roofline is not looked up on sys.path, which stays Python's own)."""
    package = Path(__file__).resolve().parents[1]  # .../roofline
    boot = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('roofline', {str(package / '__init__.py')!r}, "
            f"submodule_search_locations=[{str(package)!r}])\n"
            "mod = importlib.util.module_from_spec(spec); sys.modules['roofline'] = mod; spec.loader.exec_module(mod)\n"
            f"import runpy; sys.argv = [{module!r}, *sys.argv[1:]]\n"
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n")
    return [sys.executable, "-I", "-c", boot, *args]


def _become_subreaper() -> None:
    global _subreaper
    if _subreaper:
        return
    _subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1)


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    """A fresh, empty folder (mode 700) for one candidate's process, removed afterwards whatever it holds."""
    with tempfile.TemporaryDirectory(prefix="roofline-sandbox-", ignore_cleanup_errors=True) as tmp:
        os.chmod(tmp, 0o700)
        yield Path(tmp)


@contextlib.contextmanager
def starting() -> Iterator[Callable[[int], None]]:
    """Around a sandbox's child's start: the sandboxes' lock held while it is started and noted (the function
    yielded, with its pid), so that no other sandbox's clean-up scans this process's children in between (a child
    started but not yet noted read as an orphan there, and was killed: "exited with status -9" while building)."""
    with _lock:
        yield _live.add


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0


def subreaper() -> None:
    """This process a child subreaper (Linux): the orphans of its descendants come back to it."""
    with _lock:
        _become_subreaper()


def prepare() -> None:
    """Before starting a sandbox's child: this process a child subreaper, and not dumpable until `release`."""
    global _running
    with _lock:
        _become_subreaper()
        if _running == 0:
            _prctl(PR_SET_DUMPABLE, 0)
        _running += 1


def release() -> None:
    """After a sandbox's tree has ended: dumpable again when no other sandbox runs."""
    global _running
    with _lock:
        _running = max(0, _running - 1)
        if _running == 0:
            _prctl(PR_SET_DUMPABLE, 1)


def _parents() -> dict[int, int]:
    """{pid: parent pid} of every process visible in /proc."""
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1:
            out[int(entry)] = int(fields[1])
    return out


def _tree(roots: set[int], parents: dict[int, int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in found or pid not in parents:
            continue
        found.add(pid)
        todo += children.get(pid, [])
    return found


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def escaped(pid: int, before: set[int]) -> set[int]:
    """The processes that left the child's tree (orphans reparented here: children of this process that are
    not `pid`, not in `before` and not another sandbox's child), and their descendants, alive now."""
    me = os.getpid()
    with _lock:  # a snapshot no sandbox's start falls inside (`starting`)
        parents, others = _parents(), _live - {pid}
    orphans = {p for p, pp in parents.items() if pp == me and p != pid and p not in before and p not in others}
    return {p for p in _tree(orphans, parents) if _state(p) not in ("Z", "")}


def end_tree(pid: int, before: set[int]) -> int:
    """Kill the child `pid`, its process group and every descendant, and every orphan reparented here since
    (a child of this process that is not in `before`, the children it had before the sandbox started, nor
    another sandbox's live child); reap what is ours except `pid` (its Popen waits for it). Returns how many
    processes other than `pid` it killed."""
    me = os.getpid()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    killed: set[int] = set()
    for _ in range(KILL_ROUNDS):
        with _lock:  # a snapshot no sandbox's start falls inside (`starting`)
            parents, others = _parents(), _live - {pid}
        orphans = {p for p, pp in parents.items() if pp == me and p not in before and p not in others}
        tree = _tree({pid} | orphans, parents) - {me}
        alive = {p for p in tree if _state(p) not in ("Z", "")}
        if not alive:
            for p in tree:
                if parents.get(p) == me and p != pid:
                    _reap(p)
            break
        for p in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        killed |= alive
        for p in tree:
            if parents.get(p) == me and p != pid:
                _reap(p)
    with _lock:
        _live.discard(pid)
    return len(killed - {pid})


def _state(pid: int) -> str:
    """The process's state letter (R, S, Z, ...); '' when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().decode(errors="replace").rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return ""


def children_now() -> set[int]:
    """This process's children now (a sandbox leaves them alone)."""
    me = os.getpid()
    return {p for p, pp in _parents().items() if pp == me}
