"""`roofline trace` on what torch.compile and CUDA graphs leave in a trace, and `check` on two traces' documents.

The traces are written here by hand, following the schema Kineto writes on a GPU (the same keys, categories and
args; tests/test_trace_gpu.py traces the real thing): a Triton launch is the CPU op Inductor opens around it
(torch/_inductor/runtime/triton_heuristics.py `get_profiler_kwargs`: kernel_backend, kernel_file, and under
config.benchmark_kernel kernel_flop and kernel_num_gb), its cuLaunchKernel and the kernel tied by correlation id; a
CUDA graph's replay is a cudaGraphLaunch whose kernels carry its correlation id, "graph id" and "graph node id",
and its capture the ops' launches between cudaStreamBeginCapture and cudaStreamEndCapture, running no kernel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import run

import roofline
from roofline.capture.inductor import op_flops
from roofline.traces.graphs import links
from roofline.traces.read import read_trace

H100 = "NVIDIA H100 80GB HBM3"
SILU_SOURCE = Path(__file__).parent / "data" / "inductor_h200" / "triton_poi_fused_mul_silu_1.py.txt"


class Trace:
    """A GPU trace being written: host events on thread 1, device work on stream 7, correlation ids in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.corr = 100

    def op(self, name: str, ts: float, dur: float, dims: list[Any] | None = None, types: list[str] | None = None,
           concrete: list[str] | None = None, **extra: Any) -> None:
        args: dict[str, Any] = {"External id": len(self.events), **extra}
        if dims is not None and types is not None:
            args |= {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete or [""] * len(dims)}
        self.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
                            "args": args})

    def runtime(self, name: str, ts: float, cat: str = "cuda_runtime") -> int:
        self.corr += 1
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1.0,
                            "args": {"cbid": 211, "correlation": self.corr}})
        return self.corr

    def kernel(self, name: str, ts: float, dur: float, corr: int, graph: int = 0, node: int = 0) -> None:
        args = {"correlation": corr, "device": 0, "stream": 7}
        if graph:
            args |= {"graph id": graph, "graph node id": node}
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                            "args": args})

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": H100}],
                                    "traceEvents": self.events}))
        return path


BF16 = "c10::BFloat16"
MM: dict[str, Any] = {"dims": [[64, 256], [256, 512]], "types": [BF16, BF16]}  # 2 x 64 x 256 x 512 = 16,777,216 FLOPs
ADD: dict[str, Any] = {"dims": [[64, 512], [64, 512], []], "types": [BF16, BF16, "Scalar"], "concrete": ["", "", "1"]}


def _launch(t: Trace, name: str, ts: float, kernel_us: float, **args: Any) -> None:
    """A Triton launch as Inductor wraps it: two (2048 x 4096) bf16 tensors and xnumel 8,388,608."""
    t.op(name, ts, 10.0, [[2048, 4096], [2048, 4096], []], [BF16, BF16, "Scalar"], ["", "", "8388608"],
         kernel_backend="triton", kernel_name=name, num_warps=4, num_stages=1, kernel_hash="h", **args)
    corr = t.runtime("cuLaunchKernel", ts + 2.0, cat="cuda_driver")
    t.kernel(name, ts + 20.0, kernel_us, corr)


def test_compiled_kernels_are_placed_by_what_the_trace_holds(tmp_path: Path) -> None:
    t = Trace()
    # Inductor's own figures (config.benchmark_kernel): 1e6 FLOPs, 0.05 GB
    _launch(t, "triton_poi_fused_mul_silu_1", 100.0, 40.0, kernel_file="/gone/k.py", kernel_flop=1000000,
            kernel_num_gb=0.05)
    # no figures, the generated source readable: its fused ops (mul, silu) over the launch's arguments
    _launch(t, "triton_poi_fused_mul_silu_1", 200.0, 50.0, kernel_file=str(SILU_SOURCE))
    # neither: no call; its kernel unattributed, with its time
    _launch(t, "triton_poi_fused_mul_silu_1", 300.0, 60.0, kernel_file="/gone/k.py")
    result = roofline.trace(t.write(tmp_path / "compiled.json"))
    stated, fused = sorted(result.records, key=lambda r: r.time_s or 0.0)
    assert stated.flops == 1e6 and stated.bytes == pytest.approx(0.05e9) and stated.time_s == pytest.approx(40e-6)
    assert stated.flops_source == "inductor:kernel_flop"
    # the profile's count of the same launch: mul and silu's element rules over xnumel = 8,388,608 elements;
    # bytes: in_out_ptr0 read and written, in_ptr0 read: 3 x 8,388,608 x 2 B = 50,331,648
    n = 2048 * 4096
    assert fused.flops == (op_flops("mul", "poi", n, n, 1) or 0) + (op_flops("silu", "poi", n, n, 1) or 0)
    assert fused.flops_source == "rule:fused" and fused.bytes == 3 * n * 2
    assert fused.time_s == pytest.approx(50e-6) and fused.op == "fused: mul+silu"
    assert [(u.kernel, u.time_s) for u in result.summary.unattributed] == [("triton_poi_fused_mul_silu_1",
                                                                           pytest.approx(60e-6))]
    (note,) = [n for n in result.summary.notes if "torch.compile'd Triton launches" in n]
    assert "1 by the FLOPs and bytes Inductor wrote" in note and "1 by their fused aten ops" in note
    assert "1 not placed (its generated source could not be read" in note


def _graph_trace(capture: bool, replays: int = 2) -> Trace:
    """mm and add captured into graph 3 (nodes 11 and 12), then replayed `replays` times: gemm 20 µs + 1 µs a
    replay, add 5 µs. With `capture` the trace holds the capture (the ops, their launches, the begin and end)."""
    t = Trace()
    if capture:
        t.runtime("cudaStreamBeginCapture", 10.0)
    t.op("aten::mm", 20.0, 10.0, **MM)
    t.runtime("cudaLaunchKernel", 22.0)  # captured: no kernel of its correlation
    t.op("aten::add", 40.0, 10.0, **ADD)
    t.runtime("cudaLaunchKernel", 42.0)
    if capture:
        t.runtime("cudaStreamEndCapture", 60.0)
    for r in range(replays):
        start = 1000.0 + 100.0 * r
        corr = t.runtime("cudaGraphLaunch", start)
        t.kernel("sm90_gemm_bf16", start + 10.0, 20.0 + r, corr, graph=3, node=11)
        t.kernel("elementwise_add", start + 40.0, 5.0, corr, graph=3, node=12)
    return t


def test_graph_replays_go_to_the_ops_that_captured_them(tmp_path: Path) -> None:
    path = _graph_trace(capture=True).write(tmp_path / "graph.json")
    trace = read_trace(path)
    (mm_launch, add_launch) = sorted(c for c, la in trace.launches.items() if not la.graph)
    assert links(trace) == {(3, 11): mm_launch, (3, 12): add_launch}  # node order = capture order
    result = roofline.trace(path)
    by_op = {r.op: r for r in result.records}
    # each replay a call of the captured op (the capture itself ran nothing): 2 calls each
    assert (by_op["aten::mm"].count, by_op["aten::add.Tensor"].count) == (2, 2)
    assert (by_op["aten::mm"].time_s or 0.0) * 2 == pytest.approx((20.0 + 21.0) * 1e-6)  # the two replays' gemms
    assert by_op["aten::mm"].flops == 2 * 64 * 256 * 512
    assert result.summary.flops == 2 * (2 * 64 * 256 * 512 + 64 * 512)  # twice each: once a replay
    assert not result.summary.unattributed and not result.summary.graph_replay_time_s
    assert result.summary.kernel_time_s == pytest.approx((20 + 21 + 5 + 5) * 1e-6)  # every kernel, once
    assert any("tied to the ops that captured them" in n for n in result.summary.notes)


def test_unlinked_replays_are_graph_time_and_said(tmp_path: Path) -> None:
    # no capture in the trace (captured before the profile began): the ops' own run counted once, untimed; the
    # replays' kernels are graph time, listed unattributed
    result = roofline.trace(_graph_trace(capture=False).write(tmp_path / "graph.json"))
    by_op = {r.op: r for r in result.records}
    assert (by_op["aten::mm"].count, by_op["aten::add.Tensor"].count) == (1, 1)
    assert result.summary.graph_replay_time_s == pytest.approx((20 + 21 + 5 + 5) * 1e-6)
    assert sorted(str(u.kernel) for u in result.summary.unattributed) == ["elementwise_add", "sm90_gemm_bf16"]
    assert any("CUDA graph" in n for n in result.summary.notes)


def test_a_graph_whose_nodes_the_capture_does_not_account_for_is_not_linked(tmp_path: Path) -> None:
    t = _graph_trace(capture=True)
    t.kernel("extra_memset", 1200.0, 2.0, t.corr, graph=3, node=13)  # a third node: two launches captured
    trace = read_trace(t.write(tmp_path / "graph.json"))
    assert links(trace) == {}
    result = roofline.trace(tmp_path / "graph.json")
    assert result.summary.graph_replay_time_s == pytest.approx((20 + 21 + 5 + 5 + 2) * 1e-6)


def _step_trace(path: Path, gemm_us: float, calls: int = 12) -> Path:
    """`calls` addmm calls, each launching one gemm kernel of `gemm_us`."""
    t = Trace()
    for i in range(calls):
        ts = 100.0 + 100.0 * i
        t.op("aten::mm", ts, 30.0, **MM)
        corr = t.runtime("cudaLaunchKernel", ts + 5.0)
        t.kernel("sm90_gemm_bf16", ts + 40.0, gemm_us, corr)
    return t.write(path)


def test_check_gates_one_traces_document_against_anothers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, same, after = tmp_path / "before.json", tmp_path / "same.json", tmp_path / "after.json"
    for trace, doc, us in ((tmp_path / "b.trace.json", before, 10.0), (tmp_path / "s.trace.json", same, 10.0),
                           (tmp_path / "a.trace.json", after, 30.0)):
        assert run(capsys, "trace", str(_step_trace(trace, us)), "-o", str(doc))[0] == 0
    code, out, err = run(capsys, "check", str(same), "--baseline", str(before))
    assert code == 0, out + err
    # the gemm 3x slower in the after trace: a regression, exit 1
    code, out, err = run(capsys, "check", str(after), "--baseline", str(before))
    assert code == 1, out + err
    assert "mm" in out
