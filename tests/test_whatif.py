"""The what-if of a profile (roofline.analysis.whatif): Amdahl at the roofs, the fusions found on the dataflow
with their bytes and time saved, idle gaps. Hand-built records and dataflow rows first (arithmetic in the
comments: the roof's bandwidth is 1e12 B/s, so 1 MB saved is 1 µs), then a tiny model profiled on the CPU.

Dataflow rows are the summary's [producer record, consumer record, bytes per edge, edges].
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from roofline.analysis.whatif import (
    IDLE_DOMINANT_SHARE,
    IDLE_NOTABLE_SHARE,
    amdahl,
    document_what_if,
    fusions,
    idle_gaps,
    what_if,
)
from roofline.core.record import Record

BW = 1e12  # bytes/s: 1 MB = 1 µs at this memory roof
MB = 1e6
US = 1e-6


def rec(op: str, module: str = "", *, count: int = 1, time_s: float | None = None, roof_s: float | None = 1e-6,
        bound: str | None = "memory", nbytes: float = 1e6, source: str | None = None,
        shapes: list[list[int]] | None = None) -> Record:
    """A profile record: per-call time and roofline time, `count` calls."""
    return Record.from_dict({
        "op": op, "variant": None, "params": {}, "dtype": "bf16", "flops": 0.0 if roof_s is not None else None,
        "bytes_read": nbytes / 2, "bytes_written": nbytes / 2, "bytes": nbytes, "arithmetic_intensity": 0.0,
        "gpu": "test", "peak_flops_per_s": 1e15, "peak_bytes_per_s": BW, "ridge_point": 1000.0, "bound": bound,
        "roofline_time_s": roof_s, "time_s": time_s, "module": module, "count": count, "flops_source": source,
        "input_shapes": shapes})


def found(recs: list[Record], rows: list[list[float]], total: float = 100 * US) -> list[tuple[Any, ...]]:
    """(kind, records, occurrences, bytes saved) of each fusion, in ranked order."""
    return [(f.kind, f.records, f.occurrences, f.bytes_saved) for f in fusions(recs, rows, total)]


# -- Amdahl -------------------------------------------------------------------------------------------------

def test_amdahl_at_the_roofs_by_hand() -> None:
    recs = [
        rec("aten::mm", time_s=10 * US, roof_s=8 * US, bound="compute", count=2),  # 20 µs; 16 at its roof
        rec("aten::add.Tensor", time_s=5 * US, roof_s=2 * US, count=3),  # 15 µs; 6 at its roof
        rec("aten::mul.Tensor", time_s=1 * US, roof_s=2 * US),  # faster than its roof: stays 1 µs
        rec("aten::topk", time_s=4 * US, roof_s=None, bound=None),  # no formula: stays 4 µs
    ]
    a = amdahl(recs)
    assert a.total_s == pytest.approx(40 * US)  # 20 + 15 + 1 + 4
    assert a.unmodelled_s == pytest.approx(4 * US)
    assert a.memory.time_s == pytest.approx(31 * US) and a.memory.saved_s == pytest.approx(9 * US)  # 20+6+1+4
    assert a.memory.share == pytest.approx(9 / 40) and a.memory.records == 1
    assert a.compute.time_s == pytest.approx(36 * US) and a.compute.share == pytest.approx(4 / 40)  # 16+15+1+4
    assert a.both.time_s == pytest.approx(27 * US) and a.both.records == 2  # 16+6+1+4
    w = what_if(recs, {"mode": "timed"})
    assert not w.predicted and w.total_s == pytest.approx(40 * US) and w.amdahl == a


def test_an_analytic_profile_has_no_amdahl_and_predicted_shares() -> None:
    recs = [rec("aten::mm", roof_s=8 * US, bound="compute"), rec("aten::gelu", roof_s=2 * US, source="catalog:gelu")]
    w = what_if(recs, {"mode": "analytic", "dataflow": [[0, 1, 1 * MB, 1]]})
    assert w.predicted and w.amdahl is None and w.total_s == pytest.approx(10 * US)  # 8 + 2 predicted
    (f,) = w.fusions
    assert f.kind == "epilogue" and f.saved_s == pytest.approx(2 * US)  # 1 MB written + read back
    assert f.share == pytest.approx(0.2)  # 2 of the 10 µs predicted
    assert "Predicted" in w.notes[0]


# -- fusions ------------------------------------------------------------------------------------------------

def test_gemm_epilogue_saves_the_write_and_the_read() -> None:
    recs = [rec("aten::mm", "mlp.fc1"), rec("aten::gelu", "mlp", source="catalog:gelu"), rec("aten::mm", "mlp.fc2")]
    rows = [[0, 1, 1 * MB, 4], [1, 2, 1 * MB, 4]]  # fc1 -> gelu -> fc2, 4 times
    (f,) = fusions(recs, rows, 100 * US)
    # gelu is the only reader of fc1's output: written and read back, 2 x 1 MB, 4 times = 8 MB
    assert (f.kind, f.records, f.occurrences, f.bytes_saved) == ("epilogue", (0, 1), 4, 8 * MB)
    assert f.bytes_per_occurrence == 2 * MB and f.saved_s == pytest.approx(8 * US) and f.share == pytest.approx(0.08)
    assert (f.title, f.module, f.label) == ("mm -> gelu", "mlp", "GEMM/conv epilogue")
    assert "NB:" in f.assumes  # gelu -> fc2: a GEMM consumer is no fusion


def test_titles_follow_the_dataflow_not_the_record_order() -> None:
    """A layer's two residual adds share one record, listed at the first add: the second add's GEMM (down_proj)
    comes after it in record order, before it in the dataflow."""
    recs = [rec("aten::add.Tensor", "layers.0", source="catalog:add", count=2, shapes=[[8, 64], [8, 64]]),
            rec("aten::mm", "layers.0.mlp.down_proj")]
    (f,) = fusions(recs, [[1, 0, 1 * MB, 1]], 100 * US)
    assert (f.kind, f.records, f.title) == ("epilogue", (0, 1), "mm -> add")


def test_residual_add_and_norm_saves_the_read_when_the_sum_is_the_residual() -> None:
    recs = [rec("aten::add.Tensor", "layers.0", source="catalog:add", shapes=[[8, 64], [8, 64]]),
            rec("aten::native_layer_norm", "layers.0.post_attention_layernorm"),
            rec("aten::add.Tensor", "layers.0", source="catalog:add", shapes=[[8, 64], [8, 64]])]
    rows = [[0, 1, 2 * MB, 1], [0, 2, 2 * MB, 1]]  # the sum feeds the norm and the next residual add
    # the sum is still written (the next add reads it): only the norm's read goes, 2 MB; the add -> add row is no
    # pointwise chain (the sum is needed elsewhere: fusing would re-read both its inputs instead)
    assert found(recs, rows) == [("add_norm", (0, 1), 1, 2 * MB)]


def test_a_record_feeding_itself_keeps_its_write_and_each_consumer_module_is_a_fusion() -> None:
    """A layer's two residual adds are one record (count 2): the first's sum feeds the second (a row from the
    record to itself), this layer's post-attention norm, and (the second's) the next layer's input norm."""
    recs = [rec("aten::add.Tensor", "layers.0", source="catalog:add", count=2, shapes=[[8, 64], [8, 64]]),
            rec("aten::native_layer_norm", "layers.0.post_attention_layernorm"),
            rec("aten::native_layer_norm", "layers.1.input_layernorm")]
    rows = [[0, 0, 2 * MB, 1], [0, 1, 2 * MB, 1], [0, 2, 2 * MB, 1]]
    # each norm's read of a sum goes (2 MB each); the writes stay: the self-feeding row says the sums are needed
    assert found(recs, rows) == [("add_norm", (0, 1), 1, 2 * MB), ("add_norm", (0, 2), 1, 2 * MB)]
    # with one norm only, nothing but the record itself reads the sum beside the norm: still only the read goes
    assert found(recs[:2], rows[:2]) == [("add_norm", (0, 1), 1, 2 * MB)]


def test_residual_add_into_a_norm_written_as_pointwise_ops() -> None:
    """Hugging Face's RMSNorm: pow and mul inside a module named *norm read the residual sum."""
    recs = [rec("aten::add.Tensor", "layers.0", source="catalog:add", shapes=[[8, 64], [8, 64]]),
            rec("aten::pow.Tensor_Scalar", "layers.0.input_layernorm", source="rule:pointwise"),
            rec("aten::mean.dim", "layers.0.input_layernorm"),
            rec("aten::mul.Tensor", "layers.0.input_layernorm", source="catalog:mul"),
            rec("aten::add.Scalar", "layers.0.input_layernorm", source="catalog:add", shapes=[[8, 1]])]
    rows = [[0, 1, 2 * MB, 1], [0, 3, 2 * MB, 1], [1, 2, 2 * MB, 1], [2, 4, 0.5 * MB, 1]]
    fs = fusions(recs, rows, 100 * US)
    f = fs[0]
    # both reads of the sum go, and its write (nothing else reads it): 2 + 2 + 2 = 6 MB
    assert (f.kind, f.records, f.bytes_saved, f.detected) == ("add_norm", (0, 1, 3), 6 * MB, "module name")
    assert [x.kind for x in fs] == ["add_norm"]  # the eps add is no residual; pow -> mean is no chain


def test_batch_norm_folded_into_conv_removes_the_whole_op_and_its_relu_joins_the_conv() -> None:
    recs = [rec("aten::convolution", "conv1", bound="compute"),
            rec("aten::_native_batch_norm_legit_no_training", "bn1", time_s=30 * US, nbytes=3 * MB),
            rec("aten::relu", "", source="catalog:relu"),
            rec("aten::_native_batch_norm_legit", "bn2", time_s=30 * US)]  # training: not foldable
    rows = [[0, 1, 1 * MB, 2], [1, 2, 1 * MB, 2], [0, 3, 1 * MB, 2]]
    fs = fusions(recs, rows, 100 * US)
    bn, relu = fs
    # the folded BN's whole measured time goes, 30 µs x 2, and its bytes, 3 MB x 2
    assert (bn.kind, bn.records, bn.bytes_saved, bn.saved_s) == ("bn_fold", (0, 1), 6 * MB, pytest.approx(60 * US))
    # relu reads the (folded) conv's output: an epilogue of the conv, 2 x 1 MB x 2 = 4 MB
    assert (relu.kind, relu.records, relu.bytes_saved) == ("epilogue", (0, 1, 2), 4 * MB)
    assert relu.title == "conv -> batch_norm -> relu" and relu.module == "conv1, bn1"  # no module in common


def test_analytic_batch_norm_fold_saves_its_roofline_time() -> None:
    recs = [rec("aten::convolution"), rec("aten::native_batch_norm", roof_s=3 * US, source="rule:batch norm inference")]
    (f,) = fusions(recs, [[0, 1, 1 * MB, 1]], 10 * US, predicted=True)
    assert f.kind == "bn_fold" and f.saved_s == pytest.approx(3 * US)


def test_swiglu_claims_silu_into_mul_before_any_chain() -> None:
    recs = [rec("aten::mm", "mlp.gate_proj"), rec("aten::silu", "mlp", source="catalog:silu"),
            rec("aten::mm", "mlp.up_proj"), rec("aten::mul.Tensor", "mlp", source="catalog:mul")]
    rows = [[0, 1, 1 * MB, 1], [1, 3, 1 * MB, 1], [2, 3, 1 * MB, 1]]
    # silu -> mul: 2 x 1 MB; each projection's output into its elementwise reader: 2 x 1 MB each
    assert sorted(found(recs, rows)) == [("epilogue", (0, 1), 1, 2 * MB), ("epilogue", (2, 3), 1, 2 * MB),
                                         ("swiglu", (1, 3), 1, 2 * MB)]


def test_rope_found_by_its_structure() -> None:
    """The eager rotate-half form on q (n = 1 MB): q * cos + cat(-q2, q1) * sin. The two multiplies share
    one record (same shapes), so its row to the add holds 2 edges."""
    recs = [rec("aten::mm", "attn.q_proj"), rec("aten::mul.Tensor", "attn", source="catalog:mul", count=2),
            rec("aten::neg", "attn", source="rule:pointwise"), rec("aten::cat", "attn", source="rule:copy"),
            rec("aten::add.Tensor", "attn", source="catalog:add"), rec("aten::bmm", "attn")]
    rows = [[0, 1, 1 * MB, 1], [0, 2, 0.5 * MB, 1], [0, 3, 0.5 * MB, 1],  # q read by mul, neg and cat
            [2, 3, 0.5 * MB, 1], [3, 1, 1 * MB, 1], [1, 4, 1 * MB, 2], [4, 5, 1 * MB, 1]]
    fs = fusions(recs, rows, 100 * US)
    rope = fs[0]
    # temporaries: -q2 (0.5 MB), the cat (1 MB), the two products (2 x 1 MB): 3.5 MB written and read back = 7 MB
    # (the catalog's unfused RoPE: 3.5n of intermediates each way)
    assert (rope.kind, rope.records, rope.occurrences, rope.bytes_saved) == ("rope", (1, 2, 3, 4), 1, 7 * MB)
    assert rope.detected == "structure" and rope.title == "neg -> cat -> mul -> add"
    # q's projection feeding the RoPE kernel is no epilogue: the group is one fused kernel
    assert [f.kind for f in fs] == ["rope"]


def test_rope_found_by_module_name() -> None:
    recs = [rec("aten::cos", "model.rotary_emb", source="rule:pointwise"),
            rec("aten::mul.Tensor", "model.rotary_emb", source="catalog:mul"),
            rec("aten::mm", "layers.0.q_proj")]
    fs = fusions(recs, [[0, 1, 1 * MB, 1]], 100 * US)
    assert [(f.kind, f.detected, f.bytes_saved) for f in fs] == [("rope", "module name", 2 * MB)]


def test_pointwise_chain_is_one_fusion_per_connected_set() -> None:
    recs = [rec("aten::_to_copy", "norm", source="rule:copy"), rec("aten::mul.Tensor", "norm", source="catalog:mul"),
            rec("aten::rsqrt", "norm", source="rule:pointwise"), rec("aten::exp", "act", source="rule:pointwise"),
            rec("aten::mm", "proj")]
    rows = [[0, 1, 2 * MB, 3], [2, 1, 1 * MB, 3], [1, 4, 2 * MB, 3], [3, 4, 1 * MB, 3]]
    # _to_copy and rsqrt only feed the mul: one chain, (2 + 1) MB written and read back, 3 times = 18 MB;
    # the mul and exp feed a GEMM: no chain
    (f,) = fusions(recs, rows, 100 * US)
    assert (f.kind, f.records, f.occurrences, f.bytes_saved) == ("pointwise", (0, 1, 2), 3, 18 * MB)
    assert f.saved_s == pytest.approx(18 * US) and f.title == "_to_copy -> rsqrt -> mul"


def test_fusions_are_ranked_by_time_saved_and_each_row_is_used_once() -> None:
    recs = [rec("aten::mm"), rec("aten::silu", source="catalog:silu"), rec("aten::mul.Tensor", source="catalog:mul"),
            rec("aten::relu", source="catalog:relu"), rec("aten::add.Tensor", source="catalog:add")]
    rows = [[0, 1, 1 * MB, 1], [1, 2, 4 * MB, 1], [3, 4, 2 * MB, 1]]
    fs = fusions(recs, rows, 100 * US)
    assert [(f.kind, f.bytes_saved) for f in fs] == [("swiglu", 8 * MB), ("pointwise", 4 * MB), ("epilogue", 2 * MB)]
    assert sorted(r for f in fs for r in f.records) == [0, 1, 1, 2, 3, 4]


def test_bad_rows_and_unknown_bandwidth() -> None:
    recs = [rec("aten::mm"), rec("aten::gelu", source="catalog:gelu")]
    # a record feeding itself, an index out of range, zero bytes: ignored
    assert fusions(recs, [[1, 1, MB, 1], [0, 7, MB, 1], [0, 1, 0, 1]], 1.0) == []
    no_roof = [Record.from_dict({**r.to_dict(), "peak_bytes_per_s": 0.0}) for r in recs]
    (f,) = fusions(no_roof, [[0, 1, MB, 1]], 1.0)
    assert f.bytes_saved == 2 * MB and f.saved_s is None and f.share is None


# -- idle gaps ----------------------------------------------------------------------------------------------

def test_idle_gaps_from_the_plain_call_when_there_is_one() -> None:
    s = {"wall_s": 10e-3, "gpu_idle_s": 6e-3, "wall_uninstrumented_s": 4e-3, "gpu_idle_uninstrumented_s": 1e-3,
         "calls": 100}
    g = idle_gaps(s)
    assert g is not None and not g.instrumented
    assert g.share == pytest.approx(0.25) and g.per_call_s == pytest.approx(10e-6)  # 1 ms / 4 ms; 1 ms / 100 calls
    assert g.notable and IDLE_NOTABLE_SHARE <= 0.25 < IDLE_DOMINANT_SHARE
    assert "CUDA graphs" in g.message and "torch.compile" in g.message and "launch-bound" not in g.message


def test_idle_gaps_from_the_profiled_run_are_an_upper_bound() -> None:
    g = idle_gaps({"wall_s": 10e-3, "gpu_idle_s": 6e-3, "wall_uninstrumented_s": None})
    assert g is not None and g.instrumented and g.share == pytest.approx(0.6)
    assert "upper bound" in g.message and "launch-bound" in g.message  # 60% >= IDLE_DOMINANT_SHARE


def test_small_idle_gaps_are_said_small_and_cpu_profiles_have_none() -> None:
    g = idle_gaps({"wall_uninstrumented_s": 10e-3, "gpu_idle_uninstrumented_s": 0.5e-3})
    assert g is not None and not g.notable and g.share == pytest.approx(0.05) and "CUDA graphs" not in g.message
    assert idle_gaps({"wall_s": 1.0, "gpu_idle_s": None}) is None


# -- end to end: a tiny model profiled on the CPU --------------------------------------------------------------

FP32 = 4


@pytest.fixture(scope="module")
def tiny_profile() -> Any:
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.nn import functional as F

    from roofline.capture import profile

    class Attn(nn.Module):  # the rotary pattern in a module whose name does not say so: found by structure
        def forward(self, q: Any, cos: Any, sin: Any) -> Any:
            half = q.shape[-1] // 2
            return q * cos + torch.cat((-q[..., half:], q[..., :half]), dim=-1) * sin

    class Tiny(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 32)
            self.norm = nn.LayerNorm(32)
            self.gate, self.up = nn.Linear(32, 8, bias=False), nn.Linear(32, 8, bias=False)
            self.conv, self.bn = nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)
            self.attn = Attn()

        def forward(self, x: Any, r: Any, img: Any, q: Any, cos: Any, sin: Any) -> Any:
            h = self.norm(F.gelu(self.fc(x)) + r)
            return (F.silu(self.gate(h)) * self.up(h), F.relu(self.bn(self.conv(img))), self.attn(q, cos, sin))

    torch.manual_seed(0)
    model = Tiny().eval()
    args = (torch.randn(4, 16), torch.randn(4, 32), torch.randn(1, 3, 8, 8), torch.randn(1, 2, 4, 8),
            torch.randn(4, 8), torch.randn(4, 8))
    with torch.no_grad():
        return profile(lambda: model(*args), warmup=0)


def test_each_pattern_is_found_in_a_profiled_model_with_its_bytes(tiny_profile) -> None:  # type: ignore[no-untyped-def]
    prof = tiny_profile
    w = document_what_if(prof.document())
    got = {(f.kind, f.title): (f.bytes_saved, f.occurrences, f.detected) for f in w.fusions}
    act, small, img = 4 * 32 * FP32, 4 * 8 * FP32, 1 * 4 * 8 * 8 * FP32  # 512, 128, 1,024 bytes
    bn = next(r for r in prof.records if r.module == "bn")
    n = 1 * 2 * 4 * 8 * FP32  # q: 256 bytes
    assert got == {
        ("epilogue", "addmm -> gelu"): (2 * act, 1, "dataflow"),  # fc's output written and read back
        ("pointwise", "gelu -> add"): (2 * act, 1, "dataflow"),
        ("add_norm", "add -> layer_norm"): (2 * act, 1, "dataflow"),  # the sum is read by the norm only
        ("epilogue", "mm -> silu"): (2 * small, 1, "dataflow"),
        ("swiglu", "silu -> mul"): (2 * small, 1, "dataflow"),
        ("epilogue", "mm -> mul"): (2 * small, 1, "dataflow"),  # up's output into the SwiGLU mul
        ("bn_fold", "conv -> batch_norm"): (bn.bytes, 1, "dataflow"),  # x read, 4 x 4 parameters, y written
        ("epilogue", "conv -> batch_norm -> relu"): (2 * img, 1, "dataflow"),
        ("rope", "neg -> cat -> mul -> add"): (7 * n, 1, "structure"),  # 3.5n of temporaries, each way
    }
    assert bn.bytes == 2 * img + 4 * 4 * FP32  # 2,112
    fold = next(f for f in w.fusions if f.kind == "bn_fold")
    assert fold.saved_s == pytest.approx(bn.time_s)  # measured: the whole op's time goes
    other = [f for f in w.fusions if f.kind != "bn_fold"]
    assert all(f.saved_s == pytest.approx(f.bytes_saved / prof.records[0].peak_bytes_per_s) for f in other)
    assert w.idle is None  # a CPU profile has no GPU timeline
    assert w.amdahl is not None and w.amdahl.total_s == pytest.approx(prof.summary["kernel_time_s"])
    json.dumps(w.to_dict())  # JSON-able


def test_the_profiled_models_views_fit_80_columns(tiny_profile) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console

    from roofline.analysis.profile_view import profile_view
    from roofline.report.profile import profile_views

    for by in ("op", "module", "kernel"):
        console = Console(width=80, record=True, file=io.StringIO())
        for part in profile_views(profile_view(tiny_profile.document(), top=20, by=by, depth=1)):
            console.print(part)
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= 80
        assert "RoPE fused: neg -> cat -> mul -> add" in text and "BN folded into conv: conv -> batch_norm" in text
