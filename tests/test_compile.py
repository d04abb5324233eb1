"""torch.compile'd code under the profile, on the CPU: compiled code runs compiled and is not recompiled;
Inductor's Triton launches (profiler events built by hand, a kernel file in the format Inductor writes)
become calls of the aten ops they fused, or stay unattributed with the reason; an analytic profile runs compiled
code eager; the summary's compiled modules count the kept regions' runs only. tests/test_compile_gpu.py runs the
real thing."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from test_capture_units import cpu, device

from roofline.capture import profile
from roofline.capture.cost import cost_of
from roofline.capture.inductor import Launch, fused_call, parse_name, parse_source, split_ops, with_launches
from roofline.capture.kernels import gpu_timeline
from roofline.capture.traffic import traffic

# -- kernel names ------------------------------------------------------------------------------------------

KNOWN = frozenset({"mul", "mul_", "silu", "add", "add_", "_fused_rms_norm", "mean", "pow", "rsqrt", "_to_copy",
                   "copy_", "native_layer_norm", "native", "layer", "norm"})


@pytest.mark.parametrize("name, kind, ops", [
    # names as Inductor's get_fused_kernel_name builds them (descriptive_names="original_aten": the aten
    # packets sorted, unique, joined by "_"), as they appear in H200 traces of Llama MLPs and RMSNorms
    ("triton_poi_fused_mul_silu_0", "poi", ("mul", "silu")),
    ("triton_red_fused__fused_rms_norm_add_0", "red", ("_fused_rms_norm", "add")),
    ("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_12", "per", ("_to_copy", "add", "mean", "mul", "pow", "rsqrt")),
    ("triton_poi_fused_add_copy__3", "poi", ("add", "copy_")),  # an in-place packet: "copy_" then the index
    ("triton_per_fused_native_layer_norm_1", "per", ("native_layer_norm",)),  # one op, not native+layer+norm
])
def test_kernel_names_split_into_the_aten_ops_they_fused(name: str, kind: str, ops: tuple[str, ...]) -> None:
    parsed = parse_name(name, KNOWN)
    assert parsed is not None and parsed.kind == kind and parsed.ops == ops


def test_names_that_are_not_inductor_kernels_or_cannot_be_split() -> None:
    assert parse_name("ampere_bf16_s16816gemm_bf16_128x256", KNOWN) is None
    assert parse_name("triton_poi_fused_frobnicate_0", KNOWN) is None  # no such aten op
    assert split_ops("silu_mul", KNOWN) is None  # Inductor sorts the names: this order is not its
    assert split_ops("silu_", KNOWN) is None  # a separator with nothing after it ("silu_" is not known here)


def test_the_real_aten_op_names_split_the_names_too() -> None:
    parsed = parse_name("triton_red_fused__fused_rms_norm_add_mul_0")  # torch's own op list
    assert parsed is not None and parsed.ops == ("_fused_rms_norm", "add", "mul")


# -- kernel files ------------------------------------------------------------------------------------------

# tests/data/inductor_kernel.txt: the head of a kernel file in the form torch 2.13's Inductor writes it
# (codegen/triton.py, `codegen_kernel`: the heuristics decorator with triton_meta's signature, then
# `def <name>(<params>)`, then the static sizes from codegen_static_numels), written by hand from that code
# (no Triton on the CPU machine); the GPU stage `compile` saves real ones (tests/test_compile_gpu.py).
KERNEL_FILE = (Path(__file__).parent / "data" / "inductor_kernel.txt").read_text()


def test_a_kernel_file_gives_its_parameters_dtypes_and_sizes() -> None:
    src = parse_source(KERNEL_FILE)
    assert src is not None
    assert src.params == ("in_out_ptr0", "in_ptr0", "in_ptr1", "out_ptr0", "xnumel", "r0_numel")
    assert src.pointer_dtypes == {"in_out_ptr0": "fp32", "in_ptr0": "bf16", "in_ptr1": "bf16", "out_ptr0": "bf16"}
    assert src.static_numels == {"xnumel": 64, "r0_numel": 512}
    assert parse_source("print('no kernel here')") is None


def _launch(tmp_path: object, name: str = "triton_red_fused__fused_rms_norm_add_0", file: bool = True) -> Launch:
    path = tmp_path / "ckernel.py"  # type: ignore[operator]
    path.write_text(KERNEL_FILE)
    # launch arguments as the profiler records them: tensors' shapes, scalars' values
    return Launch(name, str(path) if file else None, [[64, 1], [64, 512], [512], [64, 512], [], []],
                  [None, None, None, None, 64, 512], [(name, 3e-6)], "step", None, 0)


def test_a_launch_becomes_a_call_of_its_fused_ops(tmp_path: object) -> None:
    call = fused_call(_launch(tmp_path), 100, "model.norm")
    assert not isinstance(call, str)
    assert call.op == "fused: _fused_rms_norm+add" and call.module == "model.norm" and call.region == "step"
    cost = cost_of(call)
    # rows 64, cols 512, 32768 input elements: RMSNorm 4 per element + 3 per row, add 1 per element
    assert cost.flops == 4 * 32768 + 3 * 64 + 32768 and cost.source == "rule:fused"
    t = traffic(call, cost)
    # read: in_out_ptr0 fp32 64x1 (256 B) + in_ptr0 bf16 64x512 (65536 B) + in_ptr1 bf16 512 (1024 B);
    # written: in_out_ptr0 (256 B) + out_ptr0 bf16 64x512 (65536 B)
    assert t.bytes_read == 256 + 65536 + 1024 and t.bytes_written == 256 + 65536


def test_a_launch_that_cannot_be_read_says_why(tmp_path: object) -> None:
    assert fused_call(_launch(tmp_path, file=False), 1, "") == "its generated source could not be read"
    assert fused_call(_launch(tmp_path, name="triton_poi_fused_frobnicate_0"), 1, "") == \
        "the kernel name names no aten ops"
    bare = _launch(tmp_path)
    bare.shapes, bare.values = [], []  # a profiler run without record_shapes
    assert fused_call(bare, 1, "") == "the profiler kept no launch arguments"


def test_a_fused_op_without_a_rule_has_no_flops(tmp_path: object) -> None:
    call = fused_call(_launch(tmp_path, name="triton_red_fused_add_mm_0"), 1, "")
    assert not isinstance(call, str) and cost_of(call).flops is None  # mm has no element rule: not 0


# -- the profiler's events -------------------------------------------------------------------------------

def test_triton_launch_events_are_kept_as_launches(tmp_path: object) -> None:
    region = cpu("roofline.region:step")
    compiled = cpu("roofline.compiled:Net.mlp", region)
    call0 = cpu("roofline#0", compiled)
    mm = cpu("aten::mm", call0, [("gemm", 10.0)])  # an extern kernel the compiled code dispatched
    launch = cpu("triton_poi_fused_mul_silu_0", compiled, [("triton_poi_fused_mul_silu_0", 4.0)])
    launch.kwinputs = {"kernel_file": "/tmp/k.py", "kernel_backend": "triton"}
    launch.input_shapes, launch.concrete_inputs = [[8, 16], [8, 16], []], [None, None, 128]
    other = cpu("CompiledFunction", region, [("cuda_graph_kernel", 1.0)])  # no launch op: unattributed
    t = gpu_timeline([region, compiled, call0, mm, launch, other, device("gemm", 0, 10),
                      device("triton_poi_fused_mul_silu_0", 10, 14), device("cuda_graph_kernel", 14, 15)])
    assert list(t.calls) == [0]
    assert len(t.launches) == 1
    got = t.launches[0]
    assert (got.name, got.kernel_file, got.region, got.module, got.after) == (
        "triton_poi_fused_mul_silu_0", "/tmp/k.py", "step", "Net.mlp", 0)
    assert got.shapes == [[8, 16], [8, 16], []] and got.values == [None, None, 128]
    assert got.kernels == [("triton_poi_fused_mul_silu_0", pytest.approx(4e-6))]
    assert t.unattributed == [("cuda_graph_kernel", pytest.approx(1e-6), "step")]


def test_fused_calls_are_merged_in_program_order(tmp_path: object) -> None:
    from roofline.capture.trace import OpCall

    def op(i: int) -> OpCall:
        return OpCall(i, "aten::mm", "mlp", "step", (), (), {}, (), {}, None, frozenset(), frozenset(), frozenset())

    good, bad = _launch(tmp_path), _launch(tmp_path, file=False)
    good.after, good.module, bad.after = 0, None, 1
    calls, fused, failed = with_launches([op(0), op(1)], [good, bad], 2)
    assert [c.index for c in calls] == [0, 2, 1]  # after call 0, before call 1
    assert fused[0][0].module == "mlp"  # no compiled range: the module of the call before it, same region
    assert [why for _, why in failed] == ["its generated source could not be read"]


# -- compiled code under the trace ---------------------------------------------------------------------------

class _Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(16, 32, bias=False)
        self.down = torch.nn.Linear(32, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.silu(self.up(x)))


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.mlp = _Mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.norm(x))


def test_compiled_code_runs_compiled_under_the_profile_and_is_not_recompiled() -> None:
    from torch._dynamo.utils import counters

    runs = []

    def backend(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> object:
        def run(*args: torch.Tensor) -> object:
            runs.append(1)  # the compiled graph ran (not the eager fallback)
            return gm(*args)
        return run

    torch._dynamo.reset()
    net, x = _Net(), torch.randn(4, 16)
    net.mlp = torch.compile(net.mlp, backend=backend)
    with torch.no_grad():
        compiled_before = counters["frames"]["ok"]
        prof = profile(lambda: net(x), warmup=1, device="cpu")
        assert len(runs) == 2  # the warm-up's call and the profiled one
        assert counters["frames"]["ok"] == compiled_before + 1  # compiled once, in the warm-up
        net(x)
        assert len(runs) == 3  # still compiled after the profile (an ignoring mode left it eager for good)
    by_module = {(r.module, r.op) for r in prof.records}
    # the graph's ops reached the trace inside the compiled module (no hooks ran inside it)
    assert ("mlp", "aten::mm") in by_module and ("mlp", "aten::silu") in by_module
    assert ("norm", "aten::native_layer_norm") in by_module
    assert prof.summary["compiled"]["modules"] == {"mlp": 1}
    assert any("compiled code ran on the CPU" in n for n in prof.summary["notes"])
    torch._dynamo.reset()


def test_the_tracker_puts_its_hooks_back_when_the_compiled_module_raises() -> None:
    from torch.nn.modules import module as nn_module

    def backend(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> object:
        def run(*args: torch.Tensor) -> object:
            raise ValueError("boom")
        return run

    torch._dynamo.reset()
    mlp = torch.compile(_Mlp(), backend=backend)
    hooks = len(nn_module._global_forward_pre_hooks)
    with pytest.raises(ValueError, match="boom"):
        with torch.no_grad(), profile(device="cpu"):
            mlp(torch.randn(2, 16))
    assert len(nn_module._global_forward_pre_hooks) == hooks  # nothing left registered
    torch._dynamo.reset()


def test_a_fake_event_without_profiler_fields_is_not_a_launch() -> None:
    evt = SimpleNamespace(name="aten::mm", kwinputs=None)
    from roofline.capture.kernels import _is_triton_launch

    assert not _is_triton_launch(evt)


def test_a_compiled_root_is_named_by_the_module_it_compiled() -> None:
    torch._dynamo.reset()
    mlp = torch.compile(_Mlp(), backend="eager")
    x = torch.randn(2, 16)
    with torch.no_grad():
        prof = profile(lambda: mlp(x), warmup=1, device="cpu")
    assert prof.summary["module_root"] == "_Mlp"  # not "OptimizedModule"
    assert prof.summary["compiled"]["modules"] == {"": 1}  # the root, entered once in the profiled call
    assert {r.op for r in prof.records} == {"aten::mm", "aten::silu"}
    torch._dynamo.reset()


def test_launches_become_records_and_unreadable_ones_stay_unattributed(tmp_path: object,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU path of Profile._build, fed launches on the CPU (the profiler's part is tested above)."""
    from roofline.capture import kernels

    good, bad = _launch(tmp_path), _launch(tmp_path, file=False)
    good.region = bad.region = None
    good.after, bad.after = 0, 0
    plain = kernels.cpu_timeline

    def with_launches_too(calls: list) -> kernels.Timeline:  # type: ignore[type-arg]
        t = plain(calls)
        t.launches = [good, bad]
        return t

    monkeypatch.setattr(kernels, "cpu_timeline", with_launches_too)
    x = torch.randn(4, 8)
    prof = profile(lambda: torch.relu(x) + 1, warmup=0, device="cpu")
    fused = [r for r in prof.records if r.op.startswith("fused: ")]
    assert len(fused) == 1 and fused[0].op == "fused: _fused_rms_norm+add"
    assert fused[0].flops == 4 * 32768 + 3 * 64 + 32768  # as in the test above
    assert fused[0].time_s == pytest.approx(3e-6) and fused[0].kernels == ["triton_red_fused__fused_rms_norm_add_0"]
    assert [r.op for r in prof.records][:2] == ["aten::relu", "fused: _fused_rms_norm+add"]  # after call 0
    s = prof.summary
    assert s["compiled"] == {"modules": {}, "triton_launches": 2,
                             "unattributed_launches": {"its generated source could not be read": 1}}
    assert s["unattributed"] == [{"kernel": "triton_red_fused__fused_rms_norm_add_0", "launches": 1,
                                  "time_s": pytest.approx(3e-6)}]
    assert any(n.startswith("1 of 2 Triton launches") for n in s["notes"])


# -- real kernel files -------------------------------------------------------------------------------------
# tests/data/inductor_h200/: the two kernel files Inductor (torch 2.11, Triton 3.6) generated on the H200 for
# examples/compiled_mlp.py (2048 tokens, width 1024, hidden 4096, bf16; scripts/gpu_check.sh compile,
# 2026-12-01), with the launch arguments the profiler recorded there (launches.json of that run).
REAL = Path(__file__).parent / "data" / "inductor_h200"


@pytest.mark.parametrize(("name", "shapes", "values", "flops", "read", "written"), [
    # SwiGLU's mul+silu in place: in_out_ptr0 (the gate's output, read and written) and in_ptr0 (up's), 2048x4096
    # bf16 each = 16,777,216 B; 8,388,608 elements x (silu 4 + mul 1) FLOPs
    ("triton_poi_fused_mul_silu_1", [[2048, 4096], [2048, 4096], []], [None, None, 8388608],
     5 * 8388608, 2 * 16777216, 16777216),
    # RMSNorm over 2048 rows of 1024: x and the 1024-wide weight read, the normed rows written;
    # 4 FLOPs per element + 3 per row
    ("triton_per_fused__fused_rms_norm_0", [[2048, 1024], [1024], [2048, 1024], [], []],
     [None, None, None, 2048, 1024], 4 * 2048 * 1024 + 3 * 2048, 2048 * 1024 * 2 + 1024 * 2, 2048 * 1024 * 2),
])
def test_the_h200_kernels_give_the_fused_ops_cost(name: str, shapes: list, values: list, flops: float, read: float,
                                                  written: float) -> None:
    launch = Launch(name, str(REAL / f"{name}.py.txt"), shapes, values, [(name, 1e-5)], "forward", None, 0)
    call = fused_call(launch, 0, "")
    assert not isinstance(call, str), call
    cost = cost_of(call)
    t = traffic(call, cost)
    assert (cost.flops, t.bytes_read, t.bytes_written) == (flops, read, written)


def test_an_analytic_profile_runs_compiled_code_eager() -> None:
    # under FakeTensorMode a compiled kernel would read fake tensors' data: Inductor's C++ kernels crashed the
    # process on the CPU (`roofline profile examples/compiled_mlp.py --no-time`: segmentation fault). The
    # backend below runs the graph in Python, so here the crash is a graph run on fake tensors: none may run.
    runs = []

    def backend(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> object:
        def run(*args: torch.Tensor) -> object:
            runs.append(1)
            return gm(*args)
        return run

    torch._dynamo.reset()
    lin = torch.compile(torch.nn.Linear(16, 32, bias=False), backend=backend)
    with torch.no_grad():
        prof = profile(lambda: torch.nn.functional.silu(lin(torch.randn(8, 16))), warmup=0, time=False)
    assert runs == []
    # eager, unfused: the matmul 8x32x16 (2*8*32*16 = 8,192 FLOPs) and the silu
    assert {r.op for r in prof.records} >= {"aten::mm", "aten::silu"}
    assert sum(r.flops * r.count for r in prof.records if r.op == "aten::mm") == 2 * 8 * 32 * 16
    assert any("compiled code ran eager in the analytic run" in n for n in prof.summary["notes"])
    torch._dynamo.reset()


def test_the_compiled_modules_count_only_the_kept_regions() -> None:
    from roofline.capture import region

    # two warm-up calls outside the region, one inside: the summary's compiled modules, like its Triton launches,
    # count the region's one (before: 3, as examples/compiled_mlp.py's 3 warm-ups + 1 read {'': 4})
    torch._dynamo.reset()
    lin = torch.compile(torch.nn.Linear(16, 16), backend="eager")
    x = torch.randn(4, 16)
    with torch.no_grad(), profile(device="cpu") as prof:
        lin(x)
        lin(x)
        with region("step"):
            lin(x)
    assert prof.summary["compiled"]["modules"] == {"": 1}
    torch._dynamo.reset()
