"""Advice: what to try next for one result record, from a registry of small pure rules.

Each rule is a function of (record, spec) that returns a list of advice items, each
{"rule": name, "message": one or two sentences a person acts on, plus the numbers behind it}. Thresholds are
named constants with the reason for their value. `advise` runs every rule in registration order; the
fallback rules (the plain "measured far below its roof") run only when no other rule said anything.

NB: the rules read only the record (and the GPU's spec): they know the operator's shape, not the program
around it, so a neighbour-fusion suggestion ("a standalone RMSNorm usually follows a residual add") is a
guess about the model, said as one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline.ceilings.specs import GPUSpec, as_spec, resolve
from roofline.core.counters import excess_basis, moved_bytes
from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import RooflineError
from roofline.core.format import duration, joules, percent, si
from roofline.core.record import BUSY_NOTE, Record
from roofline.core.registry import add_once
from roofline.ops.base import Operator, Traffic, get_operator, make

Advice = dict[str, Any]
RuleFn = Callable[[Record, "GPUSpec | None"], list[Advice]]

# -- thresholds (each with its reason)
# A fusion saving under 1% of the operator's bytes is inside the run-to-run spread of a bandwidth-bound kernel
# (the timing module flags an IQR above a few percent as noisy): not worth a message.
MIN_SAVED_FRACTION = 0.01
# A kernel launch costs ~2-5 µs of host and driver time (PyTorch eager dispatch + cudaLaunchKernel on a
# modern CPU) and a few µs of GPU ramp-up; an operator whose roofline time is below 5 µs is limited by that,
# not by its bytes or FLOPs, when launched one at a time.
LAUNCH_OVERHEAD_S = 5e-6
# A measured median below ~10 µs is dominated by the fixed costs of one launch (grid ramp-up, the tail wave,
# prologue/epilogue) whatever its roofline time: NVIDIA's CUDA graphs material and PyTorch's
# 'reduce-overhead' target exactly this range.
MEASURED_LATENCY_S = 10e-6
# Where the launch gap was measured (timing.launch_gap_s, short operators): launched eagerly back to back, an
# operator whose GPU sits idle this share of each call or more is paced by its launches. A fifth: below it a
# CUDA graph saves less than the run-to-run spread of a small model step.
LAUNCH_BOUND_IDLE = 0.2
# Measured below half of its roof, with no specific rule to explain it, a kernel is worth profiling: 50-80%
# is the usual range of good library kernels (cuBLAS GEMMs, copy kernels), below 50% something specific is off.
BELOW_ROOF_FRACTION = 0.5
# Over 10% of the SM-time of a GEMM lost to a partial last wave is larger than the differences between
# library kernels a user would otherwise chase; under that, wave quantization is not the problem.
WAVE_IDLE_MAX = 0.10
# A precision change is suggested only when it raises the compute roof by at least this factor: a smaller
# gain does not pay for the accuracy review a precision change needs.
PRECISION_MIN_GAIN = 1.25
# Tensor-core kernels (cuBLAS, cuDNN, CUTLASS) need 16-byte aligned rows: dimensions that are multiples of
# 16 bytes = 8 fp16/bf16, 16 fp8/int8, 4 tf32 elements (cuBLAS docs, 'Tensor Core Usage'; NVIDIA Deep Learning
# Performance guide, 'Tensor Core Requirements'); otherwise they fall back to slower kernels or pad.
TENSOR_CORE_ALIGN_BYTES = 16
# The CTA tile a GEMM is assumed to use for wave quantization: 128x128 is cuBLAS/CUTLASS's common tile for
# fp16/bf16 (and the FP32/TF32 SIMT and tensor kernels); on Hopper and Blackwell (cc >= 9.0) the
# warp-specialized 16/8-bit kernels commonly use 128x256.
GEMM_TILE = (128, 128)
GEMM_TILE_HOPPER = (128, 256)
HOPPER_TILE_DTYPES = ("fp16", "bf16", "fp8", "int8")
# Counter DRAM bytes within 20% of the model's minimum are what the model leaves out on purpose (32-byte
# sectors, ECC, small operands such as scales and indices, the L2 not holding every reused byte): beyond that
# the kernel moves data it need not (a second pass, an intermediate round trip).
EXCESS_TRAFFIC_MIN = 1.2
# A coalesced memory-bound kernel moves about its DRAM bytes through L1 (each byte once); four times as many
# means most of each 32-byte sector fetched is thrown away: strided or uncoalesced access.
L1_OVER_DRAM_UNCOALESCED = 4.0
# Counter FLOPs more than 10% above the model's: larger than a large GEMM's tile rounding (a 4096-wide GEMM
# padded to 128-wide tiles loses nothing; a 4000-wide one 2.4%), so the kernel computes work the operator does
# not need (padding to a tile or block, recomputation).
FLOPS_RATIO_MAX = 1.10


@dataclass(frozen=True)
class Rule:
    name: str
    summary: str
    fn: RuleFn
    fallback: bool = False


RULES: dict[str, Rule] = {}


def rule(name: str, summary: str, fallback: bool = False) -> Callable[[RuleFn], RuleFn]:
    """Register an advice rule; registering a name twice is a bug."""

    def wrap(fn: RuleFn) -> RuleFn:
        add_once(RULES, name, Rule(name, summary, fn, fallback), "advice rule")
        return fn

    return wrap


@dataclass(frozen=True)
class Advised:
    """What the rules derive for one record: the advice items and the bound class ("latency" when the latency
    rule fired, else the record's roofline bound, which stays as it is: other tools read it; None where the record
    has no bound, a profile record without a formula)."""

    items: list[Advice]
    bound_class: str | None


def advise(record: Record, spec: GPUSpec | str | None = None) -> Advised:
    """Every rule's advice for one record (fallback rules only when nothing else fired). `spec` is a GPUSpec
    or a spec id, alias or NVML name (`advise(rec, "h100")`, as `occupancy` takes); it defaults to the
    record's GPU spec when that resolves. An unknown name is a UsageError naming the closest ids."""
    if not isinstance(record, Record):
        from roofline.core.errors import UsageError
        from roofline.core.validate import a_noun

        raise UsageError(f"advise: record must be a roofline.Record (from measure, analyze or a results document), "
                         f"got {a_noun(type(record).__name__)}")
    spec = spec_for(record) if spec is None else as_spec(spec)
    items: list[Advice] = []
    for r in RULES.values():
        if not r.fallback:
            items += r.fn(record, spec)
    if not items:
        for r in RULES.values():
            if r.fallback:
                items += r.fn(record, spec)
    return Advised(items, "latency" if any(i["rule"] == "latency" for i in items) else record.bound)


def with_advice(record: Record, spec: GPUSpec | str | None = None) -> Record:
    """The record with its advice and bound class filled in."""
    a = advise(record, spec)
    return dataclasses.replace(record, advice=a.items, bound_class=a.bound_class)


# ---------------------------------------------------------------- helpers
def spec_for(record: Record) -> GPUSpec | None:
    """The spec of the record's GPU, or None (a CPU record, or a GPU without a spec file)."""
    if not _on_gpu(record):
        return None
    try:
        return resolve(record.gpu)
    except RooflineError:
        return None


def _on_gpu(record: Record) -> bool:
    return (record.device_kind or "gpu") == "gpu"


def _dtype(record: Record) -> DType | None:
    try:
        return get_dtype(str(record.dtype))
    except RooflineError:
        return None


def rebuild(record: Record) -> Operator | None:
    """The operator a record describes (its params plus its variant), or None for a custom kernel."""
    try:
        cls = get_operator(str(record.op))
    except RooflineError:
        return None
    names = {f.name for f in dataclasses.fields(cls)}
    params = {k: v for k, v in (record.params or {}).items() if k in names}
    variant = record.variant
    if variant is not None:
        if "variant" in names:
            params["variant"] = variant
        elif "algo" in names:  # conv2d records its algorithm as the variant
            params["algo"] = variant
    try:
        return make(cls.name, **params)
    except RooflineError:
        return None


def _saving(record: Record, before: Traffic, after: Traffic) -> dict[str, float]:
    """Bytes saved and the time they take at the record's memory roof."""
    saved = before.total - after.total
    return {"bytes_before": before.total, "bytes_after": after.total, "saved_bytes": saved,
            "saved_fraction": saved / before.total if before.total else 0.0,
            "saved_time_s": saved / record.peak_bytes_per_s}


def _bw(record: Record) -> str:
    return si(record.peak_bytes_per_s, "B/s")


# ---------------------------------------------------------------- memory: fusion
FUSED_VARIANT = {"unfused": "fused", "naive": "flash"}
HOW_TO_FUSE = {
    "swiglu": "one kernel computing silu(a) * b (torch.compile, Liger's or Transformer Engine's fused SwiGLU)",
    "chain": "one pass over the tensor (torch.compile or a Triton kernel)",
    "rope": "a fused rotary kernel (flash-attn's apply_rotary_emb, vLLM's rotary_embedding, torch.compile)",
    "gemm": "the GEMM's epilogue (cuBLASLt BIAS/GELU epilogues, a CUTLASS epilogue, torch.compile)",
    "add_layernorm": "one kernel (Transformer Engine / apex fused add + LayerNorm, torch.compile)",
    "add_rmsnorm": "one kernel (vLLM's fused_add_rms_norm, Liger, torch.compile)",
    "attention": "FlashAttention (torch.nn.functional.scaled_dot_product_attention selects it)",
}


@rule("fuse", "an unfused or naive variant: the bytes and time the fused variant saves")
def fuse_variant(record: Record, spec: GPUSpec | None) -> list[Advice]:
    """NB: fires whatever the record's bound: the unfused form's extra passes are memory-bound kernels of
    their own even when the main kernel (a GEMM) is compute-bound."""
    variant, dt, op = record.variant, _dtype(record), rebuild(record)
    if variant not in FUSED_VARIANT or dt is None or op is None:
        return []
    to = FUSED_VARIANT[variant]
    fused = dataclasses.replace(op, variant=to)  # type: ignore[call-arg]
    s = _saving(record, op.traffic(dt), fused.traffic(dt))
    if s["saved_fraction"] < MIN_SAVED_FRACTION:
        return []
    fused_time = max(fused.flops() / record.peak_flops_per_s, s["bytes_after"] / record.peak_bytes_per_s)
    how = HOW_TO_FUSE.get(op.name, "one kernel")
    return [{"rule": "fuse", "message": (
        f"{op.name} {variant} moves {si(s['bytes_before'], 'B')}; --variant {to} moves {si(s['bytes_after'], 'B')}: "
        f"{si(s['saved_bytes'], 'B')} less ({s['saved_fraction']:.0%}), {duration(s['saved_time_s'])} saved at "
        f"{_bw(record)}. Use {how}."),
        "op": op.name, "from_variant": variant, "to_variant": to, **s, "fused_roofline_time_s": fused_time}]


def _neighbours(op: Operator, record: Record) -> list[tuple[str, str, Traffic, Traffic]]:
    """(neighbour, what is assumed, traffic of the two kernels as run, traffic of the fused kernel)."""
    dt = _dtype(record)
    assert dt is not None
    mine = op.traffic(dt)
    name = op.name
    out: list[tuple[str, str, Traffic, Traffic]] = []
    if name in ("rmsnorm", "layernorm"):
        rows, cols = op.rows, op.cols  # type: ignore[attr-defined]
        pair = make("add", numel=rows * cols).traffic(dt) + mine
        fused = make(f"add_{name}", rows=rows, cols=cols, write_sum=True, variant="fused").traffic(dt)
        out.append((f"add_{name}", f"a standalone {name} usually follows the residual add (pre-norm "
                                   f"transformers): fuse the add into it (add_{name} fused)", pair, fused))
    # a row broadcast over the rows (a bias, a norm's weight) is neither a residual add nor a SwiGLU gate's half
    bcast = bool(getattr(op, "bcast", False))
    if name == "add" and not bcast:
        numel = op.numel  # type: ignore[attr-defined]
        # any rows x cols = numel gives the same saving (the norm's weight is read by both forms): 1 x numel
        pair = mine + make("rmsnorm", rows=1, cols=numel).traffic(dt)
        fused = make("add_rmsnorm", rows=1, cols=numel, write_sum=True, variant="fused").traffic(dt)
        out.append(("add_rmsnorm", "if a norm follows this add (the residual stream of a pre-norm transformer), "
                                   "fuse them (add_rmsnorm / add_layernorm fused)", pair, fused))
    if name in ("relu", "gelu", "silu"):
        out.append(("gemm epilogue", f"if this {name} follows a GEMM, apply it in the GEMM's epilogue "
                                     "(cuBLASLt RELU/GELU epilogues, CUTLASS, torch.compile): this pass disappears",
                    mine, Traffic()))
    if name in ("silu", "mul") and not bcast:
        numel = op.numel  # type: ignore[attr-defined]
        pair = make("silu", numel=numel).traffic(dt) + make("mul", numel=numel).traffic(dt)
        fused = make("swiglu", numel=numel, variant="fused").traffic(dt)
        out.append(("swiglu", "if this is half of a SwiGLU gate (silu(a) * b), do both in one kernel "
                              "(swiglu fused)", pair, fused))
    return out


@rule("fuse-neighbour", "a memory-bound operator usually run next to another: the fused pair's saving")
def fuse_neighbour(record: Record, spec: GPUSpec | None) -> list[Advice]:
    if record.bound != "memory" or record.variant is not None or _dtype(record) is None:
        return []
    op = rebuild(record)
    if op is None:
        return []
    items = []
    for neighbour, what, before, after in _neighbours(op, record):
        s = _saving(record, before, after)
        if s["saved_fraction"] < MIN_SAVED_FRACTION:
            continue
        items.append({"rule": "fuse-neighbour", "message": (
            f"{what[0].upper()}{what[1:]}: {si(s['bytes_after'], 'B')} instead of {si(s['bytes_before'], 'B')}, "
            f"{si(s['saved_bytes'], 'B')} less ({s['saved_fraction']:.0%}), {duration(s['saved_time_s'])} saved at "
            f"{_bw(record)}."),
            "op": op.name, "neighbour": neighbour, **s})
    return items


# ---------------------------------------------------------------- compute: below the tensor-core roof
@rule("precision", "compute-bound on a CUDA-core pipe where a tensor-core pipe exists")
def precision(record: Record, spec: GPUSpec | None) -> list[Advice]:
    pipe = record.compute_pipe or ""
    op, dt = rebuild(record), _dtype(record)
    if (record.bound != "compute" or spec is None or not _on_gpu(record) or "_tensor_" in pipe
            or op is None or not op.uses_tensor_cores or dt is None):
        return []
    current = spec.get(pipe)
    if not current:
        return []
    if dt.name == "fp32":
        options = [("tf32", "tf32_tensor_dense_tflops", "same fp32 storage, 10-bit mantissa: "
                    "torch.backends.cuda.matmul.allow_tf32 = True"),
                   ("bf16", "bf16_tensor_dense_tflops", "half the bytes too; needs an accuracy check")]
    elif dt.tensor_field:
        options = [(dt.name, dt.tensor_field, "a tensor-core kernel (cuBLAS/cuDNN), i.e. without --no-tensor-cores")]
    else:
        options = []
    found: list[Advice] = []
    for name, key, how in options:
        peak = spec.get(key)
        if peak and peak / current >= PRECISION_MIN_GAIN:
            found.append({"dtype": name, "pipe": key, "peak_tflops": peak, "gain": peak / current, "how": how})
    if not found:
        return []
    alts = "; ".join(f"{f['dtype'].upper()} tensor cores {f['peak_tflops']:g} TFLOP/s ({f['gain']:.1f}x; {f['how']})"
                     for f in found)
    return [{"rule": "precision", "message": (
        f"{dt.name} {op.name} is compute-bound on the {record.compute_pipe_label or pipe} roof "
        f"({current:g} TFLOP/s on {spec.name}): {alts}."),
        "current_pipe": pipe, "current_peak_tflops": current, "options": found,
        "best_gain": max(f["gain"] for f in found)}]


def _tensor_dims(op: Operator) -> dict[str, int]:
    """The dimensions a tensor-core kernel needs aligned, by operator."""
    p = op.params()
    if op.name == "gemm":
        return {k: p[k] for k in ("m", "n", "k")}
    if op.name == "gemv":
        return {k: p[k] for k in ("n", "k")}
    if op.name in ("attention", "decode_attention"):
        return {"head_dim": p["head_dim"]}
    if op.name == "conv2d":
        g = p["groups"]
        return {"in_channels per group": p["in_channels"] // g, "out_channels per group": p["out_channels"] // g}
    return {}


@rule("alignment", "compute-bound on tensor cores with a dimension that is not a 16-byte multiple")
def alignment(record: Record, spec: GPUSpec | None) -> list[Advice]:
    op, dt = rebuild(record), _dtype(record)
    if (record.bound != "compute" or "_tensor_" not in (record.compute_pipe or "")
            or op is None or dt is None):
        return []
    multiple = max(1, int(TENSOR_CORE_ALIGN_BYTES // dt.element_bytes))
    bad = {k: v for k, v in _tensor_dims(op).items() if v % multiple}
    if not bad:
        return []
    dims = ", ".join(f"{k} = {v} (pad to {math.ceil(v / multiple) * multiple})" for k, v in bad.items())
    return [{"rule": "alignment", "message": (
        f"{dims}: not a multiple of {multiple} {dt.name} elements ({TENSOR_CORE_ALIGN_BYTES} bytes), so "
        "tensor-core kernels fall back to slower, unvectorised or padded paths; pad the dimension."),
        "multiple": multiple, "misaligned": bad}]


def gemm_tile(spec: GPUSpec, dtype: str) -> tuple[int, int]:
    """The CTA tile assumed for wave quantization (see GEMM_TILE)."""
    if spec.is_nvidia and float(spec.compute_capability) >= 9.0 and dtype in HOPPER_TILE_DTYPES:
        return GEMM_TILE_HOPPER
    return GEMM_TILE


def waves(m: int, n: int, batch: int, tile: tuple[int, int], sms: int) -> dict[str, float]:
    """Output tiles of an M x N product (x batch) against the SMs, one tile per SM at a time."""
    tiles = batch * math.ceil(m / tile[0]) * math.ceil(n / tile[1])
    full = math.ceil(tiles / sms)
    last = tiles - (full - 1) * sms
    return {"tiles": tiles, "waves": tiles / sms, "last_wave_tiles": last, "last_wave_idle": 1 - last / sms,
            "idle_fraction": 1 - tiles / (full * sms)}


def _gemm_mn(op: Operator) -> tuple[int, int, int] | None:
    """(M, N, batch) of the output a GEMM or a direct (implicit-GEMM) convolution computes."""
    p = op.params()
    if op.name == "gemm":
        return p["m"], p["n"], p["batch"]
    if op.name == "conv2d" and op.variant_name() == "direct":
        hout, wout = op.out_hw()  # type: ignore[attr-defined]
        g = p["groups"]
        return p["batch"] * hout * wout, p["out_channels"] // g, g
    return None


@rule("wave-quantization", "a compute-bound GEMM/convolution whose tiles leave SMs idle in the last wave")
def wave_quantization(record: Record, spec: GPUSpec | None) -> list[Advice]:
    op = rebuild(record)
    if record.bound != "compute" or spec is None or not _on_gpu(record) or op is None:
        return []
    mn = _gemm_mn(op)
    if mn is None:
        return []
    m, n, batch = mn
    sms = int(spec["sm_count"])
    tile = gemm_tile(spec, str(record.dtype))
    w = waves(m, n, batch, tile, sms)
    if w["idle_fraction"] <= WAVE_IDLE_MAX:
        return []
    alt = ""
    if tile != GEMM_TILE:
        a = waves(m, n, batch, GEMM_TILE, sms)
        alt = (f" (with 128x128 tiles: {a['tiles']} tiles, {a['waves']:.2f} waves, "
               f"{a['idle_fraction']:.0%} idle)")
    what = "M x N" if op.name == "gemm" else "the implicit GEMM's (N*Hout*Wout) x Cout"
    return [{"rule": "wave-quantization", "message": (
        f"{what} = {m} x {n}{f' x {batch}' if batch > 1 else ''} in {tile[0]}x{tile[1]} tiles (assumed, one per "
        f"SM at a time) = {w['tiles']} tiles on {sms} SMs = {w['waves']:.2f} waves: the last wave runs "
        f"{w['last_wave_tiles']} tiles and leaves {w['last_wave_idle']:.0%} of the SMs idle, {w['idle_fraction']:.0%} "
        f"of the SM-time{alt}. Shapes whose tile count is a multiple of {sms}, or split-K / stream-K kernels, "
        "fill the GPU."),
        "tile": list(tile), "sm_count": sms, **w}]


# ---------------------------------------------------------------- latency
@rule("latency", "a kernel too short for its launch: latency-bound (CUDA graphs, batching)")
def latency(record: Record, spec: GPUSpec | None) -> list[Advice]:
    if not _on_gpu(record):
        return []
    measured = record.time_s
    gap = record.timing.launch_gap_s if record.timing is not None else None
    if measured is not None and gap is not None:
        return _launch_gap(record, measured, gap)
    if measured is not None:
        if measured >= MEASURED_LATENCY_S:
            return []
        t, what, limit = measured, "measured", MEASURED_LATENCY_S
    else:
        bound_t = record.roofline_time_s  # None: a profile record without a formula, which has no time to judge
        if bound_t is None or bound_t >= LAUNCH_OVERHEAD_S:
            return []
        t, what, limit = bound_t, "roofline", LAUNCH_OVERHEAD_S
    return [{"rule": "latency", "message": (
        f"The {what} time {duration(t)} is under {duration(limit)}, the scale of one kernel launch: this operator "
        f"is latency-bound, not {record.bound}-bound. Capture it with its neighbours in a CUDA graph "
        "(torch.cuda.graphs, torch.compile(mode='reduce-overhead')) or batch more work into each launch."),
        "time_s": t, "time_kind": what, "threshold_s": limit}]


def _launch_gap(record: Record, kernel_s: float, gap_s: float) -> list[Advice]:
    """Advice from the measured launch gap (timing.launch_gap_s): the GPU's idle time per eager call."""
    share = gap_s / (gap_s + kernel_s)
    if share < LAUNCH_BOUND_IDLE:
        return []
    return [{"rule": "latency", "message": (
        f"Launched eagerly back to back, each call leaves the GPU idle {duration(gap_s)} beside its "
        f"{duration(kernel_s)} of kernel time ({share:.0%} of the call): in a model that launches it so, the "
        f"host's launch paces it, not its {record.bound} roof. A CUDA graph (torch.cuda.graphs, "
        f"torch.compile(mode='reduce-overhead')) or fusing it into a neighbour saves about {duration(gap_s)} "
        "per call."), "time_s": kernel_s, "time_kind": "measured", "launch_gap_s": gap_s, "idle_share": share,
        "saving_s": gap_s}]


@rule("extra-pass", "the timed torch form makes passes the model assumes fused: name them")
def extra_pass(record: Record, spec: GPUSpec | None) -> list[Advice]:
    passes = record.extra_passes or []
    if not passes or record.time_s is None:
        return []
    frac = record.roofline_fraction
    share = f" (measured at {frac:.0%} of its roofline)" if frac is not None else ""
    return [{"rule": "extra-pass", "message": (
        f"The timed torch form makes passes the roofline assumes fused away{share}: {'; '.join(passes)}. "
        "A kernel that does this in registers (e.g. FlashInfer's or vLLM's decode attention with an fp8 or paged "
        "KV cache) is what the roofline describes."), "extra_passes": passes}]


# ---------------------------------------------------------------- counters (Nsight Compute, `--counters`)
@rule("excess-traffic", "DRAM bytes (ncu counters) well above the model's minimum: the likely cause")
def excess_traffic(record: Record, spec: GPUSpec | None) -> list[Advice]:
    c = record.counters
    if c is None or c.excess_traffic is None or c.dram_bytes is None or c.excess_traffic < EXCESS_TRAFFIC_MIN:
        return []
    # It matters where the bytes set the time: a memory-bound operator, or one the real bytes make so.
    moved = moved_bytes(c) or 0.0
    memory_time = moved / record.peak_bytes_per_s if record.peak_bytes_per_s else 0.0
    if record.bound != "memory" and not (record.roofline_time_s and memory_time > record.roofline_time_s):
        return []
    if c.l1_bytes is not None and c.l1_bytes > L1_OVER_DRAM_UNCOALESCED * c.dram_bytes:
        cause = (f"L1 moved {c.l1_bytes / c.dram_bytes:.1f}x the DRAM bytes: uncoalesced or strided access "
                 "fetches whole sectors and uses part of each; make the fastest-varying index the contiguous one")
    elif (written := c.stored_bytes if c.stored_bytes is not None else c.dram_bytes_written) is not None and \
            record.bytes_written and written > EXCESS_TRAFFIC_MIN * record.bytes_written:
        cause = (f"it wrote {written / record.bytes_written:.2f}x the output's bytes: an "
                 "intermediate is written to memory and read back; fuse the steps into one kernel")
    else:
        cause = ("the input is read more than once (a two-pass kernel, e.g. a norm that reads each row for its "
                 "statistics and again to scale it, or rows too large to stay in L2 or registers)")
    return [{"rule": "excess-traffic", "message": (
        f"Moves {c.excess_traffic:.2f}x the minimum bytes ({si(moved, 'B')}, {excess_basis([c])}, against "
        f"{si(record.bytes or 0, 'B')}, Nsight Compute's counters): that, not bandwidth, holds it from its roof. "
        f"Likely cause: {cause}."),
        "excess_traffic": c.excess_traffic, "dram_bytes": c.dram_bytes, "min_bytes": record.bytes}]


@rule("flop-count", "counter FLOPs (ncu) above the model's: padding or recompute")
def flop_count(record: Record, spec: GPUSpec | None) -> list[Advice]:
    c = record.counters
    if c is None or c.flops_ratio is None or c.flops_ratio <= FLOPS_RATIO_MAX or record.bound != "compute":
        return []
    return [{"rule": "flop-count", "message": (
        f"Does {c.flops_ratio:.2f}x the model's FLOPs ({si(c.flops or 0, 'FLOP')} counted against "
        f"{si(record.flops or 0, 'FLOP')}): the kernel computes work the operator does not need, most often padding "
        "to its tile or block size, or recomputation. A shape that is a multiple of the tile (128) or a kernel "
        "that masks instead of padding gets the time back."),
        "flops_ratio": c.flops_ratio, "counter_flops": c.flops, "model_flops": record.flops}]


# ---------------------------------------------------------------- fallback: far below the roof, reason unknown
NCU_SECTIONS = {"memory": "--section SpeedOfLight --section MemoryWorkloadAnalysis",
                "compute": "--section SpeedOfLight --section ComputeWorkloadAnalysis"}


# An SM clock this far below its maximum, with NVML naming a power limit, is the power cap at work: a few percent
# are the boost table's steps at any load (the H200 runs light kernels at 1950-1980 MHz of 1980).
POWER_CLOCK_DROP = 0.05
POWER_REASONS = ("power cap (software)", "power brake (hardware)")


def _clock_under_power(record: Record) -> tuple[float, float, list[str], str] | None:
    """(SM MHz, max MHz, power reasons, where measured) of the energy window when it ran (steady state, back to
    back), else of the timed samples; None without a clock held down by power."""
    e = (record.energy or {}).get("clocks") or {}
    sm, top, why = ((e.get("sm_mhz") or {}).get("median"), e.get("max_sm_mhz"), e.get("limited_by") or [])
    where = "back to back (the energy window)"
    if not (sm and top) and record.clocks is not None:
        sm, top, why = record.sm_clock_mhz, record.clocks.max_sm_mhz, record.clocks.limited_by or []
        where = "while timed"
    power = [r for r in why if r in POWER_REASONS]
    if not (sm and top and power) or sm > top * (1 - POWER_CLOCK_DROP):
        return None
    return float(sm), float(top), power, where


@rule("power-bound", "the SM clock held down by the power cap: what the cap costs in time")
def power_bound(record: Record, spec: GPUSpec | None) -> list[Advice]:
    found = _clock_under_power(record)
    if found is None or record.time_s is None:
        return []
    sm, top, why, where = found
    cap = (record.clocks.power_limit_w if record.clocks else None) or ((record.energy or {}).get("clocks") or {}).get(
        "power_limit_w")
    # NB: a compute-bound kernel's time taken as inversely proportional to the SM clock
    saving = record.time_s * (1 - sm / top) if record.bound == "compute" else 0.0
    cost = (f"at the full clock it would take about {duration(record.time_s - saving)} per call, {duration(saving)} "
            "less" if saving else "its memory-bound time gains little from the clock, but its joules per byte "
            "set how much power its traffic draws")
    energy = record.energy or {}
    per_call = energy.get("energy_j")
    drew = f" It drew {energy['power_w']:.0f} W, {joules(per_call)} per call." if per_call else ""
    return [{"rule": "power-bound", "message": (
        f"The SM clock ran at {sm:.0f} MHz {where}, {1 - sm / top:.0%} below its {top:.0f} MHz maximum, held by "
        f"the {', '.join(why)}{f' ({cap:.0f} W)' if cap else ''}: this kernel is power-bound; {cost}.{drew} "
        "Fewer joules per FLOP raise the power roof: a lower precision (fp8 tensor cores take about half the "
        "energy per FLOP of bf16), or fewer bytes moved."), "sm_mhz": sm, "max_sm_mhz": top,
        "saving_s": saving}]


@rule("cpu-threads", "a CPU timing far below its roof on a busy machine: fewer threads")
def cpu_threads(record: Record, spec: GPUSpec | None) -> list[Advice]:
    """NB: the record does not say how many threads ran (the document's device block does): said as a choice.
    torch splits a CPU product over its threads and waits for the slowest, so one that shares its core with
    another process holds up every call (a 256^3 GEMM on a busy 2-CPU machine: 32 ms on 2 threads, 0.37 ms on 1)."""
    frac = record.roofline_fraction
    if (record.device_kind != "cpu" or frac is None or frac >= BELOW_ROOF_FRACTION
            or not any(n.startswith(BUSY_NOTE) for n in record.notes)):
        return []
    return [{"rule": "cpu-threads", "message": (
        f"Timed at {percent(frac, 0, nonzero=True)} of its roof while other processes used the CPUs: torch splits "
        "each product over its threads and waits for the slowest, so a thread sharing its core slows every call. "
        "Time it again with --threads 1 (or fewer threads than idle cores), or on a quiet machine."),
        "roofline_fraction": frac}]


@rule("below-roof", "measured below half its roof and no other rule applies: profile it", fallback=True)
def below_roof(record: Record, spec: GPUSpec | None) -> list[Advice]:
    t = record.time_s
    if t is None or not _on_gpu(record):
        return []
    frac = record.roofline_fraction
    if frac is None:
        if record.roofline_time_s is None:  # a profile record without a formula: no roof to be below
            return []
        frac = record.roofline_time_s / t
    if frac >= BELOW_ROOF_FRACTION:
        return []
    bound = str(record.bound)
    sections = NCU_SECTIONS.get(bound, NCU_SECTIONS["memory"])
    c = record.counters
    if c is not None:  # counted already: say what the counters rule out, not "profile it"
        found = [f"{c.excess_traffic:.2f}x the minimum bytes" if c.excess_traffic is not None else "",
                 f"{c.flops_ratio:.2f}x the model's FLOPs" if c.flops_ratio is not None else ""]
        moved = " and ".join(f for f in found if f) or "no excess the rules above act on"
        return [{"rule": "below-roof", "message": (
            f"Measured at {frac:.0%} of its roofline ({duration(t)} against {duration(record.roofline_time_s)}) "
            f"while its counters show {moved}: the time goes where bytes and FLOPs do not show (latency, "
            f"occupancy, stalls, or too little work to fill the GPU). ncu {sections} <your command> shows which: "
            f"Speed Of Light the busiest unit, the second section why the {bound} roof is not reached."),
            "roofline_fraction": frac, "ncu": f"ncu {sections}"}]
    return [{"rule": "below-roof", "message": (
        f"Measured at {frac:.0%} of its roofline ({duration(t)} against {duration(record.roofline_time_s)}) and "
        f"no rule above explains it. Profile the kernel: ncu {sections} <your command> "
        f"(Speed Of Light shows which unit is busiest; the second section shows why the {bound} roof is not "
        "reached)."),
        "roofline_fraction": frac, "ncu": f"ncu {sections}"}]
