"""Does the GPU sitting idle right before a decode's attention make it run at half speed? (issue 32)

decode_first_layer.py found layer 0's cuDNN SDPA of a Hugging Face decode step at 2x (58 against 29 us, and its
small second kernel 4.8 against 2.5) in some `roofline.profile` runs, never under a plain torch.profiler. Layer 0
is where the host builds cuDNN's plan for the new KV length (every decode step's keys are one longer), so under a
slow host (our tracer) the GPU may have drained its queue when that SDPA starts. This tests it with a plain
torch.profiler (CUDA activities only) and a sleep injected on the host just before SDPA is called:

- `none`: no sleep (the baseline);
- `layer0 Xms`: the first SDPA call of each step sleeps X ms after a synchronize (the GPU idle X ms before it);
- `every 1ms`: every SDPA call does.

Then `roofline.profile` ten times in a row, with the caching allocator's counters around each (new cudaMalloc
segments, retries): each profile's layer-0 SDPA kernels beside them. Prints a table per setting: each step's
layer-0 and median other-layer SDPA kernel times (both kernels summed).

    PYTHONPATH=. python scripts/experiments/decode_idle.py     # on a GPU with transformers, ~40 s
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

LLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=32,
             num_key_value_heads=8, vocab_size=32000, max_position_embeddings=8192)
BATCH, CONTEXT, STEPS = 8, 4096, 6
SETTINGS: dict[str, tuple[str, float]] = {  # name -> (which calls sleep, seconds)
    "none": ("", 0.0), "layer0 0.2ms": ("first", 2e-4), "layer0 1ms": ("first", 1e-3),
    "layer0 5ms": ("first", 5e-3), "every 1ms": ("every", 1e-3),
}


def per_layer(kernels: list[Any], layers: int) -> list[list[float]]:
    """SDPA kernel times (us) per step and layer, the kernels in launch order (those named `sdpa`: cuDNN's
    attention kernel; a call's kernels are summed if there are several)."""
    per_call = max(1, len(kernels) // (STEPS * layers))
    us = [e.time_range.elapsed_us() for e in kernels]
    calls = [sum(us[i:i + per_call]) for i in range(0, len(us), per_call)]
    return [calls[s:s + layers] for s in range(0, len(calls), layers)]


def owners(prof: Any) -> None:
    """Every CPU event whose `kernels` (CUPTI correlation) hold an SDPA kernel, with its parents' names: a kernel
    tied to two CPU events would be counted twice by an attribution that sums each event's kernels."""
    device = [e for e in prof.events() if "sdpa" in e.name and str(e.device_type).endswith("CUDA")]
    print(f"    device events named sdpa: {len(device)}; the first two: "
          + ", ".join(f"{e.time_range.elapsed_us():.1f} us corr {getattr(e, 'linked_correlation_id', None)}"
                      for e in device[:2]))
    shown = 0
    for e in prof.events():
        ks = [k for k in (getattr(e, "kernels", None) or []) if "sdpa" in k.name]
        if not ks or shown >= 4:
            continue
        shown += 1
        chain, p = [], e.cpu_parent
        while p is not None and len(chain) < 6:
            chain.append(p.name[:40])
            p = p.cpu_parent
        print(f"    cpu event {e.name[:40]!r} id {e.id} kernels {[(k.name[:20], round(k.duration, 1)) for k in ks]}"
              f" parents {chain}")


def main() -> None:
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**LLAMA, attn_implementation="sdpa")).to("cuda", torch.bfloat16).eval()
    layers = LLAMA["num_hidden_layers"]
    nxt = torch.randint(0, LLAMA["vocab_size"], (BATCH, 1), device="cuda")
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=torch.randint(0, LLAMA["vocab_size"], (BATCH, CONTEXT), device="cuda"),
              past_key_values=cache, use_cache=True)
    step: Callable[[], Any] = lambda: model(input_ids=nxt, past_key_values=cache, use_cache=True)  # noqa: E731

    real_sdpa = F.scaled_dot_product_attention
    state = {"which": "", "secs": 0.0, "calls": 0}

    def sdpa(*args: Any, **kwargs: Any) -> Any:
        first = state["calls"] % layers == 0
        state["calls"] += 1
        if state["which"] == "every" or (state["which"] == "first" and first):
            torch.cuda.synchronize()
            time.sleep(state["secs"])
        return real_sdpa(*args, **kwargs)

    F.scaled_dot_product_attention = sdpa  # transformers' sdpa_attention_forward calls it through the module
    try:
        for name, (which, secs) in SETTINGS.items():
            state.update(which=which, secs=secs, calls=0)
            with torch.no_grad():
                for _ in range(3):
                    step()
                torch.cuda.synchronize()
                state["calls"] = 0
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(STEPS):
                        step()
                    torch.cuda.synchronize()
            kern = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                           and "sdpa" in e.name),
                          key=lambda e: e.time_range.start)
            steps = per_layer(kern, layers)
            print(f"== {name}: {len(kern)} SDPA kernels; per step: layer 0 / median of layers 1-{layers - 1} (us)")
            print("   " + "  ".join(f"{s[0]:5.1f}/{statistics.median(s[1:]):4.1f}" for s in steps if len(s) == layers))
    finally:
        F.scaled_dot_product_attention = real_sdpa

    import roofline

    sys.path.insert(0, str(Path(__file__).parent))
    from decode_perturb import kernels, report

    print("== roofline.profile x10: layer-0 SDPA kernels (us), median of the others, allocator counters of the call")
    for i in range(10):
        before = torch.cuda.memory_stats()
        with torch.no_grad():
            prof_r = roofline.profile(step)
        after = torch.cuda.memory_stats()
        sdpa_recs = [r for r in prof_r.records if "scaled_dot" in r.op]
        times = [sum(r.kernel_times_s) * 1e6 for r in sdpa_recs]
        grew = {k: after.get(k, 0) - before.get(k, 0)
                for k in ("segment.all.allocated", "num_alloc_retries", "num_device_alloc")}
        print(f"  #{i}: layer 0 {'+'.join(f'{t * 1e6:.1f}' for t in sdpa_recs[0].kernel_times_s)}"
              f"  others median {statistics.median(times[1:]):.1f}  {grew}")
        if i < 2:  # the kernels' launch configuration and any overlap, from the profile's own trace
            report(f"#{i} trace", kernels(prof_r._torch_prof))
            owners(prof_r._torch_prof)


if __name__ == "__main__":
    main()
