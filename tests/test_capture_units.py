"""The pieces of whole-model profiling on their own: kernel attribution from profiler events (built by hand,
so the GPU path is checked without a GPU), the formula registry and rules, view detection, module names,
byte counting of views."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from models import ConvNet
from torch.utils.flop_counter import FlopCounterMode

from roofline.capture import profile
from roofline.capture.cost import cost_of
from roofline.capture.kernels import UNLINKED, gpu_timeline, union_length
from roofline.capture.registry import FORMULAS, formula
from roofline.capture.trace import READ_RANGE, OpCall, TensorMeta, innermost_module, op_info, strip_root
from roofline.ops.attention import causal_pairs

# -- kernel attribution ----------------------------------------------------------------------------------

CPU, CUDA = "DeviceType.CPU", "DeviceType.CUDA"


def cpu(name: str, parent: object = None, kernels: list[tuple[str, float]] = (),  # type: ignore[assignment]
        id: int | None = None) -> SimpleNamespace:
    return SimpleNamespace(name=name, device_type=CPU, cpu_parent=parent, id=id,
                           kernels=[SimpleNamespace(name=k, duration=us) for k, us in kernels])


def device(name: str, start: float, end: float, linked: int = 1, annotation: bool = False) -> SimpleNamespace:
    rng = SimpleNamespace(start=start, end=end, elapsed_us=lambda: end - start)
    return SimpleNamespace(name=name, device_type=CUDA, time_range=rng, linked_correlation_id=linked,
                           kernels=[], cpu_parent=None, is_user_annotation=annotation)


def test_kernels_are_attributed_to_the_enclosing_op_range() -> None:
    region = cpu("roofline.region:step")
    call0 = cpu("roofline#0", region)
    mm = cpu("aten::mm", call0, [("gemm", 10.0)])  # the launching op, inside call 0's range
    inner = cpu("aten::copy_", cpu("aten::to", cpu("roofline#1", region)), [("copy", 2.0)])  # nested deeper
    compiled = cpu("CompiledFunction", region, [("triton_fused", 5.0)])  # no op range: unattributed
    events = [region, call0, mm, inner, compiled, device("gemm", 0, 10), device("copy", 10, 12),
              device("triton_fused", 12, 17), device("memset", 20, 21, linked=0),
              # the ranges' shadows on the device timeline: annotations, not work
              device("roofline#0", 0, 10, annotation=True), device("roofline.region:step", 0, 30, linked=0)]
    t = gpu_timeline(events)
    assert {i: c.kernels for i, c in t.calls.items()} == {0: [("gemm", pytest.approx(10e-6))],
                                                          1: [("copy", pytest.approx(2e-6))]}
    # the Triton kernel keeps its region; the memset tied to no op is named from the device event
    assert t.unattributed == [("triton_fused", pytest.approx(5e-6), "step"), ("memset", pytest.approx(1e-6), None)]
    assert t.busy_s == pytest.approx(18e-6)  # union of [0, 17) and [20, 21)
    assert t.span_s == pytest.approx(21e-6) and t.idle_s == pytest.approx(3e-6)
    assert t.device_total_s == pytest.approx(18e-6)


def test_the_traces_own_value_reads_are_in_no_call_and_no_total() -> None:
    # a sliding-window mask read for its pattern (an argmax and a gather, 4 + 3 us, as Mistral's on the H200:
    # 338 us of 2.38 ms listed as unattributed, coverage 85.8%) ran between call 0 and call 1
    call0 = cpu("roofline#0", None)
    mm = cpu("aten::mm", call0, [("gemm", 10.0)])
    read = cpu(READ_RANGE, None)
    argmax = cpu("aten::argmax", read, [("reduce_kernel", 4.0)])
    gather = cpu("aten::gather", cpu("aten::take_along_dim", read), [("scatter_gather", 3.0)])
    events = [call0, mm, read, argmax, gather, device("gemm", 0, 10), device("reduce_kernel", 10, 14),
              device("scatter_gather", 14, 17)]
    t = gpu_timeline(events)
    assert {i: c.kernels for i, c in t.calls.items()} == {0: [("gemm", pytest.approx(10e-6))]}
    assert t.unattributed == []  # not the program's kernels, and not "tied to nothing" either
    assert t.reading_s == pytest.approx(7e-6) and t.device_total_s == pytest.approx(10e-6)


def test_a_value_read_runs_inside_its_own_profiler_range() -> None:
    # with ranges (a GPU profile) the mask reader runs inside READ_RANGE, outside every roofline#i range, so its
    # kernels are found and left out (above); here on the CPU, the same ranges in a real torch.profiler
    from roofline.capture.trace import Tracer

    q = k = v = torch.randn(1, 2, 16, 8)
    i = torch.arange(16)
    window = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - 4)  # causal, 4 wide
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        tracer = Tracer(lambda: "", lambda: None, ranges=True)
        with tracer:
            F.scaled_dot_product_attention(q, k, v, attn_mask=window)
    sdpa = tracer.calls[-1]
    assert "attention" in sdpa.op and sdpa.values  # the mask was read
    reads = [e for e in prof.events() if e.name == READ_RANGE]
    assert len(reads) == 1 and not any(e.name.startswith("roofline#") for e in _parents(reads[0]))


def _parents(evt: object) -> list[object]:
    out, e = [], getattr(evt, "cpu_parent", None)
    while e is not None:
        out.append(e)
        e = e.cpu_parent
    return out


def test_a_correlations_kernels_are_counted_once() -> None:
    # torch hands a correlation's kernels to every CPU event of its id, and a kernel's first launch nests a
    # "Lazy Function Loading" event of the op's id inside the op (seen on an H100, 2026-12-06: a decode's cuDNN
    # attention at a new KV length, 28.4 + 2.4 us on the device timeline, was read as 56.8 + 4.8)
    call = cpu("roofline#0")
    sdpa = cpu("aten::_cudnn_attention_forward", call, [("sdpa", 28.4), ("combine", 2.4)], id=310)
    lazy = cpu("Lazy Function Loading", sdpa, [("sdpa", 28.4), ("combine", 2.4)], id=310)
    mm = cpu("aten::mm", call, [("gemm", 5.0)], id=311)
    events = [call, sdpa, lazy, mm, device("sdpa", 0, 28.4), device("combine", 28.4, 30.8), device("gemm", 31, 36)]
    t = gpu_timeline(events)
    assert t.calls[0].kernels == [("sdpa", pytest.approx(28.4e-6)), ("combine", pytest.approx(2.4e-6)),
                                  ("gemm", pytest.approx(5e-6))]
    assert t.calls[0].time_s == pytest.approx(t.device_total_s) and t.unattributed == []
    assert t.overcount_s == 0.0


def test_kernels_counted_beyond_the_device_time_are_said() -> None:
    # two CPU events holding one kernel with no id to tell them apart (an event kind the tool does not know):
    # the attribution exceeds the device's 10 us by 10, and the timeline says so rather than hide it
    call = cpu("roofline#0")
    events = [call, cpu("aten::mm", call, [("gemm", 10.0)]), cpu("unknown", call, [("gemm", 10.0)]),
              device("gemm", 0, 10)]
    t = gpu_timeline(events)
    assert t.overcount_s == pytest.approx(10e-6) and t.device_total_s == pytest.approx(10e-6)


def test_device_time_tied_to_nothing_is_kept_as_one_row() -> None:
    events = [device("k", 0, 4, linked=7)]  # linked to an op the profiler did not keep
    t = gpu_timeline(events)
    assert t.calls == {} and t.unattributed == [(UNLINKED, pytest.approx(4e-6), None)]


def test_union_length() -> None:
    assert union_length([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == 4.0
    assert union_length([]) == 0.0


# -- formulas --------------------------------------------------------------------------------------------

def test_the_registry_refuses_a_second_formula() -> None:
    assert "aten::mm" in FORMULAS
    with pytest.raises(RuntimeError, match="twice"):
        formula("aten::mm")(lambda call: None)


def test_causal_pairs() -> None:
    assert causal_pairs(8, 8, "top_left") == causal_pairs(8, 8, "bottom_right") == 36  # 1 + 2 + ... + 8
    assert causal_pairs(4, 8, "top_left") == 10  # query i sees keys 0..i: 1 + 2 + 3 + 4
    assert causal_pairs(4, 8, "bottom_right") == 5 + 6 + 7 + 8  # query i sees keys 0..i+4
    assert causal_pairs(8, 4, "top_left") == 1 + 2 + 3 + 4 * 5  # the last 5 queries see all 4 keys
    assert causal_pairs(8, 4, "bottom_right") == 1 + 2 + 3 + 4  # the first 4 queries see no key
    assert causal_pairs(1, 9, "top_left") == 1  # a decode step with is_causal: tril keeps key 0 alone
    assert causal_pairs(4, 8, "none") == 32


@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
def test_causal_pairs_count_what_torch_masks_keep(align: str) -> None:
    """Against the masks themselves: torch's is_causal is `ones(L, S).tril()` (top-left), causal_lower_right
    the bottom-right one; every (L, S) up to 7 x 7."""
    for sq in range(1, 8):
        for skv in range(1, 8):
            keep = torch.ones(sq, skv, dtype=torch.bool).tril(0 if align == "top_left" else skv - sq)
            assert causal_pairs(sq, skv, align) == int(keep.sum()), (sq, skv)


def test_top_left_causal_with_fewer_queries_than_keys() -> None:
    """torch's is_causal aligns the mask top-left: 4 queries against 8 keys score 1 + 2 + 3 + 4
    pairs (tril of ones(4, 8))."""
    q, k = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 8, 8)
    with profile(name="sdpa") as prof:
        F.scaled_dot_product_attention(q, k, k, is_causal=True)
    (rec,) = prof.records
    pairs = 1 * 2 * 10  # batch x heads x (1 + 2 + 3 + 4)
    assert rec.flops == pairs * (2 * 8 + 2 * 8)  # the two matrix products
    assert rec.extra_flops == 5 * pairs  # the softmax, apart (not on the tensor-core roof)
    assert rec.flops_source == "rule:attention" and rec.params == {}


def test_a_training_step_matches_flop_counter_and_is_covered() -> None:
    torch.manual_seed(0)
    model, x = ConvNet(), torch.randn(2, 3, 16, 16)

    def step() -> None:
        model.zero_grad()
        model(x).square().mean().backward()

    prof = profile(step, warmup=1)
    with FlopCounterMode(display=False) as counter:
        step()
    # convolution backward counted by torch's own formula; the matrix products agree call by call
    assert prof.summary["flops_matmul"] == counter.get_total_flops()
    assert any(r.op == "aten::convolution_backward" and r.flops_source == "torch.utils.flop_counter"
               for r in prof.records)
    assert prof.summary["coverage"] == 1.0 and prof.summary["without_formula"] == []


def meta(shape: tuple[int, ...], strides: tuple[int, ...] | None = None, storage: int = 1,
         storage_nbytes: int = 0) -> TensorMeta:
    strides = strides or tuple(int(torch.tensor(shape[i + 1:]).prod()) for i in range(len(shape)))
    return TensorMeta(shape, "fp32", "cpu", storage, 0, strides, 4, storage_nbytes or 4 * 10**6)


def call(op: str, args: dict, outputs: tuple[TensorMeta, ...] = ()) -> OpCall:  # type: ignore[type-arg]
    inputs = tuple(v for v in args.values() if isinstance(v, TensorMeta))
    return OpCall(0, op, "", None, inputs, outputs, args, (), {}, None, frozenset(), frozenset(), frozenset())


def test_a_formula_that_fails_gives_no_count_and_says_why() -> None:
    c = call("aten::mm", {"self": meta((2, 3, 4)), "mat2": meta((4, 5))})  # 3-D: not what mm takes
    cost = cost_of(c)
    assert cost.flops is None and "formula failed" in cost.note


def test_an_unknown_op_has_no_formula() -> None:
    cost = cost_of(call("mylib::fused_thing", {"x": meta((4,))}, (meta((4,)),)))
    assert cost.flops is None and cost.source is None


def test_nbytes_of_views() -> None:
    assert meta((4, 8)).nbytes == 4 * 8 * 4
    assert meta((32, 64), (0, 1), storage_nbytes=64 * 4).nbytes == 64 * 4  # expanded: the 64 stored elements
    assert meta((4, 0)).nbytes == 0
    assert meta((100,), (1,), storage_nbytes=40).nbytes == 40  # never more than the storage


# -- trace -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("op", "skip"), [
    (torch.ops.aten.view.default, True), (torch.ops.aten.t.default, True),
    (torch.ops.aten.split.Tensor, True), (torch.ops.aten.empty.memory_format, True),
    (torch.ops.aten._unsafe_view.default, True), (torch.ops.aten.add_.Tensor, False),
    (torch.ops.aten.contiguous.default, False), (torch.ops.aten.clone.default, False)])
def test_view_and_allocation_ops_are_skipped(op: object, skip: bool) -> None:
    assert op_info(op).skip is skip


def test_written_and_out_arguments() -> None:
    info = op_info(torch.ops.aten.add.out)
    assert info.written == {"out"} and info.out_only == {"out"}
    info = op_info(torch.ops.aten.add_.Tensor)
    assert info.written == {"self"} and info.out_only == frozenset()


def test_module_names() -> None:
    assert innermost_module({"Global", "Net", "Net.layers", "Net.layers.0", "Net.layers.0.mlp"}) == \
        "Net.layers.0.mlp"
    assert innermost_module({"Global"}) == ""
    names, root = strip_root(["Net.layers.0.mlp", "Net", ""])
    assert names == {"Net.layers.0.mlp": "layers.0.mlp", "Net": "", "": ""} and root == "Net"
    names, root = strip_root(["Net.fc", "Loss"])  # two roots: names kept whole
    assert names == {"Net.fc": "Net.fc", "Loss": "Loss"} and root is None


def test_attention_with_a_mask_without_data_counts_every_score_and_says_so() -> None:
    """Without data (a mask without values: uninitialised, as one computed from data the run does not have) the
    mask's pattern is unknown: the full square is counted. With data, or built from constants under the fake
    mode, the mask is read (tests/test_capture_models.py)."""
    from roofline.capture import fake_mode

    with fake_mode():
        q = torch.randn(1, 2, 8, 8)
        mask = torch.empty(8, 8, dtype=torch.bool)
    prof = profile(lambda: F.scaled_dot_product_attention(q, q, q, attn_mask=mask), time=False, gpu="h100",
                   name="masked")
    (rec,) = [r for r in prof.records if r.flops_source == "catalog:attention"]
    assert rec.flops == 2 * 8 * 8 * 4 * 8  # all 64 scores of each of the 2 heads: the mask's values unknown
    assert rec.extra_flops == 2 * 8 * 8 * 5  # their softmax
    assert prof.summary["attention_masked_calls"] == 1 and "mask tensor" in " ".join(prof.summary["notes"])
