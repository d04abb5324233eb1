"""2-D pooling over an N x C x H x W input: max or average over K x K windows.

FLOP convention: one per window tap per output element (a compare or an add), as the profile's pooling rule
counts them; the average's division is not counted.

NB: x read once, y written once; max pooling with `indices` also writes each window's argmax (int64, 8 bytes an
output element), as torch's max_pool2d_with_indices does on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType
from roofline.core.errors import UsageError
from roofline.ops.base import ACTIVATIONS, HALF_AND_WIDER, Operator, Traffic, choice, flag, operator, param, rw
from roofline.ops.conv import conv_out_size

POOL_FUNCS = ("max", "avg")
INDEX_BYTES = 8  # int64 argmax per output element


@operator("pool2d", "pool")
@dataclass(frozen=True)
class Pool2d(Operator):
    """y = max or mean of each K x K window of x (stride S, padding P)."""

    summary = "2-D max or average pooling (a CNN's downsampling: ResNet's 3x3 stride-2 max pool)"
    ignores = "NB: one FLOP per window tap (the average's division not counted); x read once, y written once."
    dtypes = HALF_AND_WIDER
    batch: int = param(32, "images (N)")
    channels: int = param(64, "channels (C)")
    height: int = param(112, "input height (H)")
    width: int | None = param(None, "input width (W); default: the height")
    kernel_size: int = param(3, "window side (K x K)")
    stride: int | None = param(None, "stride; default: the window side (torch's)")
    padding: int = param(1, "padding on each side", minimum=0)
    func: str = choice("max", POOL_FUNCS, "max or avg")
    indices: bool = flag(True, "max: also write each window's argmax (int64), as max_pool2d_with_indices does")

    def resolve(self) -> None:
        if self.width is None:
            self._set("width", self.height)
        if self.stride is None:
            self._set("stride", self.kernel_size)
        if self.func == "avg":
            self._set("indices", False)

    def check(self) -> None:
        if 2 * self.padding > self.kernel_size:
            raise UsageError(f"{self.name}: padding ({self.padding}) must be at most half the window "
                             f"({self.kernel_size}), as torch requires")
        if min(self.out_hw()) < 1:
            raise UsageError(f"{self.name}: empty output: the window ({self.kernel_size}) is larger than the padded "
                             f"input ({self.height + 2 * self.padding})")

    def out_hw(self) -> tuple[int, int]:
        k, s, p = self.kernel_size, self.stride or self.kernel_size, self.padding
        return conv_out_size(self.height, k, s, p, 1), conv_out_size(self.width or self.height, k, s, p, 1)

    def outputs(self) -> int:
        hout, wout = self.out_hw()
        return self.batch * self.channels * hout * wout

    def flops(self) -> float:
        return float(self.kernel_size ** 2 * self.outputs())

    def traffic(self, dtype: DType) -> Traffic:
        x = self.batch * self.channels * self.height * (self.width or self.height) * dtype.bytes
        y = self.outputs() * dtype.bytes
        written = {ACTIVATIONS: y + (self.outputs() * INDEX_BYTES if self.indices else 0)}
        return rw({ACTIVATIONS: x}, written)
