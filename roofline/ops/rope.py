"""Rotary position embedding (RoPE), rotate-half (GPT-NeoX / Hugging Face) form:
out = x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1), x1 and x2 the two halves of each head.

Tensors: q of tokens x heads x head_dim, k of tokens x kv_heads x head_dim (when kv_heads > 0), and the cos
and sin tables of tokens x head_dim each (Hugging Face's layout: the half-dimension frequencies repeated
twice), in the operator's dtype and broadcast over heads. The tables count as WEIGHTS.

FLOP convention: 3 per rotated element (two multiplies and one add: out1 = x1 cos - x2 sin,
out2 = x2 cos + x1 sin); the eager form's negation of x2 is not counted (a fused kernel folds it into the
subtraction), so both variants count the same FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType
from roofline.core.errors import UsageError
from roofline.core.validate import arg_name
from roofline.ops.attention import check_heads
from roofline.ops.base import (
    ACTIVATIONS,
    HALF_AND_WIDER,
    INTERMEDIATES,
    WEIGHTS,
    Operator,
    Traffic,
    choice,
    operator,
    param,
    rw,
)

ROPE_FLOPS_PER_ELEMENT = 3


def unfused_rope_traffic(n: float, table: float) -> Traffic:
    """The eager passes over one rotated tensor of n bytes (`table` = bytes of one of cos, sin):

    | pass                    | reads                              | writes     |
    | ----------------------- | ---------------------------------- | ---------- |
    | 1. t1 = -x2             | x2 (n/2)                           | t1 (n/2)   |
    | 2. r = cat(t1, x1)      | t1 (n/2), x1 (n/2)                 | r (n)      |
    | 3. a = x * cos          | x (n), cos (table)                 | a (n)      |
    | 4. b = r * sin          | r (n), sin (table)                 | b (n)      |
    | 5. out = a + b          | a (n), b (n)                       | out (n)    |

    x is read twice (2n, ACTIVATIONS); the temporaries t1, r, a, b are written and read back (3.5n each way,
    INTERMEDIATES); the tables once each (WEIGHTS); out written once (ACTIVATIONS): 5.5n + 2 tables read,
    4.5n written, against n + 2 tables read and n written for the fused pass.
    """
    return rw({ACTIVATIONS: 2 * n, INTERMEDIATES: 3.5 * n, WEIGHTS: 2 * table},
              {ACTIVATIONS: n, INTERMEDIATES: 3.5 * n})


@operator("rope", "rope")
@dataclass(frozen=True)
class RoPE(Operator):
    """Rotate q (and k when kv_heads > 0) by position.

    fused: one kernel for q and k: reads each once and the cos/sin tables once, writes each output once.
    unfused: the eager Hugging Face form, five kernels per rotated tensor (`unfused_rope_traffic`), the tables
    read by each tensor's two multiplies.
    """

    summary = "rotary position embedding of q (and k), rotate-half form, fused or eager"
    ignores = "NB: cos/sin tables of tokens x head_dim each, in --dtype, read once per kernel that uses them."
    dtypes = HALF_AND_WIDER
    tokens: int = param(4096, "tokens (batch x sequence, flattened)")
    heads: int = param(32, "query heads")
    head_dim: int = param(128, "dimension of each head (even: rotated as two halves)")
    kv_heads: int = param(0, "key heads rotated as well; 0 = rotate q only", minimum=0)
    variant: str = choice("fused", ("fused", "unfused"),
                          "fused: one pass; unfused: eager rotate_half (neg, cat, mul, mul, add)")

    def check(self) -> None:
        if self.head_dim % 2:
            raise UsageError(f"{self.name}: {arg_name('head_dim')} must be even (rotated as two halves), "
                             f"got {self.head_dim}")
        if self.kv_heads:
            check_heads(self.name, self.heads, self.kv_heads)

    def rotated_heads(self) -> int:
        return self.heads + self.kv_heads

    def flops(self) -> float:
        return ROPE_FLOPS_PER_ELEMENT * self.tokens * self.rotated_heads() * self.head_dim

    def traffic(self, dtype: DType) -> Traffic:
        table = self.tokens * self.head_dim * dtype.bytes  # one of cos, sin
        if self.variant == "fused":
            x = self.tokens * self.rotated_heads() * self.head_dim * dtype.bytes
            return rw({ACTIVATIONS: x, WEIGHTS: 2 * table}, {ACTIVATIONS: x})
        t = Traffic()
        for h in (self.heads, self.kv_heads):
            if h:
                t = t + unfused_rope_traffic(self.tokens * h * self.head_dim * dtype.bytes, table)
        return t
