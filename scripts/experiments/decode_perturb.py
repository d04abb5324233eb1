"""Which part of `roofline.profile` makes a decode's first-layer attention run at 2x? (issue 32)

decode_idle.py (H100, 2026-12-06 07:27) ruled out an idle GPU before the attention and new allocator segments;
under `roofline.profile` layer 0's cuDNN SDPA took 58 + 4.9 us in 10 of 10 profiles and the other layers ~32,
where plain torch.profiler sessions give 29 throughout. This profiles one decode step (after 3 warm-up steps, as
`roofline.profile` runs it) in four settings, three times each:

- `plain`: torch.profiler with CPU and CUDA activities and shapes recorded (as roofline.profile starts it);
- `pass-through mode`: the same with a TorchDispatchMode that only calls each op;
- `decomposing mode`: a mode that runs composite ops' C++ decompositions as roofline's tracer does
  (`roofline.capture.trace.decomposes`);
- `roofline.profile`: the tool itself, then entered inside `torch.no_grad()` with a step that does not enter it
  (as decode_idle.py runs it), and a plain profile so arranged.

Each run's chrome trace gives the SDPA kernels' duration, grid, block and stream (a different kernel
configuration in layer 0 would show as another grid), and any kernel that overlaps layer 0's.

    PYTHONPATH=. python scripts/experiments/decode_perturb.py     # on a GPU with transformers, ~30 s
"""

from __future__ import annotations

import json
import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

from roofline.capture.trace import COMPOSITE, _device_key, decomposes

LLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=32,
             num_key_value_heads=8, vocab_size=32000, max_position_embeddings=8192)
BATCH, CONTEXT, RUNS = 8, 4096, 3


class PassThrough(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        return func(*args, **(kwargs or {}))


class Decomposing(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if decomposes(func.name(), _device_key(args)):
            with self:
                return func._op_dk(COMPOSITE, *args, **kwargs)
        return func(*args, **kwargs)


def kernels(prof: Any) -> list[dict[str, Any]]:
    """The trace's GPU kernels in start order (chrome trace: name, ts, dur in us, args with grid/block)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    return sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])


def report(name: str, ks: list[dict[str, Any]]) -> None:
    sdpa = [k for k in ks if "sdpa" in k["name"]]
    if not sdpa:
        print(f"  {name}: no SDPA kernel")
        return
    first = sdpa[0]
    end = first["ts"] + first["dur"]
    overlap = [k["name"][:50] for k in ks if k is not first and k["ts"] < end and k["ts"] + k["dur"] > first["ts"]]

    def cfg(k: dict[str, Any]) -> str:
        a = k.get("args", {})
        return (f"grid {a.get('grid')} block {a.get('block')} stream {a.get('stream')} "
                f"regs {a.get('registers per thread')}")

    others = [k["dur"] for k in sdpa[1:]]
    print(f"  {name}: layer 0 {first['dur']:.1f} us ({cfg(first)}); others median "
          f"{statistics.median(others):.1f} ({cfg(sdpa[1])}); overlapping layer 0: {overlap or 'none'}")
    if first["name"] != sdpa[1]["name"]:
        print(f"    layer 0 kernel {first['name'][:100]}\n    layer 1 kernel {sdpa[1]['name'][:100]}")


@contextmanager
def plain(mode: Callable[[], Any]) -> Iterator[Any]:
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof, mode():
        yield prof


def plain_runs(step: Callable[[], Any], mode: Callable[[], Any]) -> None:
    """RUNS times: 3 warm-up steps, then one step profiled by `plain` under `mode`, reported."""
    for i in range(RUNS):
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with plain(mode) as prof:
            step()
            torch.cuda.synchronize()
        report(f"#{i}", kernels(prof))


def main() -> None:
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    import roofline

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**LLAMA, attn_implementation="sdpa")).to("cuda", torch.bfloat16).eval()
    nxt = torch.randint(0, LLAMA["vocab_size"], (BATCH, 1), device="cuda")
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=torch.randint(0, LLAMA["vocab_size"], (BATCH, CONTEXT), device="cuda"),
              past_key_values=cache, use_cache=True)

    def step() -> None:
        with torch.no_grad():
            model(input_ids=nxt, past_key_values=cache, use_cache=True)

    for name, mode in (("plain", nullcontext), ("pass-through mode", PassThrough),
                       ("decomposing mode", Decomposing)):
        print(f"== {name}")
        plain_runs(step, mode)
    print("== roofline.profile")
    for i in range(RUNS):
        p = roofline.profile(step)
        report(f"#{i}", kernels(p._torch_prof))
    # decode_idle.py and decode_first_layer.py, where layer 0 ran at 2x, entered no_grad around the profile
    bare = lambda: model(input_ids=nxt, past_key_values=cache, use_cache=True)  # noqa: E731
    print("== roofline.profile inside torch.no_grad(), the step without it")
    for i in range(RUNS):
        with torch.no_grad():
            p = roofline.profile(bare)
        report(f"#{i}", kernels(p._torch_prof))
    print("== plain, the same arrangement")
    with torch.no_grad():
        plain_runs(bare, nullcontext)


if __name__ == "__main__":
    main()
