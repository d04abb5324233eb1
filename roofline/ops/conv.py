"""2-D convolution (NCHW, square kernel), direct / implicit GEMM or Winograd.

Output size (as torch): Hout = floor((H + 2 pad - dil (K - 1) - 1) / stride) + 1, likewise Wout.

FLOPs, direct and implicit GEMM: 2 x N x Cout x Hout x Wout x (Cin / groups) x K x K, exactly what
torch.utils.flop_counter counts (one multiply and one add per filter tap). The bias add, which torch does not
count, is counted apart: 1 FLOP per output element in `extra_flops` (as gemm's bias epilogue), not in `flops`.

Winograd F(m x m, 3 x 3) (Lavin & Gray 2015): each m x m output tile of one (input channel, output channel)
pair costs (m + 2)^2 multiplies in the transformed domain instead of 9 m^2, and the products are accumulated
over the input channels, a batched GEMM of (m + 2)^2 positions:
    multiplies = N x Cout x (Cin / groups) x ceil(Hout / m) x ceil(Wout / m) x (m + 2)^2, FLOPs = 2 x that.
F(2x2, 3x3): 16 against 36 (2.25x fewer); F(4x4, 3x3): 36 against 144 (4x fewer), when m divides Hout, Wout.
The input, filter and output transforms (additions, O(channels) not O(channels^2)) are not counted.

NB: minimum traffic moves the input, the filter (and bias) and the output once (ideal on-chip reuse).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from roofline.core.dtypes import DType
from roofline.core.errors import UsageError
from roofline.core.validate import arg_name
from roofline.ops.base import ACTIVATIONS, WEIGHTS, Operator, Traffic, choice, flag, operator, param, rw

CONV_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
# Output tile side m of each Winograd algorithm; "winograd" is the brief's name for F(2x2, 3x3).
WINOGRAD_TILE = {"winograd2": 2, "winograd4": 4}
WINOGRAD_KERNEL = 3


def conv_out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """torch's output size: floor((size + 2 pad - dil (K - 1) - 1) / stride) + 1 (may be <= 0: no output)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def winograd_multiplies(m: int, r: int, tiles: int, channel_pairs: int) -> int:
    """(m + r - 1)^2 multiplies per m x m output tile and (input channel, output channel) pair."""
    return (m + r - 1) ** 2 * tiles * channel_pairs


@operator("conv2d", "conv")
@dataclass(frozen=True)
class Conv2d(Operator):
    """y = conv2d(x, w) (+ bias): x of N x Cin x H x W, w of Cout x Cin/groups x K x K."""

    summary = "2-D convolution, direct/implicit-GEMM FLOPs or Winograd F(2x2,3x3) / F(4x4,3x3)"
    ignores = "NB: input, filter, output moved once (ideal reuse); Winograd transforms and workspace not counted."
    dtypes = CONV_DTYPES
    added_later = ("nchw",)
    uses_tensor_cores = True
    batch: int = param(32, "images (N)")
    in_channels: int = param(64, "input channels (Cin)")
    height: int = param(56, "input height (H)")
    width: int = param(56, "input width (W)")
    out_channels: int = param(64, "output channels (Cout)")
    kernel_size: int = param(3, "kernel side (K x K)")
    stride: int = param(1, "stride, both dimensions")
    padding: int = param(1, "zero padding on each side, both dimensions", minimum=0)
    dilation: int = param(1, "dilation of the kernel taps")
    groups: int = param(1, "groups: Cin and Cout split into this many independent convolutions")
    bias: bool = flag(False, "add a per-output-channel bias (1 FLOP per output element; torch does not count it)")
    nchw: bool = flag(False, "time the input in NCHW (contiguous) layout on a GPU, where channels-last is the "
                             "default (a model not converted to channels_last; the CPU always times NCHW)")
    algo: str = choice("direct", ("direct", "winograd", "winograd2", "winograd4"),
                       "direct (implicit GEMM) FLOPs, or Winograd F(2x2,3x3) (winograd, winograd2) / F(4x4,3x3) "
                       "(winograd4) multiplies x 2; Winograd needs a 3x3 kernel, stride 1, dilation 1")

    def resolve(self) -> None:
        if self.algo == "winograd":
            self._set("algo", "winograd2")

    def check(self) -> None:
        for what, channels in (("--in-channels", self.in_channels), ("--out-channels", self.out_channels)):
            if channels % self.groups:
                raise UsageError(f"{self.name}: {what} {channels} is not divisible by --groups {self.groups}")
        hout, wout = self.out_hw()
        if hout < 1 or wout < 1:
            span = self.dilation * (self.kernel_size - 1) + 1
            raise UsageError(f"{self.name}: empty output ({hout} x {wout}): the kernel spans {span} pixels but the "
                             f"padded input is {self.height + 2 * self.padding} x {self.width + 2 * self.padding}")
        if self.algo in WINOGRAD_TILE and (self.kernel_size, self.stride, self.dilation) != (WINOGRAD_KERNEL, 1, 1):
            raise UsageError(f"{self.name}: {arg_name('algo')} {self.algo} is for 3x3 kernels with stride 1 "
                             "and dilation 1 "
                             f"(got kernel {self.kernel_size}, stride {self.stride}, dilation {self.dilation})")

    def variant_name(self) -> str | None:
        return self.algo

    def params(self) -> dict[str, Any]:
        p = super().params()
        p.pop("algo")  # recorded as the variant
        return p

    def out_hw(self) -> tuple[int, int]:
        k, s, p, d = self.kernel_size, self.stride, self.padding, self.dilation
        return conv_out_size(self.height, k, s, p, d), conv_out_size(self.width, k, s, p, d)

    def outputs(self) -> int:
        hout, wout = self.out_hw()
        return self.batch * self.out_channels * hout * wout

    def extra_flops(self) -> float:
        """The bias add: 1 FLOP per output element."""
        return float(self.outputs()) if self.bias else 0.0

    def flops(self) -> float:
        cin_per_group = self.in_channels // self.groups
        if self.algo in WINOGRAD_TILE:
            m = WINOGRAD_TILE[self.algo]
            hout, wout = self.out_hw()
            tiles = math.ceil(hout / m) * math.ceil(wout / m)
            pairs = self.batch * self.out_channels * cin_per_group
            return 2 * winograd_multiplies(m, WINOGRAD_KERNEL, tiles, pairs)
        return 2 * self.outputs() * cin_per_group * self.kernel_size ** 2

    def touched_hw(self) -> tuple[int, int]:
        """Input rows and columns the windows read: all of them, unless the stride is at least the window's span
        (a 1x1 with stride 2): then Hout x K rows (Wout x K columns), the others skipped."""
        span = self.dilation * (self.kernel_size - 1) + 1
        if self.stride < span:
            return self.height, self.width
        hout, wout = self.out_hw()
        return min(self.height, hout * self.kernel_size), min(self.width, wout * self.kernel_size)

    def traffic(self, dtype: DType) -> Traffic:
        rows, cols = self.touched_hw()
        x = self.batch * self.in_channels * rows * cols
        w = self.out_channels * (self.in_channels // self.groups) * self.kernel_size ** 2
        if self.bias:
            w += self.out_channels
        return rw({ACTIVATIONS: x * dtype.bytes, WEIGHTS: w * dtype.bytes}, {ACTIVATIONS: self.outputs() * dtype.bytes})
