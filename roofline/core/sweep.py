"""Shape sweeps: one integer parameter given as several values (`--m 1024:16384:x2`, `--m 1024,4096`).

Grammar of one value (`parse_values`):
- `4096`: one value;
- `1024,4096,8192`: a list, in the order given (`4,096`, a number with thousands separators, is refused: as a
  list it would be 4 and 96; `4, 96` is that list: THOUSANDS);
- `A:B:xF`: geometric, A, A*F, A*F^2, ... up to B inclusive (F an integer >= 2);
- `A:B:+S`: arithmetic, A, A+S, A+2S, ... up to B inclusive (S an integer >= 1).

Several swept parameters give every combination of their values (their product), the first parameter of the
operator varying slowest: `--m 1024,2048 --n 512,1024` is (1024, 512), (1024, 1024), (2048, 512), (2048,
1024). The product is the one reading that needs no pairing rule; `MAX_SHAPES` keeps a typo from becoming
hours of work.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from roofline.core.errors import UsageError

# More shapes than this in one sweep is refused: 1:100000:+1 is a typo, not a plan (each shape is a record,
# a table row and, timed, at least one timing of ~0.1-10 s).
MAX_SHAPES = 1_000


# A number written with thousands separators: '4,096', '1,048,576'. Read as a list it would be 4 and 96: it is
# refused, with both readings, when no list means it: a value after the first with a leading zero ('096': no one
# writes 96 so), or digits that join into a multiple of 1024 ('8,192', '12,288', '14,336': the sizes written with
# separators are powers of two or KiB multiples) unless every part is a power of two, as a list of sizes is
# ('64,512'). '64,128,256' and '128,256,512' stay the lists they are.
THOUSANDS = re.compile(r"\d{1,3}(,\d{3})+")
# The sizes written with separators are multiples of this (KiB): 4,096, 12,288 (a hidden size), 14,336.
THOUSANDS_MULTIPLE = 1024


def _thousands(text: str) -> bool:
    """Whether `text` is one number written with thousands separators rather than a list (THOUSANDS)."""
    if not THOUSANDS.fullmatch(text):
        return False
    parts = text.split(",")
    if any(part.startswith("0") for part in parts[1:]):
        return True
    powers = all(int(part) & (int(part) - 1) == 0 for part in parts)
    return int("".join(parts)) % THOUSANDS_MULTIPLE == 0 and not powers


# The flags that are byte sizes: they take a unit too (`--bytes 256MiB`, `--bytes 1KiB:1GiB:x4`; core/sizes.py).
SIZE_FLAGS = ("--bytes",)


def _integer(flag: str, text: str) -> int:
    if flag in SIZE_FLAGS and text.strip()[-1:].isalpha():
        from roofline.core.sizes import SIZE_UNITS, parse_bytes

        return parse_bytes(text.strip(), SIZE_UNITS)
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"{flag}: {text.strip()!r} is not an integer (a sweep is A:B:xF, A:B:+S or "
                         "A,B,C)") from None


def parse_values(flag: str, text: str) -> list[int]:
    """The values of one parameter given as `text` (module docstring); a UsageError names `flag` for an
    empty range, a zero or missing step, or a value that is not an integer."""
    text = text.strip()
    if _thousands(text):
        as_list, joined = ", ".join(str(int(part)) for part in text.split(",")), text.replace(",", "")
        raise UsageError(f"{flag}: {text!r} reads as {joined} written with thousands separators: write {joined} "
                         f"(for the list {as_list}, write '{as_list}')")
    if "," in text:
        values = [_integer(flag, part) for part in text.split(",")]
    elif ":" in text:
        parts = text.split(":")
        if len(parts) != 3 or parts[2].strip()[:1] not in ("x", "+"):
            raise UsageError(f"{flag}: a range is A:B:xF (geometric) or A:B:+S (arithmetic), got {text!r}")
        start, stop = _integer(flag, parts[0]), _integer(flag, parts[1])
        kind, step = parts[2].strip()[0], _integer(flag, parts[2].strip()[1:])
        if kind == "x" and step < 2:
            raise UsageError(f"{flag}: the factor of {text!r} must be an integer >= 2")
        if kind == "+" and step < 1:
            raise UsageError(f"{flag}: the step of {text!r} must be an integer >= 1")
        if start > stop:
            raise UsageError(f"{flag}: {text!r} is an empty range (it starts above its end)")
        if kind == "x" and start < 1:
            raise UsageError(f"{flag}: a geometric range starts at 1 or more, got {text!r}")
        values = []
        v = start
        while v <= stop and len(values) <= MAX_SHAPES:
            values.append(v)
            v = v * step if kind == "x" else v + step
    else:
        values = [_integer(flag, text)]
    if len(values) > MAX_SHAPES:
        raise UsageError(f"{flag}: {text!r} gives more than {MAX_SHAPES} values")
    return values


def is_sweep(text: Any) -> bool:
    """Whether a parameter's command-line text names more than one value's syntax (a list or a range)."""
    return isinstance(text, str) and ("," in text or ":" in text)


def expand(shape: dict[str, Any], flags: dict[str, str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every shape of a sweep, and the names of the swept parameters (in `shape`'s order). `shape` maps each
    parameter to its value; `flags` maps the integer parameters to their command-line flags: their str values
    are parsed (`parse_values`, an error naming the flag); anything else (None, a bool, a choice's name) is
    kept as it is. Without a list or a range: one shape, no swept names."""
    axes: dict[str, list[Any]] = {}
    for name, value in shape.items():
        axes[name] = parse_values(flags[name], value) if name in flags and isinstance(value, str) else [value]
    swept = [name for name, value in shape.items() if name in flags and is_sweep(value)]
    total = 1
    for values in axes.values():
        total *= len(values)
    if total > MAX_SHAPES:
        raise UsageError(f"the sweep has {total} shapes (the product of {', '.join(flags[n] for n in swept)}); "
                         f"at most {MAX_SHAPES}")
    names = list(axes)
    shapes = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes.values())]
    return shapes, swept
