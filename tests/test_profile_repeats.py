"""Real models' views (issue 52): a decoder's repeated layers as one row (the top table, the module roll-up, the
what-if), `--no-group` for the raw rows, and names at 80 columns that keep what tells rows apart.

The document is built by hand: a 16-layer decoder, analytic on an H200-like roof (4.8 TB/s), each layer's
gate, up and down projections (2, 2 and 3 µs of roofline time), its two RMSNorms' pow -> mul (1 µs each, the
pow's 1 MB output read by the mul: a pointwise chain), and an lm_head (3 µs).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import run, write
from rich.console import Console

from roofline.analysis.profile_view import profile_view, rollup
from roofline.analysis.repeats import index_label, repeated
from roofline.core.document import Document
from roofline.core.record import Record
from roofline.report.profile import shorten_left, top_table, whatif_view
from roofline.report.terminal import short_label

US = 1e-6
LAYERS = 16
BW = 4.8e12  # bytes/s: the roof's bandwidth, which a fusion's saved bytes are divided by


def rec(op: str, module: str, roof_s: float, shapes: list[list[int]], *, phase: str | None = None,
        time_s: float | None = None) -> Record:
    return Record.from_dict({
        "op": op, "variant": None, "params": {}, "dtype": "bf16", "flops": 1e6, "bytes_read": 1e6,
        "bytes_written": 1e6, "bytes": 2e6, "arithmetic_intensity": 0.5, "gpu": "h200", "peak_flops_per_s": 989e12,
        "peak_bytes_per_s": BW, "ridge_point": 206.0, "bound": "memory", "roofline_time_s": roof_s,
        "time_s": time_s, "module": module, "count": 1, "input_shapes": shapes, "phase": phase,
        "roofline_fraction": roof_s / time_s if time_s else None})


def decoder_doc() -> Document:
    records, dataflow = [], []
    for i in range(LAYERS):
        m = f"model.layers.{i}"
        records += [rec("aten::mm", f"{m}.mlp.gate_proj", 2 * US, [[128, 256], [256, 512]]),
                    rec("aten::mm", f"{m}.mlp.up_proj", 2 * US, [[128, 256], [256, 512]]),
                    rec("aten::mm", f"{m}.mlp.down_proj", 3 * US, [[128, 512], [512, 256]])]
        for norm in ("input_layernorm", "post_attention_layernorm"):
            dataflow.append([len(records), len(records) + 1, 1e6, 1])  # pow -> mul: 1 MB
            records += [rec("aten::pow.Tensor_Scalar", f"{m}.{norm}", 1 * US, [[128, 256]]),
                        rec("aten::mul.Tensor", f"{m}.{norm}", 1 * US, [[128, 256], [128, 1]])]
    records.append(rec("aten::mm", "lm_head", 3 * US, [[128, 256], [256, 1024]]))
    total = sum(r.roofline_time_s or 0.0 for r in records)  # 16 x (2 + 2 + 3 + 4 x 1) + 3 = 179 µs
    summary = {"name": "decoder", "mode": "analytic", "roofline_time_s": total, "calls": len(records),
               "dataflow": dataflow, "without_formula": [], "notes": []}
    return Document(device={"kind": "gpu", "name": "NVIDIA H200"}, records=records, extra={"profile": summary})


def render(renderable: Any, width: int = 80) -> str:
    console = Console(width=width, record=True, highlight=False)
    console.print(renderable)
    return console.export_text()


def test_index_label_writes_the_layers_of_a_group() -> None:
    paths = [f"model.layers.{i}.mlp" for i in range(16)]
    assert index_label(paths) == "model.layers.{0..15}.mlp"
    assert index_label(paths[:4] + paths[5:]) == "model.layers.{0..3,5..15}.mlp"  # layer 4 elsewhere
    assert index_label(["layers.0.mlp", "layers.2.mlp"]) == "layers.{0,2}.mlp"  # a run of two is listed
    assert index_label(["s.0.b.1", "s.0.b.2", "s.1.b.1"]) == "s.{0,1}.b.{1,2}"  # each varying index its set
    assert index_label(["layers.3.mlp"]) == "layers.3.mlp"


def test_repeats_are_the_same_op_on_the_same_shapes_in_paths_equal_but_for_an_index() -> None:
    doc = decoder_doc()
    groups = repeated(doc.records)
    # 7 per layer (gate, up, down, 2 x (pow, mul)) over 16 layers, and lm_head alone
    assert len(groups) == 8 and sorted(len(g) for g in groups) == [1] + [16] * 7
    down = next(g for g in groups if doc.records[g[0]].module == "model.layers.0.mlp.down_proj")
    assert down == list(range(2, 7 * LAYERS, 7))  # every layer's down_proj, record 2 of each 7


def test_the_top_table_of_a_16_layer_decoder_is_one_row_per_repeated_block() -> None:
    """Issue 52: the top-20 table of a 16-layer decoder was 19 near-identical `mm` rows, one per layer."""
    doc = decoder_doc()
    view = profile_view(doc, top=5)
    first = view.top[0]
    assert (first.key, first.module, first.repeats, first.calls) == ("mm", "model.layers.{0..15}.mlp.down_proj",
                                                                     16, 16)
    assert first.time_s == pytest.approx(16 * 3 * US) and first.share == pytest.approx(48 / 179)  # of 179 µs
    assert [x.module for x in view.top[1:3]] == ["model.layers.{0..15}.mlp.gate_proj",
                                                 "model.layers.{0..15}.mlp.up_proj"]  # 32 µs each
    text = render(top_table(view))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "model.layers.{0..15}.mlp.down_proj" in text and "Top 5 rows of 113 records" in text
    raw = profile_view(doc, top=20, group=False)  # the raw rows: the 16 down_proj first, then lm_head
    assert [x.module for x in raw.top[:17]] == [f"model.layers.{i}.mlp.down_proj" for i in range(16)] + ["lm_head"]
    assert all(x.repeats == 1 for x in raw.top) and raw.grouped is False and view.to_dict()["grouped"] is True


def test_the_module_rollup_names_its_layers_and_no_group_keeps_them_apart() -> None:
    doc = decoder_doc()
    s = doc.extra["profile"]
    grouped = {x.key: round(x.time_s / US) for x in rollup(doc.records, s, "module", depth=2)}
    assert grouped == {"model.layers.{0..15}": 176, "lm_head": 3}  # 16 x 11 µs
    apart = {x.key: round(x.time_s / US) for x in rollup(doc.records, s, "module", depth=2, group=False)}
    assert len(apart) == 17 and apart["model.layers.7"] == 11
    assert list(apart)[:3] == ["model.layers.0", "model.layers.1", "model.layers.2"]  # 2 before 10


def test_the_what_if_lists_a_repeated_fusion_once() -> None:
    """Issue 52: the fusion what-if listed 20 identical 'pointwise chain in model.layers.N...' rows, each x1."""
    doc = decoder_doc()
    fusions = profile_view(doc).whatif.fusions
    # pow -> mul per norm: the mul reads 1 MB and nothing else reads the pow: its write goes too, 2 MB each
    assert [(f.module, f.occurrences, f.repeats) for f in fusions] == [
        ("model.layers.{0..15}.input_layernorm", 16, 16), ("model.layers.{0..15}.post_attention_layernorm", 16, 16)]
    assert fusions[0].bytes_saved == pytest.approx(16 * 2e6) and fusions[0].saved_s == pytest.approx(16 * 2e6 / BW)
    assert len(fusions[0].records) == 32  # the pow and mul of each of 16 layers
    raw = profile_view(doc, top=40, group=False).whatif.fusions
    assert len(raw) == 32 and {f.occurrences for f in raw} == {1}
    text = render(whatif_view(profile_view(doc).whatif))
    assert text.count("pointwise chain: pow -> mul") == 2 and "in model.layers.{0..15}.input_layernorm" in text


def test_names_at_80_columns_keep_the_tail_that_tells_them_apart() -> None:
    """Issue 52: 'input_layernorm' and 'post_attention_layernorm' both read 'layers.0.…layernorm'."""
    for path in ("model.layers.0.{}", "model.layers.{{0..15}}.{}", "LlamaForCausalLM.model.layers.11.{} [bwd]"):
        a, b = path.format("input_layernorm"), path.format("post_attention_layernorm")
        for width in range(14, len(b)):
            short = shorten_left(a, width), shorten_left(b, width)
            assert short[0] != short[1] and max(map(len, short)) <= width, (width, short)
            assert all(s.endswith(" [bwd]") for s in short) or "[bwd]" not in path  # the mark kept whole
    assert shorten_left("model.layers.11.post_attention_layernorm", 20) == "layers.11.post_…norm"
    assert shorten_left("model.layers.{0..15}.post_attention_layernorm", 33) == "layers.{0..15}.post…layernorm"
    assert shorten_left("model.layers.{0..15}.mlp.down_proj", 25) == "layers.{0..15}.…down_proj"


def test_a_backward_root_op_reads_whole_beside_a_long_op() -> None:
    """Issue 52: the root module's backward ops read '…oot) [bwd]' beside a long op name, which kept its
    width whole ('sdpa_fused_overrideable_backward': 32 columns, 10 left to the module)."""
    doc = Document(device={"kind": "cpu", "name": "AMD EPYC"}, records=[
        rec("aten::_scaled_dot_product_fused_attention_overrideable_backward", "model.layers.0.self_attn",
            150 * US, [[1, 4, 128, 64]], phase="backward", time_s=300 * US),
        rec("aten::nll_loss_backward", "", 5 * US, [[128]], phase="backward", time_s=10 * US)],
        extra={"profile": {"name": "t", "mode": "timed", "calls": 2, "notes": []}})
    text = render(top_table(profile_view(doc)))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert re.search(r" \(root\) \[bwd\] ", text) and "sdpa_fused_overrideabl…" in text  # both cut


def test_two_chart_labels_of_one_module_read_apart() -> None:
    """Issue 52: 'add.Tensor bf16 in Func numel=32768 run=None' and '... numel=16384 run=None' both read
    'add.Tensor bf16 in … run=None' in the terminal chart's legend."""
    a, b = (f"aten::add.Tensor bf16 in Func numel={n} run=None" for n in (32768, 16384))
    for width in range(24, 40):
        assert short_label(a, width) != short_label(b, width) and len(short_label(a, width)) <= width
    label = "aten::mm bf16 in model.layers.11.post_attention_layernorm numel=4096"
    assert short_label(label, 50) == "mm bf16 in layers.11.post…layernorm numel=4096"  # the parameter whole


STACK = """
import torch
import roofline

class Stack(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(64, 64) for _ in range(4))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x

model = Stack()
with roofline.region("step"):
    model(torch.randn(8, 64))
"""


def test_profile_groups_by_default_and_no_group_gives_the_raw_rows(capsys: pytest.CaptureFixture[str],
                                                                   tmp_path: Path) -> None:
    script = str(write(tmp_path / "stack.py", STACK))
    code, out, err = run(capsys, "profile", script, "--no-time", "--gpu", "h100", "--top", "3")
    assert code == 0, err
    assert re.search(r" addmm +layers\.\{0\.\.3\} ", out) and "layers.0 " not in out  # 4 layers' addmm, one row
    code, out, err = run(capsys, "profile", script, "--no-time", "--gpu", "h100", "--top", "3", "--no-group")
    assert code == 0, err
    assert "{0..3}" not in out and len(re.findall(r" addmm +layers\.\d ", out)) == 3


def residual_doc() -> Document:
    """4 layers, each with two GEMMs (o_proj, down_proj) whose outputs one residual add record reads (the add's
    two calls share a record: the same module, op and shapes)."""
    records, dataflow = [], []
    for i in range(4):
        m = f"model.layers.{i}"
        dataflow += [[len(records), len(records) + 2, 1e6, 1], [len(records) + 1, len(records) + 2, 1e6, 1]]
        records += [rec("aten::mm", f"{m}.self_attn.o_proj", 2 * US, [[128, 256], [256, 256]]),
                    rec("aten::mm", f"{m}.mlp.down_proj", 2 * US, [[128, 512], [512, 256]]),
                    rec("aten::add.Tensor", m, 1 * US, [[128, 256], [128, 256]])]
    summary = {"name": "residual", "mode": "analytic", "roofline_time_s": 20 * US, "calls": len(records),
               "dataflow": dataflow, "without_formula": [], "notes": []}
    return Document(device={"kind": "gpu", "name": "NVIDIA H200"}, records=records, extra={"profile": summary})


def test_two_fusions_that_would_read_alike_are_named_by_their_modules() -> None:
    """Seen on Llama-3.2-1B's analytic profile: 'GEMM/conv epilogue: mm -> add in model.layers.{0..15}' twice
    (o_proj -> residual add, down_proj -> residual add)."""
    doc = residual_doc()
    fusions = [f for f in profile_view(doc).whatif.fusions if f.ops == ("mm", "add")]
    assert sorted(f.module for f in fusions) == ["model.layers.{0..3}.mlp.down_proj, model.layers.{0..3}",
                                                 "model.layers.{0..3}.self_attn.o_proj, model.layers.{0..3}"]
    text = render(whatif_view(profile_view(doc).whatif), 120)
    labels = [line.strip() for line in text.splitlines() if line.strip().startswith("in ")]
    assert len(labels) == len(set(labels)) == 2
