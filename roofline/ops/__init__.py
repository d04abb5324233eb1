"""Operator families. Importing this package registers every operator."""

from roofline.ops import attention, collectives, conv, elementwise, gemm, norm, rope, softmax  # noqa: F401
from roofline.ops.base import OPERATORS, Operator, Traffic, get_operator, make, operator

__all__ = ["OPERATORS", "Operator", "Traffic", "get_operator", "make", "operator"]
