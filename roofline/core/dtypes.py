"""Data types: bytes per element (block scales included), and which spec fields give the tensor-core and
plain-pipe peaks.

Block-scaled formats store small elements plus one shared scale per block of elements; the scales are
traffic too, so `bytes` is (element bits + scale bits / block) / 8, from the formats' definitions:
- MX (OCP Microscaling Formats v1.0): one 8-bit E8M0 power-of-two scale per 32 elements.
- NVFP4 (NVIDIA Blackwell): E2M1 elements, one FP8 E4M3 scale per 16 elements, plus one FP32 scale per
  tensor. NB: the per-tensor scale (4 bytes per tensor) is left out of `bytes`: 4 bytes against
  0.5625 x 4096 x 4096 ~ 9.4 MB for a 4096^2 matrix is 4e-7 of the traffic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline.core.errors import UsageError


def block_scaled_bytes(element_bits: int, scale_bits: int, block: int) -> float:
    """Bytes per element of a block-scaled format: the element plus its share of the block's scale."""
    return (element_bits + scale_bits / block) / 8


@dataclass(frozen=True)
class DType:
    name: str
    bytes: float  # bytes per element, including its share of any block scale
    tensor_field: str | None  # spec key of the tensor-core peak, None when there is no tensor pipe
    plain_field: str  # spec key of the CUDA-core peak the arithmetic runs on without tensor cores
    torch_name: str  # attribute of `torch` (resolved lazily by the timing code); "" when torch has none
    is_float: bool = True
    # A GPU without `tensor_field` cannot run this dtype at all (no bf16 on Volta, no fp8 before Ada/Hopper,
    # no fp4/fp6 before Blackwell): the roofline refuses rather than falling back to a CUDA-core pipe.
    needs_tensor_pipe: bool = False
    summary: str = ""  # one line: the format, for `--help` and error messages
    scale_block: int = 0  # elements sharing one block scale; 0 for an unscaled format
    scale_bits: int = 0  # bits of that scale

    @property
    def timeable(self) -> bool:
        """Whether torch has a tensor type to build and time a kernel in this dtype."""
        return bool(self.torch_name)

    @property
    def element_bytes(self) -> float:
        """Bytes of one element alone, without its share of the block scale (what alignment rules count)."""
        return self.bytes - (self.scale_bits / self.scale_block / 8 if self.scale_block else 0.0)


# OCP Microscaling (MX) formats: every block of 32 elements shares one 8-bit unsigned E8M0 (power-of-two)
# scale. NVFP4 (NVIDIA, Blackwell): E2M1 elements, one FP8 E4M3 scale per block of 16, plus an FP32 scale per
# tensor (72 bits per 16 elements = 4.5 bits each).
MX_BLOCK, MX_SCALE_BITS = 32, 8
NVFP4_BLOCK, NVFP4_SCALE_BITS = 16, 8

DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        # fp64 matmuls use the FP64 tensor cores where the GPU has them (A100, H100, B200).
        DType("fp64", 8, "fp64_tensor_dense_tflops", "fp64_dense_tflops", "float64"),
        # fp32 means true FP32 (TF32 off): CUDA cores. TF32 is its own dtype.
        DType("fp32", 4, None, "fp32_dense_tflops", "float32"),
        DType("tf32", 4, "tf32_tensor_dense_tflops", "fp32_dense_tflops", "float32", needs_tensor_pipe=True),
        DType("fp16", 2, "fp16_tensor_dense_tflops", "fp16_dense_tflops", "float16"),
        DType("bf16", 2, "bf16_tensor_dense_tflops", "bf16_dense_tflops", "bfloat16", needs_tensor_pipe=True),
        DType("fp8", 1, "fp8_tensor_dense_tflops", "fp32_dense_tflops", "float8_e4m3fn", needs_tensor_pipe=True),
        DType("int8", 1, "int8_tensor_dense_tops", "fp32_dense_tflops", "int8", is_float=False,
              needs_tensor_pipe=True),
        # Sub-byte formats: analytic only (torch has no matmul in them to time). Their CUDA-core "pipe" is
        # FP32, as for fp8: without tensor cores the elements are decoded and multiplied in FP32.
        # FP6 (E2M3 or E3M2, same size): 6 bits = 0.75 bytes, unscaled.
        DType("fp6", 0.75, "fp6_tensor_dense_tflops", "fp32_dense_tflops", "", needs_tensor_pipe=True,
              summary="FP6 (E2M3/E3M2), 6-bit elements, no block scale: 0.75 bytes"),
        # MXFP6: (6 + 8/32) / 8 = 0.78125 bytes per element.
        DType("mxfp6", block_scaled_bytes(6, MX_SCALE_BITS, MX_BLOCK), "fp6_tensor_dense_tflops",
              "fp32_dense_tflops", "", needs_tensor_pipe=True,
              summary="OCP MXFP6: FP6 elements + one E8M0 scale per 32 (6.25 bits = 0.78125 bytes)",
              scale_block=MX_BLOCK, scale_bits=MX_SCALE_BITS),
        # MXFP4: (4 + 8/32) / 8 = 0.53125 bytes per element.
        DType("mxfp4", block_scaled_bytes(4, MX_SCALE_BITS, MX_BLOCK), "fp4_tensor_dense_tflops",
              "fp32_dense_tflops", "", needs_tensor_pipe=True,
              summary="OCP MXFP4: E2M1 elements + one E8M0 scale per 32 (4.25 bits = 0.53125 bytes)",
              scale_block=MX_BLOCK, scale_bits=MX_SCALE_BITS),
        # NVFP4: (4 + 8/16) / 8 = 0.5625 bytes per element.
        DType("nvfp4", block_scaled_bytes(4, NVFP4_SCALE_BITS, NVFP4_BLOCK), "fp4_tensor_dense_tflops",
              "fp32_dense_tflops", "", needs_tensor_pipe=True,
              summary="NVFP4: E2M1 elements + one E4M3 scale per 16 (4.5 bits = 0.5625 bytes)",
              scale_block=NVFP4_BLOCK, scale_bits=NVFP4_SCALE_BITS),
    )
}

# Other names for the dtypes above, torch's among them (`torch.float16` is looked up as "float16"). Both FP8
# formats are "fp8": E4M3 and E5M2 take one byte and run at the one FP8 tensor-core peak of every spec.
ALIASES = {"float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32", "float16": "fp16",
           "half": "fp16", "bfloat16": "bf16", "float8": "fp8", "e4m3": "fp8", "e5m2": "fp8",
           "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8", "float8_e5m2": "fp8", "float8_e5m2fnuz": "fp8",
           "e2m3": "fp6", "e3m2": "fp6", "fp6_e2m3": "fp6", "fp6_e3m2": "fp6", "mxfp6_e2m3": "mxfp6",
           "mxfp6_e3m2": "mxfp6"}

# Names that are ambiguous on their own: a plain "fp4" is one of two block-scaled formats of different size.
AMBIGUOUS = {"fp4": "fp4 is block-scaled here: give nvfp4 (E4M3 scale per 16, 0.5625 bytes) or mxfp4 "
                    "(E8M0 scale per 32, 0.53125 bytes)",
             "e2m1": "e2m1 (fp4) is block-scaled here: give nvfp4 or mxfp4",
             "float4_e2m1fn_x2": "torch's float4_e2m1fn_x2 holds the elements without their block scales: give "
                                 "nvfp4 or mxfp4"}

# The dtype an operator is placed in when none is given, by the kind of roof (`Ceilings.kind`): fp16 on a GPU,
# whose tensor-core roof is what deep-learning kernels run on; fp32 on the CPU, its native arithmetic.
DEFAULT_DTYPE = {"gpu": "fp16", "cpu": "fp32"}


def get_dtype(name: str | DType | Any) -> DType:
    """A dtype by name or alias ('fp16', 'half', 'bfloat16'), by torch dtype (`torch.float16`), or the DType
    itself; anything else is one UsageError naming the known dtypes. torch is never imported here: a torch
    dtype is read by its name."""
    if isinstance(name, DType):
        return name
    if isinstance(name, str):
        text = name
    elif type(name).__module__ == "torch" and type(name).__name__ == "dtype":
        text = str(name).removeprefix("torch.")
    else:
        raise UsageError(f"a dtype is a name ({', '.join(DTYPES)}) or a torch dtype, not {type(name).__name__} "
                         f"{name!r}")
    key = ALIASES.get(text.lower(), text.lower())
    if key in AMBIGUOUS:
        raise UsageError(AMBIGUOUS[key])
    try:
        return DTYPES[key]
    except KeyError:
        raise UsageError(f"unknown dtype '{name}' (known: {', '.join(DTYPES)})") from None


def check_timeable(dtype: DType) -> None:
    """Refuse, in one line, to time a dtype torch cannot build kernels in (the analytic path still works)."""
    if not dtype.timeable:
        raise UsageError(f"{dtype.name} is analytic only: torch has no {dtype.name} kernels to time; "
                         "add --no-time for the roofline without a measurement")
