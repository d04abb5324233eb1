"""Theoretical occupancy: resident blocks and warps per SM for a launch configuration, as the CUDA Occupancy
Calculator and `cudaOccupancyMaxActiveBlocksPerMultiprocessor` compute it, with the arithmetic shown.

The rules follow `cudaOccMaxActiveBlocksPerMultiprocessor` in CUDA's header-only calculator
(`include/cuda_occupancy.h`, CUDA 12.x), with the per-architecture numbers taken from the spec files:

- warps per block = ceil(T / 32);
- registers are allocated per warp: ceil(R x 32 / unit) x unit (unit 256). The register file is split over
  `warp_allocation_granularity` (4) sub-partitions, so the warps that fit are
  floor(registers_per_sm / per-warp allocation) rounded down to a multiple of 4; blocks = floor(that / warps
  per block). A block whose registers (per-warp allocation x its warps rounded up to a multiple of 4, the
  hardware's check) exceed `max_registers_per_block` cannot launch: 0 blocks;
- shared memory per block = ceil((S + reserved) / unit) x unit (reserved: 1 KiB on cc >= 8.0, 0 on 7.x;
  unit: 256 B on 7.x, 128 B on 8.0 and later); blocks = floor(carve-out / that);
- blocks = floor(max_warps_per_sm / warps per block), and at most `max_blocks_per_sm`.

The carve-out (the part of the unified L1/shared-memory array given to shared memory): with no preference
(`carveout_kib=None`, the default of `cudaFuncAttributePreferredSharedMemoryCarveout`, -1) the occupancy API
divides by the *largest* carve-out, `sharedMemPerMultiprocessor` (`cudaOccSMemPreferenceVoltaPlus`: a default
preference maps to the maximum). A preference is rounded up to the next supported carve-out
(`cudaOccAlignUpShmemSizeVoltaPlus`) and used when one block fits in it; when not even one block fits, the
preference is overridden by the smallest carve-out that holds one block. At launch the driver configures a
carve-out itself ("the driver automatically configures the shared memory capacity for each kernel to avoid
shared memory occupancy bottlenecks", CUDA C++ Programming Guide, Compute Capability 7.x / 8.x, Shared
Memory); `carveout_needed_kib` is the smallest supported carve-out that holds the resident blocks.

NB: the per-block limits of Hopper's barrier count, thread-block clusters and partitioned global caching
(cc 5.2/6.x only) are not modelled; shared memory above 48 KiB per block is assumed opted in
(`cudaFuncAttributeMaxDynamicSharedMemorySize`), as the occupancy API assumes for a kernel that did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from roofline.ceilings.specs import GPUSpec, as_spec
from roofline.core.errors import RooflineError, UsageError
from roofline.core.sizes import _BYTE_UNITS, SIZE_UNITS, parse_bytes  # noqa: F401 (re-exported)

WARP_SIZE = 32
# Shared memory a block may use without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize): 48 KiB on
# every architecture since Volta (CUDA C++ Programming Guide, Technical Specifications per Compute Capability).
DEFAULT_SMEM_PER_BLOCK_BYTES = 48 * 1024

# The four limits, in the order of cudaOccLimitingFactor's bits (warps 0x1, registers 0x2, shared memory 0x4,
# blocks 0x8); a tie names the first of them as *the* limiter and lists all in `limiters`.
LIMITS = ("warps", "registers", "shared_memory", "blocks")
Limit = Literal["warps", "registers", "shared_memory", "blocks"]
SweepKind = Literal["registers", "shared-memory", "threads"]
SWEEP_KINDS: tuple[str, ...] = ("registers", "shared-memory", "threads")

# Spec fields the calculation needs (all present in every shipped spec; optional in the schema).
_NEEDED = ("registers_per_sm", "max_registers_per_block", "max_registers_per_thread", "register_allocation_unit_size",
           "warp_allocation_granularity", "max_warps_per_sm", "max_blocks_per_sm", "max_threads_per_block",
           "shared_memory_per_sm_kib", "shared_memory_per_block_max_kib", "shared_memory_allocation_unit_bytes")


@dataclass(frozen=True)
class Occupancy:
    """One launch configuration on one GPU: what limits it, how many blocks and warps reside per SM."""

    gpu: str
    compute_capability: str
    threads_per_block: int
    registers_per_thread: int
    shared_memory_per_block_bytes: int  # static + dynamic, as the kernel asks for it (reserved not included)
    carveout_preference_kib: int | None  # None: no preference (the API then uses the largest carve-out)
    warps_per_block: int
    registers_per_warp: int  # allocated: ceil(R x 32 / unit) x unit
    registers_per_block: int  # allocated: per warp x warps per block
    shared_memory_allocated_per_block_bytes: int  # ceil((S + reserved) / unit) x unit
    carveout_kib: int  # the carve-out the block count divides by
    blocks_limit_warps: int
    blocks_limit_registers: int | None  # None: no limit (0 registers)
    blocks_limit_shared_memory: int | None  # None: no limit (no shared memory at all)
    blocks_limit_blocks: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float  # active warps / max warps per SM
    limiter: Limit
    limiters: tuple[str, ...]  # every limit that equals the active block count
    carveout_needed_kib: int | None  # smallest supported carve-out holding the active blocks (None: 0 blocks)
    working: list[str] = field(default_factory=list, compare=False)  # the arithmetic, one step a line
    reasons: dict[str, str] = field(default_factory=dict, compare=False)  # the arithmetic of each limit

    @property
    def limits(self) -> dict[str, int | None]:
        """Blocks per SM each resource allows (None: unlimited)."""
        return {"warps": self.blocks_limit_warps, "registers": self.blocks_limit_registers,
                "shared_memory": self.blocks_limit_shared_memory, "blocks": self.blocks_limit_blocks}

    @property
    def fits(self) -> bool:
        """False when not even one block can be resident (the launch would fail)."""
        return self.active_blocks_per_sm > 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["limiters"] = list(self.limiters)
        return d


# ---------------------------------------------------------------- parsing
# The one parser of byte sizes (48KB, 256MiB): roofline.core.sizes.


# ---------------------------------------------------------------- the calculation
def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be an integer, got {value!r}")
    return value


def _need(spec: GPUSpec) -> dict[str, int]:
    if not spec.is_nvidia:  # a GPU the command cannot take is bad input (exit 2), as fp8 on an A100 is
        raise UsageError(f"{spec.name} is an {spec.vendor} GPU: occupancy is computed for NVIDIA GPUs only "
                         "(CUDA's occupancy rules)")
    missing = [k for k in _NEEDED if spec.get(k) is None]
    if missing or not spec.lists.get("shared_memory_carveout_kib"):
        what = ", ".join(missing + ([] if spec.lists.get("shared_memory_carveout_kib")
                                    else ["shared_memory_carveout_kib"]))
        raise RooflineError(f"spec {spec.id} lacks {what}: cannot compute occupancy (add them to {spec.path or 'it'})")
    return {k: int(spec[k]) for k in _NEEDED}


def carveouts_kib(spec: GPUSpec | str) -> tuple[int, ...]:
    """The shared-memory carve-outs (KiB per SM) the architecture supports, ascending."""
    spec = as_spec(spec)
    return tuple(sorted(spec.lists.get("shared_memory_carveout_kib", ())))


def _round_up_carveout(spec: GPUSpec, nbytes: int) -> int | None:
    """The smallest supported carve-out (KiB) holding `nbytes`, or None when none does."""
    for c in carveouts_kib(spec):
        if c * 1024 >= nbytes:
            return c
    return None


def carveout_kib_for_percent(spec: GPUSpec | str, percent: int) -> int:
    """The carve-out a `cudaFuncAttributePreferredSharedMemoryCarveout` of `percent` selects:
    percent x sharedMemPerMultiprocessor / 100, rounded up to a supported carve-out (cudaOccSMemPreferenceVoltaPlus)."""
    spec = as_spec(spec)
    if not 0 <= percent <= 100:
        raise UsageError(f"a carve-out percentage must be 0..100, got {percent}")
    c = _round_up_carveout(spec, percent * int(spec["shared_memory_per_sm_kib"]) * 1024 // 100)
    assert c is not None
    return c


def occupancy(spec: GPUSpec | str, threads_per_block: int, registers_per_thread: int,
              shared_memory_per_block_bytes: int | str, carveout_kib: int | None = None) -> Occupancy:
    """Resident blocks and warps per SM, the limiting resource and the arithmetic, as
    cudaOccupancyMaxActiveBlocksPerMultiprocessor computes them (see the module docstring). `spec` is a GPUSpec
    or its id or alias ("h100"); shared memory is bytes or a size ("48KB", see `parse_bytes`)."""
    spec = as_spec(spec)
    given = shared_memory_per_block_bytes
    if isinstance(shared_memory_per_block_bytes, str):  # any size that reads ('1GB' too): the limit judges it
        shared_memory_per_block_bytes = parse_bytes(shared_memory_per_block_bytes, SIZE_UNITS)
    p = _need(spec)
    t = _int("threads per block", threads_per_block)
    r = _int("registers per thread", registers_per_thread)
    s = _int("shared memory per block", shared_memory_per_block_bytes)
    if not 1 <= t <= p["max_threads_per_block"]:
        raise UsageError(f"threads per block must be 1..{p['max_threads_per_block']} on {spec.name}, got {t}")
    if not 0 <= r <= p["max_registers_per_thread"]:
        raise UsageError(f"registers per thread must be 0..{p['max_registers_per_thread']} on {spec.name}, got {r}")
    smem_block_max = p["shared_memory_per_block_max_kib"] * 1024
    if s > smem_block_max:
        said = given.strip() if isinstance(given, str) and given.strip() != str(s) else f"{s} bytes"
        raise UsageError(f"shared memory per block {said} exceeds the limit of {spec.name}: "
                         f"{p['shared_memory_per_block_max_kib']} KiB ({smem_block_max} bytes)")
    if s < 0:
        raise UsageError(f"shared memory per block must be 0..{smem_block_max} bytes "
                         f"({p['shared_memory_per_block_max_kib']} KiB) on {spec.name}, got {s}")
    supported = carveouts_kib(spec)
    if carveout_kib is not None:
        carveout_kib = _int("carve-out", carveout_kib)
        if not 0 <= carveout_kib <= supported[-1]:
            raise UsageError(f"carve-out must be 0..{supported[-1]} KiB on {spec.name} "
                             f"(supported: {', '.join(map(str, supported))}), got {carveout_kib}")

    why: dict[str, str] = {}  # the arithmetic of each limit
    # -- warps
    warps_per_block = math.ceil(t / WARP_SIZE)
    max_warps = p["max_warps_per_sm"]
    lim_warps = max_warps // warps_per_block
    why["warps"] = f"floor({max_warps} warps per SM / {warps_per_block} per block) = {lim_warps}"

    # -- registers
    unit, gran = p["register_allocation_unit_size"], p["warp_allocation_granularity"]
    regs_warp = math.ceil(r * WARP_SIZE / unit) * unit
    regs_block = regs_warp * warps_per_block
    lim_regs: int | None
    if r == 0:
        lim_regs = None
        why["registers"] = "none used: no register limit"
    else:
        regs_sm, regs_block_max = p["registers_per_sm"], p["max_registers_per_block"]
        per_warp = f"per warp ceil({r} x {WARP_SIZE} / {unit}) x {unit} = {regs_warp}; "
        warps_assumed = math.ceil(warps_per_block / gran) * gran  # the hardware's per-block check
        if regs_warp * warps_assumed > regs_block_max or regs_block > regs_block_max:
            lim_regs = 0
            why["registers"] = per_warp + (
                f"per block {regs_warp} x {warps_assumed} warps (rounded up to a multiple of {gran}) = "
                f"{regs_warp * warps_assumed} > {regs_block_max} registers per block: the block cannot launch "
                "('too many resources requested for launch')")
        else:
            fit = regs_sm // regs_warp
            warps_regs = fit // gran * gran
            lim_regs = warps_regs // warps_per_block
            why["registers"] = per_warp + (
                f"warps per SM = floor({regs_sm} / {regs_warp}) = {fit}, rounded down to a multiple of {gran} = "
                f"{warps_regs}; blocks = floor({warps_regs} / {warps_per_block}) = {lim_regs}")

    # -- shared memory
    s_unit = p["shared_memory_allocation_unit_bytes"]
    reserved = int(spec.get("reserved_shared_memory_per_block_bytes") or 0)
    alloc = math.ceil((s + reserved) / s_unit) * s_unit
    pref: int | None  # narrowed to int in both branches
    if carveout_kib is None:
        pref, chosen = supported[-1], "no preference: the API counts with the largest carve-out"
    else:
        pref = _round_up_carveout(spec, carveout_kib * 1024)
        assert pref is not None  # carveout_kib <= the largest carve-out (checked above)
        chosen = f"preference {carveout_kib} KiB" + ("" if pref == carveout_kib else
                                                      f", rounded up to the supported {pref} KiB")
    used = pref
    if alloc and pref * 1024 < alloc:
        smallest = _round_up_carveout(spec, alloc)
        assert smallest is not None  # alloc <= per-block maximum + reserved <= the largest carve-out
        used = smallest
        chosen += f"; it cannot hold one block, so the smallest carve-out that does, {used} KiB"
    lim_smem: int | None
    if alloc == 0:
        lim_smem = None
        why["shared_memory"] = "none used (and none reserved on this architecture): no shared-memory limit"
    else:
        lim_smem = used * 1024 // alloc
        res = f" + {reserved} reserved" if reserved else ""
        why["shared_memory"] = (f"per block ceil(({s}{res}) / {s_unit}) x {s_unit} = {alloc} B; carve-out {used} KiB "
                                f"= {used * 1024} B ({chosen}); blocks = floor({used * 1024} / {alloc}) = {lim_smem}")

    # -- blocks
    lim_blocks = p["max_blocks_per_sm"]
    why["blocks"] = f"at most {lim_blocks} resident blocks per SM"

    limits: dict[str, int | None] = {"warps": lim_warps, "registers": lim_regs, "shared_memory": lim_smem,
                                     "blocks": lim_blocks}
    active = min(v for v in limits.values() if v is not None)
    limiters = tuple(k for k in LIMITS if limits[k] == active)
    active_warps = active * warps_per_block
    frac = active_warps / max_warps
    needed = _round_up_carveout(spec, active * alloc) if active else None

    partial = "" if t % WARP_SIZE == 0 else " (threads are allocated by whole warps: the last one is partly idle)"
    w = [f"{spec.name} (cc {spec.compute_capability}): {t} threads/block, {r} registers/thread, "
         f"{s} B shared memory/block",
         f"warps per block = ceil({t} / {WARP_SIZE}) = {warps_per_block}{partial}"]
    w += [f"{_LIMIT_NAME[k]}: {why[k]}" for k in ("registers", "warps", "shared_memory", "blocks")]
    if s > DEFAULT_SMEM_PER_BLOCK_BYTES:
        w.append(f"note: above {DEFAULT_SMEM_PER_BLOCK_BYTES // 1024} KiB per block the kernel must opt in "
                 "(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)); assumed here")
    shown = ", ".join("-" if v is None else str(v) for v in limits.values())
    w.append(f"active blocks = min(warps, registers, shared memory, blocks) = min({shown}) = {active} "
             f"(limited by {limiter_names(limiters)})")
    w.append(f"active warps = {active} x {warps_per_block} = {active_warps} of {max_warps} -> occupancy {frac:.1%}")
    if needed is not None:
        w.append(f"carve-out needed: {active} x {alloc} B = {active * alloc} B -> smallest supported {needed} KiB "
                 f"(of {', '.join(map(str, supported))}); the rest of the L1/shared array stays L1")
    return Occupancy(
        gpu=spec.id, compute_capability=spec.compute_capability, threads_per_block=t, registers_per_thread=r,
        shared_memory_per_block_bytes=s, carveout_preference_kib=carveout_kib, warps_per_block=warps_per_block,
        registers_per_warp=regs_warp, registers_per_block=regs_block, shared_memory_allocated_per_block_bytes=alloc,
        carveout_kib=used, blocks_limit_warps=lim_warps, blocks_limit_registers=lim_regs,
        blocks_limit_shared_memory=lim_smem, blocks_limit_blocks=lim_blocks, active_blocks_per_sm=active,
        active_warps_per_sm=active_warps, max_warps_per_sm=max_warps, occupancy=frac,
        limiter=limiters[0],  # type: ignore[arg-type]
        limiters=limiters, carveout_needed_kib=needed, working=w, reasons=why,
    )


_LIMIT_NAME = {"warps": "warps", "registers": "registers", "shared_memory": "shared memory", "blocks": "blocks"}


def limiter_names(limiters: Sequence[str]) -> str:
    """('warps', 'registers', 'blocks') -> 'warps, registers and blocks'."""
    names = [_LIMIT_NAME[x] for x in limiters]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ---------------------------------------------------------------- sweeps
def sweep_values(spec: GPUSpec | str, vary: SweepKind) -> list[int]:
    """The x axis of each curve of the CUDA Occupancy Calculator: every register count 1..255, every block
    size 32..1024 in whole warps, shared memory 0..the per-block maximum in allocation units."""
    p = _need(as_spec(spec))
    if vary == "registers":
        return list(range(1, p["max_registers_per_thread"] + 1))
    if vary == "threads":
        return list(range(WARP_SIZE, p["max_threads_per_block"] + 1, WARP_SIZE))
    if vary == "shared-memory":
        return list(range(0, p["shared_memory_per_block_max_kib"] * 1024 + 1, p["shared_memory_allocation_unit_bytes"]))
    raise UsageError(f"can sweep {', '.join(SWEEP_KINDS)}, not {vary!r}")


def sweep(spec: GPUSpec | str, vary: SweepKind, threads_per_block: int = 256, registers_per_thread: int = 32,
          shared_memory_per_block_bytes: int = 0, carveout_kib: int | None = None,
          values: Iterable[int] | None = None) -> list[Occupancy]:
    """Occupancy as one input varies over `values` (default: `sweep_values`), the others held."""
    spec = as_spec(spec)
    xs = sweep_values(spec, vary) if values is None else list(values)
    out = []
    for x in xs:
        t, r, s = threads_per_block, registers_per_thread, shared_memory_per_block_bytes
        if vary == "registers":
            r = x
        elif vary == "threads":
            t = x
        else:
            s = x
        out.append(occupancy(spec, t, r, s, carveout_kib))
    return out


SWEEP_AXES = {"registers": ("registers_per_thread", "registers/thread"),
         "threads": ("threads_per_block", "threads/block"),
         "shared-memory": ("shared_memory_per_block_bytes", "shared memory/block (B)")}


def varied(points: Sequence[Occupancy]) -> str:
    """Which input a sweep varies (the first that is not constant; 'registers' for a single point)."""
    for kind, (attr, _) in SWEEP_AXES.items():
        if len({getattr(o, attr) for o in points}) > 1:
            return kind
    return "registers"


def ranges(points: Sequence[Occupancy]) -> list[tuple[int, int, Occupancy]]:
    """Runs of consecutive points with the same result: (first x, last x, a representative)."""
    attr = SWEEP_AXES[varied(points)][0]
    runs: list[tuple[int, int, Occupancy]] = []
    for o in points:
        x = getattr(o, attr)
        key = (o.active_blocks_per_sm, o.active_warps_per_sm, o.limiters)
        if runs and (runs[-1][2].active_blocks_per_sm, runs[-1][2].active_warps_per_sm, runs[-1][2].limiters) == key:
            runs[-1] = (runs[-1][0], x, runs[-1][2])
        else:
            runs.append((x, x, o))
    return runs
