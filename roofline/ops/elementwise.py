"""Elementwise operators: relu, add, mul, gelu, silu, swiglu and chains of them, fused or unfused; copy (into
row-major order); cat (a copy); cast (a copy into another dtype).

NB: transcendental functions (exp, erf, tanh) count as one FLOP each although they run on the SFU.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import UsageError
from roofline.core.validate import arg_name
from roofline.ops.base import ACTIVATIONS, INTERMEDIATES, Operator, Traffic, choice, flag, operator, param, rw
from roofline.ops.counts import FLOPS_PER_ELEMENT  # FLOPs per output element, by function

# Number of tensor inputs each function reads.
ARITY: dict[str, int] = {"relu": 1, "add": 2, "mul": 2, "gelu": 1, "silu": 1, "copy": 1}


def elementwise_traffic(numel: int, inputs: int, outputs: int, dtype: DType) -> Traffic:
    """Each input read once, each output written once: the minimum for one fused pass."""
    return rw({ACTIVATIONS: inputs * numel * dtype.bytes}, {ACTIVATIONS: outputs * numel * dtype.bytes})


@dataclass(frozen=True)
class _Elementwise(Operator):
    numel: int = param(2**24, "number of elements of each tensor")
    run: int = param(0, "elements in each contiguous run of the last input, a view with its outer dimensions "
                        "swapped (a head split's transpose): the kernel reads it strided; 0: contiguous", minimum=0)

    func = ""
    added_later = ("run", "bcast")
    bcast = False  # a binary op's field (_Binary): a unary op has no second input to broadcast

    def check(self) -> None:
        if self.run > self.numel:
            raise UsageError(f"{self.name}: run ({self.run}) exceeds numel ({self.numel})")

    def flops(self) -> float:
        return FLOPS_PER_ELEMENT[self.func] * self.numel

    def traffic(self, dtype: DType) -> Traffic:
        if self.bcast:  # the broadcast input's run elements once
            return rw({ACTIVATIONS: (self.numel + self.run) * dtype.bytes}, {ACTIVATIONS: self.numel * dtype.bytes})
        return elementwise_traffic(self.numel, ARITY[self.func], 1, dtype)


@dataclass(frozen=True)
class _Binary(_Elementwise):
    bcast: bool = flag(False, "the last input is `run` elements broadcast over numel / run rows (a bias, a "
                              "norm's weight): read once, re-read from the caches")

    def check(self) -> None:
        super().check()
        if self.bcast and not self.run:
            raise UsageError(f"{self.name}: {arg_name('bcast')} needs {arg_name('run')}, the length of the "
                             f"broadcast row (numel / run rows)")


def _register(func: str, summary: str) -> None:
    base = _Binary if ARITY[func] > 1 else _Elementwise
    ignores = "NB: transcendentals count as 1 FLOP; a strided view moves the same bytes" + \
        ("; a broadcast row is read once." if ARITY[func] > 1 else ".")
    cls = type(func.capitalize(), (base,), {"func": func, "summary": summary, "ignores": ignores})
    cls.__module__ = __name__
    operator(func, "elementwise")(dataclass(frozen=True)(cls))


_register("relu", "y = max(x, 0)")
_register("add", "y = a + b")
_register("mul", "y = a * b")
_register("gelu", "y = gelu(x), erf form")
_register("silu", "y = x * sigmoid(x)")
# A copy into row-major order: with --run, x.contiguous() of a transposed view (a head split's or merge's, a
# transposed norm input's). torch's unary kernels (relu, gelu) keep a permuted input's layout and read it densely;
# this copy reads it strided, as a model's .contiguous() and clone() do.
_register("copy", "y = x.contiguous(): a copy into row-major order (of a transposed view with --run)")


@operator("swiglu", "elementwise")
@dataclass(frozen=True)
class SwiGLU(Operator):
    """y = silu(a) * b. Unfused: silu writes a temporary that the mul reads back."""

    summary = "y = silu(a) * b (the LLaMA MLP gate)"
    ignores = "NB: a and b as separate tensors (a fused gate/up projection output split in two views)."
    numel: int = param(2**24, "elements of a (= of b and of y)")
    variant: str = choice("fused", ("fused", "unfused"), "fused: one pass; unfused: silu then mul")

    def flops(self) -> float:
        return (FLOPS_PER_ELEMENT["silu"] + FLOPS_PER_ELEMENT["mul"]) * self.numel

    def traffic(self, dtype: DType) -> Traffic:
        t = elementwise_traffic(self.numel, 2, 1, dtype)
        if self.variant == "unfused":  # silu(a) written, then read back by the mul
            t = t + rw({INTERMEDIATES: self.numel * dtype.bytes}, {INTERMEDIATES: self.numel * dtype.bytes})
        return t


@operator("chain", "elementwise")
@dataclass(frozen=True)
class Chain(Operator):
    """N unary elementwise ops on one tensor: fused reads and writes once, unfused once per op."""

    summary = "N unary elementwise ops applied in a row (e.g. scale, bias, activation)"
    ignores = "NB: each op counted as 1 FLOP per element."
    numel: int = param(2**24, "elements of the tensor")
    length: int = param(4, "number of elementwise ops in the chain")
    variant: str = choice("fused", ("fused", "unfused"), "fused: one pass; unfused: one pass per op")

    def flops(self) -> float:
        return self.length * self.numel

    def traffic(self, dtype: DType) -> Traffic:
        t = elementwise_traffic(self.numel, 1, 1, dtype)
        if self.variant == "unfused":  # every op but the first reads, every op but the last writes, a temporary
            extra = (self.length - 1) * self.numel * dtype.bytes
            t = t + rw({INTERMEDIATES: extra}, {INTERMEDIATES: extra})
        return t


@operator("cat", "elementwise")
@dataclass(frozen=True)
class Cat(Operator):
    """y = cat([x0, x1, ...], dim): `parts` tensors of outer x length_i x inner, joined along the middle axis;
    x0 is `length` long, each later one `tail` (a KV cache's append: tail 1; rotate_half's halves: tail = length)."""

    summary = "y = cat(tensors, dim): a KV cache's append, rotate_half's two halves"
    ignores = "NB: 0 FLOPs; every input read once and the output written once (a cache written in place moves less)."
    outer: int = param(64, "product of the dimensions before the joined one (batch x heads)")
    length: int = param(4096, "the first tensor's length along the joined dimension")
    tail: int = param(1, "each later tensor's length along it")
    parts: int = param(2, "tensors joined", minimum=2)
    inner: int = param(128, "product of the dimensions after it (head_dim)")
    strided: bool = flag(False, "the inputs are views with gaps (slices of wider rows, a cropped cache): the copy "
                                "gathers them")

    def out_numel(self) -> int:
        return self.outer * (self.length + (self.parts - 1) * self.tail) * self.inner

    def flops(self) -> float:
        return 0.0

    def traffic(self, dtype: DType) -> Traffic:
        n = self.out_numel() * dtype.bytes
        return rw({ACTIVATIONS: n}, {ACTIVATIONS: n})


# The dtypes a cast converts to (torch's floating dtypes the catalog knows).
CAST_TARGETS = ("fp32", "bf16", "fp16", "fp64")


@operator("cast", "elementwise")
@dataclass(frozen=True)
class Cast(Operator):
    """y = x.to(to): every element read in the operator's dtype and written in `to` (a mixed-precision step's
    bf16 -> fp32 upcasts around a norm or a loss write twice what they read)."""

    summary = "y = x.to(dtype): a copy into another dtype (mixed precision's up- and downcasts)"
    ignores = "NB: 0 FLOPs; read once in the input's dtype, written once in the target's."
    dtypes = ("fp64", "fp32", "fp16", "bf16")
    numel: int = param(2**24, "elements of the tensor")
    to: str = choice("fp32", CAST_TARGETS, "the dtype written")

    def flops(self) -> float:
        return 0.0

    def traffic(self, dtype: DType) -> Traffic:
        return rw({ACTIVATIONS: self.numel * dtype.bytes}, {ACTIVATIONS: self.numel * get_dtype(self.to).bytes})
