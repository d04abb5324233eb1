"""The one-thread kernels of `roofline.measuring.clocktrace`, written in PTX and launched through the CUDA
driver API (ctypes on libcuda, the library every CUDA machine has), on torch's current stream.

Why PTX through the driver rather than Triton: importing Triton and loading its cached kernels costs ~0.6 s
per process (it hashes its own compiler binary for the cache key) and each launch ~0.4 ms of host time, in a
tool whose suite of 16 kernels must run in a few seconds. The driver compiles this PTX once per context (and
caches the result on disk); a launch is one cuLaunchKernel call.

Kernels (all for one thread; `out` and the flags are device addresses of int64 slots):
- stamp(out): out[0] = %globaltimer.
- spin(out, cycles): spin `cycles` SM cycles; out[0..2] = (cycles spun, ns elapsed, start ns).
- trace(out, start, stop, n, period_ns, max_wait_ns): wait until *start != 0 (a stamp written just before the
  kernel under study; give up after max_wait_ns), then every period_ns store (%globaltimer, %clock64) in
  out[2i], out[2i+1] until n points are stored or *stop != 0 (the stamp written just after the kernel).
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry stamp(.param .u64 p_out)
{
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p_out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u64 %rd3, %globaltimer;
    st.global.u64 [%rd2], %rd3;
    ret;
}

.visible .entry spin(.param .u64 p_out, .param .u64 p_cycles)
{
    .reg .b64 %rd<10>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [p_out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u64 %rd2, [p_cycles];
    mov.u64 %rd3, %globaltimer;
    mov.u64 %rd4, %clock64;
SPIN:
    mov.u64 %rd5, %clock64;
    sub.s64 %rd6, %rd5, %rd4;
    setp.lt.s64 %p1, %rd6, %rd2;
    @%p1 bra SPIN;
    mov.u64 %rd7, %globaltimer;
    sub.s64 %rd8, %rd7, %rd3;
    st.global.u64 [%rd1], %rd6;
    st.global.u64 [%rd1+8], %rd8;
    st.global.u64 [%rd1+16], %rd3;
    ret;
}

.visible .entry trace(.param .u64 p_out, .param .u64 p_start, .param .u64 p_stop, .param .u32 p_n,
                      .param .u64 p_period, .param .u64 p_max_wait)
{
    .reg .b64 %rd<16>;
    .reg .b32 %r<4>;
    .reg .pred %p<4>;
    ld.param.u64 %rd1, [p_out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u64 %rd2, [p_start];
    cvta.to.global.u64 %rd2, %rd2;
    ld.param.u64 %rd3, [p_stop];
    cvta.to.global.u64 %rd3, %rd3;
    ld.param.u32 %r1, [p_n];
    ld.param.u64 %rd4, [p_period];
    ld.param.u64 %rd5, [p_max_wait];
    mov.u64 %rd6, %globaltimer;
    add.u64 %rd7, %rd6, %rd5;
WAIT:
    ld.volatile.global.u64 %rd8, [%rd2];
    setp.ne.s64 %p1, %rd8, 0;
    @%p1 bra GO;
    mov.u64 %rd9, %globaltimer;
    setp.lt.u64 %p2, %rd9, %rd7;
    @%p2 bra WAIT;
    ret;
GO:
    mov.u64 %rd10, %globaltimer;
    mov.u32 %r2, 0;
POINT:
    mov.u64 %rd11, %globaltimer;
    setp.lt.u64 %p1, %rd11, %rd10;
    @%p1 bra POINT;
    mov.u64 %rd12, %clock64;
    st.global.u64 [%rd1], %rd11;
    st.global.u64 [%rd1+8], %rd12;
    add.u64 %rd1, %rd1, 16;
    add.u64 %rd10, %rd10, %rd4;
    add.u32 %r2, %r2, 1;
    setp.ge.u32 %p2, %r2, %r1;
    @%p2 bra DONE;
    ld.volatile.global.u64 %rd13, [%rd3];
    setp.eq.s64 %p3, %rd13, 0;
    @%p3 bra POINT;
DONE:
    ret;
}
"""

KERNELS = ("stamp", "spin", "trace")
# Argument types per kernel, in order (u64 for addresses, cycles and nanoseconds; u32 for counts).
SIGNATURES: dict[str, tuple[type, ...]] = {
    "stamp": (ctypes.c_uint64,),
    "spin": (ctypes.c_uint64, ctypes.c_uint64),
    "trace": (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64,
              ctypes.c_uint64),
}


class DriverError(RuntimeError):
    pass


@cache
def _libcuda() -> Any:
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
    return lib


def _check(code: int, what: str) -> None:
    if code != 0:
        name = ctypes.c_char_p()
        _libcuda().cuGetErrorName(code, ctypes.byref(name))
        raise DriverError(f"{what}: {(name.value or b'CUDA error').decode()} ({code})")


@cache
def _functions(device_index: int) -> dict[str, ctypes.c_void_p]:
    """The kernels, loaded into the current context of device `device_index` (torch's primary context)."""
    import torch

    torch.cuda.set_device(device_index)
    torch.cuda.init()
    torch.empty(1, device=f"cuda:{device_index}")  # makes torch's (primary) context current on this thread
    lib = _libcuda()
    module = ctypes.c_void_p()
    _check(lib.cuModuleLoadData(ctypes.byref(module), PTX.encode()), "loading the clock-probe PTX")
    funcs = {}
    for name in KERNELS:
        f = ctypes.c_void_p()
        _check(lib.cuModuleGetFunction(ctypes.byref(f), module, name.encode()), f"finding kernel {name}")
        funcs[name] = f
    return funcs


def launch(name: str, *args: int) -> None:
    """Launch kernel `name` (one block of one thread) with `args` on torch's current stream."""
    import torch

    stream = torch.cuda.current_stream()
    func = _functions(stream.device.index if stream.device.index is not None else torch.cuda.current_device())[name]
    values = [t(a) for t, a in zip(SIGNATURES[name], args, strict=True)]
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    _check(_libcuda().cuLaunchKernel(func, 1, 1, 1, 1, 1, 1, 0, ctypes.c_void_p(stream.cuda_stream), params,
                                     None), f"launching {name}")
