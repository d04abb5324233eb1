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
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from roofline.core.errors import RooflineError, UsageError

# The largest whole number an argument may be: torch's sizes, counts and seeds are 64-bit signed integers, so a
# larger one is a typo (`--m` of 400 digits) that would end in an OverflowError deep inside, not a shape.
MAX_WHOLE = 2**63 - 1
# The largest integer a double holds: a results document's every number is read as one.
MAX_DOUBLE = int(sys.float_info.max)

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
    given = value
    try:
        value = float(value)
    except OverflowError:  # an int past the largest double (10**400)
        raise UsageError(f"{_where(what, name)} must be a finite number, got {brief(given)}") from None
    if not math.isfinite(value):
        raise UsageError(f"{_where(what, name)} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise UsageError(f"{_where(what, name)} must be > 0, got {given!r}")
    if minimum is not None and value < minimum:
        raise UsageError(f"{_where(what, name)} must be >= {minimum:g}, got {given!r}")
    return float(value)


def whole(what: str, name: str, value: Any, *, minimum: int | None = None, maximum: int = MAX_WHOLE) -> int:
    """`value` as an int: an integer (not a bool), >= `minimum`, <= `maximum` (MAX_WHOLE: what torch holds)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{_where(what, name)} must be an integer, got {brief(value)}")
    if minimum is not None and value < minimum:
        raise UsageError(f"{_where(what, name)} must be >= {minimum}, got {brief(value)}")
    if value > maximum:
        raise UsageError(f"{_where(what, name)} must be <= {maximum}, got {brief(value)}")
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


# A value shown in an error is cut to this many characters: a 400-digit integer or a 1,000,000-character name is
# named by its start and its length, and the error stays one line.
BRIEF_CHARS = 40


def brief(value: Any) -> str:
    """`value` as an error shows it: its repr, or for a long one its start and length ('9999...(400 digits)')."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**BRIEF_CHARS:
        return f"an integer of {digits(value)} digits"
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # a structure nested past the interpreter's limit
        return a_noun(type(value).__name__)
    return text if len(text) <= BRIEF_CHARS else f"{text[:BRIEF_CHARS - 3]}... ({len(text):,} characters)"


def digits(n: int) -> int:
    """The decimal digits of `n`, without writing it out (Python refuses to write an int of over 4300 digits)."""
    bits = abs(n).bit_length()
    guess = max(1, int(bits * math.log10(2)))  # the digits of 2**(bits-1) .. 2**bits - 1: guess or guess + 1
    return guess + (abs(n) >= 10**guess)


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


def input_file(path: Any, what: str, max_bytes: int, error: type[RooflineError] = UsageError) -> None:
    """A file the user names as input (`what`: 'results file'), refused before it is read when it is no regular
    file (a FIFO blocks the read until a writer comes, forever; /dev/zero and other devices never end) or is
    larger than `max_bytes` (reading it would exhaust memory before a line could say so). A missing file or a
    folder is left to the reader, which words it ('no such results file')."""
    import stat

    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    if stat.S_ISDIR(st.st_mode):
        return
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device")
        raise error(f"{path}: {kind}, not {a_noun(what)}: only a regular file is read")
    if st.st_size > max_bytes:
        raise error(f"{path}: {st.st_size / 2**20:,.0f} MiB, larger than any {what} ({max_bytes / 2**20:,.0f} MiB "
                    "at most): is it the right file?")


def json_type(value: Any, hint: Any) -> str | None:
    """What parsed JSON `value` must be and is not, as `hint` (a type annotation: str, float, int, bool, None,
    Any, list[X], dict[str, X], unions, a dataclass: an object) says: 'a string', 'a list of strings'; None
    when it is. A number is an int or a float, never a bool; an int is not a float."""
    import dataclasses
    import types
    import typing

    if hint is Any:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        wants = []
        for arg in args:
            want = json_type(value, arg)
            if want is None:
                return None
            wants.append(want)
        return " or ".join(wants)
    if hint is type(None):
        return None if value is None else "null"
    if hint is str:
        return None if isinstance(value, str) else "a string"
    if hint is bool:
        return None if isinstance(value, bool) else "true or false"
    if hint is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else "an integer"
    if hint is float:
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"
    if origin in (list, tuple):
        item = args[0] if args else Any
        if not isinstance(value, list):
            return "a list" if item is Any else f"a list of {_plural(json_type(None, item) or 'values')}"
        if item in _PLAIN and all(type(v) in _PLAIN[item] for v in value):  # a profile's samples: thousands a record
            return None
        for v in value:
            if (want := json_type(v, item)) is not None:
                return f"a list of {_plural(want)}"
        return None
    if origin is dict or hint is dict or (isinstance(hint, type) and dataclasses.is_dataclass(hint)):
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            return "an object"
        item = args[1] if len(args) == 2 else Any
        for v in value.values():
            if (want := json_type(v, item)) is not None:
                return f"an object of {_plural(want)}"
        return None
    return None  # a type JSON has no word for: not checked here


# The types of a list's items that a JSON reader gives for each item type, without a call per item (`json_type`'s
# fast path: a record of 10,000 samples is checked in one pass).
_PLAIN: dict[Any, tuple[type, ...]] = {float: (float, int), int: (int,), str: (str,)}


def _plural(noun: str) -> str:
    """'a string' -> 'strings', 'an integer or null' -> 'integers or nulls', 'a list of integers' -> 'lists of
    integers' (the words of `json_type`)."""
    words = {"true or false": "booleans", "null": "nulls"}
    out = []
    for part in ([noun] if noun in words else noun.split(" or ")):
        if part in words:
            out.append(words[part])
            continue
        head, _, rest = part.removeprefix("a ").removeprefix("an ").partition(" ")
        out.append(f"{head}s" + (f" {rest}" if rest else ""))
    return " or ".join(out)


# How deep a value given to be stored in a document may nest (a shape list of lists is 2; JSON's reader stops near
# the interpreter's recursion limit, and a record nested past it could be written but never read back).
MAX_NESTING = 32


def json_value(what: str, name: str, value: Any) -> Any:
    """`value`, something a results document can hold and read back as it was: None, a bool, a str, an int a
    double holds, a finite float, and lists, tuples and string-keyed dicts of those (at most MAX_NESTING deep)."""
    def problem(v: Any, depth: int) -> str | None:
        if depth > MAX_NESTING:
            return f"nested more than {MAX_NESTING} deep"
        if v is None or isinstance(v, (bool, str)):
            return None
        if isinstance(v, int):
            return None if abs(v) <= MAX_DOUBLE else f"{brief(v)}, past what a double holds"
        if isinstance(v, float):
            return None if math.isfinite(v) else f"{v!r}, which JSON has not"
        if isinstance(v, (list, tuple)):
            return next((p for x in v if (p := problem(x, depth + 1)) is not None), None)
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return "a dict with keys other than strings"
            return next((p for x in v.values() if (p := problem(x, depth + 1)) is not None), None)
        return a_noun(type(v).__name__)
    found = problem(value, 0)
    if found is not None:
        raise UsageError(f"{_where(what, name)} must hold what a results document holds (numbers, strings, lists, "
                         f"dicts), got {found}")
    return value

