"""An analytic profile for a GPU, in the GPU's terms: the op a GPU would run for each call the host ran in its
own (issue 52: `_scaled_dot_product_flash_attention_for_cpu_backward` appeared in an H100 prediction).

An analytic run on a host without the GPU runs the program's tensors on the host's device (faked): where torch
picks a kernel by device, the call is the host's kernel. For a GPU target each such call is renamed, by the
registry `HOST_KERNELS`, to the op the GPU runs for the same arguments (its arguments renamed to that op's
schema where the formula reads them), before FLOPs and bytes are counted. A call on the GPU's own device, and
every call of a profile for the host itself (a CPU roof), keep their names.

- SDPA: the CPU's one fused kernel (`_scaled_dot_product_flash_attention_for_cpu`, and its backward) becomes
  the kernel torch's CUDA dispatch picks first where it applies (`FLASH_DTYPES`, `FLASH_MAX_HEAD_DIM`, no
  mask): FlashAttention; else the memory-efficient kernel, which takes a mask as `attn_bias`.
  NB: cuDNN attention, which torch prefers on some GPUs and versions, counts the same FLOPs and bytes here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from roofline.capture.trace import OpCall
from roofline.core.registry import add_once

# The host devices whose kernels are renamed (a call's first input's device).
HOST_DEVICES = frozenset({"cpu"})
# FlashAttention's dtypes and largest head dimension (torch's sdp_utils check_flash_attention_* on CUDA);
# outside them torch's CUDA dispatch falls back to the memory-efficient kernel.
FLASH_DTYPES = frozenset({"bf16", "fp16"})
FLASH_MAX_HEAD_DIM = 256


@dataclass(frozen=True)
class HostKernel:
    """How a host kernel's call reads on a GPU: the op the GPU runs for it, and its arguments' new names."""

    gpu_op: Callable[[OpCall], str]
    renamed: Callable[[str], dict[str, str]]  # the GPU op -> {host argument: its name in the GPU op's schema}


HOST_KERNELS: dict[str, HostKernel] = {}


def host_kernel(*names: str) -> Callable[[HostKernel], HostKernel]:
    """Register how the host ops `names` read on a GPU; twice is a bug."""
    def add(k: HostKernel) -> HostKernel:
        for n in names:
            add_once(HOST_KERNELS, n, k, "host kernel")
        return k
    return add


def _flash_applies(call: OpCall) -> bool:
    """Whether torch's CUDA dispatch would run FlashAttention for this SDPA call (module docstring)."""
    q = call.args.get("query")
    dtype, head_dim = getattr(q, "dtype", None), (getattr(q, "shape", ()) or (0,))[-1]
    return call.args.get("attn_mask") is None and dtype in FLASH_DTYPES and head_dim <= FLASH_MAX_HEAD_DIM


def _sdpa(suffix: str) -> HostKernel:
    def gpu_op(call: OpCall) -> str:
        kind = "flash" if _flash_applies(call) else "efficient"
        return f"aten::_scaled_dot_product_{kind}_attention{suffix}"

    return HostKernel(gpu_op, lambda op: {} if "flash" in op else {"attn_mask": "attn_bias"})


host_kernel("aten::_scaled_dot_product_flash_attention_for_cpu")(_sdpa(""))
host_kernel("aten::_scaled_dot_product_flash_attention_for_cpu_backward")(_sdpa("_backward"))


def on_host(call: OpCall) -> bool:
    """Whether the call ran on a host device (its first tensor's device; a call without tensors never)."""
    first = call.inputs[0] if call.inputs else call.outputs[0] if call.outputs else None
    return first is not None and first.device in HOST_DEVICES


def in_gpu_terms(call: OpCall) -> OpCall:
    """The call as a GPU runs it (module docstring): renamed when it is a host kernel on a host device, else
    itself."""
    k = HOST_KERNELS.get(call.op)
    if k is None or not on_host(call):
        return call
    op = k.gpu_op(call)
    names = k.renamed(op)
    args = {names.get(a, a): v for a, v in call.args.items()}
    packet = getattr(torch.ops.aten, op.removeprefix("aten::").split(".")[0], call.packet)
    return dataclasses.replace(call, op=op, args=args, packet=packet)


def calls_in_gpu_terms(calls: Sequence[OpCall]) -> list[OpCall]:
    """Every call as a GPU runs it (in_gpu_terms)."""
    return [in_gpu_terms(c) for c in calls]


__all__ = ["FLASH_DTYPES", "FLASH_MAX_HEAD_DIM", "HOST_KERNELS", "HostKernel", "calls_in_gpu_terms", "host_kernel",
           "in_gpu_terms", "on_host"]
