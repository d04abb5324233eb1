"""The roofline math, pure Python: ceilings, ridge point, attainable rate, roofline time, bound.

NB: a single DRAM roof and one compute roof per dtype; caches, latency and launch overhead are the
concern of measured ceilings (calibrate) and of the advice, not of this model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from roofline.core.cpu_pipes import cpu_rate_key
from roofline.core.dtypes import DType
from roofline.core.errors import UsageError
from roofline.core.validate import arg_name

Bound = Literal["compute", "memory"]


@dataclass(frozen=True)
class Pipe:
    """One compute ceiling: a spec key (or measured name), its rate, and why it was chosen."""

    key: str
    flops_per_s: float
    label: str
    note: str = ""


@dataclass(frozen=True)
class Ceilings:
    """Every roof of one device: compute pipes in FLOP/s by spec key, memory levels in bytes/s."""

    device_id: str
    device_name: str
    kind: Literal["gpu", "cpu"]
    source: Literal["datasheet", "measured"]
    compute: dict[str, float]
    memory: dict[str, float]
    sm_clock_mhz: float | None = None  # clock the compute peaks are quoted at (None on the CPU)
    notes: tuple[str, ...] = field(default_factory=tuple)
    # A CPU's data caches by level ('l2', 'l3': bytes of one core's), whose measured rates are in `memory`: the
    # part of each that held its copy rate (`measuring.calibrate.held_size`).
    cache_bytes: dict[str, int] = field(default_factory=dict)
    # A level's whole size (sysfs) where less of it held its rate (`cache_bytes`): for the placement note only.
    cache_whole_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def dram_bytes_per_s(self) -> float:
        return self.memory["dram"]


@dataclass(frozen=True)
class MemoryRoof:
    """The memory level a record's traffic is placed on: its key in `Ceilings.memory`, rate and why."""

    level: str
    bytes_per_s: float
    note: str = ""


def choose_memory(ceilings: Ceilings, working_set_bytes: float) -> MemoryRoof:
    """DRAM, or on a CPU the fastest measured cache level that holds the working set: the CPU's timer repeats a
    call on the same buffers without flushing (measuring/timing_cpu.py), so such a call reads its cache. The
    fastest, not the smallest: a copy inside one core's L2 can be slower than the threads' copy inside the L3.

    NB: the working set is the model's bytes (read + written), each byte counted once; one core's cache size."""
    dram = MemoryRoof("dram", ceilings.dram_bytes_per_s)
    if ceilings.kind != "cpu" or not working_set_bytes:
        return dram
    holding = [(ceilings.memory[lv], lv, size) for lv, size in ceilings.cache_bytes.items()
               if working_set_bytes <= size and lv in ceilings.memory]
    if not holding or max(holding)[0] <= dram.bytes_per_s:
        return dram
    rate, level, size = max(holding)
    fits, lv = f"working set {working_set_bytes / 2**20:.3g} MiB fits in", level.upper()
    whole = ceilings.cache_whole_bytes.get(level, size)
    if whole > size:  # a VM given its host's L3 (260 MiB) held the rate over a part of it (65 MiB)
        return MemoryRoof(level, rate, f"{fits} the {size / 2**20:.3g} MiB of the CPU's {lv} (of "
                                       f"{whole / 2**20:.3g}) that held its copy rate: on the {lv} roof")
    return MemoryRoof(level, rate, f"{fits} the CPU's {lv} ({size / 2**20:.3g} MiB): placed on the measured "
                                   f"{lv} roof, not DRAM's")


def pipe_label(key: str) -> str:
    """'fp16_tensor_dense_tflops' -> 'FP16 tensor'; 'fp32_dense_tflops' -> 'FP32'."""
    stem = key.replace("_dense_tflops", "").replace("_dense_tops", "")
    parts = stem.split("_")
    return " ".join([parts[0].upper(), *parts[1:]])


def choose_pipe(ceilings: Ceilings, dtype: DType, uses_tensor_cores: bool, allow_tensor_cores: bool = True,
                family: str | None = None) -> Pipe:
    """The compute ceiling an operator (of catalog `family`, when known) in `dtype` runs against.

    Tensor-core pipe for matmul-like operators (unless disallowed); the plain pipe otherwise. On the CPU, the
    measured rate of the dtype its backend really computes in (`roofline.core.cpu_pipes`). A dtype the
    device cannot run at all (fp8 without fp8 tensor cores) is a usage error.
    """
    if ceilings.kind == "cpu":
        key, why = cpu_rate_key(ceilings.compute, dtype.name, family, uses_tensor_cores)
        if key not in ceilings.compute:
            have = ", ".join(k.removeprefix("cpu_") for k in ceilings.compute)
            raise UsageError(f"no CPU rate for {dtype.name} on {ceilings.device_name} (its roofline has {have}): "
                             f"give {arg_name('dtype')} one of those, or {arg_name('gpu')} a GPU for {dtype.name}")
        return Pipe(key, ceilings.compute[key], f"CPU {key.removeprefix('cpu_').upper()} matmul", note=why or "")
    name = ceilings.device_name
    has_tensor = dtype.tensor_field is not None and dtype.tensor_field in ceilings.compute
    if dtype.needs_tensor_pipe and dtype.tensor_field and not has_tensor:
        raise UsageError(f"{name} has no {dtype.name} tensor cores: {dtype.name} is not supported there")
    if uses_tensor_cores and allow_tensor_cores and has_tensor:
        tensor_key = dtype.tensor_field
        assert tensor_key is not None  # has_tensor said so
        return Pipe(tensor_key, ceilings.compute[tensor_key], pipe_label(tensor_key))
    if dtype.plain_field in ceilings.compute:
        return Pipe(dtype.plain_field, ceilings.compute[dtype.plain_field], pipe_label(dtype.plain_field))
    fallback = "fp32_dense_tflops"
    return Pipe(fallback, ceilings.compute[fallback], pipe_label(fallback),
                note=f"{name} lists no plain {dtype.name} rate: arithmetic assumed in FP32")


@dataclass(frozen=True)
class RooflinePoint:
    """The roofline verdict for one (flops, bytes) pair against one compute and one memory roof."""

    flops: float
    bytes: float
    peak_flops_per_s: float
    peak_bytes_per_s: float

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def ridge_point(self) -> float:
        return ridge_point(self.peak_flops_per_s, self.peak_bytes_per_s)

    @property
    def attainable_flops_per_s(self) -> float:
        return attainable(self.arithmetic_intensity, self.peak_flops_per_s, self.peak_bytes_per_s)

    @property
    def roofline_time_s(self) -> float:
        return roofline_time(self.flops, self.bytes, self.peak_flops_per_s, self.peak_bytes_per_s)

    @property
    def bound(self) -> Bound:
        return bound(self.flops, self.bytes, self.peak_flops_per_s, self.peak_bytes_per_s)


def ridge_point(peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """Arithmetic intensity (FLOP/byte) where the memory roof meets the compute roof."""
    return peak_flops_per_s / peak_bytes_per_s


def attainable(intensity: float, peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """min(peak, AI x bandwidth): the best FLOP/s an operator of this intensity can reach."""
    return min(peak_flops_per_s, intensity * peak_bytes_per_s)


def roofline_time(flops: float, nbytes: float, peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """max(flops / peak, bytes / bandwidth): the least time the operator can take."""
    return max(flops / peak_flops_per_s, nbytes / peak_bytes_per_s)


def bound(flops: float, nbytes: float, peak_flops_per_s: float, peak_bytes_per_s: float) -> Bound:
    """'compute' when the FLOP term of the roofline time dominates, else 'memory' (ties go to compute)."""
    return "compute" if flops / peak_flops_per_s >= nbytes / peak_bytes_per_s else "memory"


# A time faster than the roofline time by more than this is above the roof: a bug in the roof or in the model,
# never a verdict (timing noise stays well inside 5%).
ABOVE_ROOF = 1.05


def above_roof(fraction: float | None) -> bool:
    """Whether a record's roofline fraction puts it above its roof (ABOVE_ROOF)."""
    return fraction is not None and fraction > ABOVE_ROOF


@dataclass(frozen=True)
class Achieved:
    time_s: float
    achieved_flops_per_s: float
    achieved_bytes_per_s: float
    roofline_fraction: float  # roofline time / measured time: 1.0 means on the roof


def achieved(analysis: RooflinePoint, time_s: float) -> Achieved:
    if time_s <= 0:
        raise ValueError("time must be positive")
    return Achieved(
        time_s=time_s,
        achieved_flops_per_s=analysis.flops / time_s,
        achieved_bytes_per_s=analysis.bytes / time_s,
        roofline_fraction=analysis.roofline_time_s / time_s,
    )
