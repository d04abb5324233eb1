"""Profile a user's script (`roofline profile SCRIPT.py -- ARGS`): run it as `python SCRIPT.py ARGS` would,
inside one profile. Regions it marks with `roofline.region(...)` are kept (the whole run when it marks none);
`regions` keeps only the named ones and refuses a name the script never entered."""

from __future__ import annotations

import runpy
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from roofline.capture.profile import Profile
from roofline.core.errors import RooflineError, UsageError
from roofline.core.files import existing_file
from roofline.measuring.target import Target

_ROOFLINE = Path(__file__).resolve().parents[1]  # the roofline package


class ScriptError(RooflineError):
    """The user's script raised: `script_traceback` is its own traceback (roofline's frames left out), shown
    before roofline's one line."""

    def __init__(self, message: str, script_traceback: str) -> None:
        super().__init__(message)
        self.script_traceback = script_traceback


def _script_traceback(exc: BaseException, script: Path) -> str:
    """The traceback from the script's first frame on: the runner's and roofline's frames above it say
    nothing about the user's error."""
    frames = traceback.extract_tb(exc.__traceback__)
    start = next((i for i, f in enumerate(frames) if Path(f.filename).resolve() == script), 0)
    # roofline's own hooks (the trace's __torch_function__) sit between the script's call and torch's raise
    kept = [f for f in frames[start:] if not Path(f.filename).resolve().is_relative_to(_ROOFLINE)]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(kept),
             *traceback.format_exception_only(type(exc), exc)]
    return "".join(lines)


def _is_oom(exc: BaseException) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(exc, torch.OutOfMemoryError)


def profile_script(path: str | Path, args: Sequence[str] = (), *, regions: Sequence[str] = (),
                   name: str | None = None, check: Callable[[Target], None] | None = None,
                   **options: Any) -> Profile:
    """Run `path` with `args` as its command line inside a `Profile` (options as for `roofline.profile`);
    `check` is shown the resolved target before the script starts (it raises to refuse)."""
    script = existing_file(path, "script").resolve()
    prof = Profile(name or script.stem, regions=regions, **options)
    target = prof.resolve()  # a bad --gpu/--device is a usage error before the script starts
    if check is not None:
        check(target)
    try:
        with prof:
            run_as_main(script, args)
    except RooflineError:
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == script:
            raise UsageError(f"{script.name}: not valid Python: {exc.msg} (line {exc.lineno})") from None
        if _is_oom(exc):
            raise RooflineError(f"{script.name} ran out of device memory: {str(exc).splitlines()[0]}") from None
        raise ScriptError(f"{script.name} raised {type(exc).__name__} (its traceback is above)",
                          _script_traceback(exc, script)) from None
    return prof


def run_as_main(script: Path, args: Sequence[str]) -> None:
    """Run `script` as `python SCRIPT ARGS` would (its argv, its folder importable, run as __main__); a
    sys.exit(0) ends it normally, another status is a RooflineError (a text status, `sys.exit("needs a GPU")`,
    is its message)."""
    argv, sys_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent))  # as `python SCRIPT.py` does: the script's folder is importable
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:  # sys.exit(0) ends a script normally: the profile stands
        if isinstance(exc.code, str):  # sys.exit("needs a GPU"): the script's own message (and status 1)
            raise RooflineError(f"{script.name}: {exc.code}") from None
        if exc.code not in (None, 0):
            raise RooflineError(f"{script.name} exited with status {exc.code}") from None
    finally:
        sys.argv = argv
        if sys.path and sys.path[0] == str(script.parent) and sys_path0 != sys.path[0]:
            sys.path.pop(0)
