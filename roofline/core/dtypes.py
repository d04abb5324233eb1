"""Data types: element size, and which spec fields give the tensor-core and plain-pipe peaks."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.errors import UsageError


@dataclass(frozen=True)
class DType:
    name: str
    bytes: float  # bytes per element
    tensor_field: str | None  # spec key of the tensor-core peak, None when there is no tensor pipe
    plain_field: str  # spec key of the CUDA-core peak the arithmetic runs on without tensor cores
    torch_name: str  # attribute of `torch` (resolved lazily by the timing code)
    is_float: bool = True


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        # fp64 matmuls use the FP64 tensor cores where the GPU has them (A100, H100, B200).
        DType("fp64", 8, "fp64_tensor_dense_tflops", "fp64_dense_tflops", "float64"),
        # fp32 means true FP32 (TF32 off): CUDA cores. TF32 is its own dtype.
        DType("fp32", 4, None, "fp32_dense_tflops", "float32"),
        DType("tf32", 4, "tf32_tensor_dense_tflops", "fp32_dense_tflops", "float32"),
        DType("fp16", 2, "fp16_tensor_dense_tflops", "fp16_dense_tflops", "float16"),
        DType("bf16", 2, "bf16_tensor_dense_tflops", "bf16_dense_tflops", "bfloat16"),
        DType("fp8", 1, "fp8_tensor_dense_tflops", "fp32_dense_tflops", "float8_e4m3fn"),
        DType("int8", 1, "int8_tensor_dense_tops", "fp32_dense_tflops", "int8", is_float=False),
    )
}

ALIASES = {"float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32", "float16": "fp16",
           "half": "fp16", "bfloat16": "bf16", "float8": "fp8", "e4m3": "fp8"}


def get_dtype(name: str) -> DType:
    key = ALIASES.get(name.lower(), name.lower())
    try:
        return DTYPES[key]
    except KeyError:
        raise UsageError(f"unknown dtype '{name}' (known: {', '.join(DTYPES)})") from None
