#!/usr/bin/env python3
"""Check roofline.analysis.occupancy against the CUDA driver's occupancy API on real kernels.

Compiles a probe kernel (CuPy RawKernel, NVRTC) in many variants (register pressure through the number of live
accumulators, `--maxrregcount` and `__launch_bounds__`; static and dynamic shared memory; block sizes; a
shared-memory carve-out preference), reads each kernel's real attributes (num_regs, shared_size_bytes,
max_threads_per_block), asks the driver for the maximum active blocks per SM, and compares with
`roofline.analysis.occupancy.occupancy(spec, T, num_regs, static + dynamic shared memory, carve-out)`.

Prints a markdown table; exit status 0 when every case matches, 1 on any mismatch (or a spec field that
disagrees with the device's properties), 2 when it cannot run (no GPU, no CuPy, no occupancy API).

    PYTHONPATH=. python3 scripts/occupancy_check.py [--gpu h200-sxm] [--markdown out.md]

The occupancy API is tried in this order, and the table says which answered:
 1. cuda-python's driver bindings, `cuda.bindings.driver.cuOccupancyMaxActiveBlocksPerMultiprocessor`
    (cuda-bindings >= 12.6; `from cuda import cuda` on older cuda-python), given CuPy's CUfunction
    (`RawKernel.kernel.ptr`);
 2. CuPy's own binding of the same driver call, `cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor`;
 3. the runtime's `cudaOccupancyMaxActiveBlocksPerMultiprocessor` (cuda.bindings.runtime) given the same
    handle as a cudaFunction_t (the runtime normally wants a host stub, which an NVRTC kernel lacks).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from roofline.analysis.occupancy import DEFAULT_SMEM_PER_BLOCK_BYTES, carveout_kib_for_percent, occupancy
from roofline.ceilings.specs import GPUSpec, match_nvml_name, resolve
from roofline.core.errors import RooflineError

KIB = 1024
DEFAULT_GPU = "h200-sxm"

KERNEL_NAME = "occ_probe"
KERNEL_SOURCE = r"""
#ifndef NACC
#define NACC 8
#endif
#ifndef STATIC_BYTES
#define STATIC_BYTES 0
#endif
#ifdef LB_THREADS
#define BOUNDS __launch_bounds__(LB_THREADS, LB_MIN_BLOCKS)
#else
#define BOUNDS
#endif

// NACC accumulators, each live across the loop (every update reads two others): the register knob.
extern "C" __global__ void BOUNDS occ_probe(const float* __restrict__ x, float* __restrict__ y, int n,
                                            int dyn_words) {
    extern __shared__ float dyn[];
#if STATIC_BYTES > 0
    __shared__ float stat[STATIC_BYTES / 4];
#endif
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; ++i) acc[i] = x[(tid * 13 + i * 7) % n];
#pragma unroll 1
    for (int it = 0; it < 8; ++it) {
#pragma unroll
        for (int i = 0; i < NACC; ++i) acc[i] = fmaf(acc[i], acc[(i + 1) % NACC], acc[(i + 5) % NACC] + it);
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < NACC; ++i) s += acc[i] * (float)(i + 1);
    if (dyn_words > 0) {
        dyn[threadIdx.x % dyn_words] = s;
        __syncthreads();
        s += dyn[(threadIdx.x + 1) % dyn_words];
    }
#if STATIC_BYTES > 0
    stat[threadIdx.x % (STATIC_BYTES / 4)] = s;
    __syncthreads();
    s += stat[(threadIdx.x + 3) % (STATIC_BYTES / 4)];
#endif
    if (tid < n) y[tid] = s;
}
"""


@dataclass(frozen=True)
class Case:
    """One kernel variant and one launch configuration."""

    name: str
    threads: int
    nacc: int = 8  # live accumulators: more of them, more registers
    maxrreg: int | None = None  # --maxrregcount
    launch_bounds: tuple[int, int] | None = None  # __launch_bounds__(max threads, min blocks)
    static_bytes: int = 0  # __shared__ array in the kernel
    dynamic_bytes: int = 0  # dynamic shared memory at launch
    carveout_percent: int | None = None  # cudaFuncAttributePreferredSharedMemoryCarveout; None: not set

    def options(self) -> tuple[str, ...]:
        opts = [f"-DNACC={self.nacc}", f"-DSTATIC_BYTES={self.static_bytes}"]
        if self.maxrreg is not None:
            opts.append(f"--maxrregcount={self.maxrreg}")
        if self.launch_bounds is not None:
            opts += [f"-DLB_THREADS={self.launch_bounds[0]}", f"-DLB_MIN_BLOCKS={self.launch_bounds[1]}"]
        return tuple(opts)


# Register counts, block sizes and shared memory chosen to cross the steps of each limit on Hopper (see
# docs/occupancy.md): 32/33/40/41/48/64/65/80/128/255 registers, partial and odd warp counts, the 1 KiB
# reserved per block at 113 KiB, the 227 KiB maximum, carve-out preferences.
CASES: tuple[Case, ...] = (
    Case("light, 256 threads", 256, nacc=2),
    Case("cap 32 regs", 256, nacc=24, maxrreg=32),
    Case("cap 40 regs (granularity)", 128, nacc=32, maxrreg=40),
    Case("cap 48 regs", 256, nacc=40, maxrreg=48),
    Case("cap 64 regs (the 50% case)", 256, nacc=56, maxrreg=64),
    Case("cap 72 regs, 192 threads", 192, nacc=64, maxrreg=72),
    Case("cap 80 regs, 96 threads", 96, nacc=72, maxrreg=80),
    Case("cap 96 regs, 512 threads", 512, nacc=88, maxrreg=96),
    Case("cap 128 regs", 128, nacc=120, maxrreg=128),
    Case("cap 168 regs", 256, nacc=160, maxrreg=168),
    Case("many live values, no cap", 128, nacc=200),
    Case("1024 threads, cap 32", 1024, nacc=16, maxrreg=32),
    Case("1024 threads, cap 64", 1024, nacc=48, maxrreg=64),
    Case("partial warp: 100 threads", 100, nacc=8),
    Case("one warp per block", 32, nacc=8),
    Case("three warps per block", 96, nacc=8),
    Case("launch bounds (256, 2)", 256, nacc=120, launch_bounds=(256, 2)),
    Case("launch bounds (128, 4)", 128, nacc=160, launch_bounds=(128, 4)),
    Case("dyn 12 KiB", 128, nacc=8, dynamic_bytes=12 * KIB),
    Case("dyn 20000 B (rounding)", 64, nacc=8, dynamic_bytes=20000),
    Case("dyn 48 KiB", 128, nacc=8, dynamic_bytes=48 * KIB),
    Case("dyn 113 KiB (2 blocks with 1 KiB reserved)", 128, nacc=8, dynamic_bytes=113 * KIB),
    Case("dyn 113 KiB + 1 B (1 block)", 128, nacc=8, dynamic_bytes=113 * KIB + 1),
    Case("dyn 227 KiB (per-block maximum)", 256, nacc=8, dynamic_bytes=227 * KIB),
    Case("static 16 KiB + dyn 8 KiB", 256, nacc=8, static_bytes=16 * KIB, dynamic_bytes=8 * KIB),
    Case("static 4 KiB, cap 64 regs", 256, nacc=56, maxrreg=64, static_bytes=4 * KIB),
    Case("carve-out 50%, dyn 48 KiB", 128, nacc=8, dynamic_bytes=48 * KIB, carveout_percent=50),
    Case("carve-out 25%, dyn 20 KiB", 128, nacc=8, dynamic_bytes=20 * KIB, carveout_percent=25),
    Case("carve-out 0%, dyn 12 KiB", 128, nacc=8, dynamic_bytes=12 * KIB, carveout_percent=0),
    Case("carve-out 100%, dyn 12 KiB", 128, nacc=8, dynamic_bytes=12 * KIB, carveout_percent=100),
    Case("800 threads, cap 80 (hardware register check)", 800, nacc=72, maxrreg=80),
)


@dataclass(frozen=True)
class KernelAttrs:
    num_regs: int
    shared_size_bytes: int
    max_threads_per_block: int


class Backend(Protocol):
    """What the check needs from the GPU; `CupyBackend` is the real one, tests pass a fake."""

    api: str  # which occupancy API answered

    def device(self) -> dict[str, Any]: ...

    def compile(self, case: Case) -> Any: ...

    def attributes(self, kernel: Any) -> KernelAttrs: ...

    def configure(self, kernel: Any, case: Case) -> None: ...

    def max_active_blocks(self, kernel: Any, threads: int, dynamic_bytes: int) -> int: ...


@dataclass
class Row:
    case: Case
    attrs: KernelAttrs | None = None
    api_blocks: int | None = None
    model_blocks: int | None = None
    model_warps: int | None = None
    model_occupancy: float | None = None
    limiter: str = ""
    carveout_kib: int | None = None
    status: str = ""  # match | MISMATCH | skip: ... | error: ...
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status == "MISMATCH" or self.status.startswith("error")


def compare(case: Case, attrs: KernelAttrs, api_blocks: int | None, spec: GPUSpec, api_error: str = "") -> Row:
    """The model's answer for the kernel's real attributes, beside the driver's."""
    row = Row(case, attrs, api_blocks)
    carve = None if case.carveout_percent is None else carveout_kib_for_percent(spec, case.carveout_percent)
    row.carveout_kib = carve
    try:
        o = occupancy(spec, case.threads, attrs.num_regs, attrs.shared_size_bytes + case.dynamic_bytes, carve)
    except RooflineError as exc:
        row.status = f"error: model: {exc}"
        return row
    row.model_blocks, row.model_warps, row.model_occupancy = o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy
    row.limiter = ", ".join(x.replace("_", " ") for x in o.limiters)
    if case.threads > attrs.max_threads_per_block and o.fits:
        row.status = f"skip: {case.threads} threads > the kernel's max_threads_per_block {attrs.max_threads_per_block}"
    elif api_error:
        # a launch that cannot fit may be refused outright by the API rather than answered with 0
        row.status = "match" if not o.fits else f"error: API: {api_error}"
    else:
        row.status = "match" if api_blocks == o.active_blocks_per_sm else "MISMATCH"
    return row


def check_spec(spec: GPUSpec, props: dict[str, Any]) -> list[str]:
    """Spec fields the occupancy model uses that disagree with cudaDeviceProp (missing properties skipped)."""
    pairs = [("regsPerMultiprocessor", "registers_per_sm", 1), ("regsPerBlock", "max_registers_per_block", 1),
             ("maxThreadsPerBlock", "max_threads_per_block", 1),
             ("maxThreadsPerMultiProcessor", "max_warps_per_sm", 32),
             ("maxBlocksPerMultiProcessor", "max_blocks_per_sm", 1),
             ("sharedMemPerMultiprocessor", "shared_memory_per_sm_kib", KIB),
             ("sharedMemPerBlockOptin", "shared_memory_per_block_max_kib", KIB),
             ("reservedSharedMemPerBlock", "reserved_shared_memory_per_block_bytes", 1),
             ("multiProcessorCount", "sm_count", 1)]
    bad = []
    for prop, key, scale in pairs:
        have = props.get(prop)
        if have is None:
            continue
        want = (spec.get(key) or 0) * scale
        if int(have) != int(want):
            bad.append(f"{key}: spec {spec.get(key)} x {scale} = {want:g}, device {prop} = {have}")
    return bad


def markdown(rows: Sequence[Row], api: str, spec: GPUSpec, device: dict[str, Any], spec_problems: Sequence[str]) -> str:
    """The result as a markdown document (a header, the table, a summary line)."""
    name = device.get("name", "?")
    lines = [f"## roofline.analysis.occupancy vs the CUDA occupancy API on {name}", "",
             f"- spec: `{spec.id}` (cc {spec.compute_capability}); device cc {device.get('cc', '?')}, "
             f"{device.get('sm_count', '?')} SMs; driver {device.get('driver', '?')}",
             f"- occupancy API: {api}", ""]
    lines += ["| # | case | threads | regs | static B | dynamic B | carve-out | API blocks | model blocks | "
              "model warps | occupancy | limited by | result |",
              "|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|"]
    for i, r in enumerate(rows, 1):
        a = r.attrs
        carve = "-" if r.case.carveout_percent is None else f"{r.case.carveout_percent}% = {r.carveout_kib} KiB"
        occ = "-" if r.model_occupancy is None else f"{r.model_occupancy:.1%}"
        result = f"**{r.status}**" if r.failed else r.status
        lines.append(f"| {i} | {r.case.name} | {r.case.threads} | {a.num_regs if a else '-'} | "
                     f"{a.shared_size_bytes if a else '-'} | {r.case.dynamic_bytes} | {carve} | "
                     f"{'-' if r.api_blocks is None else r.api_blocks} | "
                     f"{'-' if r.model_blocks is None else r.model_blocks} | "
                     f"{'-' if r.model_warps is None else r.model_warps} | {occ} | {r.limiter or '-'} | {result} |")
    n_fail = sum(r.failed for r in rows)
    n_skip = sum(r.status.startswith("skip") for r in rows)
    lines.append("")
    for p in spec_problems:
        lines.append(f"- **spec disagrees with the device**: {p}")
    lines.append(f"{len(rows) - n_fail - n_skip} of {len(rows)} cases match, {n_fail} fail, {n_skip} skipped"
                 + (f"; {len(spec_problems)} spec field(s) disagree with the device" if spec_problems else "") + ".")
    return "\n".join(lines) + "\n"


def run_cases(backend: Backend, spec: GPUSpec, cases: Sequence[Case] = CASES) -> list[Row]:
    rows = []
    for case in cases:
        try:
            kernel = backend.compile(case)
            attrs = backend.attributes(kernel)
            backend.configure(kernel, case)
        except Exception as exc:  # a compile or attribute failure is a row, not a crash
            rows.append(Row(case, status=f"error: compile/configure: {type(exc).__name__}: {exc}"[:300]))
            continue
        api_error = ""
        blocks: int | None = None
        try:
            blocks = backend.max_active_blocks(kernel, case.threads, case.dynamic_bytes)
        except Exception as exc:
            api_error = f"{type(exc).__name__}: {exc}"[:200]
        rows.append(compare(case, attrs, blocks, spec, api_error))
    return rows


# ---------------------------------------------------------------- the real backend
class CupyBackend:
    """CuPy for compiling and attributes; the first occupancy API that answers (see the module docstring)."""

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        self.api = ""
        self._occ: Callable[[Any, int, int], int] | None = None

    def device(self) -> dict[str, Any]:
        rt = self.cupy.cuda.runtime
        dev = rt.getDevice()
        props = rt.getDeviceProperties(dev)
        name = props.get("name", b"?")
        name = name.decode() if isinstance(name, bytes) else str(name)
        try:
            driver = rt.driverGetVersion()
        except Exception:
            driver = "?"
        return {"name": name, "cc": f"{props.get('major')}.{props.get('minor')}",
                "sm_count": props.get("multiProcessorCount"), "driver": driver, "props": props}

    def compile(self, case: Case) -> Any:
        k = self.cupy.RawKernel(KERNEL_SOURCE, KERNEL_NAME, options=case.options())
        k.compile()
        return k

    def attributes(self, kernel: Any) -> KernelAttrs:
        return KernelAttrs(int(kernel.num_regs), int(kernel.shared_size_bytes), int(kernel.max_threads_per_block))

    def configure(self, kernel: Any, case: Case) -> None:
        if case.static_bytes + case.dynamic_bytes > DEFAULT_SMEM_PER_BLOCK_BYTES:  # opt in above 48 KiB
            kernel.max_dynamic_shared_size_bytes = case.dynamic_bytes
        if case.carveout_percent is not None:
            kernel.preferred_shared_memory_carveout = case.carveout_percent

    def max_active_blocks(self, kernel: Any, threads: int, dynamic_bytes: int) -> int:
        if self._occ is None:
            self._occ, self.api = self._pick(kernel)
        return self._occ(kernel.kernel.ptr, threads, dynamic_bytes)

    def _pick(self, kernel: Any) -> tuple[Callable[[Any, int, int], int], str]:
        """The first occupancy API that answers for a plain probe (256 threads, no shared memory)."""
        tried = []
        for label, make in (("cuda.bindings.driver.cuOccupancyMaxActiveBlocksPerMultiprocessor", _cuda_bindings),
                            ("cuda.cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor (cuda-python < 12.6)",
                             _cuda_python_legacy),
                            ("cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor", self._cupy_driver),
                            ("cuda.bindings.runtime.cudaOccupancyMaxActiveBlocksPerMultiprocessor", _cuda_runtime)):
            try:
                fn = make()
                probe = fn(kernel.kernel.ptr, 256, 0)
                if probe > 0:
                    return fn, label
                tried.append(f"{label}: answered {probe}")
            except Exception as exc:
                tried.append(f"{label}: {type(exc).__name__}: {exc}")
        raise RuntimeError("no occupancy API answered: " + "; ".join(tried))

    def _cupy_driver(self) -> Callable[[Any, int, int], int]:
        drv = self.cupy.cuda.driver
        return lambda ptr, t, s: int(drv.occupancyMaxActiveBlocksPerMultiprocessor(ptr, t, s))


def _handle(module: Any, type_name: str, ptr: int) -> Any:
    cls = getattr(module, type_name)
    try:
        return cls(ptr)
    except TypeError:
        return cls(init_value=ptr)


def _driver_call(driver: Any) -> Callable[[Any, int, int], int]:
    def call(ptr: int, t: int, s: int) -> int:
        err, n = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(_handle(driver, "CUfunction", ptr), t, s)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor: {err}")
        return int(n)

    return call


def _cuda_bindings() -> Callable[[Any, int, int], int]:
    from cuda.bindings import driver

    return _driver_call(driver)


def _cuda_python_legacy() -> Callable[[Any, int, int], int]:
    from cuda import cuda as driver  # type: ignore[attr-defined]

    return _driver_call(driver)


def _cuda_runtime() -> Callable[[Any, int, int], int]:
    from cuda.bindings import runtime

    def call(ptr: int, t: int, s: int) -> int:
        err, n = runtime.cudaOccupancyMaxActiveBlocksPerMultiprocessor(_handle(runtime, "cudaFunction_t", ptr), t, s)
        if err != runtime.cudaError_t.cudaSuccess:
            raise RuntimeError(f"cudaOccupancyMaxActiveBlocksPerMultiprocessor: {err}")
        return int(n)

    return call


# ---------------------------------------------------------------- main
def pick_spec(gpu: str | None, device: dict[str, Any]) -> GPUSpec:
    if gpu:
        return resolve(gpu)
    return match_nvml_name(str(device.get("name", ""))) or resolve(DEFAULT_GPU)


def main(argv: Sequence[str] | None = None, backend: Backend | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", help=f"spec id (default: the device's spec, else {DEFAULT_GPU})")
    ap.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = ap.parse_args(argv)
    if backend is None:
        try:
            backend = CupyBackend()
            device = backend.device()
        except Exception as exc:
            print(f"cannot run: no usable CUDA device through CuPy ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 2
    else:
        device = backend.device()
    try:
        spec = pick_spec(args.gpu, device)
    except RooflineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = run_cases(backend, spec)
    if not backend.api:
        reasons = "; ".join(r.status for r in rows if r.status.startswith("error"))[:600]
        print(f"cannot run: no occupancy API answered ({reasons})", file=sys.stderr)
        return 2
    problems = check_spec(spec, device.get("props") or {})
    text = markdown(rows, backend.api, spec, device, problems)
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)
    return 1 if problems or any(r.failed for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
