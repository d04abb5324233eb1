"""Builders for attention.

- attention, flash: F.scaled_dot_product_attention restricted to its fused backends (FlashAttention,
  memory-efficient, cuDNN); GQA through `enable_gqa=True` (no K/V copy); a causal mask with kv_seq > seq
  through `causal_lower_right` (bottom-right aligned, as the model). Where no fused backend takes the case
  (e.g. some fp32 GQA shapes on the GPU), SDPA's default choice runs and `impl` says so. --tile is a model
  parameter only: the library picks its own tiles.
- attention, naive: eager bmm, (masked_fill_), softmax, bmm, with S and P in memory; the query heads of a
  GQA group folded into the rows of one bmm per KV head (no K/V copy); 1/sqrt(D) folded into q at setup (as
  into the Q projection), so S is written once by the bmm.
- attention, --backward: the fused backend's backward op alone (cuDNN's, else FlashAttention's; the CPU's flash
  kernel), called on the outputs of its forward run once at setup (their D = rowsum(dO O) pass included); GQA's
  K and V expanded to every head first (Hugging Face's repeat_kv). Where no such forward takes the shape (a
  bottom-right causal mask with kv_seq > seq), autograd over SDPA's graph on the CPU, not graph-safe; on a GPU that
  case is refused (on the H200 it left the CUDA generator unusable for the kernels built after it).
- decode_attention: SDPA with a 1-token query over the cache. An fp8 (float8_e4m3fn) cache is converted to
  the query's dtype inside the callable: on torch that is a separate pass (read fp8, write 16-bit, read it
  again), so the measured kernel is not the ideal fused one. A paged cache is gathered into a contiguous one
  by index_select (torch has no paged SDPA), again an extra pass that `impl` names.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import UsageError
from roofline.core.validate import arg_name
from roofline.measuring.kernels.common import rand, torch_dtype
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.attention import INDEX_BYTES, LSE_BYTES, MASK_BYTES, Attention, DecodeAttention

_FUSED = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]


def _sdpa(prepare: Callable[[], tuple[torch.Tensor, torch.Tensor, torch.Tensor]], mask: torch.Tensor | None,
          causal: bool, gqa: bool) -> tuple[Callable[[], torch.Tensor], str]:
    """A callable running SDPA on `prepare()`'s q, k, v: on a fused backend when one takes the case (tried
    once here), else on SDPA's default choice (the math backend)."""

    def run() -> torch.Tensor:
        q, k, v = prepare()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=gqa)

    def fused() -> torch.Tensor:
        with sdpa_kernel(_FUSED):
            return run()

    try:
        with warnings.catch_warnings():  # SDPA warns why each backend declined before it raises
            warnings.simplefilter("ignore")
            out = fused()
    except RuntimeError:
        return run, "F.scaled_dot_product_attention (no fused backend takes this case: math backend)"
    if out.device.type == "cpu":  # the CPU has one fused kernel; the list below is CUDA's
        return fused, "F.scaled_dot_product_attention (fused backend: the CPU flash-attention kernel)"
    return fused, "F.scaled_dot_product_attention (fused backend: flash / efficient / cuDNN)"


def _causal_mask(sq: int, skv: int, device: str) -> torch.Tensor:
    """True where masked: query i sees keys j <= i + skv - sq (bottom-right aligned)."""
    return torch.ones((sq, skv), dtype=torch.bool, device=device).triu(skv - sq + 1)


def _naive(q: torch.Tensor, kt: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, groups: int,
           out_shape: tuple[int, ...]) -> torch.Tensor:
    """q: (B Hkv, G Sq, D), pre-scaled; kt: (B Hkv, D, Skv), a transposed view; v: (B Hkv, Skv, D)."""
    s = torch.bmm(q, kt)  # S written
    if mask is not None:  # S read and written again
        s.view(s.shape[0], groups, -1, s.shape[-1]).masked_fill_(mask, float("-inf"))
    p = torch.softmax(s, dim=-1)  # S read, P written
    return torch.bmm(p, v).view(out_shape)  # P read


def attention_footprint(op: Attention, dtype: DType) -> float:
    """Q, K, V, O, plus S and P (alive together during the softmax) and the causal bool mask for naive, or
    the log-sum-exp for the fused kernels."""
    b, h, hkv, sq, skv, d = op.batch, op.heads, op.kv_heads, op.seq, op.kv_seq, op.head_dim
    assert hkv is not None and skv is not None  # Attention.resolve() set them
    base = (2 * b * h * sq * d + 2 * b * hkv * skv * d) * dtype.bytes
    if op.variant == "naive":
        mask = sq * skv * MASK_BYTES if op.causal else 0
        return base + 2 * b * h * sq * skv * dtype.bytes + mask
    if op.backward:  # dO, and dQ, dK, dV
        base *= 2
    return base + b * h * sq * LSE_BYTES


@builder("attention", attention_footprint)
def build_attention(op: Attention, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    b, h, hkv, sq, skv, d = op.batch, op.heads, op.kv_heads, op.seq, op.kv_seq, op.head_dim
    assert hkv is not None and skv is not None  # Attention.resolve() set them
    causal, variant = op.causal, op.variant
    q = rand((b, h, sq, d), dtype, device)
    k, v = rand((b, hkv, skv, d), dtype, device), rand((b, hkv, skv, d), dtype, device)
    if variant == "naive":
        groups = h // hkv
        qs = (q * (1 / math.sqrt(d))).view(b * hkv, groups * sq, d)
        kt, vv = k.view(b * hkv, skv, d).transpose(1, 2), v.view(b * hkv, skv, d)
        mask = _causal_mask(sq, skv, device) if causal else None
        impl = "eager bmm + " + ("masked_fill_ + " if causal else "") + "softmax + bmm (S, P in memory)"
        return Built(lambda: _naive(qs, kt, vv, mask, groups, (b, h, sq, d)), impl, [qs, kt, vv, mask])
    mask = None
    if causal and sq != skv:
        from torch.nn.attention.bias import causal_lower_right  # imports dynamo (~2 s): only when needed

        mask = causal_lower_right(sq, skv)
    fn, impl = _sdpa(lambda: (q, k, v), mask, causal and sq == skv, hkv != h)
    if hkv != h:
        impl += ", enable_gqa=True"
    if op.backward:
        return _backward(fn, impl, q, k, v, causal, direct=not (causal and sq != skv))
    return Built(fn, impl, [q, k, v])


def _backward(forward: Callable[[], torch.Tensor], impl: str, q: torch.Tensor, k: torch.Tensor,
              v: torch.Tensor, causal: bool, direct: bool = True) -> Built:
    """The backward alone: a fused backend's backward op called directly on the forward's saved outputs
    (`_direct_backward`, where `direct`: on the calling thread and stream, so a CUDA graph captures it; its
    is_causal is the top-left mask, the bottom-right one only for a square block), else autograd over the
    forward's graph (retain_graph; not graph-safe: autograd runs a CUDA backward on the forward's stream from its
    own thread, which a capture on another stream cannot take)."""
    ke, ve, expanded = k, v, ""
    if q.shape[1] != k.shape[1]:  # GQA: K and V expanded to every query head, as Hugging Face's repeat_kv does
        groups = q.shape[1] // k.shape[1]
        ke, ve = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        expanded = ", K and V expanded to every head (repeat_kv)"
    found = _direct_backward(q, ke, ve, causal) if direct else None  # not for a bottom-right mask (kv_seq > seq)
    if found is not None:
        fn, name, keep = found
        return Built(fn, f"{name} (the fused backward, called on the forward's outputs){expanded}", keep)
    if q.device.type == "cuda":
        raise UsageError(f"attention: {arg_name('backward')} with {arg_name('causal')} and {arg_name('kv_seq')} > "
                         f"{arg_name('seq')} is not timed on a GPU (autograd over SDPA's bottom-right mask left the "
                         "CUDA generator unusable for later kernels on the H200); use --no-time")
    for t in (q, k, v):  # SDPA's own GQA (enable_gqa) on the unexpanded K and V
        t.requires_grad_(True)
    out = forward()
    grad = torch.randn_like(out)

    def run() -> tuple[torch.Tensor, ...]:
        return torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)

    return Built(run, impl + ", its backward (torch.autograd.grad)", [q, k, v, out, grad], graph_safe=False)


Backward = tuple[Callable[[], tuple[torch.Tensor, ...]], list[object]]


def _cpu_flash_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> Backward:
    aten = torch.ops.aten
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal)
    grad = torch.randn_like(out)

    def run() -> tuple[torch.Tensor, ...]:
        return aten._scaled_dot_product_flash_attention_for_cpu_backward(grad, q, k, v, out, lse, 0.0, causal)

    return run, [out, lse, grad]


def _cudnn_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> Backward:
    aten = torch.ops.aten
    o = aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal, False)
    grad = torch.randn_like(o[0])

    def run() -> tuple[torch.Tensor, ...]:  # attn_bias None: an undefined tensor, as autograd passes it
        return aten._scaled_dot_product_cudnn_attention_backward(grad, q, k, v, o[0], o[1], o[6], o[7], None, o[2],
                                                                 o[3], o[4], o[5], 0.0, causal)

    return run, [o, grad]


def _flash_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> Backward:
    aten = torch.ops.aten
    o = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False)
    grad = torch.randn_like(o[0])

    def run() -> tuple[torch.Tensor, ...]:
        return aten._scaled_dot_product_flash_attention_backward(grad, q, k, v, o[0], o[1], o[2], o[3], o[4], o[5],
                                                                 0.0, causal, o[6], o[7])

    return run, [o, grad]


# The fused backends whose backward op is called directly, by device type, in SDPA's order of preference on Hopper.
DIRECT_BACKWARDS: dict[str, list[tuple[str, Callable[..., Backward]]]] = {
    "cpu": [("aten._scaled_dot_product_flash_attention_for_cpu_backward", _cpu_flash_backward)],
    "cuda": [("aten._scaled_dot_product_cudnn_attention_backward", _cudnn_backward),
             ("aten._scaled_dot_product_flash_attention_backward", _flash_backward)],
}


def _direct_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
                     ) -> tuple[Callable[[], tuple[torch.Tensor, ...]], str, list[object]] | None:
    """(the callable, the op, what it keeps alive) of the first backend (DIRECT_BACKWARDS) whose forward and
    backward take the shape (each tried once here); None when none does."""
    for name, make_backward in DIRECT_BACKWARDS.get(q.device.type, []):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run, keep = make_backward(q, k, v, causal)
                run()
        except RuntimeError:
            continue
        return run, name, [q, k, v, *keep]
    return None


def _kv_dtype(op: DecodeAttention, dtype: DType) -> DType:
    kv = op.kv_dtype
    return dtype if kv == "auto" else get_dtype(kv)


def decode_footprint(op: DecodeAttention, dtype: DType) -> float:
    """q, O, the cache (whole pages), the block table, and the copies the callable makes: the gathered cache
    when paged, the converted cache when its dtype is not the query's."""
    b, h, hkv, ctx, d, page = op.batch, op.heads, op.kv_heads, op.context, op.head_dim, op.page_size
    assert hkv is not None  # DecodeAttention.resolve() set it
    kv = _kv_dtype(op, dtype)
    rows = math.ceil(ctx / page) * page if page else ctx
    total = 2 * b * h * d * dtype.bytes + 2 * b * hkv * rows * d * kv.bytes
    if page:
        total += b * (rows // page) * INDEX_BYTES + 2 * b * hkv * rows * d * kv.bytes
    if kv.name != dtype.name:
        total += 2 * b * hkv * ctx * d * dtype.bytes
    return total


@builder("decode_attention", decode_footprint)
def build_decode_attention(op: DecodeAttention, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    b, h, hkv, ctx, d, page = op.batch, op.heads, op.kv_heads, op.context, op.head_dim, op.page_size
    assert hkv is not None  # DecodeAttention.resolve() set it
    kv = _kv_dtype(op, dtype)
    qdt = torch_dtype(dtype)
    q = rand((b, h, 1, d), dtype, device)
    notes: list[str] = []
    if page:
        pages = math.ceil(ctx / page)
        # a shuffled pool of pages, as an allocator leaves them; the block table maps (sequence, page) to one
        pool_k = rand((b * pages, hkv, page, d), kv, device)
        pool_v = rand((b * pages, hkv, page, d), kv, device)
        table = torch.randperm(b * pages, device=device).to(torch.int32).view(b, pages)

        def gather(pool: torch.Tensor) -> torch.Tensor:
            g = pool.index_select(0, table.view(-1)).view(b, pages, hkv, page, d)
            return g.transpose(1, 2).reshape(b, hkv, pages * page, d)[:, :, :ctx]

        def cache() -> tuple[torch.Tensor, torch.Tensor]:
            return gather(pool_k), gather(pool_v)

        keep = [pool_k, pool_v, table]
        notes.append("paged cache gathered by index_select (extra pass; torch has no paged SDPA)")
    else:
        k, v = rand((b, hkv, ctx, d), kv, device), rand((b, hkv, ctx, d), kv, device)

        def cache() -> tuple[torch.Tensor, torch.Tensor]:
            return k, v

        keep = [k, v]
    if kv.name != dtype.name:
        def prepare() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            k_, v_ = cache()
            return q, k_.to(qdt), v_.to(qdt)

        notes.append(f"{kv.name} cache converted to {dtype.name} by .to() (a separate pass, not the ideal fused "
                     f"in-register dequantisation)")
    else:
        def prepare() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            return (q, *cache())

    fn, impl = _sdpa(prepare, None, False, hkv != h)
    if hkv != h:
        impl += ", enable_gqa=True"
    return Built(fn, "; ".join([impl, *notes]), [q, *keep], extra_passes=list(notes))
