"""The arguments of the Python API and of the command line, checked in one place per kind of check: a number
(`number`), a whole number (`whole`), a callable (`callable_arg`), a name (`name_arg`), one of a few choices
(`choice`). Each bad argument is one UsageError that names it as the caller spells it: `m must be >= 1` from
Python (`roofline.analyze("gemm", m=0)`), `--m must be >= 1` from the command line, which runs its commands
inside `command_line()`.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from roofline.core.errors import UsageError

# True while the command line runs a command: arguments are then named by their flags.
_FLAGS: ContextVar[bool] = ContextVar("roofline_flags", default=False)


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """Inside this block, `arg_name` names an argument by its flag (`--head-dim`), as the command line takes it."""
    token = _FLAGS.set(True)
    try:
        yield
    finally:
        _FLAGS.reset(token)


def arg_name(name: str) -> str:
    """`head_dim` from Python, `--head-dim` from the command line."""
    return f"--{name.replace('_', '-')}" if _FLAGS.get() else name


def setting(name: str, value: Any = True) -> str:
    """An option as the caller set it: `--energy`, `--roof measured` on the command line; `energy=True`,
    `roof='measured'` from Python."""
    if _FLAGS.get():
        return arg_name(name) if value is True else f"{arg_name(name)} {value}"
    return f"{name}={value!r}"


def _where(what: str, name: str) -> str:
    return f"{what}: {arg_name(name)}" if what else arg_name(name)


def number(what: str, name: str, value: Any, *, minimum: float | None = None, positive: bool = False) -> float:
    """`value` as a float: a real number (not a bool, a string or None), finite, >= `minimum`, > 0 with
    `positive`. `what` is the function or operator the argument is of ("measure", "gemm")."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy scalars are Real too
        raise UsageError(f"{_where(what, name)} must be a number, got {value!r}")
    given, value = value, float(value)
    if not math.isfinite(value):
        raise UsageError(f"{_where(what, name)} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise UsageError(f"{_where(what, name)} must be > 0, got {given!r}")
    if minimum is not None and value < minimum:
        raise UsageError(f"{_where(what, name)} must be >= {minimum:g}, got {given!r}")
    return float(value)


def whole(what: str, name: str, value: Any, *, minimum: int | None = None) -> int:
    """`value` as an int: an integer (not a bool), >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{_where(what, name)} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise UsageError(f"{_where(what, name)} must be >= {minimum}, got {value}")
    return value


def boolean(what: str, name: str, value: Any) -> bool:
    """`value`, True or False (a numpy bool too): a string such as 'no' is truthy, so it is refused, not read."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise UsageError(f"{_where(what, name)} must be True or False, got {value!r}")
    return bool(value)


def mapping(what: str, name: str, value: Any, *, example: str = "") -> dict[str, Any]:
    """`value`, a dict (None: empty) whose keys are strings."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        e_g = f" (e.g. {example})" if example else ""
        raise UsageError(f"{_where(what, name)} must be a dict of names to values{e_g}, got {value!r}")
    return value


def choice(what: str, name: str, value: Any, choices: tuple[str, ...]) -> str:
    """`value`, one of `choices`."""
    if value not in choices:
        raise UsageError(f"{_where(what, name)} must be one of {', '.join(choices)}, got {value!r}")
    return value


def callable_arg(what: str, name: str, value: Any, *, hint: str = "") -> Any:
    """`value`, a callable (a function, a lambda, a module); `hint` says what to pass instead."""
    if not callable(value):
        got = "a tensor" if hasattr(value, "dtype") and hasattr(value, "shape") else a_noun(type(value).__name__)
        raise UsageError(f"{_where(what, name)} must be a callable, got {got}"
                         + (f" ({hint})" if hint else ""))
    return value


def name_arg(what: str, name: str, value: Any, *, also: tuple[type, ...] = (), example: str = "") -> Any:
    """`value`, a non-empty string (or an instance of one of `also`); `example` shows one."""
    if also and isinstance(value, also):
        return value
    if not isinstance(value, str) or not value.strip():
        kinds = " or ".join(["a non-empty string", *(a_noun(t.__name__) for t in also)])
        raise UsageError(f"{_where(what, name)} must be {kinds}{f' (e.g. {example})' if example else ''}, "
                         f"got {value!r}")
    return value


def path_arg(what: str, name: str, value: Any) -> Any:
    """`value`, a path: a string or an os.PathLike (pathlib.Path), not empty."""
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise UsageError(f"{_where(what, name)} must be a path (a string or a pathlib.Path), got {value!r}")
    return value


def a_noun(noun: str) -> str:
    """'an int', 'a float'."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


DURATION_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
# One part of a duration: a number and its unit ('1.5h', '30s'); a duration is one or more ('1h2m', '2m30s').
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(min|h|m|s)\s*")


def duration_arg(what: str, name: str, text: str) -> float:
    """A time budget in seconds from '10m', '90s', '1.5h', the sum of such parts ('1h2m', '2m30s') or a plain
    number of seconds; it must be > 0."""
    t = str(text).strip().lower()
    try:
        value = float(t)
    except ValueError:
        if not t or _DURATION_PART.sub("", t):  # something besides number-and-unit parts
            raise UsageError(f"{_where(what, name)}: {text!r} is not a duration (e.g. 10m, 90s, 1h, 2m30s)") \
                from None
        value = sum(float(n) * DURATION_UNITS[u] for n, u in _DURATION_PART.findall(t))
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{_where(what, name)} must be a duration > 0 (e.g. 10m), got {text!r}")
    return value
