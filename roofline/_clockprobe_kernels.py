"""Triton kernels of `roofline.clockprobe` (a module of their own so that importing clockprobe never imports
Triton; Triton resolves the helpers below as module globals, and annotations inside jitted code as names)."""

import triton
import triton.language as tl


@triton.jit
def globaltimer():  # type: ignore[no-untyped-def]
    (t,) = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=(tl.uint64,), is_pure=False,
                                     pack=1)
    return t


@triton.jit
def clock64():  # type: ignore[no-untyped-def]
    (c,) = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=(tl.uint64,), is_pure=False, pack=1)
    return c


@triton.jit
def spin(out_ptr, cycles):  # type: ignore[no-untyped-def]
    """Spin one thread for `cycles` SM cycles; store (cycles spun, ns elapsed, start ns)."""
    t0 = globaltimer().to(tl.int64)
    c0 = clock64().to(tl.int64)
    spun = c0 - c0
    while spun < cycles:
        spun = clock64().to(tl.int64) - c0
    t1 = globaltimer().to(tl.int64)
    tl.store(out_ptr, spun)
    tl.store(out_ptr + 1, t1 - t0)
    tl.store(out_ptr + 2, t0)


@triton.jit
def stamp(out_ptr):  # type: ignore[no-untyped-def]
    """Store %globaltimer."""
    tl.store(out_ptr, globaltimer().to(tl.int64))


@triton.jit
def trace(out_ptr, n, period_ns):  # type: ignore[no-untyped-def]
    """Every period_ns for n periods, store (%globaltimer, %clock64): a clock trace of the SM it runs on."""
    t_start = globaltimer().to(tl.int64)
    for i in range(n):
        target = t_start + i * period_ns
        t = globaltimer().to(tl.int64)
        while t < target:
            t = globaltimer().to(tl.int64)
        c = clock64().to(tl.int64)
        tl.store(out_ptr + 2 * i, t)
        tl.store(out_ptr + 2 * i + 1, c)
