"""The training family's formulas (capture/formulas_training.py) and the analytic whole-RNN record
(capture/whole_rnn.py): each count against the hand arithmetic beside it, the RNNs' matrix products against
torch's FlopCounterMode where it counts them (the step-by-step CPU decomposition)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from roofline.capture import formulas_training
from roofline.capture import profile as profile_fn
from roofline.capture.cost import cost_of
from roofline.capture.records import ProfiledCall
from roofline.capture.registry import FORMULAS
from roofline.capture.trace import OpCall, TensorMeta

F32, I64 = 4, 8
# torch.backends.mkldnn.flags() (oneDNN off: the step-by-step RNNs FlopCounterMode counts) warns about TF32
pytestmark = pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")


def calls(fn: Callable[[], Any], analytic: bool = False) -> dict[str, list[ProfiledCall]]:
    """The profiled calls of one run of `fn` (on the CPU, timed; or analytic), by packet ('aten::mse_loss')."""
    prof = profile_fn(fn, time=False) if analytic else profile_fn(fn, warmup=0)
    out: dict[str, list[ProfiledCall]] = defaultdict(list)
    for c in prof.calls:
        out[c.call.op.split(".")[0]].append(c)
    return out


def one(found: dict[str, list[ProfiledCall]], op: str) -> ProfiledCall:
    (c,) = found[op]
    return c


def test_every_name_the_family_registers_is_an_aten_op_of_this_torch() -> None:
    names = [n for n, fn in FORMULAS.items() if fn.__module__ == formulas_training.__name__]
    assert len(names) > 60
    for name in names:
        packet, _, overload = name.removeprefix("aten::").partition(".")
        op = getattr(torch.ops.aten, packet)  # raises for a misspelt op
        assert not overload or overload in op.overloads(), name


def meta(shape: tuple[int, ...], storage: int) -> TensorMeta:
    strides = tuple(int(torch.tensor(shape[i + 1:]).prod()) for i in range(len(shape)))
    return TensorMeta(shape, "fp32", "cuda", storage, 0, strides, 4, 4 * int(torch.tensor(shape).prod()))


def call(op: str, args: dict[str, Any], outputs: tuple[TensorMeta, ...] = ()) -> OpCall:
    inputs = tuple(v for v in args.values() if isinstance(v, TensorMeta))
    return OpCall(0, op, "", None, inputs, outputs, args, (), {}, None, frozenset(), frozenset(), frozenset())


# -- losses -----------------------------------------------------------------------------------------------

LOSSES = [  # (loss, forward op, FLOPs per element forward (with the mean's add), backward)
    (F.mse_loss, "aten::mse_loss", 2 + 1, 3),  # sub, square, sum | sub, two muls
    (F.smooth_l1_loss, "aten::smooth_l1_loss", 5 + 1, 4),
    (F.huber_loss, "aten::huber_loss", 5 + 1, 4),
    (lambda x, y: F.binary_cross_entropy(torch.sigmoid(x), y), "aten::binary_cross_entropy", 8 + 1, 6),
    (F.soft_margin_loss, "aten::soft_margin_loss", 4 + 1, 6),
]


@pytest.mark.parametrize(("loss", "op", "per", "per_backward"), LOSSES)
def test_pointwise_losses_and_their_backward(loss: Any, op: str, per: int, per_backward: int) -> None:
    x, y = torch.randn(6, 4, requires_grad=True), torch.rand(6, 4)
    found = calls(lambda: loss(x, y).backward())
    assert one(found, op).cost.flops == 24 * per  # 6 x 4 elements
    assert one(found, op + "_backward").cost.flops == 24 * per_backward


def test_bce_with_logits_and_a_weight() -> None:
    x, y, w = torch.randn(6, 4), torch.rand(6, 4), torch.rand(6, 4)
    c = one(calls(lambda: F.binary_cross_entropy_with_logits(x, y, weight=w, reduction="sum")),
            "aten::binary_cross_entropy_with_logits")
    assert c.cost.flops == 24 * (9 + 1 + 1)  # 9 per element, the weight's mul, the sum's add


def test_an_unreduced_loss_adds_nothing_per_element() -> None:
    x, y = torch.randn(5, 3), torch.randn(5, 3)
    assert one(calls(lambda: F.mse_loss(x, y, reduction="none")), "aten::mse_loss").cost.flops == 15 * 2


def test_nll_loss_reads_one_log_probability_per_target() -> None:
    logits = torch.randn(6, 1000, requires_grad=True)
    target = torch.randint(0, 1000, (6,))
    found = calls(lambda: F.cross_entropy(logits, target).backward())
    fwd = one(found, "aten::nll_loss_forward")
    assert fwd.cost.flops == 6 * 2  # per target: negate, the mean's sum
    # one fp32 log-probability per target (not the 6 x 1000 input) and the int64 targets
    assert fwd.traffic.bytes_read == 6 * F32 + 6 * I64
    bwd = one(found, "aten::nll_loss_backward")
    assert bwd.cost.flops == 6 * 2  # per target: negate (x grad), the mean's division
    # grad_output and total_weight (scalars) and the targets read; the forward's input (shape only) not read
    assert bwd.traffic.bytes_read == F32 + F32 + 6 * I64
    assert bwd.traffic.bytes_written == 6 * 1000 * F32  # the whole gradient, zeros included


def test_weighted_nll_loss2d() -> None:
    x, target, w = torch.randn(2, 5, 3, 3), torch.randint(0, 5, (2, 3, 3)), torch.rand(5)
    fwd = one(calls(lambda: F.cross_entropy(x, target, weight=w)), "aten::nll_loss2d_forward")
    # 2 x 3 x 3 = 18 targets x (negate, weight mul, total-weight add, sum)
    assert fwd.cost.flops == 18 * 4
    assert fwd.traffic.bytes_read == 18 * F32 + 18 * I64 + 5 * F32  # a log-probability per target, targets, weight


# -- pooling, upsampling, padding, views ------------------------------------------------------------------

def test_max_pool_backward_adds_each_gradient_once_and_does_not_read_the_input() -> None:
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    c = one(calls(lambda: F.max_pool2d(x, 2).sum().backward()), "aten::max_pool2d_with_indices_backward")
    assert c.cost.flops == 2 * 3 * 4 * 4  # one add per output gradient (96)
    # grad_output (a stride-0 expand of the sum's scalar gradient: 1 element) and the int64 indices; not x
    assert c.traffic.bytes_read == 1 * F32 + 96 * I64
    assert c.traffic.bytes_written == 2 * 3 * 8 * 8 * F32


def test_adaptive_max_pool_backward() -> None:
    x = torch.randn(1, 2, 6, 6, requires_grad=True)
    c = one(calls(lambda: (F.adaptive_max_pool2d(x, 3) * 2).sum().backward()), "aten::adaptive_max_pool2d_backward")
    assert c.cost.flops == 2 * 3 * 3  # one add per output gradient
    assert c.traffic.bytes_read == 18 * F32 + 18 * I64  # grad_output, indices


@pytest.mark.parametrize(("kernel", "stride"), [(2, 2), (3, 1)])
def test_avg_pool_backward(kernel: int, stride: int) -> None:
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    found = calls(lambda: (F.avg_pool2d(x, kernel, stride) * 2).sum().backward())
    out = 8 // 2 if stride == 2 else 8 - 2  # 4 x 4 or 6 x 6 windows
    c = one(found, "aten::avg_pool2d_backward")
    assert c.cost.flops == 2 * 3 * out * out * kernel * kernel  # one add per tap of each gradient element
    assert c.traffic.bytes_read == 2 * 3 * out * out * F32  # grad_output only


def test_adaptive_avg_pool_backward() -> None:
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    c = one(calls(lambda: F.adaptive_avg_pool2d(x, 4).sum().backward()), "aten::_adaptive_avg_pool2d_backward")
    assert c.cost.flops == 2 * 3 * 8 * 8  # one add per input element (384)


UPSAMPLES = [  # (input shape, mode, taps)
    ((1, 2, 4), "linear", 2),
    ((1, 2, 4, 4), "bilinear", 4),
    ((1, 2, 4, 4), "bicubic", 16),
    ((1, 2, 2, 4, 4), "trilinear", 8),
]


@pytest.mark.parametrize(("shape", "mode", "taps"), UPSAMPLES)
def test_upsample_and_backward(shape: tuple[int, ...], mode: str, taps: int) -> None:
    x = torch.randn(*shape, requires_grad=True)
    found = calls(lambda: (F.interpolate(x, scale_factor=2, mode=mode) * 2).sum().backward())
    out = x.numel() * 2 ** (len(shape) - 2)  # each spatial dimension doubled
    name = {"linear": "upsample_linear1d", "bilinear": "upsample_bilinear2d", "bicubic": "upsample_bicubic2d",
            "trilinear": "upsample_trilinear3d"}[mode]
    assert one(found, f"aten::{name}").cost.flops == out * (2 * taps - 1)  # taps muls, taps - 1 adds
    assert one(found, f"aten::{name}_backward").cost.flops == out * 2 * taps  # a mul and an add per tap


def test_nearest_upsample_backward() -> None:
    x = torch.randn(1, 2, 4, 4, requires_grad=True)
    found = calls(lambda: (F.interpolate(x, scale_factor=2) * 2).sum().backward())
    assert one(found, "aten::upsample_nearest2d").cost.flops == 0  # a copy
    assert one(found, "aten::upsample_nearest2d_backward").cost.flops == 1 * 2 * 8 * 8  # one add per gradient


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_padding_and_its_backward(mode: str) -> None:
    x = torch.randn(1, 2, 4, 4, requires_grad=True)
    found = calls(lambda: (F.pad(x, (1, 1, 1, 1), mode=mode) * 2).sum().backward())
    name = "reflection_pad2d" if mode == "reflect" else "replication_pad2d"
    assert one(found, f"aten::{name}").cost.flops == 0
    bwd = one(found, f"aten::{name}_backward")
    assert bwd.cost.flops == 1 * 2 * 6 * 6  # one add per gradient element
    assert bwd.traffic.bytes_read == 72 * F32  # grad_output; the forward's input (shape only) not read


def test_view_backward_is_a_copy_into_zeros() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    found = calls(lambda: ((x[1] * 2).sum() + (x[:, 1:3] * 2).sum()).backward())
    for op in ("aten::select_backward", "aten::slice_backward"):
        c = one(found, op)
        assert c.cost.flops == 0 and c.cost.source == "rule:copy"
        assert c.traffic.bytes_written == 3 * 4 * F32  # the whole gradient, zeros included


# -- activations torch does not tag pointwise ---------------------------------------------------------------

ACTIVATIONS = [  # (function, op, FLOPs per element)
    (F.hardswish, "aten::hardswish", 4),
    (F.hardswish, "aten::hardswish_backward", 5),
    (F.hardsigmoid, "aten::hardsigmoid_backward", 3),
    (F.hardtanh, "aten::hardtanh_backward", 2),
    (F.leaky_relu, "aten::leaky_relu_backward", 2),
    (F.elu, "aten::elu_backward", 4),
    (F.softplus, "aten::softplus_backward", 6),
    (F.logsigmoid, "aten::log_sigmoid_forward", 6),
    (F.logsigmoid, "aten::log_sigmoid_backward", 5),
    (lambda x: F.prelu(x, torch.full((3,), 0.25)), "aten::_prelu_kernel", 2),
    (lambda x: F.prelu(x, torch.full((3,), 0.25)), "aten::_prelu_kernel_backward", 4),
]


@pytest.mark.parametrize(("fn", "op", "per"), ACTIVATIONS)
def test_untagged_activations(fn: Any, op: str, per: int) -> None:
    x = torch.randn(2, 3, 5, requires_grad=True)
    found = calls(lambda: (fn(x) * 2).sum().backward())
    assert one(found, op).cost.flops == 30 * per  # 2 x 3 x 5 elements


def test_glu_counts_per_output_element() -> None:
    x = torch.randn(4, 6, requires_grad=True)
    found = calls(lambda: (F.glu(x, 1) * 2).sum().backward())
    assert one(found, "aten::glu").cost.flops == 4 * 3 * 5  # a x sigmoid(b) on the 4 x 3 halves: 4 + 1
    assert one(found, "aten::glu_backward").cost.flops == 4 * 3 * 9  # sigmoid (4), both halves' gradients (5)


def test_in_place_masked_fill() -> None:
    x, mask = torch.randn(4, 5), torch.rand(4, 5) > 0.5
    assert one(calls(lambda: x.clone().masked_fill_(mask, 0.0)), "aten::masked_fill_").cost.flops == 20


# -- dropout, random draws --------------------------------------------------------------------------------

def test_cpu_dropout_draws_a_mask_in_place_without_reading_it() -> None:
    x = torch.randn(8, 16)
    c = one(calls(lambda: F.dropout(x, 0.25, training=True)), "aten::bernoulli_")
    assert c.cost.flops == 128  # one compare per element (a uniform draw against p)
    assert c.traffic.bytes_read == 0 and c.traffic.bytes_written == 128 * F32


def test_native_dropout_and_backward() -> None:
    x = torch.randn(8, 16)
    found = calls(lambda: torch.ops.aten.native_dropout_backward(*torch.native_dropout(x, 0.25, True), 4 / 3))
    fwd = one(found, "aten::native_dropout")
    assert fwd.cost.flops == 128 * 3  # compare, times the mask, times the scale
    assert fwd.traffic.bytes_written == 128 * F32 + 128 * 1  # the output and the bool mask
    assert one(found, "aten::native_dropout_backward").cost.flops == 128 * 2  # times the mask, times the scale
    evaluation = one(calls(lambda: torch.native_dropout(x, 0.25, False)), "aten::native_dropout")
    assert evaluation.cost.flops == 0  # a copy


def test_random_draws_write_and_count_nothing() -> None:
    found = calls(lambda: (torch.rand(10), torch.randn(3, 4), torch.empty(6).uniform_(), torch.empty(6).normal_()))
    for op, numel in (("aten::rand", 10), ("aten::randn", 12), ("aten::uniform_", 6), ("aten::normal_", 6)):
        c = one(found, op)
        assert c.cost.flops == 0 and c.traffic.bytes_read == 0 and c.traffic.bytes_written == numel * F32


# -- embedding bags ---------------------------------------------------------------------------------------

def test_embedding_bag_reads_the_rows_it_gathers() -> None:
    table = torch.randn(50, 4, requires_grad=True)
    idx, offsets = torch.tensor([1, 2, 3, 1, 7, 9, 9, 0]), torch.tensor([0, 4])
    found = calls(lambda: (F.embedding_bag(idx, table, offsets) * 2).sum().backward())
    c = one(found, "aten::_embedding_bag")
    assert c.cost.flops == 8 * 4  # 8 indices x 4 columns, one add into the bag each
    i = next(i for i, t in enumerate(c.call.inputs) if t.shape == (50, 4))
    assert c.cost.read_bytes[i] == 8 * 4 * F32  # the gathered rows, not the 50-row table
    backward = [c for op, cs in found.items() if "embedding_bag" in op and "backward" in op for c in cs]
    assert [c.cost.flops for c in backward if c.cost.source == "rule:scatter-add"] == [8 * 4]


# -- recurrent layers -------------------------------------------------------------------------------------

def _gate_matmul_flops(rows: int, inputs: int, hidden: int, gates: int, layers: int, directions: int,
                       proj: int = 0) -> int:
    """2 x rows x (I + P) x G x H per layer and direction (the input of layers after the first: D x P), and the
    projection's 2 x rows x H x P."""
    out = proj or hidden
    total = 0
    for layer in range(layers):
        i = inputs if layer == 0 else directions * out
        total += directions * (2 * rows * (i + out) * gates * hidden + (2 * rows * hidden * proj if proj else 0))
    return total


def test_an_analytic_gru_over_1000_steps_is_one_record() -> None:
    gru = nn.GRU(8, 16, num_layers=2, bidirectional=True).eval()  # evaluation: no reserve written
    x = torch.randn(1000, 2, 8)
    with torch.no_grad():
        found = calls(lambda: gru(x), analytic=True)
    assert set(found) == {"aten::zeros", "aten::_cudnn_rnn"}  # h0, and the whole GRU as one call
    c = one(found, "aten::_cudnn_rnn")
    rows = 1000 * 2
    # layer 0, per direction: 2 x 2000 x (8 + 16) x 3 x 16 = 4,608,000; layer 1 (input 2 x 16): 2 x 2000 x 48 x 48
    # = 9,216,000; both directions: 2 x (4,608,000 + 9,216,000)
    assert c.cost.flops == c.cost.matmul_flops == 27_648_000 == _gate_matmul_flops(rows, 8, 16, 3, 2, 2)
    # per layer and direction: 2000 rows x (16 units x 16 + the 96 bias elements)
    assert c.cost.extra_flops == 4 * 2000 * (16 * 16 + 2 * 48)
    assert c.cost.tensor_cores
    # reads the input, h0 and the weights; writes the output (1000 x 2 x 32) and h_n (4 x 2 x 16), no reserve
    weights = sum(p.numel() for p in gru.parameters())
    assert c.traffic.bytes_read == (x.numel() + 4 * 2 * 16 + weights) * F32
    assert c.traffic.bytes_written == (1000 * 2 * 32 + 4 * 2 * 16) * F32


def test_an_analytic_lstm_training_step_records_the_backward_once() -> None:
    torch.manual_seed(0)
    lstm = nn.LSTM(6, 10, num_layers=2, batch_first=True)
    x = torch.randn(3, 7, 6)
    found = calls(lambda: lstm(x)[0].sum().backward(), analytic=True)
    fwd, bwd = one(found, "aten::_cudnn_rnn"), one(found, "aten::_cudnn_rnn_backward")
    matmul = _gate_matmul_flops(21, 6, 10, 4, 2, 1)  # 21 rows: 2 x 21 x (6 + 10) x 40 + 2 x 21 x 20 x 40
    assert matmul == 2 * 21 * 16 * 40 + 2 * 21 * 20 * 40 == 60_480
    assert fwd.cost.flops == matmul
    assert bwd.cost.flops == 2 * matmul  # the data gradient's products and the weights'
    assert bwd.cost.extra_flops == 2 * 21 * (2 * 10 * 22 + 80)  # twice the cell's 22 per unit, the bias gradients
    # in training the forward writes the reserve the backward reads: per row, each layer's 40 gate activations
    # and 10 cell states, and layer 0's 10 outputs
    reserve = 21 * (2 * (40 + 10) + 10)
    assert fwd.traffic.bytes_written == (21 * 10 + 2 * 3 * 10 * 2 + reserve) * F32  # output, h_n and c_n, reserve
    # the backward writes the weights' gradients (and the input's and the states'), as many bytes as they hold
    weights = sum(p.numel() for p in lstm.parameters())
    assert bwd.traffic.bytes_written == (weights + x.numel() + 2 * 2 * 3 * 10) * F32


@pytest.mark.parametrize(("cls", "kwargs", "gates"), [
    (nn.LSTM, {}, 4), (nn.LSTM, {"bidirectional": True}, 4), (nn.GRU, {}, 3), (nn.GRU, {"bidirectional": True}, 3),
    (nn.RNN, {"nonlinearity": "relu"}, 1), (nn.LSTM, {"proj_size": 3}, 4)])
def test_rnn_matmuls_equal_flop_counter_of_the_step_by_step_run(cls: Any, kwargs: dict[str, Any], gates: int) -> None:
    """FlopCounterMode counts the addmm/mm of the CPU's step-by-step RNN (oneDNN off); the analytic record of
    the whole RNN counts the same products."""
    torch.manual_seed(0)
    rnn = cls(5, 7, num_layers=2, **kwargs)
    x = torch.randn(4, 3, 5)
    with torch.no_grad(), torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False) as counter:
        rnn(x)
    with torch.no_grad():
        c = one(calls(lambda: rnn(x), analytic=True), "aten::_cudnn_rnn")
    directions = 2 if kwargs.get("bidirectional") else 1
    hand = _gate_matmul_flops(12, 5, 7, gates, 2, directions, kwargs.get("proj_size", 0))
    assert c.cost.matmul_flops == counter.get_total_flops() == hand


def test_a_packed_sequence_counts_its_rows() -> None:
    """cuDNN's packed input is (rows, I): the rows are the sequences' lengths summed. (An analytic run cannot
    pack a sequence or run nn.LSTM on one: both read lengths, which fake tensors do not hold.)"""
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 6)
    packed = nn.utils.rnn.pack_padded_sequence(torch.randn(5, 3, 4), [5, 3, 2])  # 10 rows
    with torch.no_grad(), torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False) as counter:
        lstm(packed)
    weights = [meta(tuple(p.shape), i) for i, p in enumerate(lstm._flat_weights)]
    c = cost_of(call("aten::_cudnn_rnn", {"input": meta((10, 4), 9), "weight": weights, "weight_stride0": 4,
                                          "hidden_size": 6, "batch_sizes": [3, 3, 2, 1, 1]}))
    assert c.flops == counter.get_total_flops() == 2 * 10 * (4 + 6) * 24  # 1,920 + 2,880 = 4,800


def test_timed_cpu_lstm_layers_count_what_the_analytic_record_counts() -> None:
    """The CPU runs oneDNN's layers (one per layer and direction): their products add up to the whole RNN's."""
    torch.manual_seed(0)
    lstm = nn.LSTM(5, 8, num_layers=2, bidirectional=True)
    x = torch.randn(6, 2, 5, requires_grad=True)
    timed = calls(lambda: lstm(x)[0].sum().backward())
    analytic = calls(lambda: lstm(x)[0].sum().backward(), analytic=True)
    layers, backward = timed["aten::mkldnn_rnn_layer"], timed["aten::mkldnn_rnn_layer_backward"]
    assert len(layers) == len(backward) == 4  # 2 layers x 2 directions
    hand = _gate_matmul_flops(12, 5, 8, 4, 2, 2)
    assert sum(c.cost.flops for c in layers) == one(analytic, "aten::_cudnn_rnn").cost.flops == hand
    assert sum(c.cost.flops for c in backward) == one(analytic, "aten::_cudnn_rnn_backward").cost.flops == 2 * hand
    assert sum(c.cost.extra_flops for c in layers) == one(analytic, "aten::_cudnn_rnn").cost.extra_flops


def test_fused_cells_count_their_pointwise_work() -> None:
    """CUDA's LSTMCell / GRUCell: two mm calls (counted as mm) and the fused cell, pointwise only."""
    b, h = 3, 5
    lstm = cost_of(call("aten::_thnn_fused_lstm_cell", {
        "input_gates": meta((b, 4 * h), 1), "hidden_gates": meta((b, 4 * h), 2), "cx": meta((b, h), 3),
        "input_bias": meta((4 * h,), 4), "hidden_bias": meta((4 * h,), 5)}))
    assert lstm.flops == b * h * 22 + b * 2 * 4 * h  # 22 per unit, the two biases added per row
    gru = cost_of(call("aten::_thnn_fused_gru_cell", {
        "input_gates": meta((b, 3 * h), 1), "hidden_gates": meta((b, 3 * h), 2), "hx": meta((b, h), 3)}))
    assert gru.flops == b * h * 16  # no biases
    lstm_back = cost_of(call("aten::_thnn_fused_lstm_cell_backward_impl", {
        "grad_hy": meta((b, h), 1), "grad_cy": meta((b, h), 2), "cx": meta((b, h), 3), "cy": meta((b, h), 4),
        "workspace": meta((b, 4 * h), 5), "has_bias": True}))
    assert lstm_back.flops == b * h * 44 + b * 4 * h  # twice the cell's; the gate gradients summed for the bias
    gru_back = cost_of(call("aten::_thnn_fused_gru_cell_backward", {
        "grad_hy": meta((b, h), 1), "workspace": meta((b, 6 * h), 2), "has_bias": False}))
    assert gru_back.flops == b * h * 32


def test_cudnn_backward_without_weight_gradients_counts_the_data_gradient_only() -> None:
    w = [meta((12, 2), 1), meta((12, 3), 2)]  # one GRU layer without biases: w_ih (3 x 4, 2), w_hh (3 x 4, 3)
    args = {"input": meta((5, 1, 2), 3), "weight": w, "weight_stride0": 2, "hidden_size": 4}
    fwd = cost_of(call("aten::_cudnn_rnn", args))
    assert fwd.flops == 2 * 5 * (24 + 36)  # 5 rows x 60 weight elements
    full = cost_of(call("aten::_cudnn_rnn_backward", {**args, "output_mask": [True, True, False, True]}))
    data = cost_of(call("aten::_cudnn_rnn_backward", {**args, "output_mask": [True, True, False, False]}))
    assert full.flops == 2 * fwd.flops and data.flops == fwd.flops


# -- small training steps: every op counted -------------------------------------------------------------

class _CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.drop, self.fc = nn.Dropout(0.2), nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(self.drop(F.adaptive_avg_pool2d(x, 4).flatten(1)))


class _Block(nn.Module):
    def __init__(self, vocab: int = 40, d: int = 16) -> None:
        super().__init__()
        self.emb, self.ln = nn.Embedding(vocab, d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 2, dropout=0.1, batch_first=True)
        self.fc1, self.fc2, self.drop, self.head = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.Dropout(0.1), \
            nn.Linear(d, vocab)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        x = self.emb(t)
        y = self.ln(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return self.head(x + self.drop(self.fc2(F.gelu(self.fc1(x)))))


@pytest.mark.parametrize("analytic", [False, True])
def test_small_training_steps_have_no_op_without_a_formula(analytic: bool) -> None:
    torch.manual_seed(0)
    cnn, block = _CNN(), _Block()
    opt = torch.optim.AdamW([*cnn.parameters(), *block.parameters()])
    img, labels, tokens = torch.randn(2, 3, 8, 8), torch.randint(0, 10, (2,)), torch.randint(0, 40, (2, 6))

    def step() -> None:
        opt.zero_grad()
        loss = F.cross_entropy(cnn(img), labels) + F.cross_entropy(block(tokens).flatten(0, 1), tokens.flatten())
        (loss + F.smooth_l1_loss(block(tokens), torch.zeros(2, 6, 40))).backward()
        opt.step()

    prof = profile_fn(step, time=False) if analytic else profile_fn(step, warmup=1)
    assert prof.summary["without_formula"] == []
