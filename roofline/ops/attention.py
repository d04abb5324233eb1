"""Attention: prefill (a block of queries against keys and values) and decode (one query token against a KV
cache), multi-head with grouped-query (GQA) and multi-query (MQA) sharing of key/value heads.

FLOPs (as torch's flop counter and the FlashAttention papers count SDPA: the two batched matrix products, so
achieved TFLOP/s compare with published figures): per (query, key) pair and query head, 2 x D for Q K^T and
2 x D for P V. The softmax's 5 per pair (max, sub, exp, sum, div: softmax.py's convention) are the record's
`extra_flops`, not `flops`: they run on the CUDA cores, not on the tensor-core roof the matrix products are
placed on. The 1/sqrt(D) scale is folded into the exp (not counted).
    pairs = Sq x Skv without a mask; causal: the pairs the mask keeps, diagonal included (`causal_pairs`):
    aligned bottom-right as FlashAttention >= 2.1 does (query i sees keys j <= i + Skv - Sq),
    Sq (Skv - Sq) + Sq (Sq + 1) / 2, which is S (S + 1) / 2 when Sq == Skv == S.

K and V are counted as KV_CACHE, as LLM-Viewer's analyzer counts them in prefill too.

NB: the naive variant computes the masked half of S as well; only the useful FLOPs are counted for both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import UsageError
from roofline.core.validate import arg_name
from roofline.ops.base import (
    ACTIVATIONS,
    INDEX,
    INTERMEDIATES,
    KV_CACHE,
    Operator,
    Traffic,
    choice,
    flag,
    operator,
    param,
    rw,
)
from roofline.ops.softmax import SOFTMAX_FLOPS_PER_ELEMENT

ATTENTION_DTYPES = ("fp32", "fp16", "bf16")
INDEX_BYTES = 4  # int32 block-table entries
LSE_BYTES = 4  # the fp32 log-sum-exp per query row and head the fused kernels save for the backward
# The softmax's backward per (query, key) pair: P recomputed from S and the log-sum-exp (a subtract, an exp),
# dS = P (dP - D) (a subtract, a multiply); D = rowsum(dO O) is per row, not counted.
BACKWARD_SOFTMAX_FLOPS = 4
MASK_BYTES = 1  # a torch.bool causal mask


def check_heads(name: str, heads: int, kv_heads: int) -> None:
    """GQA/MQA: every key/value head serves heads / kv_heads query heads."""
    if heads % kv_heads:
        raise UsageError(f"{name}: {arg_name('kv_heads')} {kv_heads} must divide {arg_name('heads')} {heads} "
                         f"(each key/value head serves heads/kv_heads query heads)")


def _triangle(n: int) -> int:
    """1 + 2 + ... + n: the keys n queries keep under a causal mask whose first query sees one key."""
    return n * (n + 1) // 2


def causal_pairs(sq: int, skv: int, align: str) -> int:
    """(query, key) pairs one head scores, exactly: Sq x Skv without a mask (`align` "none"); under a causal
    mask those it keeps, diagonal included. top_left (torch's is_causal, `ones(Sq, Skv).tril()`): query i sees
    keys j <= i, min(i + 1, Skv) of them; bottom_right (FlashAttention >= 2.1, the catalog's --causal): keys
    j <= i + Skv - Sq, clamp(i + Skv - Sq + 1, 0, Skv) of them (queries before Skv - Sq see none).
    NB: the pairs are what the mask leaves; a kernel's whole tiles on the diagonal are not counted."""
    if align == "none":
        return sq * skv
    if align == "bottom_right":
        return sq * (skv - sq) + _triangle(sq) if sq <= skv else _triangle(skv)
    if align == "top_left":
        return _triangle(sq) if sq <= skv else _triangle(skv) + (sq - skv) * skv
    raise ValueError(f"causal_pairs: align {align!r} is none of none, top_left, bottom_right")


def tile_padding(sq: int, skv: int, causal: bool, tile: int) -> float:
    """The (query, key) pairs a fused kernel scores in whole `tile` x `tile` blocks over those the shape has
    (`causal_pairs`): every block a query tile's rows reach, bottom-right aligned when causal (query tile i's last
    row, min((i + 1) T, Sq) - 1, sees keys up to that + Skv - Sq). 1 for lengths that are multiples of the tile
    without a mask; a causal 128 x 128 block at tile 128: 1.98.
    NB: one tile size for both axes and every pass (the kernels' own vary with the head size and the pass)."""
    q_tiles, k_tiles = -(-sq // tile), -(-skv // tile)
    if causal:
        reached = (min(-(-(min((i + 1) * tile, sq) + skv - sq) // tile), k_tiles) for i in range(q_tiles))
        blocks = sum(max(r, 0) for r in reached)
    else:
        blocks = q_tiles * k_tiles
    pairs = causal_pairs(sq, skv, "bottom_right" if causal else "none")
    return blocks * tile * tile / pairs if pairs > 0 else 1.0


def pair_flops(head_dim: int) -> int:
    """Matrix-product FLOPs per (query, key) pair and head: 2D (Q K^T) + 2D (P V); the softmax's
    SOFTMAX_FLOPS_PER_ELEMENT are apart (`extra_flops`)."""
    return 4 * head_dim


def backward_pair_flops(head_dim: int, value_dim: int | None = None) -> int:
    """Matrix-product FLOPs per (query, key) pair and head of the backward, as torch's flop counter counts
    SDPA's: its five products, S = Q K^T again, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q."""
    dv = head_dim if value_dim is None else value_dim
    return 2 * (3 * head_dim + 2 * dv)


def kv_rows_per_query_head(sq: int, skv: int, tile: int, causal: bool) -> int:
    """Key (and value) rows one (batch, query head) streams when each of its ceil(Sq/Br) query tiles reads
    the keys it needs: all Skv, or under the causal mask those up to its last row's diagonal.

    Causal: tile t's last row is r = min((t+1) Br, Sq) - 1 and sees Skv - Sq + r + 1 keys; summed over the
    T tiles (all but the last end before Sq): T (Skv - Sq) + Br T (T - 1) / 2 + Sq.
    """
    tiles = math.ceil(sq / tile)
    if not causal:
        return tiles * skv
    return tiles * (skv - sq) + tile * tiles * (tiles - 1) // 2 + sq


@operator("attention", "attention")
@dataclass(frozen=True)
class Attention(Operator):
    """O = softmax(Q K^T / sqrt(D)) V for a block of Sq queries against Skv keys (prefill).

    flash: Q, K, V read and O written once; S and P live on chip. With --tile Br, each (batch, query head,
    query tile) block streams K and V from memory (FlashAttention-2's grid, no reuse between blocks: L2
    ignored); with --tile 0 (ideal) K and V are read once per (batch, KV head).
    naive: S = Q K^T and P = softmax(S) materialised in the input dtype: S written, S read by the softmax,
    P written, P read by P V; with --causal the mask is applied in place (S.masked_fill_: S read and written
    once more, the bool Sq x Skv mask read once). GQA: the query heads of a group are folded into the rows of
    one matrix product per KV head, so K and V are still read once.
    backward (flash): torch's five products over the kept pairs (`backward_pair_flops`); Q, O, dO, K, V and the
    log-sum-exp read once, dQ, dK, dV written once (the kernels' D = rowsum(dO O) pre-pass and fp32 dQ
    accumulator not counted).
    """

    summary = "prefill attention, naive (S and P in memory) or FlashAttention (S and P on chip)"
    ignores = ("NB: FLOPs are the two matmuls (the softmax's are extra_flops); causal counts the scores the "
               "bottom-right mask keeps (S(S+1)/2 square); the log-sum-exp saved for backward not counted.")
    dtypes = ATTENTION_DTYPES
    added_later = ("backward",)
    uses_tensor_cores = True
    batch: int = param(1, "sequences")
    heads: int = param(32, "query heads")
    kv_heads: int | None = param(None, "key/value heads (GQA/MQA; default: heads); must divide heads")
    seq: int = param(4096, "query tokens per sequence (Sq)")
    kv_seq: int | None = param(None, "key/value tokens per sequence (Skv; default: seq); > seq with a cached "
                                     "prefix")
    head_dim: int = param(128, "dimension of each head (D)")
    causal: bool = flag(False, "causal mask, aligned bottom-right (query i sees keys up to i + kv-seq - seq)")
    variant: str = choice("flash", ("flash", "naive"),
                          "flash: S and P on chip; naive: S = QK^T and P = softmax(S) written to memory")
    tile: int = param(0, "flash only: query rows per tile (Br); each tile re-reads K and V. 0 = ideal: K and V "
                         "read once per batch and KV head", minimum=0)
    backward: bool = flag(False, "the backward pass (flash): dQ, dK, dV from dO, with Q, K, V, O and the "
                                 "log-sum-exp read once")

    def resolve(self) -> None:
        if self.kv_heads is None:
            self._set("kv_heads", self.heads)
        if self.kv_seq is None:
            self._set("kv_seq", self.seq)

    def check(self) -> None:
        assert self.kv_heads is not None and self.kv_seq is not None
        check_heads(self.name, self.heads, self.kv_heads)
        if self.causal and self.seq > self.kv_seq:
            raise UsageError(f"{self.name}: {arg_name('causal')} with {arg_name('seq')} {self.seq} > "
                             f"{arg_name('kv_seq')} {self.kv_seq} "
                             "leaves the "
                             f"first {self.seq - self.kv_seq} queries no key to attend (bottom-right mask)")
        if self.tile and self.variant != "flash":
            raise UsageError(f"{self.name}: {arg_name('tile')} applies to {arg_name('variant')} flash only")
        if self.backward and (self.variant != "flash" or self.tile):
            raise UsageError(f"{self.name}: {arg_name('backward')} is modelled for {arg_name('variant')} flash "
                             f"with {arg_name('tile')} 0 (K, V, Q and dO read once)")

    def pairs(self) -> float:
        assert self.kv_seq is not None
        return causal_pairs(self.seq, self.kv_seq, "bottom_right" if self.causal else "none")

    def flops(self) -> float:
        per_pair = backward_pair_flops(self.head_dim) if self.backward else pair_flops(self.head_dim)
        return per_pair * self.batch * self.heads * self.pairs()

    def extra_flops(self) -> float:
        """The softmax: 5 per (query, key) pair and head; its backward 4 (BACKWARD_SOFTMAX_FLOPS)."""
        per_pair = BACKWARD_SOFTMAX_FLOPS if self.backward else SOFTMAX_FLOPS_PER_ELEMENT
        return per_pair * self.batch * self.heads * self.pairs()

    def traffic(self, dtype: DType) -> Traffic:
        assert self.kv_heads is not None and self.kv_seq is not None
        b, d = self.batch, self.head_dim
        q = b * self.heads * self.seq * d * dtype.bytes  # = O
        if self.backward:  # Q, O, dO, K, V and the fp32 log-sum-exp read; dQ, dK, dV written
            kv = 2 * b * self.kv_heads * self.kv_seq * d * dtype.bytes
            lse = b * self.heads * self.seq * LSE_BYTES
            return rw({ACTIVATIONS: 3 * q, KV_CACHE: kv, INTERMEDIATES: lse}, {ACTIVATIONS: q + kv})
        if self.variant == "flash" and self.tile:
            kv_rows = b * self.heads * kv_rows_per_query_head(self.seq, self.kv_seq, self.tile, self.causal)
        else:
            kv_rows = b * self.kv_heads * self.kv_seq
        t = rw({ACTIVATIONS: q, KV_CACHE: 2 * kv_rows * d * dtype.bytes}, {ACTIVATIONS: q})
        if self.variant == "naive":
            s = b * self.heads * self.seq * self.kv_seq * dtype.bytes  # S, and P, each
            passes = 3 if self.causal else 2  # reads (and as many writes) of S/P: softmax, PV, masked_fill_
            t = t + rw({INTERMEDIATES: passes * s}, {INTERMEDIATES: passes * s})
            if self.causal:
                t = t + rw({INDEX: self.seq * self.kv_seq * MASK_BYTES})
        return t


@operator("decode_attention", "attention")
@dataclass(frozen=True)
class DecodeAttention(Operator):
    """One query token per sequence attends its `context` cached keys and values (the decode step).

    K and V are read once per (sequence, KV head) in --kv-dtype; fp8 (e4m3) halves them and is dequantised in
    registers inside the kernel, so it costs no extra traffic (a scale per tensor, not counted). Paged KV
    (--page-size > 0) moves the same cache bytes plus the block table: one int32 per page per sequence (INDEX).
    """

    summary = "decode attention: one query token per sequence over a (paged) KV cache"
    ignores = "NB: the new token's K/V append, sequence lengths and fp8 scales not counted; K/V read once."
    dtypes = ATTENTION_DTYPES
    uses_tensor_cores = True
    batch: int = param(8, "sequences, one query token each")
    heads: int = param(32, "query heads")
    kv_heads: int | None = param(None, "key/value heads (GQA/MQA; default: heads); must divide heads")
    context: int = param(4096, "cached tokens per sequence (keys and values attended)")
    head_dim: int = param(128, "dimension of each head (D)")
    kv_dtype: str = choice("auto", ("auto", "fp16", "bf16", "fp8"),
                           "KV-cache element type (auto: --dtype); fp8 is e4m3, dequantised in registers")
    page_size: int = param(0, "tokens per KV-cache page (paged attention); 0 = one contiguous cache",
                           minimum=0)

    def resolve(self) -> None:
        if self.kv_heads is None:
            self._set("kv_heads", self.heads)

    def check(self) -> None:
        assert self.kv_heads is not None
        check_heads(self.name, self.heads, self.kv_heads)

    def kv_bytes(self, dtype: DType) -> float:
        """Bytes per cached element."""
        return dtype.bytes if self.kv_dtype == "auto" else get_dtype(self.kv_dtype).bytes

    def pages(self) -> int:
        """Block-table entries per sequence."""
        return math.ceil(self.context / self.page_size) if self.page_size else 0

    def flops(self) -> float:
        return pair_flops(self.head_dim) * self.batch * self.heads * self.context

    def extra_flops(self) -> float:
        """The softmax: 5 per cached token and head."""
        return SOFTMAX_FLOPS_PER_ELEMENT * self.batch * self.heads * self.context

    def traffic(self, dtype: DType) -> Traffic:
        assert self.kv_heads is not None
        q = self.batch * self.heads * self.head_dim * dtype.bytes  # = O
        kv = 2 * self.batch * self.kv_heads * self.context * self.head_dim * self.kv_bytes(dtype)
        return rw({ACTIVATIONS: q, KV_CACHE: kv, INDEX: self.batch * self.pages() * INDEX_BYTES},
                  {ACTIVATIONS: q})
