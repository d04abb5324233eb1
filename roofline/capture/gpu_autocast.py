"""Autocast in an analytic profile for a GPU: CUDA's, whatever device the run's fake tensors claim (issue 52: on a
CPU host `examples/train_step.py --gpu b200 --no-time` predicted an fp32 step where the GPU runs bf16).

On a host without CUDA a program's tensors are the host's (faked), so two things differ from the GPU's run:
- `torch.autocast("cuda", ...)` (and `torch.cuda.amp.autocast`) is disabled by torch with a warning. In the run
  it autocasts the CPU device instead, with CUDA's dtype (float16 when none is given, as on CUDA).
- The CPU's autocast casts other ops than CUDA's. For the run, each op of CUDA's lists (`CUDA_LOWER`, `CUDA_FP32`,
  `CUDA_FP32_OUT`: aten/src/ATen/autocast_mode.cpp's AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32 and
  AT_FORALL_FP32_SET_OPT_DTYPE; torch's amp docs list them as "CUDA Ops that can autocast") that the CPU's
  autocast leaves alone gets CUDA's policy on the CPU's autocast key: lower precision (its floating inputs cast
  to the autocast dtype), float32 (cast to float32: a softmax's or a norm's pow reads a bf16 input as a GPU's
  does, through a cast), or float32 output (the op's `dtype` argument set to float32 unless given). An op the
  CPU's autocast already handles keeps the CPU's policy (the lists agree on those: nll_loss, mse_loss, ...).
  Registered when the run starts, removed when it ends: a CPU program outside the run autocasts as torch does.

NB: only out-of-place overloads autocast (in-place and out= variants never do, on either device); float64 and
non-floating tensors are never cast; the CPU's weight-cast cache does not cover the added ops (a cast of the
same weight is counted once per call, as CUDA's cache counts it once per autocast region: a small excess).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

# Ops CUDA's autocast runs in lower precision (AT_FORALL_LOWER_PRECISION_FP, out-of-place overloads).
CUDA_LOWER = ("_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv",
              "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
              "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell",
              "rnn_relu_cell", "_scaled_dot_product_flash_attention", "scaled_dot_product_attention")
# Ops CUDA's autocast runs in float32, its inputs cast (AT_FORALL_FP32).
CUDA_FP32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
             "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm", "group_norm",
             "frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss",
             "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss",
             "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
             "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm",
             "logsumexp")
# Ops CUDA's autocast runs with a float32 output, their `dtype` argument set (AT_FORALL_FP32_SET_OPT_DTYPE).
CUDA_FP32_OUT = ("prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm", "linalg_matrix_norm",
                 "sum")
KEY = "AutocastCPU"  # the dispatch key the overlay's kernels are registered on
DTYPE_ARGS = frozenset({"dtype", "out_dtype"})  # an overload's argument naming its output's dtype


def _eligible(t: Any) -> bool:
    """A tensor autocast casts: floating, not float64 (autocast_mode.h's is_eligible)."""
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if _eligible(value):
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _below_autocast(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)):
        return op(*args, **kwargs)


def _lower(op: Any) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.get_autocast_dtype("cpu")
        return _below_autocast(op, _cast(args, dtype), {k: _cast(v, dtype) for k, v in kwargs.items()})
    return kernel


def _fp32(op: Any) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        return _below_autocast(op, _cast(args, torch.float32), {k: _cast(v, torch.float32) for k, v in kwargs.items()})
    return kernel


def _fp32_out(op: Any) -> Callable[..., Any]:
    at = next(i for i, a in enumerate(op._schema.arguments) if a.name in DTYPE_ARGS)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        name = op._schema.arguments[at].name
        given = args[at] if len(args) > at else kwargs.get(name)
        if given is None and _eligible(first):
            if len(args) > at:
                args = (*args[:at], torch.float32, *args[at + 1:])
            else:
                kwargs = {**kwargs, name: torch.float32}
        return _below_autocast(op, args, kwargs)
    return kernel


def _out_of_place(op: Any) -> bool:
    """An overload that writes none of its arguments (autocast leaves in-place and out= variants alone)."""
    return not any(a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments)


# policy -> (its ops, the kernel maker)
POLICIES: dict[str, tuple[tuple[str, ...], Callable[[Any], Callable[..., Any]]]] = {
    "lower": (CUDA_LOWER, _lower), "fp32": (CUDA_FP32, _fp32), "fp32_out": (CUDA_FP32_OUT, _fp32_out)}


def overloads(policy: str) -> list[Any]:
    """The out-of-place overloads of the policy's ops that the CPU's autocast leaves alone (module docstring)."""
    found = []
    for name in POLICIES[policy][0]:
        packet = getattr(torch.ops.aten, name, None)
        for o in packet.overloads() if packet is not None else ():
            op = getattr(packet, o)
            if not _out_of_place(op) or _cpu_handles(op.name()):
                continue
            if (policy == "fp32_out") != _takes_dtype(op) or "quantized" in o:
                continue
            found.append(op)
    return found


def _takes_dtype(op: Any) -> bool:
    """Whether the overload takes an output dtype (softmax's `dtype`, mm.dtype's `out_dtype`): CUDA's float32
    output policy sets it; the casting policies leave such an overload alone (its output dtype is the caller's),
    as they leave a quantized one (fp8 inputs with their scales)."""
    return any(a.name in DTYPE_ARGS for a in op._schema.arguments)


def _cpu_handles(name: str) -> bool:
    """Whether the CPU's autocast has a kernel of its own for the overload (or the overload is not the
    dispatcher's: a Python-only one, 'einsum.sublist')."""
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(name, KEY)
    except RuntimeError:
        return True


def _translated(init: Callable[..., None]) -> Callable[..., None]:
    """autocast.__init__ with "cuda" read as the CPU device where torch has no CUDA (module docstring)."""
    def __init__(self: Any, device_type: str, dtype: torch.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if device_type == "cuda" and not torch.cuda.is_available():
            device_type, dtype = "cpu", dtype or torch.get_autocast_dtype("cuda")
        init(self, device_type, dtype, enabled, cache_enabled)
    return __init__


@contextlib.contextmanager
def cuda_autocast() -> Iterator[None]:
    """Autocast as CUDA's while the block runs (module docstring)."""
    cls = torch.amp.autocast_mode.autocast
    init = cls.__init__
    lib = torch.library.Library("aten", "IMPL")
    try:
        for policy, (_, make) in POLICIES.items():
            for op in overloads(policy):
                lib.impl(op.name().removeprefix("aten::"), make(op), KEY)
        cls.__init__ = _translated(init)  # type: ignore[method-assign]
        yield
    finally:
        cls.__init__ = init  # type: ignore[method-assign]
        lib._destroy()


__all__ = ["CUDA_FP32", "CUDA_FP32_OUT", "CUDA_LOWER", "cuda_autocast", "overloads"]
