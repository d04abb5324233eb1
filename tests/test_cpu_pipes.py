"""Honest CPU roofs: each operator family placed on the rate of the pipe its CPU kernels really use
(core/cpu_pipes.py), cache-resident working sets on the measured cache roofs (core.model.choose_memory), and a
record above its roof named as a bug in the roof or the model, in the verdict, the notes and the table.
Hand-made ceilings: the 2-core CI machine's figures, rounded (fp32 40 GFLOP/s, bf16 matmul 1.3 GFLOP/s,
DRAM copy 11 GB/s, L2 45 GB/s, L3 90 GB/s; 512 KiB L2, 32 MiB L3)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from helpers import rendered

from roofline.ceilings import store
from roofline.core.cpu_pipes import CPU_ARITHMETIC, cpu_rate_key
from roofline.core.dtypes import get_dtype
from roofline.core.format import table_scale
from roofline.core.model import Ceilings, choose_memory
from roofline.core.record import analytic_record, with_time
from roofline.measuring.calibrate import cache_fills, held_size, measure_cpu
from roofline.measuring.device import cpu_caches, parse_cache_size
from roofline.measuring.runner import above_roof_cause, above_roof_notes, verdict
from roofline.ops import make
from roofline.report.text import ABOVE_MARK, records_table

KIB, MIB = 2**10, 2**20


def cpu(**memory: float) -> Ceilings:
    return Ceilings(device_id="cpu", device_name="test CPU", kind="cpu", source="measured",
                    compute={"cpu_fp32": 40e9, "cpu_fp64": 10e9, "cpu_bf16": 1.3e9, "cpu_fp16": 1.3e9},
                    memory={"dram": 11e9, **memory}, cache_bytes={"l2": 512 * KIB, "l3": 32 * MIB})


# -- which rate: the registry -------------------------------------------------------------------------------

def test_each_family_in_bf16_gets_the_rate_its_cpu_kernels_compute_at() -> None:
    rates = cpu().compute
    assert cpu_rate_key(rates, "bf16", "gemm", True) == ("cpu_bf16", None)  # torch.mm bf16: the measured rate
    key, why = cpu_rate_key(rates, "bf16", "attention", True)  # SDPA converts blocks to fp32: 40 > 1.3 GFLOP/s
    assert key == "cpu_fp32" and why is not None and "SDPA" in why
    for family in ("elementwise", "norm", "softmax", "rope"):
        assert cpu_rate_key(rates, "bf16", family, False)[0] == "cpu_fp32"
    assert cpu_rate_key(rates, "fp32", "attention", True) == ("cpu_fp32", None)
    # a CPU with bf16 units (AMX: bf16 matmuls far above fp32): attention's roof is the faster, bf16
    amx = {**rates, "cpu_bf16": 400e9}
    assert cpu_rate_key(amx, "bf16", "attention", True) == ("cpu_bf16", None)
    # no family (a user's measure()): a matmul-like kernel on its own dtype's rate, another on fp32's
    assert cpu_rate_key(rates, "bf16", None, True)[0] == "cpu_bf16"
    assert cpu_rate_key(rates, "bf16", None, False)[0] == "cpu_fp32"
    assert all(entry.why for entry in CPU_ARITHMETIC.values())


def test_bf16_attention_on_the_cpu_is_placed_on_the_fp32_rate() -> None:
    # the case: the bf16 matmul roof (1.3 GFLOP/s) put CPU attention at 2620% of its roofline
    att = make("attention", heads=4, seq=512, head_dim=64)
    rec = analytic_record(att, get_dtype("bf16"), cpu())
    assert rec.compute_pipe == "cpu_fp32" and rec.peak_flops_per_s == 40e9
    assert rec.compute_pipe_label == "CPU FP32 matmul"
    assert any("placed on the fp32 rate, not the bf16 matmul rate" in n for n in rec.notes)
    gemm = analytic_record(make("gemm", m=512), get_dtype("bf16"), cpu())
    assert gemm.compute_pipe == "cpu_bf16" and gemm.peak_flops_per_s == 1.3e9 and gemm.notes == []


# -- which memory level ------------------------------------------------------------------------------------

def test_a_working_set_in_a_cache_is_placed_on_that_caches_roof() -> None:
    c = cpu(l2=45e9, l3=90e9)
    assert choose_memory(c, 8 * MIB).level == "l3" and choose_memory(c, 8 * MIB).bytes_per_s == 90e9
    # 256 KiB fits in both: the faster (the threads' L3 copy beat one core's L2 copy on the CI machine)
    assert choose_memory(c, 256 * KIB).level == "l3"
    assert choose_memory(c, 64 * MIB).level == "dram"
    assert choose_memory(cpu(), 8 * MIB).level == "dram"  # a calibration without cache figures
    assert choose_memory(dataclasses.replace(c, kind="gpu"), 8 * MIB).level == "dram"
    # relu of 2^20 fp32: 4 MiB read + 4 MiB written = 8 MiB, in the 32 MiB L3 -> 8 MiB / 90 GB/s = 93.2 us
    rec = analytic_record(make("relu", numel=2**20), get_dtype("fp32"), c)
    assert rec.memory_level == "l3" and rec.peak_bytes_per_s == 90e9
    assert rec.roofline_time_s == pytest.approx(8 * MIB / 90e9)
    assert any("fits in the CPU's L3 (32 MiB)" in n for n in rec.notes)
    big = analytic_record(make("relu", numel=2**24), get_dtype("fp32"), c)  # 128 MiB: DRAM
    assert big.memory_level is None and big.peak_bytes_per_s == 11e9


def test_the_store_keeps_the_cache_sizes() -> None:
    c = cpu(l2=45e9, l3=90e9)
    store.save({"kind": "cpu", "name": "cache test", "cores": "2", "torch": "x"}, c, {})
    found = store.lookup({"kind": "cpu", "name": "cache test", "cores": "2", "torch": "x"})
    assert found is not None and found[0].cache_bytes == {"l2": 512 * KIB, "l3": 32 * MIB}
    assert found[0].memory["l3"] == 90e9


def test_cache_sizes_from_sysfs(tmp_path: Path) -> None:
    assert parse_cache_size("32K\n") == 32 * KIB and parse_cache_size("32768K") == 32 * MIB
    assert parse_cache_size("1M") == MIB
    for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"),
                                             (3, "Unified", "32768K")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert cpu_caches(str(tmp_path)) == {"l1": 32 * KIB, "l2": 512 * KIB, "l3": 32 * MIB}
    assert cpu_caches(str(tmp_path / "absent")) == {}


def test_the_calibration_measures_a_cache_level() -> None:
    from roofline.measuring.calibrate import CpuPlan

    tiny = CpuPlan(matmul_n={"fp32": (32,), "fp64": (32,), "bf16": (32,)}, bandwidth_bytes=2**20, reps=1,
                   bf16_reps=1, rounds=2)
    ceilings, details = measure_cpu(plan=tiny, cache_bytes={"l2": 256 * KIB})
    assert ceilings.cache_bytes == {"l2": 256 * KIB} and ceilings.memory["l2"] > 1e6  # any CPU: > 1 MB/s
    # half the cache as two fp32 buffers: 128 KiB moved per copy
    assert details["caches"]["l2"]["copied_bytes"] == 128 * KIB
    assert "L2 roofs" in ceilings.notes[0]


def test_the_l3_is_copied_at_several_fills_and_placed_as_far_as_its_rate_held() -> None:
    # the third new-user pass: a 2-CPU cloud VM whose sysfs gives its host's 260 MiB L3 (2 MiB L2) copied half
    # of it, 130 MiB, at 22.7 GB/s (DRAM's 24.6), and 8.1 and 32.5 MiB at 52.0 and 50.5 GB/s: its L3 roof was
    # the DRAM rate, and an 8 MiB relu ran at 175% of it, "above its roof: the model is wrong"
    caches = {"l1": 48 * KIB, "l2": 2 * MIB, "l3": 260 * MIB}
    assert cache_fills(caches, "l3") == [130 * MIB, 130 * MIB // 4, 130 * MIB // 16]  # down to 4 x L2 = 8 MiB
    assert cache_fills(caches, "l2") == [1 * MIB]  # no measured level below it: the one fill, as before
    vm = {130 * MIB: 22.7e9, 130 * MIB // 4: 50.5e9, 130 * MIB // 16: 52.0e9}
    assert held_size(260 * MIB, vm) == 65 * MIB  # 32.5 MiB held 97% of the best (>= 80%), over the fill of 0.5
    vm_ceilings = dataclasses.replace(cpu(l3=52.0e9), cache_bytes={"l2": 2 * MIB, "l3": held_size(260 * MIB, vm)})
    relu = analytic_record(make("relu", numel=2**20), get_dtype("fp32"), vm_ceilings)  # 8 MiB moved
    assert relu.memory_level == "l3" and relu.peak_bytes_per_s == 52.0e9
    big = analytic_record(make("relu", numel=2**23), get_dtype("fp32"), vm_ceilings)  # 64 MiB: fits, as measured
    huge = analytic_record(make("relu", numel=2**24), get_dtype("fp32"), vm_ceilings)  # 128 MiB: DRAM's, as it ran
    assert big.memory_level == "l3" and huge.memory_level is None and huge.peak_bytes_per_s == 11e9
    # a machine whose largest fill holds keeps the cache's whole size (the CI machine: 32 MiB, 90 GB/s)
    assert held_size(32 * MIB, {16 * MIB: 88e9, 4 * MIB: 90e9}) == 32 * MIB



def test_the_placement_note_says_the_part_of_the_l3_that_held() -> None:
    # issue 30: that VM's note read "fits in the CPU's L3 (65 MiB)" while lscpu says 260 MiB; the note names
    # both: 65 MiB = held_size(260 MiB, ...) above, 260 MiB sysfs's size. 2^20 fp32 relu: 4 + 4 = 8 MiB moved
    vm = dataclasses.replace(cpu(l3=52.0e9), cache_bytes={"l2": 2 * MIB, "l3": 65 * MIB},
                             cache_whole_bytes={"l3": 260 * MIB})
    relu = analytic_record(make("relu", numel=2**20), get_dtype("fp32"), vm)
    note = "working set 8 MiB fits in the 65 MiB of the CPU's L3 (of 260) that held its copy rate: on the L3 roof"
    assert note in relu.notes
    key = {"kind": "cpu", "name": "vm test", "cores": "2", "torch": "x"}
    store.save(key, vm, {})
    found = store.lookup(key)
    assert found is not None and found[0].cache_whole_bytes == {"l3": 260 * MIB}


# -- above the roof ----------------------------------------------------------------------------------------

def test_a_record_above_its_roof_names_the_roof_or_the_model() -> None:
    relu = analytic_record(make("relu", numel=2**20), get_dtype("fp32"), cpu())  # on DRAM: 8 MiB / 11 GB/s
    fast = with_time(relu, relu.roofline_time_s / 5.23)  # the relu at 523% of the roof
    culprit, why = above_roof_cause(fast, "measured") or ("", "")
    assert culprit == "roof" and "served from the caches" in why
    on_l3 = with_time(analytic_record(make("relu", numel=2**20), get_dtype("fp32"), cpu(l3=90e9)), 1e-6)
    assert (above_roof_cause(on_l3, "measured") or ("",))[0] == "model"
    gemm = analytic_record(make("gemm", m=512), get_dtype("bf16"), cpu())
    gemm = with_time(gemm, gemm.roofline_time_s / 1.61)  # the bf16 512^3 at 161%
    assert (above_roof_cause(gemm, "measured") or ("",))[0] == "roof"
    assert (above_roof_cause(gemm, "measured", roof_held=True) or ("",))[0] == "model"
    assert above_roof_cause(with_time(gemm, gemm.roofline_time_s / 1.04), "measured") is None  # inside noise
    (note,) = above_roof_notes(gemm, "measured")
    assert note.startswith("161% of the roofline, above its roof: the roof is wrong")
    v = verdict("compute", 1.61, "roof")
    assert v.startswith("above its roof (161% of the roofline): the roof is wrong") and "compute-bound" not in v
    assert verdict("compute", 0.98, None) == "compute-bound, 98% of the roofline"


def test_a_small_fraction_of_the_roofline_is_not_shown_as_zero() -> None:
    # issue 30: a gemv on a busy CPU at 0.12% of its roofline read '0% of the roofline'; the profile tables'
    # percent(x, 0, nonzero=True) reads it '<1%'
    assert verdict("compute", 0.0012) == "compute-bound, <1% of the roofline"
    assert verdict("memory", 0.0) == "memory-bound, 0% of the roofline"


def test_the_table_flags_a_record_above_its_roof_and_a_cache_roof() -> None:
    c = cpu(l3=90e9)
    above = with_time(analytic_record(make("relu", numel=2**24), get_dtype("fp32"), c), 1e-3)  # 128 MiB in 1 ms
    cached = with_time(analytic_record(make("relu", numel=2**20), get_dtype("fp32"), c), 1e-3)
    text = rendered(records_table([above, cached], "t"), 80)
    frac = above.roofline_fraction or 0
    assert f"{frac:.0%}{ABOVE_MARK}" in text and "above its roof" in text
    assert "memory (L3)" in text
    # CPU rates in GFLOP/s and GB/s, not 0.000486 TFLOP/s
    assert "TFLOP/s" not in rendered(records_table([above, cached], "t", wide=True), 200)


def test_a_column_of_rates_reads_in_one_prefix() -> None:
    assert table_scale([1.86e10, 4.9e8, None], "FLOP/s") == (1e9, "GFLOP/s")
    assert table_scale([9.9e14], "FLOP/s") == (1e12, "TFLOP/s")
    assert table_scale([], "B/s") == (1.0, "B/s")


def test_measure_takes_the_family_whose_cpu_rate_is_the_roof() -> None:
    """A user's bf16 SDPA through measure() sat under the bf16 matmul rate and read 459% of it ('the model is
    wrong'): family='attention' places it on the fp32 rate; without it the verdict blames the roof and says
    so; an unknown family is one UsageError."""
    import torch

    from roofline.core.errors import UsageError
    from roofline.measuring.runner import measure_on
    from roofline.measuring.target import resolve_target

    target = resolve_target()  # the CPU, on the roof conftest seeds (fp32 1e11, bf16 2e10)
    q = torch.randn(1, 2, 64, 32, dtype=torch.bfloat16)

    def sdpa() -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, q, q)

    rec = measure_on(target, sdpa, flops=4 * 2 * 64 * 64 * 32, bytes=4 * q.nbytes, family="attention")
    assert rec.compute_pipe == "cpu_fp32" and rec.peak_flops_per_s == target.ceilings.compute["cpu_fp32"]
    with pytest.raises(UsageError, match="family must be one of gemm, conv, attention"):
        measure_on(target, sdpa, flops=1.0, bytes=1.0, family="sdpa")
    # the cause, by hand: a bf16 kernel at 5x its 2e10 matmul roof, under the 1e11 fp32 rate
    gemm = analytic_record(make("gemm", m=512), get_dtype("bf16"), cpu())  # bf16 matmul roof 1.3e9
    fast = with_time(gemm, gemm.roofline_time_s / 5)  # 6.5 GFLOP/s: above 1.3, under fp32's 40
    culprit, why = above_roof_cause(fast, "measured", roof_held=True, fp32_rate=40e9) or ("", "")
    assert culprit == "roof" and "family='attention'" in why
