"""The one rule of every registry (operators, formulas, families, advice rules, kernel builders, host kernels):
a name is registered once; a second registration is a bug in the package, said at import."""

from __future__ import annotations

from typing import TypeVar

V = TypeVar("V")


def add_once(table: dict[str, V], name: str, value: V, what: str) -> None:
    """`table[name] = value`; a name already there is a RuntimeError naming `what` ('FLOP formula for')."""
    if name in table:
        raise RuntimeError(f"{what} {name!r} registered twice")
    table[name] = value


__all__ = ["add_once"]
