"""Whole-model profiles on the CPU: FLOPs and bytes of tiny models against hand arithmetic and torch's
FlopCounterMode, attribution, module paths, aggregation, regions, the analytic (fake-tensor) mode, saving.

Hand counts use the catalog's convention: 2 FLOPs per multiply-add, +1 per output for a bias, 5 per
attention score for the softmax, 4D per attention score for QK^T and PV, causal = half the scores.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from models import MLP, ConvNet, Decoder, Twice
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from roofline.capture import fake_mode, profile, region
from roofline.capture.profile import Profile
from roofline.capture.profile_summary import INSTRUMENTED, instrumented_note
from roofline.core.document import read_document
from roofline.core.errors import RooflineError

FP32 = 4  # bytes per element


def torch_flops(fn) -> int:  # type: ignore[no-untyped-def]
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def by_module(prof: Profile) -> dict[str, list]:  # type: ignore[type-arg]
    out: dict[str, list] = {}  # type: ignore[type-arg]
    for r in prof.records:
        out.setdefault(r.module, []).append(r)
    return out


@pytest.fixture
def mlp_profile() -> tuple[MLP, torch.Tensor, Profile]:
    torch.manual_seed(0)
    model, x = MLP(d=64, h=128), torch.randn(32, 64)
    with torch.no_grad():
        prof = profile(lambda: model(x), warmup=1)
    return model, x, prof


def test_mlp_flops_by_hand_and_against_flop_counter(mlp_profile) -> None:  # type: ignore[no-untyped-def]
    model, x, prof = mlp_profile
    ops = [(r.op, r.module, r.flops) for r in prof.records]
    assert ops == [
        ("aten::addmm", "fc1", 2 * 32 * 128 * 64),  # 524,288 (the bias add's 4,096 are extra_flops)
        ("aten::relu", "", 32 * 128),  # 4,096: F.relu runs in the root module's own forward
        ("aten::addmm", "fc2", 2 * 32 * 64 * 128),  # 524,288 (+ 2,048 extra_flops)
    ]
    assert [r.extra_flops for r in prof.records] == [32 * 128, None, 32 * 64]  # the bias adds, 1 per output
    assert prof.summary["flops"] == 1_052_672  # 524,288 + 4,096 + 524,288
    assert prof.summary["extra_flops"] == 6_144  # 4,096 + 2,048
    # FlopCounterMode counts the two matrix products only: 2 x 524,288
    with torch.no_grad():
        assert prof.summary["flops_matmul"] == torch_flops(lambda: model(x)) == 1_048_576
    fc1 = prof.records[0]
    assert (fc1.variant, fc1.params) == ("fused", {"m": 32, "n": 128, "k": 64, "batch": 1, "epilogue": "bias"})
    assert fc1.flops_source == "catalog:gemm" and fc1.dtype == "fp32"


def test_mlp_bytes_by_hand(mlp_profile) -> None:  # type: ignore[no-untyped-def]
    _, _, prof = mlp_profile
    fc1, relu, fc2 = prof.records
    # fc1 reads x (32 x 64), W (64 x 128, through its transposed view) and b (128); writes 32 x 128
    assert (fc1.bytes_read, fc1.bytes_written) == ((32 * 64 + 64 * 128 + 128) * FP32, 32 * 128 * FP32)
    assert fc1.bytes_by_kind == {"activations": (32 * 64 + 32 * 128) * FP32, "weights": (64 * 128 + 128) * FP32}
    assert (relu.bytes_read, relu.bytes_written) == (32 * 128 * FP32, 32 * 128 * FP32)
    assert (fc2.bytes_read, fc2.bytes_written) == ((32 * 128 + 128 * 64 + 64) * FP32, 32 * 64 * FP32)
    assert fc1.bytes == fc1.bytes_read + fc1.bytes_written


def test_every_op_attributed_and_timed(mlp_profile) -> None:  # type: ignore[no-untyped-def]
    _, _, prof = mlp_profile
    s = prof.summary
    assert s["mode"] == "timed" and s["time_device"] == "cpu"
    assert s["coverage"] == 1.0 and s["unattributed"] == [] and s["without_formula"] == []
    assert s["kernel_time_s"] == pytest.approx(sum(r.time_s * r.count for r in prof.records))
    assert all(r.time_s > 0 and r.timing.method == s["timing_method"] for r in prof.records)
    assert all(r.achieved_flops_per_s == pytest.approx(r.flops / r.time_s) for r in prof.records)
    assert s["wall_uninstrumented_s"] > 0 and s["wall_s"] > 0
    assert s["skipped_ops"] == {"aten::t": 2}  # the weights' transposed views: no kernel, no bytes


def test_mlp_dataflow(mlp_profile) -> None:  # type: ignore[no-untyped-def]
    _, _, prof = mlp_profile
    # fc1 -> relu -> fc2, each edge the 32 x 128 activation: [producer, consumer, bytes, count]
    assert prof.summary["dataflow"] == [[0, 1, 32 * 128 * FP32, 1], [1, 2, 32 * 128 * FP32, 1]]
    assert [(e.producer, e.consumer) for e in prof.edges] == [(0, 1), (1, 2)]


def test_gqa_causal_attention_by_hand() -> None:
    torch.manual_seed(0)
    model, x = Decoder(n_layers=2, dim=32, heads=4, kv_heads=2, hidden=64).eval(), torch.randn(2, 8, 32)
    with torch.no_grad():
        prof = profile(lambda: model(x), warmup=1)
        counted = torch_flops(lambda: model(x))
    attn = [r for r in prof.records if r.flops_source == "catalog:attention"]
    assert [r.module for r in attn] == ["layers.0.self_attn", "layers.1.self_attn"]
    b, h, hkv, s, d = 2, 4, 2, 8, 8
    scores = b * h * s * (s + 1) / 2  # causal: the 36 of the 8 x 8 scores of each (batch, head) tril keeps
    assert attn[0].flops == 4 * d * scores  # the two matmuls: 9,216
    assert attn[0].extra_flops == 5 * scores  # the softmax, apart: 1,440
    assert attn[0].params["kv_heads"] == hkv and attn[0].params["causal"] is True
    # GQA: K and V are read at their 2 heads, not repeated to 4
    assert attn[0].bytes_read == (b * h * s * d + 2 * b * hkv * s * d) * FP32
    # torch's counter has no formula for the CPU's fused SDPA kernel (and on CUDA it raises on GQA and counts
    # causal as the full square): it counts the projections only; ours adds the attention's products
    assert prof.summary["flops_matmul"] == counted + 2 * (4 * d * scores)
    mm = [r for r in prof.records if r.op == "aten::mm"]
    assert {r.module for r in mm} == {f"layers.{i}.{p}" for i in (0, 1) for p in (
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
        "mlp.up_proj", "mlp.down_proj")}
    assert {r.module for r in prof.records} <= set(dict(model.named_modules()))
    assert prof.summary["module_root"] == "Decoder" and prof.summary["coverage"] == 1.0


def test_sdpa_equals_flop_counter_where_it_is_right() -> None:
    """Without a mask or GQA torch counts SDPA right (two batched products): our matmul part is equal."""
    q, k, v = (torch.randn(2, 4, 16, 8) for _ in range(3))
    with profile(name="sdpa") as prof:
        F.scaled_dot_product_attention(q, k, v)
    with sdpa_kernel(SDPBackend.MATH):  # torch counts the math decomposition's bmm's
        counted = torch_flops(lambda: F.scaled_dot_product_attention(q, k, v))
    assert counted == 4 * 2 * 4 * 16 * 16 * 8
    assert prof.summary["flops_matmul"] == counted
    assert prof.records[0].flops == counted  # the two matmuls, as torch counts them
    assert prof.records[0].extra_flops == 5 * 2 * 4 * 16 * 16  # the softmax, apart


def test_conv_net_by_hand_and_against_flop_counter() -> None:
    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        prof = profile(lambda: model(x), warmup=1)
        counted = torch_flops(lambda: model(x))
    flops = {r.module or r.op: r.flops for r in prof.records}
    assert flops == {
        "conv1": 2 * 2 * 8 * 16 * 16 * 3 * 9,  # 2 N Cout Hout Wout Cin K^2 = 221,184 (no bias)
        "bn1": 4 * 2 * 8 * 16 * 16 + 2 * 8,  # inference: 4 per element + 2 per channel = 16,400
        "aten::relu": 2 * 8 * 16 * 16,  # 4,096
        "conv2": 2 * 2 * 8 * 8 * 8 * 8 * 9,  # stride 2: 8 x 8 out; 147,456 (its bias's 1,024 are extra_flops)
        "aten::mean.dim": 2 * 8 * 8 * 8,  # one add per input element: 1,024
        "head": 2 * 2 * 10 * 8,  # 320 (+ the bias's 20 extra_flops)
    }
    assert {r.module: r.extra_flops for r in prof.records if r.extra_flops} == {"conv2": 1_024, "head": 20}
    assert prof.summary["flops_matmul"] == counted == 221_184 + 147_456 + 320  # torch: no bias, no norm
    conv1 = prof.records[0]
    assert conv1.params["kernel_size"] == 3 and conv1.tensor_cores is None  # the CPU has no tensor cores
    # conv1 reads x (2 x 3 x 16 x 16) and w (8 x 3 x 3 x 3), writes 2 x 8 x 16 x 16
    assert (conv1.bytes_read, conv1.bytes_written) == ((1536 + 216) * FP32, 4096 * FP32)
    assert prof.summary["coverage"] == 1.0


def test_a_layer_called_twice_is_one_record_with_count_2() -> None:
    model, x = Twice(), torch.randn(4, 16)
    with torch.no_grad():
        prof = profile(lambda: model(x), warmup=0)
    (rec,) = prof.records
    assert (rec.op, rec.module, rec.count) == ("aten::addmm", "fc", 2)
    assert rec.flops == 2 * 4 * 16 * 16 and rec.extra_flops == 4 * 16  # per call, not per record
    assert len(rec.time_samples_s) == 2 and rec.time_s == pytest.approx(sum(rec.time_samples_s) / 2)
    assert prof.summary["flops"] == 2 * rec.flops and prof.summary["calls"] == 2
    assert prof.summary["dataflow"] == [[0, 0, 4 * 16 * FP32, 1]]  # the first call feeds the second
    assert prof.summary["wall_uninstrumented_s"] is None  # no warm-up: no plain call to time


def test_bytes_of_views_and_in_place_ops() -> None:
    base = torch.randn(32, 64)  # 8 KiB
    bias = torch.randn(64)
    with profile(name="views") as prof:
        x = base[:, :16]  # a view: no record
        y = x.clone()  # reads the view's 32 x 16 elements, not the whole storage
        y.add_(1.0)  # in place: reads y, writes y once
        z = torch.cat([y, y])  # one storage read twice: counted once
        w = bias.expand(32, 64).contiguous()  # a stride-0 view: reads the 64 elements once
        base + bias  # broadcast: reads base and the 64-element bias
        del z, w
    got = [(r.op, r.bytes_read, r.bytes_written, r.flops) for r in prof.records]
    assert got == [
        ("aten::clone", 32 * 16 * FP32, 32 * 16 * FP32, 0),
        ("aten::add_.Tensor", 32 * 16 * FP32, 32 * 16 * FP32, 32 * 16),
        ("aten::cat", 32 * 16 * FP32, 64 * 16 * FP32, 0),
        ("aten::clone", 64 * FP32, 32 * 64 * FP32, 0),
        ("aten::add.Tensor", (32 * 64 + 64) * FP32, 32 * 64 * FP32, 32 * 64),
    ]
    assert prof.summary["skipped_ops"] == {"aten::expand": 1, "aten::slice.Tensor": 1}
    assert prof.summary["skipped"] == 2
    # y is written by clone and add_, read by add_ and cat: clone -> add_ -> cat
    assert [(e.producer, e.consumer) for e in prof.edges] == [(0, 1), (1, 2)]


def test_a_cat_with_equal_tails_is_the_catalogs_cat_and_a_ragged_one_a_copy() -> None:
    cache, new = torch.randn(2, 4, 10, 8), torch.randn(2, 4, 1, 8)  # a KV cache's append along the sequence
    halves = torch.randn(6, 16)
    with profile(name="cats") as prof:
        torch.cat([cache, new], dim=-2)
        torch.cat([halves[:, 8:], halves[:, :8]], dim=-1)  # rotate_half's join
        torch.cat([halves, halves[:2], halves[:3]])  # tails 2 and 3: no catalog shape
    kv, rot, ragged = prof.records
    assert kv.flops_source == "catalog:cat" and kv.params == {"outer": 8, "length": 10, "tail": 1, "parts": 2,
                                                               "inner": 8, "strided": False}
    assert rot.params == {"outer": 6, "length": 8, "tail": 8, "parts": 2, "inner": 1, "strided": True}  # slices
    assert kv.bytes_read == (10 + 1) * 64 * FP32 and kv.bytes_written == 11 * 64 * FP32  # from the tensors
    assert ragged.flops_source == "rule:copy" and ragged.flops == 0


def test_a_reduction_of_trailing_or_leading_dimensions_is_the_catalogs_reduce_and_others_the_rule() -> None:
    x = torch.randn(8, 16, 64)
    with profile(name="reductions") as prof:
        x.pow(2).mean(-1, keepdim=True)  # an RMSNorm's statistics: 128 rows of 64
        x.amax(dim=(1, 2))  # two trailing dimensions: 8 rows of 1024
        x.sum()  # everything: one row
        x.sum(1)  # a middle dimension: not rows x cols
        x.transpose(1, 2).sum(-1)  # trailing, but strided: not rows x cols either
        x.sum((0, 1))  # the leading dimensions: a bias's gradient, 128 rows summed into each of 64 columns
    got = [(r.op, r.flops_source, r.params, r.flops) for r in prof.records if r.op != "aten::pow.Tensor_Scalar"]
    assert got == [
        ("aten::mean.dim", "catalog:reduce", {"rows": 128, "cols": 64, "func": "mean"}, 8192),
        ("aten::amax", "catalog:reduce", {"rows": 8, "cols": 1024, "func": "amax"}, 8192),
        ("aten::sum", "catalog:reduce", {"rows": 1, "cols": 8192, "func": "sum"}, 8192),
        ("aten::sum.dim_IntList", "rule:reduction", {}, 8192),  # one FLOP per input element either way
        ("aten::sum.dim_IntList", "rule:reduction", {}, 8192),
        ("aten::sum.dim_IntList", "catalog:reduce", {"rows": 128, "cols": 64, "func": "sum", "dim": "first"}, 8192),
    ]
    assert prof.records[-1].bytes_written == 64 * 4  # one value per column


def test_an_op_without_a_formula_is_listed_with_its_time() -> None:
    x = torch.randn(64, 32)
    with profile(name="fft") as prof:
        torch.fft.rfft(x)  # aten::_fft_r2c: no formula (an FFT's N log N is not modelled)
        x.relu()
    fft = next(r for r in prof.records if r.op == "aten::_fft_r2c")
    assert fft.flops is None and fft.bytes is None and fft.roofline_time_s is None and fft.bound is None
    assert fft.flops_source is None and fft.time_s > 0
    s = prof.summary
    assert s["without_formula"] == [{"op": "aten::_fft_r2c", "calls": 1, "time_s": fft.time_s}]
    assert s["coverage"] == pytest.approx(1 - fft.time_s / s["kernel_time_s"])
    assert s["flops"] == 64 * 32  # the relu only: an unknown count is never added as 0 to a known one


def test_regions_keep_only_the_marked_ops() -> None:
    model, x = MLP(d=8, h=8), torch.randn(2, 8)
    with region("outside"):  # no profile running: a no-op
        model(x)
    with torch.no_grad(), profile(name="regions") as prof:
        model(x)  # before any region: left out once a region is marked
        with region("step"):
            model(x)
        model(x)  # after it: not recorded at all
    assert [r.region for r in prof.records] == ["step"] * 3 and all(r.count == 1 for r in prof.records)
    assert [p.call.index for p in prof.calls] == [3, 4, 5]  # the 3 calls before the region were dropped
    assert prof.summary["skipped_ops"] == {"aten::t": 2}  # the region's own views only
    step = prof.summary["regions"]["step"]
    assert step["entered"] == 1 and step["calls"] == 3 and step["wall_s"] > 0
    assert step["time_s"] == pytest.approx(prof.summary["kernel_time_s"])


def test_with_regions_the_wall_time_is_the_regions_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    profile_mod = importlib.import_module("roofline.capture.profile")  # not the package's `profile` function
    # An hour outside the region (a stand-in for a warm-up or a compilation), on the profile's clock: the
    # clock jumps by SKIPPED_S there instead of sleeping, so no real time is compared. It must not count: the
    # summary's wall is the region entries' (real time: two tiny matmuls), not the whole run's.
    SKIPPED_S = 3600.0
    skipped = [0.0]
    clock = SimpleNamespace(perf_counter=lambda: time.perf_counter() + skipped[0])
    monkeypatch.setattr(profile_mod, "time", clock)
    model, x = MLP(d=8, h=8), torch.randn(2, 8)
    with torch.no_grad(), profile(name="walls") as prof:
        skipped[0] = SKIPPED_S
        for _ in range(2):
            with region("step"):
                model(x)
    s = prof.summary
    assert s["wall_s"] == pytest.approx(sum(s["regions"]["step"]["entry_wall_s"])) and s["wall_s"] < SKIPPED_S
    assert prof.summary["phases_s"]["profiled"] >= SKIPPED_S  # the jump was on the clock the profile read


def test_without_regions_everything_is_one_region(mlp_profile) -> None:  # type: ignore[no-untyped-def]
    _, _, prof = mlp_profile
    assert prof.summary["regions"] == {} and {r.region for r in prof.records} == {None}


def test_analytic_mode_gives_the_real_runs_flops_and_bytes() -> None:
    torch.manual_seed(0)
    model, x = Decoder(n_layers=1).eval(), torch.randn(2, 8, 32)
    with torch.no_grad():
        real = profile(lambda: model(x), warmup=0)
        fake = profile(lambda: model(x), time=False)

    def counts(p: Profile) -> list[tuple]:  # type: ignore[type-arg]
        return [(r.module, r.count, r.flops_source, r.flops, r.bytes_read) for r in p.records]

    assert counts(fake) == counts(real)
    # SDPA is one op either way: the CPU's fused kernel when run, SDPA as a whole when analytic (which
    # writes no log-sum-exp: 2 x 4 x 8 float32 less)
    real_attn, fake_attn = (next(r for r in p.records if r.flops_source == "catalog:attention") for p in (real, fake))
    assert (real_attn.op, fake_attn.op) == ("aten::_scaled_dot_product_flash_attention_for_cpu",
                                            "aten::scaled_dot_product_attention")
    assert real_attn.bytes_written - fake_attn.bytes_written == 2 * 4 * 8 * FP32
    assert fake.summary["mode"] == "analytic" and fake.summary["kernel_time_s"] is None
    assert all(r.time_s is None for r in fake.records)
    assert fake.summary["roofline_time_s"] == pytest.approx(sum(r.roofline_time_s * r.count for r in fake.records))


def test_analytic_mode_on_a_spec_for_a_model_built_without_memory() -> None:
    with fake_mode():  # the parameters are fake tensors: nothing allocated
        model = MLP(d=4096, h=16384, dtype=torch.bfloat16)  # 256 MiB of weights if they were real
        x = torch.randn(8, 4096, dtype=torch.bfloat16)
    prof = profile(lambda: model(x), time=False, gpu="h100-sxm")
    fc1 = prof.records[0]
    assert fc1.gpu == "h100-sxm" and fc1.dtype == "bf16" and fc1.compute_pipe == "bf16_tensor_dense_tflops"
    assert fc1.flops == 2 * 8 * 16384 * 4096 and fc1.extra_flops == 8 * 16384  # the bias apart
    assert fc1.bytes_by_kind["weights"] == (4096 * 16384 + 16384) * 2  # bf16 weight and bias
    assert prof.summary["roofline_time_s"] == pytest.approx(sum(r.roofline_time_s for r in prof.records))


def test_analytic_mode_on_the_meta_device() -> None:
    with torch.device("meta"):
        model, x = MLP(d=64, h=128), torch.randn(32, 64)
        block, h = Decoder(n_layers=1), torch.randn(2, 8, 32)
    prof = profile(lambda: model(x), time=False)
    assert [r.flops for r in prof.records] == [524_288, 4_096, 524_288]  # as the real run (test above)
    # on the meta device torch runs SDPA's math decomposition; the profile records the fused op a GPU runs
    prof = profile(lambda: block(h), time=False)
    (attn,) = [r for r in prof.records if r.module == "layers.0.self_attn"]
    assert attn.op == "aten::scaled_dot_product_attention" and attn.flops == 9216  # as by hand above
    assert not any(r.op in ("aten::bmm", "aten::_safe_softmax", "aten::clone") for r in prof.records)


def test_save_refuses_to_overwrite_and_round_trips(tmp_path, mlp_profile) -> None:  # type: ignore[no-untyped-def]
    _, _, prof = mlp_profile
    path = prof.save(tmp_path / "p.json")
    with pytest.raises(RooflineError, match="exists"):
        prof.save(path)
    prof.save(path, force=True)
    doc = read_document(path)
    assert [r.to_dict() for r in doc.records] == [r.to_dict() for r in prof.records]
    assert doc.extra["profile"]["flops"] == prof.summary["flops"]
    assert json.loads(path.read_text())["device"]["kind"] == "cpu"


def test_a_document_with_an_op_without_formula_validates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    x = torch.randn(16, 8)
    with profile(name="fft") as prof:
        torch.fft.rfft(x)  # no formula
    doc = read_document(prof.save(tmp_path / "t.json"))
    assert doc.records[0].flops is None and doc.records[0].count == 1


def test_errors() -> None:
    with pytest.raises(RooflineError, match="warmup"):
        profile(lambda: None, warmup=-1)
    prof = profile(name="unused")
    with pytest.raises(RooflineError, match="nothing profiled"):
        prof.document()
    with prof:
        pass
    with pytest.raises(RooflineError, match="runs once"), prof:
        pass
    with pytest.raises(ZeroDivisionError), profile(name="raises"):  # the program's own error, unchanged
        1 / 0  # noqa: B018
    # an analytic run has no data to read (2**21 elements: more than a constant keeps, build.CONSTANT_NUMEL)
    with pytest.raises(RooflineError, match="needs tensor values"):
        profile(lambda: torch.ones(2048, 1024).sum().item(), time=False)
    # small: a constant, read for real (ones, sum and the scalar read recorded: no module ran, so no build)
    assert profile(lambda: torch.ones(3).sum().item(), time=False).summary["calls"] == 3


def test_table_lists_the_heaviest_records(mlp_profile) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console

    from roofline.analysis.profile_view import profile_view
    from roofline.report.profile import top_table

    _, _, prof = mlp_profile
    console = Console(width=200, record=True)
    console.print(top_table(profile_view(prof.document(), top=2), 200))
    text = console.export_text()
    assert "Top 2 of 3" in text and "aten::" not in text  # ops shown without the namespace
    # the two heaviest by this run's own times (host times on the CPU: which two varies from run to run)
    heaviest = sorted(prof.records, key=lambda r: -(r.time_s or 0) * (r.count or 1))[:2]
    shown = [line for line in text.splitlines() if "%" in line and "µs" not in line]
    assert len(shown) == 2 and all(r.op.removeprefix("aten::").split(".")[0] in line
                                   for r, line in zip(heaviest, shown, strict=True)), text


def test_the_instrumented_note_names_only_the_fields_the_summary_has() -> None:
    # a script's profile on the CPU: no gpu_idle_s, no wall_uninstrumented_s (no timed warm-up call); before,
    # the note said "wall_uninstrumented_s is a plain call (warm-up)" beside "wall_uninstrumented_s": null
    cpu = instrumented_note(wall_uninstrumented_s=None, gpu_idle_s=None)
    assert cpu == "wall_s includes the profiler's and the op trace's host overhead" and cpu.code == INSTRUMENTED
    gpu = instrumented_note(wall_uninstrumented_s=2e-3, gpu_idle_s=1e-3)
    assert gpu == ("wall_s and gpu_idle_s include the profiler's and the op trace's host overhead, which widens "
                   "the gaps between kernels; wall_uninstrumented_s is a plain call (warm-up)")
