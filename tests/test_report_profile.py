"""A profile document's view model (roofline.analysis.profile_view) and its terminal views
(roofline.report.profile): the top records, the roll-ups, the what-if; rendered in 80 columns with every number
whole. The document is built by hand: a two-layer model's
GEMMs, attention, adds and an op without a formula, with device kernels and idle gaps (times in µs below).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from rich.console import Console

from roofline.analysis.profile_view import module_group, profile_view, rollup, top_lines
from roofline.core.document import Document
from roofline.core.errors import UsageError
from roofline.core.format import percent
from roofline.core.record import Record
from roofline.report.profile import (
    fixed,
    header,
    profile_views,
    short_kernel,
    shorten_left,
    time_unit,
    top_table,
)

US = 1e-6
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
FLASH = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
         "cutlass::bfloat16_t>, false, true>(pytorch_flash::Flash_fwd_params)")
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)")
LONG = "model.layers.0.mlp.a_really_long_module_name_that_goes_on_and_on.down_proj_with_suffix"


def rec(op: str, module: str, time_s: float | None, roof_s: float | None, *, count: int = 1,
        bound: str | None = "memory", kernels: list[str] | None = None, flops: float | None = 1e9) -> Record:
    return Record.from_dict({
        "op": op, "variant": None, "params": {}, "dtype": "bf16", "flops": flops if roof_s is not None else None,
        "bytes_read": 1e6, "bytes_written": 1e6, "bytes": 2e6, "arithmetic_intensity": 500.0, "gpu": "h200",
        "peak_flops_per_s": 989e12, "peak_bytes_per_s": 4.8e12, "ridge_point": 206.0, "bound": bound,
        "roofline_time_s": roof_s, "time_s": time_s, "module": module, "count": count,
        "roofline_fraction": roof_s / time_s if roof_s is not None and time_s else None,
        "kernels": kernels, "kernel_times_s": [time_s] if kernels and time_s else None})


def timed_doc() -> Document:
    records = [
        rec("aten::mm", "model.layers.0.self_attn.q_proj", 100 * US, 80 * US, bound="compute", kernels=[GEMM]),
        rec("aten::mm", "model.layers.1.self_attn.q_proj", 100 * US, 80 * US, bound="compute", kernels=[GEMM]),
        rec("aten::_scaled_dot_product_flash_attention", "model.layers.0.self_attn", 300 * US, 150 * US,
            bound="compute", kernels=[FLASH]),
        rec("aten::add.Tensor", "model.layers.0", 20 * US, 10 * US, count=2, kernels=[ADD]),
        rec("aten::add_.Tensor", "model.layers.1", 20 * US, 10 * US, kernels=[ADD]),
        rec("aten::topk", "lm_head_sampler", 50 * US, None, bound=None),
        rec("aten::mul.Tensor", LONG, 10 * US, 5 * US),
    ]  # records' total: 100 + 100 + 300 + 40 + 20 + 50 + 10 = 620 µs; kernel time 650 with 30 unattributed
    summary = {"name": "llama-prefill", "mode": "timed", "time_device": "cuda:0", "wall_s": 1200 * US,
               "wall_uninstrumented_s": 900 * US, "kernel_time_s": 650 * US, "gpu_idle_s": 550 * US,
               "gpu_idle_uninstrumented_s": 250 * US, "coverage": 570 / 650, "calls": 8, "flops": 1.23e12,
               "flops_matmul": 1.2e12, "bytes": 3.4e9, "without_formula": [{"op": "aten::topk", "calls": 1,
                                                                           "time_s": 50 * US}],
               "unattributed": [{"kernel": "triton_poi_fused_add_0", "launches": 3, "time_s": 30 * US}],
               "dataflow": [[3, 6, 2e6, 1]], "notes": []}
    return Document(device={"kind": "gpu", "name": "NVIDIA H200"}, records=records, extra={"profile": summary})


def analytic_doc() -> Document:
    records = [rec("aten::mm", "layers.0.mlp.up_proj", None, 40 * US, bound="compute"),
               rec("aten::gelu", "layers.0.mlp", None, 60 * US, flops=4e6),
               rec("aten::mm", "layers.0.mlp.down_proj", None, 20 * US, bound="compute")]  # predicted 120 µs
    summary = {"name": "b200-guess", "mode": "analytic", "roofline_time_s": 120 * US, "kernel_time_s": None,
               "calls": 3, "flops": 3e9, "dataflow": [[0, 1, 1e6, 1], [1, 2, 1e6, 1]], "without_formula": []}
    return Document(device={"kind": "gpu", "name": "NVIDIA B200", "spec_id": "b200"}, records=records,
                    extra={"profile": summary})


def render(renderables: list[Any] | Any, width: int = 80) -> str:
    console = Console(width=width, record=True, highlight=False)
    for r in renderables if isinstance(renderables, list) else [renderables]:
        console.print(r)
    return console.export_text()


def assert_fits(text: str, width: int = 80) -> None:
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert not [line for line in lines if re.search(r"\d…|…\d", line)]  # no number cut by an ellipsis


def row_of(text: str, *cells: str) -> str:
    """The one rendered line holding every cell (each a whole token)."""
    hits = [line for line in text.splitlines() if all(re.search(rf"(?<!\S){re.escape(c)}(?!\S)", line)
                                                       for c in cells)]
    assert len(hits) == 1, (cells, hits)
    return hits[0]


# -- data ---------------------------------------------------------------------------------------------------

def test_top_lines_rank_by_total_time_with_share_and_headroom() -> None:
    doc = timed_doc()
    lines = top_lines(doc.records, doc.extra["profile"], top=3, group=False)  # the raw records
    assert [(x.key, x.records) for x in lines] == [("sdpa_flash", (2,)), ("mm", (0,)), ("mm", (1,))]
    sdpa = lines[0]
    assert sdpa.share == pytest.approx(300 / 650)  # of the kernel time, unattributed kernels included
    assert sdpa.headroom_s == pytest.approx(150 * US) and sdpa.roof_fraction == pytest.approx(0.5)  # 300 - 150
    adds = top_lines(doc.records, doc.extra["profile"], group=False)[4]
    assert (adds.key, adds.calls, adds.time_s) == ("add", 2, pytest.approx(40 * US))  # 20 µs x 2 calls
    # grouped (the default): the two layers' q_proj GEMMs, same op and shapes, are one line of both records
    mm = top_lines(doc.records, doc.extra["profile"], top=3)[1]
    assert (mm.key, mm.module, mm.records, mm.repeats, mm.calls) == ("mm", "model.layers.{0,1}.self_attn.q_proj",
                                                                     (0, 1), 2, 2)
    assert mm.time_s == pytest.approx(200 * US) and mm.roof_fraction == pytest.approx(160 / 200)  # 2 x 80 of 2 x 100


def test_rollups_by_op_module_and_kernel() -> None:
    doc = timed_doc()
    s = doc.extra["profile"]
    by_op = {x.key: (x.calls, round(x.time_s / US), x.records) for x in rollup(doc.records, s, "op")}
    assert by_op["add"] == (3, 60, (3, 4))  # add and add_ together: 40 + 20 µs
    assert by_op["mm"] == (2, 200, (0, 1))
    top = {x.key: round(x.time_s / US) for x in rollup(doc.records, s, "module", depth=2)}
    assert top == {"model.layers.{0,1}": 570, "lm_head_sampler": 50}  # 100 + 100 + 300 + 40 + 20 + 10
    full = {x.key: round(x.time_s / US) for x in rollup(doc.records, s, "module")}
    assert full["model.layers.{0,1}.self_attn.q_proj"] == 200  # the two layers' q_proj rolled together
    apart = {x.key: round(x.time_s / US) for x in rollup(doc.records, s, "module", depth=2, group=False)}
    assert apart == {"model.layers.0": 450, "model.layers.1": 120, "lm_head_sampler": 50}  # 100+300+40+10, 100+20
    kernels = {x.key: (x.calls, round(x.time_s / US), x.ops) for x in rollup(doc.records, s, "kernel")}
    assert kernels[GEMM] == (2, 200, ("mm",)) and kernels[ADD] == (3, 60, ("add", "add_"))
    assert kernels["triton_poi_fused_add_0"] == (3, 30, ("(no op)",))  # from the summary's unattributed
    mm = next(x for x in rollup(doc.records, s, "op") if x.key == "mm")
    assert mm.headroom_s == pytest.approx(40 * US)  # (100 - 80) x 2
    with pytest.raises(UsageError, match="--by"):
        rollup(doc.records, s, "layer")


def test_the_view_model_holds_what_every_renderer_shows() -> None:
    doc = timed_doc()
    view = profile_view(doc, top=3, by="module", depth=2)
    assert (view.predicted, view.total_s, view.records, view.calls) == (False, pytest.approx(650 * US), 7, 8)
    assert view.device == "NVIDIA H200" and view.counters_basis is None  # no record has ncu counters
    assert [x.key for x in view.top] == ["sdpa_flash", "mm", "topk"]  # the two layers' mm: one line
    assert view.rollup is view.rollups["module"] and set(view.rollups) == {"op", "module", "kernel", "phase"}
    assert [x.key for x in view.rollup] == ["model.layers.{0,1}", "lm_head_sampler"]  # at depth 2
    mm = next(x for x in view.rollups["op"] if x.key == "mm")
    assert mm.roof_fraction == pytest.approx(160 / 200)  # a group's: 2 x 80 µs at the roof of 2 x 100 measured
    assert view.whatif.amdahl is not None and view.whatif.amdahl.total_s == pytest.approx(620 * US)
    analytic = profile_view(analytic_doc(), top=2)
    assert [x.intensity for x in analytic.top] == [500.0, 500.0] and analytic.top[0].roof_fraction is None
    with pytest.raises(UsageError, match="--by"):
        profile_view(doc, by="layer")


def test_module_group_counts_named_components_and_stars_indices() -> None:
    path = "model.layers.0.mlp.down_proj"
    assert [module_group(path, d) for d in (1, 2, 3, 4, None)] == [
        "model", "model.layers.*", "model.layers.*.mlp", "model.layers.*.mlp.down_proj",
        "model.layers.*.mlp.down_proj"]
    assert module_group("blocks.3.0.conv", 1) == "blocks.*.*" and module_group("", 2) == ""
    assert module_group("blocks.3.0.conv", 1, indices=True) == "blocks.3.0"  # the raw rows keep the index
    with pytest.raises(UsageError, match="depth"):
        module_group(path, 0)


def test_formatting_helpers() -> None:
    assert [fixed(x) for x in (123456.7, 12.34, 1.234, 0.004, None)] == ["123,457", "12.3", "1.23", "0.00", "-"]
    assert time_unit([5e-8, None]) == (1e9, "ns") and time_unit([]) == (1e6, "µs")
    assert time_unit([50e-3]) == (1e6, "µs") and time_unit([0.5]) == (1e3, "ms") and time_unit([250.0]) == (1, "s")
    assert [percent(x, nonzero=True) for x in (0.234, 0.0004, 0.0, None)] == ["23.4%", "<0.1%", "0.0%", "-"]
    assert percent(0.0004, 2, nonzero=True) == "0.04%" and percent(0.00004, 2, nonzero=True) == "<0.01%"
    assert percent(0.0004) == "0.0%" and percent(float("nan"), nonzero=True) == "-"  # without: rounds to 0
    # the layer index kept: '…self_attn.q_proj' read the same for layers 0 and 1 of a profile's top table
    assert shorten_left("model.layers.0.self_attn.q_proj", 20) == "layers.0.…q_proj"
    assert shorten_left("model.layers.1.self_attn.q_proj", 20) == "layers.1.…q_proj"
    assert shorten_left("model.layers.0.self_attn.q_proj", 26) == "…layers.0.self_attn.q_proj"  # never '…0.'
    assert shorten_left("model.norm.weight.scale", 12) == "…scale"  # no index: the longest whole tail
    assert shorten_left("abcdefghijklmnop", 8) == "abcd…nop"  # one name: its middle cut, both ends kept
    assert short_kernel(ADD) == "vectorized_elementwise_kernel" and short_kernel(FLASH) == "flash_fwd_kernel"
    assert short_kernel(GEMM) == GEMM


# -- rendering ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("by", ["op", "module", "kernel"])
def test_views_fit_80_columns_with_whole_numbers(by: str) -> None:
    text = render(profile_views(profile_view(timed_doc(), top=10, by=by, depth=2 if by == "module" else None)))
    assert_fits(text)
    assert "llama-prefill: measured on NVIDIA H200 (cuda:0)" in text
    # top records: share of 650 µs, time in µs, calls, op, module, bound, % of roof, headroom in µs
    row_of(text, "46.2%", "300", "1", "sdpa_flash", "model.layers.0.self_attn", "compute", "50%", "150")
    row_of(text, "7.7%", "50.0", "1", "topk", "lm_head_sampler", "-", "-")  # no formula: no roof, no headroom
    # shortened from the left, the layer index kept, the last component cut in its middle: first word and end
    assert "layers.0.…down…with_suffix" in text and LONG not in text
    assert "fusions by time saved" in text and "pointwise chain: add -> mul" in text
    assert "28% of the 900 µs wall time" in text and "CUDA graphs" in text  # 250 / 900 µs
    if by == "op":
        row_of(text, "9.2%", "60.0", "3", "2", "add")  # add and add_: 60 µs of 650
    if by == "module":
        row_of(text, "87.7%", "570", "model.layers.{0,1}")  # 570 of 650 µs
    if by == "kernel":
        row_of(text, "30.8%", "200", "2", "mm", GEMM[:52])  # the GEMM kernel: 200 of 650 µs (its name folds)
        row_of(text, "4.6%", "30.0", "3", "triton_poi_fused_add_0", "(no", "op)")


def test_wider_terminal_shows_the_whole_module() -> None:
    doc = timed_doc()
    text = render(top_table(profile_view(doc, top=10), width=160), width=160)
    assert_fits(text, 160)
    assert LONG in text


def test_analytic_document_ranks_by_roofline_time_and_says_predicted() -> None:
    doc = analytic_doc()
    text = render(profile_views(profile_view(doc, by="module", depth=3)))
    assert_fits(text)
    assert "predicted on NVIDIA B200" in text and "predicted time (roofline)" in text
    assert "predicted step 120 µs" in text and "headroom" not in text  # every op at its roof by definition
    ranked = [x.key for x in top_lines(doc.records, doc.extra["profile"])]
    assert ranked == ["gelu", "mm", "mm"]  # 60, 40, 20 µs predicted
    row_of(text, "50.0%", "60.0", "1", "gelu", "layers.0.mlp", "memory")  # 60 of 120 µs
    assert "Amdahl" not in text and "GEMM/conv epilogue: mm -> gelu" in text
    assert "By kernel: no device kernels" in render(profile_views(profile_view(doc, by="kernel")))


def test_header_packs_the_summary_in_80_columns() -> None:
    text = render(header(profile_view(timed_doc())))
    assert_fits(text)
    for part in ("wall 1.2 ms (plain call 900 µs)", "kernel time 650 µs", "GPU idle 550 µs (46% of wall)",
                 "coverage 87.7%", "ops without formula 1 (1 call)", "FLOPs 1.23 T (matmul 1.2 T)",
                 "7 records, 8 calls"):  # 550 / 1200 µs idle; 570 / 650 µs covered
        assert part in text


def test_the_view_model_as_json() -> None:
    data = profile_view(timed_doc(), top=2, by="kernel").to_dict()
    back = json.loads(json.dumps(data))
    assert [x["key"] for x in back["top"]] == ["sdpa_flash", "mm"]
    assert back["rollup"]["by"] == "kernel" and back["whatif"]["amdahl"]["total_s"] == pytest.approx(620 * US)
    assert back["whatif"]["idle"]["share"] == pytest.approx(250 / 900)
    assert back["whatif"]["fusions"][0]["title"] == "add -> mul"


def test_the_top_view_of_a_profile_fits_and_names_ops_without_their_namespace() -> None:
    doc = timed_doc()
    text = render(top_table(profile_view(doc, top=2), 80))
    assert_fits(text)
    assert "Top 2 rows of 7 records" in text and "sdpa_flash" in text and "aten::" not in text  # 3 records in 2
    assert "{…}: one row for the layers in braces (--no-group: each)" in " ".join(text.split())


def test_the_top_table_keeps_a_long_op_whole_and_marks_one_above_its_roof() -> None:
    """`profile`'s top table cut every op name at 18 characters ('sdpa_flash_for_cp…' for
    'sdpa_flash_for_cpu_backward') with room to spare; an op faster than its roof (10 µs against a 15 µs
    roofline time: 150%) read as a plain percentage: it is marked, and the caption says what the mark means.
    Without room for both, the op and its module give up width alike once the op leads by LAST_LEAD (the
    module was left 11 columns: '…oot) [bwd]')."""
    doc = Document(device={"kind": "cpu", "name": "AMD EPYC"}, records=[
        rec("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "model.layers.0.self_attn", 300 * US,
            150 * US, bound="compute"),
        rec("aten::add.Tensor", "model.layers.0", 10 * US, 15 * US)],
        extra={"profile": {"name": "t", "mode": "timed", "calls": 2, "notes": []}})
    text = render(top_table(profile_view(doc), 90), 90)
    assert "sdpa_flash_for_cpu_backward" in text  # whole: the module gives up its width first
    assert "…layers.0.self_attn" in text  # 21 columns: the module whole but for 'model.'
    assert re.search(r"150%! ", text) and "!: above its roof (its roof or model is wrong)" in text
    text = render(top_table(profile_view(doc), 80))  # 38 columns for both: op 22, module 16 (22 - LAST_LEAD)
    assert "sdpa_flash_for_cpu_ba…" in text and "layers.0.self…ttn" in text
