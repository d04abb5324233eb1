"""The device kernels of the GPU calibration (`roofline.measuring.calibrate_gpu`): Triton kernels for HBM,
the L2 sweep and FP32 FMA chains, and the CUDA C++ source of the shared-memory stream (built by NVRTC
through CuPy, since Triton exposes no shared memory). Importing this module imports Triton: the calibration
imports it only when it runs."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def read_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, REPEAT: tl.constexpr):
    pid = tl.program_id(0)
    nblocks = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(REPEAT):
        blk = (pid + r * 7) % nblocks  # another block each pass (scalar arithmetic); .cg loads skip the L1
        acc += tl.load(x_ptr + blk * BLOCK + tl.arange(0, BLOCK), cache_modifier=".cg")
    tl.store(out_ptr + pid, tl.sum(acc))


@triton.jit
def sweep_kernel(x_ptr, out_ptr, nblocks, BLOCK: tl.constexpr, REPEAT: tl.constexpr):
    # Persistent programs walk the whole working set REPEAT times, all moving through it in step, so a block
    # is read again only after the whole working set has streamed by: an L2 hit when the set fits, a miss
    # (from HBM) when it does not. (Re-reading a block soon after its neighbours did measures only the L2.)
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(REPEAT):
        for b in range(pid, nblocks, nprog):
            acc += tl.load(x_ptr + b * BLOCK + tl.arange(0, BLOCK), cache_modifier=".cg")
    tl.store(out_ptr + pid, tl.sum(acc))


@triton.jit
def write_kernel(y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.full([BLOCK], 1.0, tl.float32))


@triton.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def fma_kernel(out_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.arange(0, BLOCK).to(tl.float32) * 1e-7 + pid
    y = x + 0.5
    a = 0.9999
    b = 0.0001
    for _ in range(ITERS):  # 8 dependent FMAs on each of 2 chains per pass; BLOCK / threads chains in flight
        x = x * a + b
        y = y * a + b
        x = x * a + b
        y = y * a + b
        x = x * a + b
        y = y * a + b
        x = x * a + b
        y = y * a + b
        x = x * a + b
        y = y * a + b
        x = x * a + b
        y = y * a + b
        x = x * a + b
        y = y * a + b
        x = x * a + b
        y = y * a + b
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), x + y)


FMA_PER_ITER = 16  # FMAs per element per loop pass in fma_kernel


@triton.jit
def alu_stream_kernel(x_ptr, y_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    # A streaming kernel held by its SMs, not by HBM: each element read once, ITERS exp and multiply passes (the
    # special-function units, as GELU's, SiLU's and softmax's exponentials), written once
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    for _ in range(ITERS):
        v = tl.exp(v * -0.5) * 0.9
    tl.store(y_ptr + offs, v)

SMEM_SRC = r"""
extern "C" __global__ void smem_stream(float* out, int iters) {
    __shared__ float4 buf[1024];                      // 16 KiB
    const int t = threadIdx.x;
    for (int i = t; i < 1024; i += blockDim.x) buf[i] = make_float4(i, i + 1, i + 2, i + 3);
    __syncthreads();
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f), b = a;
    int idx = t & 1023;
    #pragma unroll 4
    for (int it = 0; it < iters; ++it) {
        float4 v = buf[idx];                          // a warp reads 512 contiguous bytes: no bank conflict
        float4 w = buf[idx ^ 512];
        a.x += v.x; a.y += v.y; a.z += v.z; a.w += v.w;
        b.x += w.x; b.y += w.y; b.z += w.z; b.w += w.w;
        idx = (idx + 32) & 1023;
    }
    out[blockIdx.x * blockDim.x + t] = a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w;
}
"""
SMEM_THREADS = 256
SMEM_BYTES_PER_ITER = 32  # two float4 loads per thread per iteration
