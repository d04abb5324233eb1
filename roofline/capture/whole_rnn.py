"""Analytic runs: each torch.nn.LSTM / GRU / RNN call (`torch._VF.lstm`, `gru`, `rnn_tanh`, `rnn_relu`) recorded
as the one fused cuDNN call a GPU runs (`aten::_cudnn_rnn`, and `aten::_cudnn_rnn_backward` for its gradient),
beside trace.py's `WholeAttention`.

Without data (fake tensors on the CPU) torch runs an RNN step by step: a GRU over 1000 steps is some 15,000
fake ops, each traced and counted (33 s for a 2-layer GRU on a 2-core CPU), where a GPU runs one cuDNN kernel
per call. Here the call's outputs are made from their shapes alone (nothing is decomposed) and, when
gradients are wanted, an autograd.Function records the backward as one call too. Timed runs keep what the
device runs (oneDNN's layers, the CPU's per-step ops, cuDNN's calls).

What the records read and write: the input, the initial states and the weights; the output and final states,
and in training (`train`) cuDNN's reserve: what the backward reads back, taken as each layer's gate activations
(gates x hidden per row and direction, the LSTM's cell state too) and the inner layers' outputs (cuDNN's own
reserve layout is its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from roofline.capture.trace import Tracer

# torch._VF's RNN entries -> cuDNN's mode (cudnnRNNMode_t: RNN_RELU, RNN_TANH, LSTM, GRU) and gates per unit
_MODES = ((torch._VF.rnn_relu, 0, 1), (torch._VF.rnn_tanh, 1, 1), (torch._VF.lstm, 2, 4), (torch._VF.gru, 3, 3))
LSTM_MODE = 2


@dataclass
class RNNCall:
    """One _VF RNN call's arguments: `input(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)` or, for a packed sequence, `data(data, batch_sizes, hx, params, ...)`."""

    mode: int
    gates: int
    input: torch.Tensor
    hx: torch.Tensor
    cx: torch.Tensor | None
    params: list[torch.Tensor]
    has_biases: bool
    num_layers: int
    dropout: float
    train: bool
    bidirectional: bool
    batch_first: bool
    batch_sizes: list[int]

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def stride(self) -> int:
        """Weights per layer and direction (w_ih, w_hh[, b_ih, b_hh][, w_hr])."""
        return len(self.params) // (self.num_layers * self.directions)

    @property
    def hidden(self) -> int:
        return int(self.params[0].shape[0]) // self.gates

    @property
    def out_size(self) -> int:
        """Per direction: the hidden size, or the projection's (w_hh is gates*H x P)."""
        return int(self.params[1].shape[1])

    @property
    def rows(self) -> int:
        return self.input.numel() // int(self.input.shape[-1])

    def reserve_numel(self) -> int:
        """What the backward reads back (module docstring): per row and direction, each layer's gate
        activations (and the LSTM's cell state), and the inner layers' outputs."""
        per_layer = self.gates * self.hidden + (self.hidden if self.mode == LSTM_MODE else 0)
        inner = (self.num_layers - 1) * self.out_size
        return self.rows * self.directions * (self.num_layers * per_layer + inner)

    def cudnn_args(self) -> dict[str, Any]:
        """The call as aten::_cudnn_rnn's arguments, by name."""
        proj = self.out_size if self.out_size != self.hidden else 0
        return dict(input=self.input, weight=self.params, weight_stride0=self.stride, weight_buf=None, hx=self.hx,
                    cx=self.cx, mode=self.mode, hidden_size=self.hidden, proj_size=proj,
                    num_layers=self.num_layers, batch_first=self.batch_first, dropout=self.dropout,
                    train=self.train, bidirectional=self.bidirectional, batch_sizes=self.batch_sizes,
                    dropout_state=None)


def rnn_call(func: Any, args: tuple[Any, ...]) -> RNNCall | None:
    """The RNN call `func(*args)` is, or None when `func` is not one of torch._VF's RNNs (or the arguments
    are not what nn.LSTM / GRU / RNN pass)."""
    found = next(((mode, gates) for f, mode, gates in _MODES if f is func), None)
    if found is None or len(args) != 9:
        return None
    mode, gates = found
    packed = not isinstance(args[3], bool)
    if packed:
        x, sizes, hx, params, has_biases, layers, dropout, train, bidirectional = args
        batch_first = False
    else:
        x, hx, params, has_biases, layers, dropout, train, bidirectional, batch_first = args
        sizes = None
    cx = None
    if mode == LSTM_MODE:
        if not isinstance(hx, (list, tuple)) or len(hx) != 2:
            return None
        hx, cx = hx
    params = list(params)
    if not isinstance(x, torch.Tensor) or not isinstance(hx, torch.Tensor) or len(params) < 2:
        return None
    try:
        batch_sizes = [int(b) for b in sizes.tolist()] if isinstance(sizes, torch.Tensor) else []
    except (RuntimeError, NotImplementedError, ValueError):  # a fake tensor has no values
        batch_sizes = []
    call = RNNCall(mode, gates, x, hx, cx, params, bool(has_biases), int(layers), float(dropout), bool(train),
                   bool(bidirectional), bool(batch_first), batch_sizes)
    if len(params) % (call.num_layers * call.directions) or call.stride < 2 or call.hidden < 1:
        return None
    return call


class _Gradient(torch.autograd.Function):
    """The whole RNN's backward as one recorded call (forward: the outputs made by `WholeRNN`)."""

    @staticmethod
    def forward(ctx: Any, whole: WholeRNN, call: RNNCall, *tensors: torch.Tensor) -> Any:
        ctx.set_materialize_grads(False)  # unused outputs' gradients stay None (no zeros recorded)
        ctx.whole, ctx.call = whole, call
        outs, reserve = whole.forward(call)
        ctx.save_for_backward(outs[0], reserve)
        return outs

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> Any:
        output, reserve = ctx.saved_tensors
        n_states = 2 if ctx.call.cx is not None else 1
        return (None, None, *ctx.whole.backward(ctx.call, output, reserve, grads, ctx.needs_input_grad[2:], n_states))


class WholeRNN(TorchFunctionMode):
    """Analytic runs: each torch._VF RNN call as one `aten::_cudnn_rnn` record (and one
    `aten::_cudnn_rnn_backward` when gradients flow), its outputs made from shapes (module docstring)."""

    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self.tracer = tracer

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        call = None if kwargs else rnn_call(func, args)
        if call is None:
            return func(*args, **(kwargs or {}))
        tensors = [call.input, call.hx, *([call.cx] if call.cx is not None else []), *call.params]
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            outs = _Gradient.apply(self, call, *tensors)
        else:
            outs, _ = self.forward(call)
        if call.cx is not None:  # lstm: (output, (h, c)) as _VF returns it: output, h, c
            return outs[0], outs[1], outs[2]
        return outs[0], outs[1]

    def _record(self, func: Any, kwargs: dict[str, Any], run: Any) -> Any:
        if not self.tracer.recording():
            return run()
        return self.tracer.record_whole(func, (), kwargs, run)

    def forward(self, call: RNNCall) -> tuple[tuple[torch.Tensor, ...], torch.Tensor | None]:
        """Record the forward; (output, h_n[, c_n]) and the reserve (training)."""
        x = call.input

        def run() -> tuple[Any, ...]:
            out = x.new_empty((*x.shape[:-1], call.directions * call.out_size))
            hy = call.hx.new_empty(call.hx.shape)
            cy = call.cx.new_empty(call.cx.shape) if call.cx is not None else x.new_empty((0,))
            reserve = x.new_empty((call.reserve_numel(),)) if call.train else x.new_empty((0,))
            return out, hy, cy, reserve, x.new_empty((0,))

        out, hy, cy, reserve, _ = self._record(torch.ops.aten._cudnn_rnn.default, call.cudnn_args(), run)
        outs = (out, hy, cy) if call.cx is not None else (out, hy)
        return outs, reserve

    def backward(self, call: RNNCall, output: torch.Tensor, reserve: torch.Tensor,
                 grads: tuple[torch.Tensor | None, ...], needs: tuple[bool, ...], n_states: int) -> list[Any]:
        """Record the backward (cuDNN's data gradient, and the weights' when they need one); the gradients
        of (input, hx[, cx], *params)."""
        weights_need = any(needs[1 + n_states:])
        mask = [bool(needs[0]), bool(needs[1]), bool(needs[2]) if n_states == 2 else False, weights_need]
        kwargs = call.cudnn_args()
        kwargs.update(output=output, grad_output=grads[0], grad_hy=grads[1],
                      grad_cy=grads[2] if n_states == 2 else None, reserve=reserve, output_mask=mask)
        kwargs["weight_buf"] = None

        def run() -> tuple[Any, ...]:
            dx = call.input.new_empty(call.input.shape)  # cuDNN's data gradient writes these three
            dhx = call.hx.new_empty(call.hx.shape)
            dcx = call.cx.new_empty(call.cx.shape) if call.cx is not None else None
            dw = [p.new_empty(p.shape) for p in call.params] if weights_need else []
            return dx, dhx, dcx, dw

        dx, dhx, dcx, dw = self._record(torch.ops.aten._cudnn_rnn_backward.default, kwargs, run)
        states = [dhx, dcx][:n_states]
        grads_in = [dx, *states, *(dw or [None] * len(call.params))]
        return [g if need else None for g, need in zip(grads_in, needs, strict=True)]
