"""Operator families. `OPERATORS` here is the whole catalog (every family imported on first use);
`get_operator(name)` and `make(name, ...)` import only the family that defines `name`."""

from typing import Any

from roofline.ops.base import Operator, Traffic, get_operator, load_catalog, make, operator

__all__ = ["OPERATORS", "Operator", "Traffic", "get_operator", "make", "operator"]


def __getattr__(name: str) -> Any:
    if name == "OPERATORS":
        return load_catalog()
    raise AttributeError(f"module 'roofline.ops' has no attribute {name!r}")
