"""Theoretical occupancy against hand arithmetic, one or more cases per compute capability in specs/.

The rules are those of the CUDA Occupancy Calculator and of `cudaOccMaxActiveBlocksPerMultiprocessor` in
CUDA's `include/cuda_occupancy.h` (CUDA 12.x); the per-architecture limits are the CUDA C++ Programming
Guide's 'Technical Specifications per Compute Capability' table, as the spec files record them:

    cc    max warps/SM  max blocks/SM  smem/SM (carve-outs, KiB)          smem unit  reserved/block
    7.0   64            32             96 (0 8 16 32 64 96)               256 B      0
    7.5   32            16             64 (32 64)                         256 B      0
    8.0   64            32             164 (0 8 16 32 64 100 132 164)     128 B      1 KiB
    8.6   48            16             100 (0 8 16 32 64 100)             128 B      1 KiB
    8.9   48            24             100 (0 8 16 32 64 100)             128 B      1 KiB
    9.0   64            32             228 (... 164 196 228)              128 B      1 KiB
    10.0  64            32             228 (... 164 196 228)              128 B      1 KiB
and everywhere: 65536 registers per SM and per block, 255 per thread, allocated per warp in units of 256,
4 register sub-partitions (warp allocation granularity 4), 1024 threads per block.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import re

import pytest
from helpers import ROOT, run

from roofline.analysis.occupancy import (
    carveout_kib_for_percent,
    carveouts_kib,
    occupancy,
    parse_bytes,
    sweep,
    sweep_values,
)
from roofline.ceilings.specs import load_all, resolve
from roofline.core.errors import RooflineError, UsageError
from roofline.report.occupancy import plot_sweep, render_occupancy, render_sweep

KIB = 1024


def occ(gpu: str, t: int, r: int, s: int = 0, carveout: int | None = None):
    return occupancy(resolve(gpu), t, r, s, carveout)


# ---------------------------------------------------------------- cc 7.0 (V100)
def test_v100_full_occupancy_ties_warps_and_registers() -> None:
    o = occ("v100-sxm2", 256, 32)
    # warps/block = 256/32 = 8; warps: 64/8 = 8 blocks
    # registers: 32*32 = 1024 per warp; 65536/1024 = 64 warps; 64/8 = 8 blocks
    # shared memory: 0 + 0 reserved on cc 7.x -> no limit
    assert (o.blocks_limit_warps, o.blocks_limit_registers, o.blocks_limit_shared_memory) == (8, 8, None)
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy) == (8, 64, 1.0)
    assert o.limiters == ("warps", "registers") and o.limiter == "warps"


def test_v100_shared_memory_limited_with_256_byte_unit() -> None:
    o = occ("v100-sxm2", 64, 16, 12 * KIB)
    # smem: ceil(12288/256)*256 = 12288; 96 KiB = 98304 / 12288 = 8 blocks
    # registers: 16*32 = 512/warp -> 128 warps -> 64 blocks of 2 warps; warps: 64/2 = 32; blocks: 32
    assert o.shared_memory_allocated_per_block_bytes == 12288
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.limiter) == (8, 16, "shared_memory")
    assert o.occupancy == 16 / 64
    assert occ("v100-sxm2", 64, 16, 100).shared_memory_allocated_per_block_bytes == 256  # ceil(100/256)*256


# ---------------------------------------------------------------- cc 7.5 (T4)
def test_t4_register_cliff_at_65() -> None:
    o64 = occ("t4", 256, 64)
    # 64*32 = 2048/warp; 65536/2048 = 32 warps -> 4 blocks; warps: 32/8 = 4 -> 100% (32 of 32 warps)
    assert (o64.active_blocks_per_sm, o64.occupancy, o64.limiters) == (4, 1.0, ("warps", "registers"))
    o65 = occ("t4", 256, 65)
    # 65*32 = 2080 -> 2304/warp; floor(65536/2304) = 28 (a multiple of 4); 28/8 = 3 blocks = 24 warps = 75%
    assert o65.registers_per_warp == 2304
    assert (o65.active_blocks_per_sm, o65.active_warps_per_sm, o65.occupancy, o65.limiter) == (3, 24, 0.75,
                                                                                               "registers")


def test_t4_block_limited() -> None:
    o = occ("t4", 32, 16)
    # one warp per block: warps 32/1 = 32, registers 512/warp -> 128 warps -> 128 blocks; blocks: 16 per SM
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy, o.limiter) == (16, 16, 0.5, "blocks")


def test_t4_carveout_preference() -> None:
    # smem: ceil(20000/256)*256 = 20224 B; default carve-out 64 KiB: 65536/20224 = 3 blocks
    assert occ("t4", 128, 32, 20000).active_blocks_per_sm == 3
    # preference 32 KiB: 32768/20224 = 1 block; 0 and 16 KiB round up to Turing's smallest, 32 KiB
    for pref in (32, 16, 0):
        o = occ("t4", 128, 32, 20000, carveout=pref)
        assert (o.carveout_kib, o.active_blocks_per_sm) == (32, 1)


# ---------------------------------------------------------------- cc 8.0 (A100)
def test_a100_64_registers_is_32_warps_not_64() -> None:
    o = occ("a100-sxm4-80gb", 256, 64, 0)
    # the famous one: 65536 / (64 * 32) = 32 warps, not 64: 4 blocks of 8 warps = 50%, limited by registers
    assert o.registers_per_warp == 2048 and o.blocks_limit_registers == 4
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy, o.limiter) == (4, 32, 0.5, "registers")
    # shared memory: 0 + 1 KiB reserved = 1024 B per block; 164 KiB / 1 KiB = 164 blocks (not limiting)
    assert o.shared_memory_allocated_per_block_bytes == 1024 and o.blocks_limit_shared_memory == 164
    assert o.carveout_needed_kib == 8  # 4 x 1 KiB = 4 KiB -> the 8 KiB carve-out


def test_a100_reserved_kib_per_block() -> None:
    # two blocks need 2 x (S + 1 KiB) <= 164 KiB, so S <= 81 KiB (not 82)
    assert occ("a100-sxm4-80gb", 128, 32, 81 * KIB).active_blocks_per_sm == 2  # 2 x 83968 = 167936 = 164 KiB
    o = occ("a100-sxm4-80gb", 128, 32, 81 * KIB + 1)
    # 82945 + 1024 = 83969 -> ceil(83969 / 128) x 128 = 84096; 167936 / 84096 = 1.997 -> 1 block
    assert o.shared_memory_allocated_per_block_bytes == 84096
    assert (o.active_blocks_per_sm, o.limiter) == (1, "shared_memory")


# ---------------------------------------------------------------- cc 8.6 (RTX 3090, A10)
@pytest.mark.parametrize("gpu", ["rtx3090", "a10"])
def test_cc86_1024_threads_is_two_thirds(gpu: str) -> None:
    o = occ(gpu, 1024, 32)
    # 32 warps per block; 48 warps per SM on cc 8.6: floor(48/32) = 1 block = 32 of 48 warps = 66.7%
    assert (o.blocks_limit_warps, o.active_blocks_per_sm, o.active_warps_per_sm) == (1, 1, 32)
    assert o.occupancy == pytest.approx(2 / 3) and o.limiter == "warps"
    o768 = occ(gpu, 768, 32)  # 24 warps: 48/24 = 2 blocks; registers 64 warps / 24 = 2: 100%
    assert (o768.active_blocks_per_sm, o768.occupancy, o768.limiters) == (2, 1.0, ("warps", "registers"))
    o32 = occ(gpu, 32, 32)  # one warp per block, 16 blocks per SM on cc 8.6: 16 of 48 warps
    assert (o32.active_blocks_per_sm, o32.limiter) == (16, "blocks") and o32.occupancy == pytest.approx(1 / 3)


# ---------------------------------------------------------------- cc 8.9 (RTX 4090)
def test_cc89_24_blocks() -> None:
    o = occ("rtx4090", 32, 32)  # 24 blocks per SM on cc 8.9: 24 of 48 warps
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy, o.limiter) == (24, 24, 0.5, "blocks")
    o64 = occ("rtx4090", 64, 32)  # 2 warps: 48/2 = 24 = the block limit: 100%
    assert (o64.active_blocks_per_sm, o64.occupancy, o64.limiters) == (24, 1.0, ("warps", "blocks"))


def test_cc89_shared_memory() -> None:
    o = occ("rtx4090", 128, 32, 32 * KIB)
    # (32768 + 1024) = 33792 B (a multiple of 128); 100 KiB = 102400 / 33792 = 3 blocks = 12 of 48 warps
    assert o.shared_memory_allocated_per_block_bytes == 33792
    assert (o.active_blocks_per_sm, o.occupancy, o.limiter) == (3, 0.25, "shared_memory")
    assert o.carveout_needed_kib == 100  # 3 x 33792 = 101376 B > 64 KiB


# ---------------------------------------------------------------- cc 9.0 (H100, H200)
@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm", "h100-pcie"])
def test_cc90_48k_shared_memory(gpu: str) -> None:
    o = occ(gpu, 128, 32, 48 * KIB)
    # (49152 + 1024) = 50176 B; 228 KiB = 233472 / 50176 = 4 blocks = 16 warps = 25%
    assert o.shared_memory_allocated_per_block_bytes == 50176 and o.carveout_kib == 228
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy, o.limiter) == (4, 16, 0.25, "shared_memory")
    assert o.carveout_needed_kib == 196  # 4 x 50176 = 200704 B = 196 KiB exactly
    # 48 KiB is the most a block gets without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize)
    assert not any("opt in" in line for line in o.working)
    assert any("opt in" in line for line in occ(gpu, 128, 32, 48 * KIB + 1).working)


def test_cc90_reserved_halves_at_113k() -> None:
    # 2 x (S + 1 KiB) <= 228 KiB  <=>  S <= 113 KiB
    assert occ("h100-sxm", 128, 32, 113 * KIB).active_blocks_per_sm == 2  # 2 x 116736 = 233472
    assert occ("h100-sxm", 128, 32, 113 * KIB + 1).active_blocks_per_sm == 1  # 116737 -> 116864 B
    o = occ("h100-sxm", 128, 32, 227 * KIB)  # the per-block maximum: 227 + 1 reserved = 228 KiB, one block
    assert (o.active_blocks_per_sm, o.carveout_needed_kib) == (1, 228)


def test_cc90_register_allocation_granularity() -> None:
    o = occ("h100-sxm", 128, 40)
    # 40*32 = 1280 (5 x 256); floor(65536/1280) = 51 -> 48 (multiple of 4); 48/4 = 12 blocks = 48 warps = 75%
    assert (o.registers_per_warp, o.blocks_limit_registers, o.occupancy) == (1280, 12, 0.75)
    assert occ("h100-sxm", 128, 33).occupancy == 0.75  # 33*32 = 1056 -> 1280: the same
    o41 = occ("h100-sxm", 128, 41)  # 1312 -> 1536; floor(65536/1536) = 42 -> 40; 10 blocks = 62.5%
    assert (o41.registers_per_warp, o41.active_blocks_per_sm, o41.occupancy) == (1536, 10, 0.625)


def test_cc90_carveout_preference() -> None:
    # S = 48 KiB -> 50176 B per block
    o = occ("h100-sxm", 128, 32, 48 * KIB, carveout=100)  # 102400 / 50176 = 2 blocks
    assert (o.carveout_kib, o.active_blocks_per_sm) == (100, 2)
    o = occ("h100-sxm", 128, 32, 48 * KIB, carveout=40)  # 40 is not supported: rounded up to 64 -> 1 block
    assert (o.carveout_kib, o.active_blocks_per_sm) == (64, 1)
    o = occ("h100-sxm", 128, 32, 48 * KIB, carveout=16)  # 16 KiB holds no block: the smallest that does, 64
    assert (o.carveout_kib, o.active_blocks_per_sm) == (64, 1)
    # percentages as cudaFuncAttributePreferredSharedMemoryCarveout: 50% of 233472 = 116736 B -> 132 KiB
    spec = resolve("h100-sxm")
    assert [carveout_kib_for_percent(spec, p) for p in (0, 50, 100)] == [0, 132, 228]
    assert carveout_kib_for_percent(resolve("t4"), 0) == 32


def test_hardware_register_check_rounds_warps_to_four() -> None:
    o = occ("h100-sxm", 800, 80)
    # 25 warps x 2560 = 64000 <= 65536, but the hardware counts 28 warps (rounded up to 4): 71680 > 65536
    assert o.active_blocks_per_sm == 0 and not o.fits and o.limiter == "registers"
    assert "cannot launch" in o.reasons["registers"]
    assert o.carveout_needed_kib is None


def test_partial_warp() -> None:
    o = occ("h100-sxm", 100, 32)  # ceil(100/32) = 4 warps: allocated by whole warps
    assert o.warps_per_block == 4 and "partly idle" in o.working[1]


# ---------------------------------------------------------------- cc 10.0 (B200)
def test_b200() -> None:
    o = occ("b200", 512, 128)
    # 128*32 = 4096/warp; 65536/4096 = 16 warps -> 1 block of 16 warps = 25%
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy, o.limiter) == (1, 16, 0.25, "registers")
    o = occ("b200", 1024, 128)  # 4096 x 32 warps = 131072 > 65536 registers per block: cannot launch
    assert o.active_blocks_per_sm == 0 and o.occupancy == 0 and not o.fits
    o = occ("b200", 1024, 64)  # 2048 x 32 = 65536: fits exactly; 32 warps = 50%
    assert (o.active_blocks_per_sm, o.occupancy, o.limiters) == (1, 0.5, ("registers",))


# ---------------------------------------------------------------- every spec, against a port of cuda_occupancy.h
def reference_blocks(spec, t: int, r: int, s: int, carve_pref_kib: int | None) -> int:
    """cudaOccMaxActiveBlocksPerMultiprocessor, transcribed in its own structure (per sub-partition register
    count, sharedMemPerMultiprocessor preference, cudaOccAlignUpShmemSizeVoltaPlus) from CUDA 12.x's header."""
    warps = math.ceil(t / 32)
    ctas_warps = int(spec["max_warps_per_sm"]) // warps
    regs_warp = math.ceil(r * 32 / 256) * 256
    sub = 4
    if regs_warp * math.ceil(warps / sub) * sub > spec["max_registers_per_block"]:
        ctas_regs = 0
    elif regs_warp == 0:
        ctas_regs = 1 << 30
    else:
        ctas_regs = (int(spec["registers_per_sm"]) // sub // regs_warp) * sub // warps
    unit = int(spec["shared_memory_allocation_unit_bytes"])
    alloc = math.ceil((s + int(spec.get("reserved_shared_memory_per_block_bytes") or 0)) / unit) * unit
    sizes = [c * 1024 for c in sorted(spec.lists["shared_memory_carveout_kib"])]

    def align_up(x: int) -> int:
        return next(c for c in sizes if c >= x)

    pref = align_up(int(spec["shared_memory_per_sm_kib"]) * 1024 if carve_pref_kib is None else carve_pref_kib * 1024)
    smem = pref if pref >= alloc else align_up(alloc)
    ctas_smem = smem // alloc if alloc else 1 << 30
    return min(ctas_warps, ctas_regs, ctas_smem, int(spec["max_blocks_per_sm"]))


@pytest.mark.parametrize("spec_id", sorted(k for k, s in load_all().items() if s.is_nvidia))
def test_every_spec_matches_the_reference(spec_id: str) -> None:
    spec = load_all()[spec_id]
    assert carveouts_kib(spec)[-1] == spec["shared_memory_per_sm_kib"]  # the largest carve-out is the SM's
    rng = random.Random(spec_id)
    smem_max = int(spec["shared_memory_per_block_max_kib"]) * 1024
    for _ in range(400):
        t = rng.choice([32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 800, 1000, 1024, rng.randint(1, 1024)])
        r = rng.choice([0, 16, 24, 32, 33, 40, 48, 64, 65, 72, 80, 96, 128, 168, 255, rng.randint(1, 255)])
        s = rng.choice([0, 1, 1024, 12 * KIB, 48 * KIB, smem_max // 3, smem_max, rng.randint(0, smem_max)])
        c = rng.choice([None, None, *carveouts_kib(spec), rng.randint(0, carveouts_kib(spec)[-1])])
        o = occupancy(spec, t, r, s, c)
        assert o.active_blocks_per_sm == reference_blocks(spec, t, r, s, c), (t, r, s, c)
        assert o.active_warps_per_sm == o.active_blocks_per_sm * math.ceil(t / 32)
        assert 0 <= o.occupancy <= 1


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("t, r, s, carveout, match", [
    (0, 32, 0, None, "threads per block"),
    (1025, 32, 0, None, "threads per block must be 1..1024"),
    (256, 256, 0, None, "registers per thread must be 0..255"),
    (256, -1, 0, None, "registers per thread"),
    (256, 32, -1, None, "shared memory per block"),
    (256, 32, 227 * KIB + 1, None, "227 KiB"),
    (256, 32, 0, 229, "carve-out must be 0..228"),
    (256, 32, 0, -8, "carve-out"),
    (256.0, 32, 0, None, "must be an integer"),
    (256, True, 0, None, "must be an integer"),
])
def test_bad_input_is_a_usage_error(t, r, s, carveout, match) -> None:
    with pytest.raises(UsageError, match=match):
        occupancy(resolve("h100-sxm"), t, r, s, carveout)


def test_a_readable_size_too_large_names_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30: `-S 1GB` said "cannot read '1GB' as a size", which it can; it is over the H100's shared memory
    per block, 227 KiB (its spec's shared_memory_per_block_max_kib; x 1024 = 232448 bytes)."""
    limit = "the limit of NVIDIA H100 SXM5 80GB: 227 KiB (232448 bytes)"
    code, _, err = run(capsys, "occupancy", "--gpu", "h100", "--threads-per-block", "256",
                       "--registers-per-thread", "64", "--shared-memory-per-block", "1GB")
    assert code == 2 and err == f"error: shared memory per block 1GB exceeds {limit}\n"
    with pytest.raises(UsageError, match=f"^shared memory per block 232449 bytes exceeds {re.escape(limit)}$"):
        occupancy(resolve("h100-sxm"), 256, 64, 227 * KIB + 1)


def test_an_amd_gpu_is_bad_input_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # the third new-user pass: exit 1 and "this is a AMD GPU"; a GPU the command cannot take is exit 2
    with pytest.raises(UsageError) as info:
        occupancy(resolve("mi300x"), 256, 64, 0)
    assert str(info.value) == ("AMD Instinct MI300X is an AMD GPU: occupancy is computed for NVIDIA GPUs only "
                               "(CUDA's occupancy rules)")
    code, _, err = run(capsys, "occupancy", "--gpu", "mi300x", "--threads-per-block", "256",
                       "--registers-per-thread", "64")
    assert code == 2 and err == f"error: {info.value}\n"


def test_spec_without_occupancy_fields() -> None:
    spec = resolve("h100-sxm")
    values = {k: v for k, v in spec.values.items() if k != "warp_allocation_granularity"}
    bare = dataclasses.replace(spec, values=values)
    with pytest.raises(RooflineError, match="lacks warp_allocation_granularity"):
        occupancy(bare, 256, 32, 0)


def test_v100_per_block_maximum_is_96k() -> None:
    assert occ("v100-sxm2", 128, 32, 96 * KIB).active_blocks_per_sm == 1  # 98304 / 98304, nothing reserved
    with pytest.raises(UsageError, match="96 KiB"):
        occ("v100-sxm2", 128, 32, 96 * KIB + 1)


# ---------------------------------------------------------------- parse_bytes
@pytest.mark.parametrize("text, expected", [
    ("49152", 49152), ("49152B", 49152), ("48KB", 49152), ("48kb", 49152), ("48K", 49152), ("48KiB", 49152),
    ("100KiB", 102400), (" 1.5 KB ", 1536), ("1MB", 1048576), ("1MiB", 1048576), ("0", 0), (7, 7),
])
def test_parse_bytes(text, expected) -> None:
    assert parse_bytes(text) == expected  # KB = KiB = 1024 bytes, as CUDA writes "48 KB"


@pytest.mark.parametrize("text", ["", "abc", "-1", "48GB", "0.3KB", "48 K B", True, -5])
def test_parse_bytes_rejects(text) -> None:
    with pytest.raises(UsageError):
        parse_bytes(text)


# ---------------------------------------------------------------- sweeps
def test_register_sweep_is_monotonic_and_has_the_calculator_steps() -> None:
    points = sweep(resolve("h100-sxm"), "registers", threads_per_block=256)
    assert [o.registers_per_thread for o in points] == list(range(1, 256))
    warps = [o.active_warps_per_sm for o in points]
    assert all(a >= b for a, b in itertools.pairwise(warps))
    # steps: 32 regs -> 64 warps, 40 -> 48, 48 -> 40, 64 -> 32, 80 -> 24, 128 -> 16, 255 -> 8 (T = 256)
    by_r = {o.registers_per_thread: o.active_warps_per_sm for o in points}
    assert [by_r[r] for r in (32, 33, 40, 48, 64, 65, 80, 128, 129, 255)] == [64, 48, 48, 40, 32, 24, 24, 16, 8, 8]


@pytest.mark.parametrize("gpu", ["v100-sxm2", "t4", "a100-sxm4-80gb", "rtx4090", "h200-sxm", "b200"])
def test_shared_memory_sweep_is_monotonic(gpu: str) -> None:
    points = sweep(resolve(gpu), "shared-memory", threads_per_block=128)
    blocks = [o.active_blocks_per_sm for o in points]
    assert all(a >= b for a, b in itertools.pairwise(blocks))
    assert blocks[-1] == 1  # the per-block maximum still fits once
    assert points[0].shared_memory_per_block_bytes == 0


def test_thread_sweep_values_and_custom_values() -> None:
    spec = resolve("a100-sxm4-80gb")
    assert sweep_values(spec, "threads") == list(range(32, 1025, 32))
    points = sweep(spec, "threads", registers_per_thread=64, values=[128, 256, 1024])
    assert [o.active_warps_per_sm for o in points] == [32, 32, 32]  # 64 registers: 32 warps whatever T
    with pytest.raises(UsageError, match="can sweep"):
        sweep(spec, "clock")


def test_render() -> None:
    from rich.console import Console

    con = Console(width=200, record=True)
    con.print(render_occupancy(occ("a100-sxm4-80gb", 256, 64)))
    text = con.export_text()
    assert "registers *" in text and "50.0%" in text and "floor(65536 / 2048) = 32" in text
    con.print(render_sweep(sweep(resolve("h100-sxm"), "registers", threads_per_block=256)))
    text = con.export_text()
    for row in ("1-24", "25-32", "33-40", "41-48", "49-64", "65-80", "81-128", "129-255"):
        assert row in text


def test_plot_sweep(tmp_path) -> None:
    points = sweep(resolve("h100-sxm"), "threads", registers_per_thread=64)
    path = plot_sweep(points, tmp_path / "occ.png", mark=occ("h100-sxm", 256, 64))
    assert path.stat().st_size > 1000
    with pytest.raises(UsageError, match="chart format"):
        plot_sweep(points, tmp_path / "occ.txt")


def test_to_dict_is_json_ready() -> None:
    import json

    d = occ("h200-sxm", 256, 64).to_dict()
    assert json.loads(json.dumps(d))["limiters"] == ["registers"]
    assert d["occupancy"] == 0.5 and d["working"]


# ---------------------------------------------------------------- scripts/occupancy_check.py, with a fake GPU
def _load_check_script():
    """The script as a module (registered in sys.modules: its dataclasses need it)."""
    import importlib.util
    import sys

    if "occupancy_check" in sys.modules:
        return sys.modules["occupancy_check"]
    path = ROOT / "scripts" / "occupancy_check.py"
    spec = importlib.util.spec_from_file_location("occupancy_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["occupancy_check"] = module
    spec.loader.exec_module(module)
    return module


class FakeBackend:
    """Kernels whose registers are their --maxrregcount (or NACC + 10); the 'driver' answers with the
    reference transcription above, optionally off by one for one case."""

    api = ""

    def __init__(self, check, wrong_case: str | None = None, props: dict | None = None) -> None:
        self.check, self.wrong_case, self.spec = check, wrong_case, resolve("h200-sxm")
        self.props = props if props is not None else {
            "regsPerMultiprocessor": 65536, "maxThreadsPerMultiProcessor": 2048, "sharedMemPerMultiprocessor": 233472,
            "sharedMemPerBlockOptin": 232448, "reservedSharedMemPerBlock": 1024, "multiProcessorCount": 132}

    def device(self):
        return {"name": "NVIDIA H200", "cc": "9.0", "sm_count": 132, "driver": 13000, "props": self.props}

    def compile(self, case):
        return case

    def attributes(self, case):
        regs = case.maxrreg if case.maxrreg is not None else min(255, case.nacc + 10)
        return self.check.KernelAttrs(regs, case.static_bytes, 1024)

    def configure(self, case, _case) -> None:
        pass

    def max_active_blocks(self, case, threads, dynamic_bytes):
        self.api = "fake"
        regs = self.attributes(case).num_regs
        carve = None if case.carveout_percent is None else carveout_kib_for_percent(self.spec, case.carveout_percent)
        n = reference_blocks(self.spec, threads, regs, case.static_bytes + dynamic_bytes, carve)
        return n + 1 if case.name == self.wrong_case else n


def test_check_script_cases_cover_the_limits() -> None:
    check = _load_check_script()
    assert len(check.CASES) >= 20
    assert len({c.name for c in check.CASES}) == len(check.CASES)
    assert any(c.launch_bounds for c in check.CASES) and any(c.carveout_percent is not None for c in check.CASES)
    assert {"--maxrregcount=64", "-DNACC=56"} <= set(check.Case("x", 256, nacc=56, maxrreg=64).options())


def test_check_script_all_match(capsys) -> None:
    check = _load_check_script()
    assert check.main([], backend=FakeBackend(check)) == 0
    out = capsys.readouterr().out
    assert "| 5 | cap 64 regs (the 50% case) | 256 | 64 | 0 | 0 | - | 4 | 4 | 32 | 50.0% | registers | match |" in out
    assert f"{len(check.CASES)} of {len(check.CASES)} cases match, 0 fail" in out
    assert "occupancy API: fake" in out


def test_check_script_mismatch_exits_1(capsys, tmp_path) -> None:
    check = _load_check_script()
    md = tmp_path / "occ.md"
    assert check.main(["--markdown", str(md)], backend=FakeBackend(check, wrong_case="dyn 48 KiB")) == 1
    assert "**MISMATCH**" in md.read_text() and "1 fail" in capsys.readouterr().out


def test_check_script_spec_disagreeing_with_device_exits_1(capsys) -> None:
    check = _load_check_script()
    props = {"regsPerMultiprocessor": 65536, "sharedMemPerMultiprocessor": 167936}  # an A100's 164 KiB
    assert check.main([], backend=FakeBackend(check, props=props)) == 1
    assert "shared_memory_per_sm_kib" in capsys.readouterr().out


def test_check_script_compare_rows() -> None:
    check = _load_check_script()
    spec = resolve("h200-sxm")
    case = check.Case("c", 1024, maxrreg=64)
    # the kernel only allows 512 threads: a fitting configuration above it is skipped, not failed
    row = check.compare(case, check.KernelAttrs(64, 0, 512), 1, spec)
    assert row.status.startswith("skip") and not row.failed
    # an API that refuses a launch the model also says cannot fit (0 blocks) is a match
    row = check.compare(check.Case("c", 1024, maxrreg=128), check.KernelAttrs(128, 0, 1024), None, spec, "refused")
    assert row.status == "match" and row.model_blocks == 0


def test_an_amd_spec_is_refused_in_one_line() -> None:
    with pytest.raises(RooflineError, match="NVIDIA GPUs") as info:
        occupancy(resolve("mi300x"), 256, 64, 0)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("args, says", [
    (["-T", "x"], "--threads-per-block must be a whole number of at least 1, got x"),  # was typer's "Input should be"
    (["-R", "-1"], "--registers-per-thread must be a whole number of at least 0, got -1"),
    (["--carveout", "x"], "--carveout must be a whole number of at least 0, got x"),
])
def test_a_bad_launch_number_is_worded_as_every_whole_number_option(capsys: pytest.CaptureFixture[str],
                                                                     args: list[str], says: str) -> None:
    code, out, err = run(capsys, "occupancy", "--gpu", "h100", *args)
    assert code == 2 and out == "" and err.strip().endswith(says) and len(err.strip().splitlines()) == 1
