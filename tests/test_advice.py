"""Each advice rule fires on the record it is for and stays quiet on the others.

Records are built as the CLI builds them (roofline.core.record.analytic_record against a spec's datasheet
ceilings); measured cases add a time with roofline.core.record.with_time. Byte counts in the comments use
n = elements x bytes per element.
"""

from __future__ import annotations

import dataclasses

import pytest

from roofline.analysis import advice
from roofline.analysis.advice import RULES, advise, gemm_tile, rebuild, rule, waves
from roofline.ceilings.specs import gpu_ceilings, resolve
from roofline.core.dtypes import get_dtype
from roofline.core.record import analytic_record, with_time
from roofline.ops import make

H200_BW = 4800e9  # bytes/s, h200-sxm memory_bandwidth_gbps


def rec(name: str, dtype: str = "bf16", gpu: str = "h200-sxm", tensor_cores: bool = True, **params):
    return analytic_record(make(name, **params), get_dtype(dtype), gpu_ceilings(resolve(gpu)), tensor_cores)


def timed(record, time_s: float):
    return with_time(record, time_s)


def rules_of(items) -> list[str]:
    items = items.items if isinstance(items, advice.Advised) else items
    return [i["rule"] for i in items]


def only(items, name):
    items = items.items if isinstance(items, advice.Advised) else items
    found = [i for i in items if i["rule"] == name]
    assert len(found) == 1, rules_of(items)
    return found[0]


# ---------------------------------------------------------------- registry
def test_registry_rejects_a_second_rule_of_a_name() -> None:
    assert {"fuse", "fuse-neighbour", "precision", "alignment", "wave-quantization", "latency",
            "below-roof"} <= set(RULES)
    with pytest.raises(RuntimeError, match="registered twice"):
        rule("latency", "again")(lambda record, spec: [])


def test_every_item_has_rule_and_message() -> None:
    for r in (rec("add_layernorm", variant="unfused"), rec("gemm", "fp32", m=2048), rec("rmsnorm", rows=64)):
        items = advise(r).items
        assert items, r.op  # each of these has advice (fuse, precision, fuse-neighbour): else nothing is checked
        for item in items:
            assert isinstance(item["rule"], str) and item["message"].endswith((".", ")"))


# ---------------------------------------------------------------- fuse: the fused variant
def test_add_layernorm_unfused_to_fused() -> None:
    r = rec("add_layernorm", variant="unfused")  # rows = cols = 4096 -> n = 4096 * 4096 * 2 B = 33554432
    a = only(advise(r), "fuse")
    # unfused: reads x, z (2n) + s back (n) + gamma, beta; writes s (n) and y (n) -> 5n + w
    # fused (write_sum): reads 2n + w, writes y and s (2n) -> 4n + w: saved n
    n = 4096 * 4096 * 2
    assert a["saved_bytes"] == n and a["to_variant"] == "fused"
    assert a["saved_time_s"] == pytest.approx(n / H200_BW)  # 33.55 MB / 4.8 TB/s = 6.99 µs
    assert "6.99 µs" in a["message"]


@pytest.mark.parametrize("name, params, n, saved_n", [
    ("swiglu", {"numel": 2**24}, 2**24 * 2, 2),  # the silu temporary written and read back: 2n
    ("chain", {"numel": 2**24, "length": 4}, 2**24 * 2, 6),  # 3 temporaries, each written and read: 6n
    ("rope", {"tokens": 4096, "heads": 32, "head_dim": 128}, 4096 * 32 * 128 * 2, 8),  # eager 10n vs fused 2n
    ("gemm", {"m": 4096, "epilogue": "gelu"}, 4096 * 4096 * 2, 2),  # C written, read back by the gelu: 2n
])
def test_unfused_variants(name, params, n, saved_n) -> None:
    a = only(advise(rec(name, variant="unfused", **params)), "fuse")
    assert a["saved_bytes"] == pytest.approx(saved_n * n)
    assert a["saved_time_s"] == pytest.approx(saved_n * n / H200_BW)


def test_gemm_epilogue_fires_although_compute_bound() -> None:
    r = rec("gemm", m=4096, epilogue="bias", variant="unfused")
    assert r.bound == "compute"
    assert "epilogue" in only(advise(r), "fuse")["message"]


def test_naive_attention_to_flash() -> None:
    r = rec("attention", variant="naive", seq=2048)
    a = only(advise(r), "fuse")
    # naive materialises S and P: 2 reads + 2 writes of batch x heads x seq^2 x 2 B = 4 x 32 x 2048^2 x 2
    assert a["to_variant"] == "flash"
    assert a["saved_bytes"] == 4 * 32 * 2048 * 2048 * 2
    assert a["fused_roofline_time_s"] < r.roofline_time_s


def test_fused_variants_are_quiet() -> None:
    for r in (rec("add_layernorm"), rec("swiglu"), rec("attention"), rec("gemm", epilogue="gelu")):
        assert "fuse" not in rules_of(advise(r))


# ---------------------------------------------------------------- fuse-neighbour
@pytest.mark.parametrize("norm", ["rmsnorm", "layernorm"])
def test_standalone_norm_suggests_fusing_the_residual_add(norm: str) -> None:
    r = rec(norm, rows=4096, cols=4096)
    a = only(advise(r), "fuse-neighbour")
    # add (3n) + norm (2n + w) as run; add_norm fused with write_sum: 4n + w -> saved n (the re-read of x + z)
    n = 4096 * 4096 * 2
    assert a["neighbour"] == f"add_{norm}" and a["saved_bytes"] == n
    assert a["saved_fraction"] == pytest.approx(n / a["bytes_before"])


def test_activation_suggests_gemm_epilogue() -> None:
    for act in ("relu", "gelu", "silu"):
        items = advise(rec(act, numel=2**24)).items
        epi = [i for i in items if i["rule"] == "fuse-neighbour" and i["neighbour"] == "gemm epilogue"]
        assert len(epi) == 1 and epi[0]["saved_bytes"] == 2 * 2**24 * 2  # its own read and write disappear
    silu = [i["neighbour"] for i in advise(rec("silu", numel=2**24)).items if i["rule"] == "fuse-neighbour"]
    assert silu == ["gemm epilogue", "swiglu"]


def test_add_suggests_add_norm() -> None:
    a = only(advise(rec("add", numel=2**24)), "fuse-neighbour")
    assert a["neighbour"] == "add_rmsnorm" and a["saved_bytes"] == 2**24 * 2  # the norm's re-read of x + z


def test_a_broadcast_multiply_or_add_is_not_offered_a_dense_neighbour() -> None:
    # silu(a) * b multiplies two tensors of one shape, and a residual add adds two: a row broadcast over the
    # rows (a norm's weight, a bias: bcast) is neither; the SwiGLU advice counted a dense mul's 3n bytes
    for name in ("mul", "add"):
        items = advise(rec(name, numel=2**24, run=4096, bcast=True)).items
        assert [i["neighbour"] for i in items if i["rule"] == "fuse-neighbour"] == []
    strided = [i["neighbour"] for i in advise(rec("mul", numel=2**24, run=64)).items if i["rule"] == "fuse-neighbour"]
    assert strided == ["swiglu"]  # a transposed view of the same shape can still be a gate's half


def test_neighbour_quiet_for_other_ops() -> None:
    for r in (rec("softmax"), rec("gemv"), rec("decode_attention")):
        assert "fuse-neighbour" not in rules_of(advise(r))


# ---------------------------------------------------------------- precision
def test_fp32_gemm_suggests_tf32_and_bf16() -> None:
    r = rec("gemm", "fp32", m=2048)  # compute-bound on the FP32 CUDA-core roof, 66.9 TFLOP/s on H200
    a = only(advise(r), "precision")
    gains = {o["dtype"]: o["gain"] for o in a["options"]}
    assert gains["tf32"] == pytest.approx(494.7 / 66.9)  # 7.4x
    assert gains["bf16"] == pytest.approx(989.4 / 66.9)  # 14.8x
    assert "allow_tf32" in a["message"]


def test_tensor_cores_off_suggests_them() -> None:
    a = only(advise(rec("gemm", "fp16", tensor_cores=False, m=2048)), "precision")
    assert a["options"][0]["gain"] == pytest.approx(989.4 / 133.8)


def test_precision_quiet() -> None:
    assert "precision" not in rules_of(advise(rec("gemm", "bf16", m=4096)))  # already on tensor cores
    assert "precision" not in rules_of(advise(rec("gemm", "fp32", m=2048, gpu="t4")))  # T4: no TF32/BF16
    assert "precision" not in rules_of(advise(rec("softmax", "fp32")))  # memory-bound, not a matmul


# ---------------------------------------------------------------- alignment
@pytest.mark.parametrize("dtype, dims, multiple, bad", [
    ("fp16", {"m": 4096, "n": 4096, "k": 4095}, 8, {"k": 4095}),
    ("bf16", {"m": 4100, "n": 4096, "k": 4096}, 8, {"m": 4100}),
    ("fp8", {"m": 4096, "n": 4104, "k": 4096}, 16, {"n": 4104}),  # 4104 = 8 x 513: fine for fp16, not fp8
    ("tf32", {"m": 4096, "n": 4096, "k": 4094}, 4, {"k": 4094}),
])
def test_alignment_names_the_dimension(dtype, dims, multiple, bad) -> None:
    a = only(advise(rec("gemm", dtype, **dims)), "alignment")
    assert a["multiple"] == multiple and a["misaligned"] == bad
    assert f"pad to {next(iter(bad.values())) // multiple * multiple + multiple}" in a["message"]


def test_alignment_quiet_when_aligned_or_not_compute_bound() -> None:
    assert "alignment" not in rules_of(advise(rec("gemm", "fp16", m=4096, n=4104, k=4096)))  # 8 | 4104
    assert "alignment" not in rules_of(advise(rec("gemv", "fp16", n=8191)))  # memory-bound


def test_alignment_attention_head_dim() -> None:
    a = only(advise(rec("attention", head_dim=100, seq=8192)), "alignment")
    assert a["misaligned"] == {"head_dim": 100}


# ---------------------------------------------------------------- wave quantization
def test_waves_arithmetic() -> None:
    # 1536 x 1536 in 128 x 128 on 108 SMs: 12 x 12 = 144 tiles = 1.33 waves; last wave 36 tiles, 72 SMs idle
    w = waves(1536, 1536, 1, (128, 128), 108)
    assert (w["tiles"], w["last_wave_tiles"]) == (144, 36)
    assert w["waves"] == pytest.approx(144 / 108) and w["last_wave_idle"] == pytest.approx(72 / 108)
    assert w["idle_fraction"] == pytest.approx(1 - 144 / 216)


def test_wave_quantization_a100() -> None:
    a = only(advise(rec("gemm", m=1536, gpu="a100-sxm4-80gb")), "wave-quantization")
    assert a["tile"] == [128, 128] and a["tiles"] == 144 and a["sm_count"] == 108
    assert "1.33 waves" in a["message"]


def test_wave_quantization_hopper_tile() -> None:
    spec = resolve("h200-sxm")
    assert gemm_tile(spec, "bf16") == (128, 256) and gemm_tile(spec, "fp32") == (128, 128)
    a = only(advise(rec("gemm", m=1536)), "wave-quantization")
    # 12 x 6 = 72 tiles of 128 x 256 on 132 SMs: 0.55 waves, 60 SMs idle; 128 x 128 given too
    assert a["tiles"] == 72 and "with 128x128 tiles: 144 tiles" in a["message"]


def test_wave_quantization_quiet_for_full_waves() -> None:
    # 4096^2 bf16 on H200: 32 x 16 = 512 tiles = 3.88 waves, 3% idle
    assert "wave-quantization" not in rules_of(advise(rec("gemm", m=4096)))
    # 1024 x 3456 in 128 x 128 tiles on A100: 8 x 27 = 216 tiles = exactly 2 waves of 108 SMs
    assert "wave-quantization" not in rules_of(advise(rec("gemm", m=1024, n=3456, k=4096, gpu="a100-sxm4-80gb")))


def test_wave_quantization_conv() -> None:
    r = rec("conv2d", "fp16", batch=8, in_channels=256, out_channels=256, height=14, width=14)
    a = only(advise(r), "wave-quantization")
    # implicit GEMM: M = 8 x 14 x 14 = 1568, N = 256: ceil(1568/128) x ceil(256/256) = 13 tiles on 132 SMs
    assert a["tiles"] == 13


# ---------------------------------------------------------------- latency
def test_latency_from_roofline_time() -> None:
    r = rec("rmsnorm", rows=64, cols=4096)  # 64 x 4096 x 2 B x 2 + 8 kB = 1.06 MB / 4.8 TB/s = 0.22 µs < 5 µs
    a = only(advise(r), "latency")
    assert a["time_kind"] == "roofline" and a["threshold_s"] == advice.LAUNCH_OVERHEAD_S
    assert advise(r).bound_class == "latency" and r.bound == "memory"  # bound left alone
    assert advice.with_advice(r).bound_class == "latency" and r.bound_class is None  # a new record


def test_latency_from_measured_time() -> None:
    r = timed(rec("rmsnorm", rows=4096, cols=4096), 8e-6)  # roofline 14 µs, but measured 8 µs < 10 µs
    assert only(advise(r), "latency")["time_kind"] == "measured"
    r = timed(rec("rmsnorm", rows=64, cols=4096), 20e-6)  # roofline 0.22 µs but measured 20 µs: not latency
    assert "latency" not in rules_of(advise(r))
    assert advise(r).bound_class == "memory"


def test_latency_quiet_for_long_kernels_and_cpu() -> None:
    r = rec("gemm", m=4096)
    assert "latency" not in rules_of(advise(r)) and advise(r).bound_class == "compute"
    cpu = dataclasses.replace(rec("rmsnorm", rows=64), device_kind="cpu")
    assert "latency" not in rules_of(advise(cpu, None))


# ---------------------------------------------------------------- below the roof, nothing else to say
def test_below_roof_memory() -> None:
    r = rec("softmax")  # roofline 14 µs (2 x 4096^2 x 2 B / 4.8 TB/s), measured at 30% of it
    r = timed(r, r.roofline_time_s / 0.3)
    a = only(advise(r), "below-roof")
    assert a["roofline_fraction"] == pytest.approx(0.3, rel=1e-3)
    assert "--section SpeedOfLight --section MemoryWorkloadAnalysis" in a["message"]


def test_below_roof_compute() -> None:
    r = timed(rec("gemm", m=4096), 139e-6 / 0.4)
    assert "--section ComputeWorkloadAnalysis" in only(advise(r), "below-roof")["message"]


def test_below_roof_quiet_when_another_rule_fires_or_near_the_roof() -> None:
    r = timed(rec("add_layernorm", variant="unfused"), 35e-6 / 0.3)
    assert rules_of(advise(r)) == ["fuse"]
    assert "below-roof" not in rules_of(advise(timed(rec("softmax"), 14e-6 / 0.8)))
    assert advise(rec("softmax")).items == []  # analytic: nothing measured, nothing to say


# ---------------------------------------------------------------- helpers
def test_rebuild_round_trips_variants() -> None:
    for r in (rec("gemm", m=512, epilogue="silu", variant="unfused"), rec("conv2d", "fp16", algo="winograd4"),
              rec("attention", variant="naive", causal=True), rec("add_rmsnorm", write_sum=False)):
        op = rebuild(r)
        assert op is not None and op.variant_name() == r.variant and op.params() == r.params
    assert rebuild(dataclasses.replace(rec("gemm"), op="custom", params={})) is None


def test_custom_record_gets_only_generic_rules() -> None:
    def custom():
        return dataclasses.replace(rec("gemm", m=4096), op="custom", params={}, variant=None)

    assert rules_of(advise(custom())) == []  # no operator to rebuild: no fusion, precision, waves
    assert rules_of(advise(timed(custom(), 1e-3))) == ["below-roof"]  # 139 µs roofline, 1 ms measured: 14%


def test_extra_pass_rule_names_the_pass_and_silences_the_fallback() -> None:
    spec = resolve("h200")
    op = make("decode_attention", batch=16, heads=32, kv_heads=8, context=8192, head_dim=128, kv_dtype="fp8")
    plain = with_time(analytic_record(op, get_dtype("bf16"), gpu_ceilings(spec)), 927e-6)  # 6% of roof (H200)
    extra = dataclasses.replace(plain, extra_passes=["fp8 cache converted to bf16 by .to() (a separate pass)"])
    rules = rules_of(advise(extra, spec))
    assert "extra-pass" in rules and "below-roof" not in rules
    assert "below-roof" in rules_of(advise(plain, spec))
