"""The GEMM family: (batched) GEMM, GEMV / small-M decode GEMMs, GEMM with an epilogue.

NB: minimum traffic assumes each operand is read once (perfect on-chip reuse); real tilings re-read
A and B from L2, not necessarily from DRAM.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType
from roofline.ops.base import ACTIVATIONS, INTERMEDIATES, WEIGHTS, Operator, Traffic, choice, operator, param, rw
from roofline.ops.counts import FLOPS_PER_ELEMENT

GEMM_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp6", "mxfp6", "mxfp4", "nvfp4")
# Low-precision GEMMs write a wider output: the elements of C in this dtype (int32 from int8, bf16 from fp8 and
# the block-scaled formats, as torch._int_mm, torch._scaled_mm and the Blackwell block-scaled kernels do).
WIDE_OUTPUT_BYTES = {"int8": 4.0, "fp8": 2.0, "fp6": 2.0, "mxfp6": 2.0, "mxfp4": 2.0, "nvfp4": 2.0}
EPILOGUE_FLOPS = {"none": 0, "bias": FLOPS_PER_ELEMENT["add"], "gelu": FLOPS_PER_ELEMENT["gelu"],
                  "silu": FLOPS_PER_ELEMENT["silu"]}


def mm_flops(m: int, n: int, k: int, batch: int = 1) -> int:
    """2 x M x N x K per matrix product (one multiply and one add per term), as torch's flop counter."""
    return 2 * batch * m * n * k


def mm_traffic(m: int, n: int, k: int, batch: int, dtype: DType, out_bytes: float | None = None) -> Traffic:
    """A (M x K activations) and B (K x N weights) read once, C (M x N) written once."""
    ob = dtype.bytes if out_bytes is None else out_bytes
    return rw({ACTIVATIONS: batch * m * k * dtype.bytes, WEIGHTS: batch * k * n * dtype.bytes},
              {ACTIVATIONS: batch * m * n * ob})


def out_bytes_for(dtype: DType) -> float:
    """Bytes per output element (WIDE_OUTPUT_BYTES); the input dtype's elsewhere."""
    return WIDE_OUTPUT_BYTES.get(dtype.name, dtype.bytes)


@operator("gemm", "gemm")
@dataclass(frozen=True)
class GEMM(Operator):
    """C[b] = A[b] @ B[b] (+ epilogue). n and k default to m."""

    summary = "C = A @ B, optionally batched, with an optional bias/gelu/silu epilogue"
    ignores = ("NB: operands read once (ideal reuse); the epilogue's FLOPs are extra_flops (no roof); its bias is a "
               "length-N vector.")
    dtypes = GEMM_DTYPES
    uses_tensor_cores = True
    m: int = param(4096, "rows of A and C")
    n: int | None = param(None, "columns of B and C (default: m)")
    k: int | None = param(None, "inner dimension (default: m)")
    batch: int = param(1, "independent products (torch.bmm); B is per batch")
    epilogue: str = choice("none", ("none", "bias", "gelu", "silu"), "elementwise op applied to C")
    variant: str = choice("fused", ("fused", "unfused"), "epilogue fused into the GEMM, or a separate pass")

    def variant_name(self) -> str | None:
        return self.variant if self.epilogue != "none" else None  # fused/unfused only matters with an epilogue

    def resolve(self) -> None:
        if self.n is None:
            self._set("n", self.m)
        if self.k is None:
            self._set("k", self.m)

    def flops(self) -> float:
        assert self.n is not None and self.k is not None
        return mm_flops(self.m, self.n, self.k, self.batch)

    def extra_flops(self) -> float:
        """The epilogue: its FLOPs per element of C (on the CUDA cores, not the tensor-core roof)."""
        assert self.n is not None
        return float(EPILOGUE_FLOPS[self.epilogue] * self.batch * self.m * self.n)

    def traffic(self, dtype: DType) -> Traffic:
        assert self.n is not None and self.k is not None
        t = mm_traffic(self.m, self.n, self.k, self.batch, dtype, out_bytes_for(dtype))
        if self.epilogue == "bias":
            t = t + rw({WEIGHTS: self.n * dtype.bytes})
        if self.epilogue != "none" and self.variant == "unfused":  # C written by the GEMM, read back, rewritten
            c = self.batch * self.m * self.n * out_bytes_for(dtype)
            t = t + rw({INTERMEDIATES: c}, {INTERMEDIATES: c})
        return t


@operator("gemv", "gemm")
@dataclass(frozen=True)
class GEMV(Operator):
    """y = W x for `m` vectors at once (decode): M small, the weight read dominates."""

    summary = "decode-time GEMM: M tokens (default 1) times a K x N weight"
    ignores = "NB: the weight is read exactly once however many tokens share it."
    dtypes = GEMM_DTYPES
    uses_tensor_cores = True
    m: int = param(1, "tokens (rows of x); 1 is a true GEMV")
    n: int = param(8192, "output features (columns of W)")
    k: int = param(8192, "input features (rows of W)")

    def flops(self) -> float:
        return mm_flops(self.m, self.n, self.k)

    def traffic(self, dtype: DType) -> Traffic:
        return mm_traffic(self.m, self.n, self.k, 1, dtype, out_bytes_for(dtype))


# torch._grouped_mm takes 16-bit operands (and fp32 on the CPU); its offsets are int32.
GROUPED_DTYPES = ("fp32", "fp16", "bf16")


@operator("grouped_gemm", "gemm")
@dataclass(frozen=True)
class GroupedGEMM(Operator):
    """A mixture of experts' expert products: `groups` groups of `m` rows of A (M = groups x m, K), each times its own
    K x N weight (torch._grouped_mm with offsets, as transformers runs its experts)."""

    summary = "grouped GEMM: groups of m rows of A, each times its own K x N weight (an MoE's experts)"
    ignores = "NB: every group the same number of rows (balanced routing); operands read once."
    dtypes = GROUPED_DTYPES
    uses_tensor_cores = True
    groups: int = param(8, "groups (experts)")
    m: int = param(512, "rows of A per group (the tokens routed to each expert)")
    n: int = param(2048, "columns of each group's weight and of C")
    k: int = param(2048, "inner dimension (rows of each group's weight)")

    def flops(self) -> float:
        return mm_flops(self.m, self.n, self.k, self.groups)

    def traffic(self, dtype: DType) -> Traffic:
        return mm_traffic(self.m, self.n, self.k, self.groups, dtype)
