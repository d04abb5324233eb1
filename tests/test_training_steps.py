"""Training steps in a profile: each op's phase, backward ops on the module whose forward created them, the
optimizer in every form, analytic training steps, MFU and MBU (capture/modules.py, analysis/utilization.py).

The models are built here and small; expected FLOPs are worked by hand (2 per multiply-add)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import roofline  # noqa: E402
from roofline.analysis.utilization import at_peak_s, utilization  # noqa: E402
from roofline.core.errors import RooflineError  # noqa: E402
from roofline.core.model import Ceilings  # noqa: E402
from roofline.report.profile import utilization_line  # noqa: E402

D = 16  # model width
B = 8  # rows


class Block(nn.Module):
    """fc1 -> GELU -> fc2 -> Dropout(0.0), residual: the identity module (drop) returns its input unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2, self.drop = nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D), nn.Dropout(0.0)

    def forward(self, x: Any) -> Any:
        return x + self.drop(self.fc2(self.act(self.fc1(x))))


class Net(nn.Module):
    def __init__(self, checkpoint: str | None = None) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.checkpoint = checkpoint

    def forward(self, x: Any) -> Any:
        for b in self.blocks:
            if self.checkpoint is None:
                x = b(x)
            else:
                x = torch.utils.checkpoint.checkpoint(b, x, use_reentrant=self.checkpoint == "reentrant")
        return x


def _step(net: nn.Module, opt: Any = None, x: Any = None) -> Any:
    x = torch.randn(B, D) if x is None else x

    def step() -> None:
        net(x).square().mean().backward()
        if opt is not None:
            opt.step()
            opt.zero_grad()

    return step


def _by(prof: Any, *fields: str) -> dict[tuple[Any, ...], float]:
    """FLOPs per call summed over records, keyed by the named record fields."""
    out: dict[tuple[Any, ...], float] = defaultdict(float)
    for r in prof.records:
        out[tuple(getattr(r, f) for f in fields)] += (r.flops or 0.0) * (r.count or 1)
    return dict(out)


def _matmul_modules(prof: Any, phase: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for r in prof.records:
        if r.phase == phase and r.op in ("aten::mm", "aten::addmm"):
            out[r.module] += r.flops * r.count
    return dict(out)


FC = 2 * B * D * 4 * D  # one fc1 or fc2 product: 2 x 8 x 16 x 64 = 16384 FLOPs


@pytest.mark.parametrize("time", [True, False])
def test_backward_matmuls_land_on_the_linears_not_on_the_identity_module(time: bool) -> None:
    net = Net()
    x = torch.randn(B, D, requires_grad=True)
    prof = roofline.profile(_step(net, x=x), time=time, gpu=None if time else "h100", warmup=1 if time else 0)
    modules = {r.module for r in prof.records}
    assert not any(m.endswith("drop") for m in modules), modules
    # each linear's backward: the input's gradient and the weight's, one product each (x requires grad)
    expected = {f"blocks.{i}.{fc}": 2 * FC for i in (0, 1) for fc in ("fc1", "fc2")}
    assert _matmul_modules(prof, "backward") == expected
    assert _matmul_modules(prof, "forward") == {k: FC for k in expected}
    assert {r.phase for r in prof.records} == {"forward", "backward"}
    assert prof.summary["phases"]["backward"]["model_flops"] == 8 * FC


def test_a_module_called_twice_holds_both_calls_forward_and_backward() -> None:
    lin = nn.Linear(D, D)

    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = lin

        def forward(self, x: Any) -> Any:
            return self.lin(torch.relu(self.lin(x)))

    x = torch.randn(B, D, requires_grad=True)
    prof = roofline.profile(_step(Twice(), x=x), time=False, gpu="h100")
    one = 2 * B * D * D  # 4096
    assert _matmul_modules(prof, "forward") == {"lin": 2 * one}
    assert _matmul_modules(prof, "backward") == {"lin": 4 * one}  # two calls x (input grad, weight grad)


@pytest.mark.parametrize("kind", ["reentrant", "non-reentrant"])
def test_checkpointed_blocks_recompute_their_forward_in_the_backward_of_their_own_modules(kind: str) -> None:
    net = Net(checkpoint=kind)
    x = torch.randn(B, D, requires_grad=True)
    prof = roofline.profile(_step(net, x=x), time=False, gpu="h100")
    back = _matmul_modules(prof, "backward")
    # the backward of each linear (2 products) plus its forward run again (1 product); non-reentrant
    # checkpointing stops recomputing once it has the tensors backward needs: fc2's input, not fc2's product
    fc2 = 3 * FC if kind == "reentrant" else 2 * FC
    assert back == {f"blocks.{i}.{fc}": 3 * FC if fc == "fc1" else fc2 for i in (0, 1) for fc in ("fc1", "fc2")}


def test_a_no_grad_island_has_a_forward_and_no_backward() -> None:
    class Frozen(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.frozen, self.trained = nn.Linear(D, D), nn.Linear(D, D)

        def forward(self, x: Any) -> Any:
            with torch.no_grad():
                x = self.frozen(x)
            return self.trained(x)

    prof = roofline.profile(_step(Frozen()), time=False, gpu="h100")
    one = 2 * B * D * D
    assert _matmul_modules(prof, "forward") == {"frozen": one, "trained": one}
    assert _matmul_modules(prof, "backward") == {"trained": one}  # the weight's gradient alone


OPTIMIZERS = [("SGD", {"momentum": 0.9}), ("SGD", {"momentum": 0.9, "foreach": True}),
              ("SGD", {"momentum": 0.9, "fused": True}), ("Adam", {}), ("Adam", {"foreach": True}),
              ("Adam", {"fused": True}), ("AdamW", {}), ("AdamW", {"foreach": True}), ("AdamW", {"fused": True})]


@pytest.mark.parametrize("name,kw", OPTIMIZERS)
@pytest.mark.parametrize("time", [True, False])
def test_every_optimizer_form_is_its_own_phase_timed_and_analytic(name: str, kw: dict[str, Any], time: bool) -> None:
    net = Net()
    opt = getattr(torch.optim, name)(net.parameters(), lr=1e-3, **kw)
    prof = roofline.profile(_step(net, opt), time=time, gpu=None if time else "h100", warmup=1 if time else 0)
    phases = prof.summary["phases"]
    assert set(phases) == {"forward", "backward", "optimizer"}
    assert phases["optimizer"]["flops"] > 0 and phases["optimizer"]["model_flops"] == 0
    assert all(r.module == "" for r in prof.records if r.phase == "optimizer")
    assert not [d for d in prof.summary["without_formula"] if "adam" in d["op"] or "sgd" in d["op"]]
    # the step's own products, whatever the optimizer: forward 4 x FC, backward 7 x FC (no gradient for the input)
    assert phases["forward"]["model_flops"] == 4 * FC and phases["backward"]["model_flops"] == 7 * FC


def test_clipping_between_backward_and_step_is_other_and_the_next_forward_is_forward() -> None:
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(B, D)

    def two_steps() -> None:
        for _ in range(2):
            net(x).square().mean().backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            opt.zero_grad()

    prof = roofline.profile(two_steps, time=False, gpu="h100")
    assert prof.summary["phases"]["other"]["calls"] > 0  # the clipping's norms and scaling
    assert prof.summary["phases"]["forward"]["model_flops"] == 2 * 4 * FC  # both steps' forwards


def test_a_scalar_read_without_data_in_an_optimizer_step_reads_as_a_stand_in() -> None:
    class Scaled(torch.optim.SGD):
        def step(self, closure: Any = None) -> Any:  # an optimizer that reads a value of its gradients
            norm = float(self.param_groups[0]["params"][0].grad.abs().max().item())
            assert norm == 1.0  # the stand-in inside an optimizer step
            return super().step(closure)

    net = Net()
    prof = roofline.profile(_step(net, Scaled(net.parameters(), lr=0.1)), time=False, gpu="h100")
    assert any("stand-ins" in n for n in prof.summary["notes"])

    def reads_in_forward() -> None:
        y = net(torch.randn(B, D))
        if y.sum().item() > 0:  # the program's own branch on data: no stand-in, a clear error
            y.mean().backward()

    with pytest.raises(RooflineError, match="needs tensor values"):
        roofline.profile(reads_in_forward, time=False, gpu="h100")


def test_the_optimizer_hooks_are_gone_after_the_profile() -> None:
    net = Net()
    opt = torch.optim.AdamW(net.parameters())
    roofline.profile(_step(net, opt), time=False, gpu="h100")
    from torch.optim.optimizer import _global_optimizer_pre_hooks

    assert len(_global_optimizer_pre_hooks) == 0
    _step(net, opt)()  # an optimizer step outside any profile runs as usual


@pytest.mark.parametrize("tokens", [0, -3, 1.5, True])
def test_tokens_must_be_a_positive_whole_number(tokens: Any) -> None:
    with pytest.raises(RooflineError, match="profile: tokens must be"):
        roofline.profile(lambda: None, time=False, gpu="h100", tokens=tokens)


# -- MFU and MBU arithmetic (analysis/utilization.py), hand values ------------------------------------------

ROOF = Ceilings("x", "X", "gpu", "datasheet", {"bf16_tensor_dense_tflops": 1e15, "fp32_dense_tflops": 5e13},
                {"dram": 4e12})


def test_mfu_divides_each_pipe_by_its_own_peak() -> None:
    flops = {"bf16_tensor_dense_tflops": 4e14, "fp32_dense_tflops": 1e13}
    assert at_peak_s(flops, ROOF) == pytest.approx(0.4 + 0.2)  # 4e14/1e15 + 1e13/5e13
    u = utilization(flops, 8e11, {"kernel": 1.0, "wall": 1.2}, {"datasheet": ROOF, "measured": None}, tokens=1000)
    assert u["mfu"]["kernel"]["datasheet"] == pytest.approx(0.6)
    assert u["mfu"]["wall"]["datasheet"] == pytest.approx(0.5)  # 0.6 s at peak / 1.2 s
    assert u["mbu"]["kernel"]["datasheet"] == pytest.approx(0.2)  # 8e11 B / (1 s x 4e12 B/s)
    assert u["flops_per_token"] == pytest.approx(4.1e11) and u["tokens_per_s"]["wall"] == pytest.approx(1000 / 1.2)
    assert u["peak"]["pipe"] == "bf16_tensor_dense_tflops" and u["peak"]["datasheet_flops_per_s"] == 1e15
    assert utilization_line(u) == ("MFU 60.0%, MBU 20.0% (kernel time, datasheet BF16 tensor 1 PFLOP/s), "
                                   "1k tokens/s")
    # an analytic profile's time is the sum of its roofline times: said so ("predicted time" stood beside an
    # operator database's predicted step, hundreds of times longer, that the MFU was not of)
    u = utilization(flops, 8e11, {"predicted": 1.0}, {"datasheet": ROOF, "measured": None})
    assert utilization_line(u) == "MFU 60.0%, MBU 20.0% (roofline time, datasheet BF16 tensor 1 PFLOP/s)"


def test_a_utilization_above_100_percent_is_refused_with_its_reason() -> None:
    u = utilization({"bf16_tensor_dense_tflops": 2e15}, 0.0, {"kernel": 1.0}, {"datasheet": ROOF})
    assert u["mfu"]["kernel"]["datasheet"] is None  # 2e15 FLOPs in 1 s on a 1e15 FLOP/s roof: 200%
    assert "would read 200.0%" in u["refused"][0]


def test_a_pipe_without_a_peak_gives_no_mfu() -> None:
    u = utilization({"fp8_tensor_dense_tflops": 1e12}, 1e9, {"kernel": 1.0}, {"datasheet": ROOF})
    assert u["mfu"]["kernel"]["datasheet"] is None and u["mbu"]["kernel"]["datasheet"] == pytest.approx(2.5e-4)


def test_a_profiled_step_states_mfu_against_the_spec_and_tokens() -> None:
    net = Net()
    prof = roofline.profile(_step(net, torch.optim.SGD(net.parameters(), lr=0.1)), time=False, gpu="h100",
                            tokens=B)
    u = prof.summary["utilization"]
    assert u["model_flops"] == 11 * FC and u["flops_per_token"] == 11 * FC / B
    assert set(u["mfu"]) == {"predicted"} and 0 < u["mfu"]["predicted"]["datasheet"] <= 1
    assert u["peak"]["datasheet_flops_per_s"] == pytest.approx(66.9e12)  # the H100 SXM's dense FP32 (specs/)


@pytest.mark.parametrize("time", [True, False])
def test_a_composite_op_with_a_kernel_of_its_own_runs_whole(time: bool) -> None:
    """silu_backward is composite (CompositeImplicitAutograd) and has its own CPU, CUDA and meta kernels: the
    trace records it as the program runs it, not as the sigmoid, mul and add of its decomposition."""
    x = torch.randn(4, 4, requires_grad=True)
    prof = roofline.profile(lambda: nn.functional.silu(x).sum().backward(), time=time,
                            gpu=None if time else "h100", warmup=1 if time else 0)
    ops = {r.op for r in prof.records if r.phase == "backward"}
    assert "aten::silu_backward" in ops and "aten::sigmoid" not in ops, ops


@pytest.mark.parametrize("time", [True, False])
def test_a_composite_op_decomposes_as_torch_runs_it_outside_the_profile(time: bool) -> None:
    """A composite op the trace decomposes runs torch's C++ decomposition, as the program does unprofiled:
    dropout in eval (or p=0) returns its input, where torch's Python decomposition (the one
    `OpOverload.decompose` prefers) clones it: on the H200 a timm ViT-B/16's 38 dropouts were 38 device copies
    that a plain torch.profiler run did not have (+9.8% kernel time)."""
    net = nn.Sequential(nn.Linear(D, D), nn.Dropout(0.0), nn.Dropout(0.1)).eval()
    x = torch.randn(B, D)

    def step() -> None:
        with torch.inference_mode():
            net(x)

    prof = roofline.profile(step, time=time, gpu=None if time else "h100", warmup=1 if time else 0)
    assert [r.op for r in prof.records] == ["aten::addmm"]


def test_a_grad_scaler_step_is_counted_in_the_other_phase() -> None:
    """GradScaler: unscale_ is 2 FLOPs per gradient element (isfinite, x 1/scale) after the backward, the
    scale's update none; the optimizer step inside scaler.step is the optimizer's."""
    lin = nn.Linear(D, D)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    x = torch.randn(B, D)

    def step() -> None:
        scaler.scale(lin(x).sum()).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()

    prof = roofline.profile(step, warmup=1)
    amp = {r.op: (r.phase, r.flops) for r in prof.records if "_amp_" in r.op}
    assert amp == {"aten::_amp_foreach_non_finite_check_and_unscale_": ("other", 2 * (D * D + D)),
                   "aten::_amp_update_scale_": ("other", 0.0)}
    assert prof.summary["without_formula"] == [] and "optimizer" in prof.summary["phases"]
