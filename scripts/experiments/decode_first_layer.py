"""Why does a Hugging Face decode step's first layer run its attention at half speed? (issue 32)

In the H100's Llama decode profiles (2026-12-06, scripts/predict_accuracy.py's decode: 8 layers, 8 sequences, a
4096-token DynamicCache growing a token a step) layer 0's cuDNN SDPA took 56.5 + 4.9 us, layers 1-7 28.3-29.5 +
2.5; SDPA alone at new KV lengths does not (decode_first_call.py). This profiles STEPS consecutive decode steps in
one torch.profiler session and prints each step's per-layer SDPA kernel time, in three settings: back to back;
with a 20 ms sleep before each step (an idle GPU before it); and with the cache cropped back each step so the KV
length stays the same (cuDNN's plan for it cached after the first step). Then the same step under
torch.profiler with CPU and CUDA activities and shapes recorded (as roofline.profile starts it), and
`roofline.profile`, three times in a row each (a fresh Profile each): each profile's per-layer SDPA kernel time (is it
the first profile only, or every one?).

    python scripts/experiments/decode_first_layer.py       # on a GPU with transformers, ~30 s
"""

from __future__ import annotations

import time

import torch
from torch.profiler import ProfilerActivity, profile

LLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=32,
             num_key_value_heads=8, vocab_size=32000, max_position_embeddings=8192)
BATCH, CONTEXT, STEPS = 8, 4096, 4


def main() -> None:
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**LLAMA, attn_implementation="sdpa")).to("cuda", torch.bfloat16).eval()
    nxt = torch.randint(0, LLAMA["vocab_size"], (BATCH, 1), device="cuda")

    def fresh_cache() -> DynamicCache:
        cache = DynamicCache()
        ids = torch.randint(0, LLAMA["vocab_size"], (BATCH, CONTEXT), device="cuda")
        with torch.no_grad():
            model(input_ids=ids, past_key_values=cache, use_cache=True)
        return cache

    for setting in ("back to back", "20 ms idle before each step", "cache cropped: one KV length"):
        cache = fresh_cache()
        with torch.no_grad():
            for _ in range(3):  # warm-up steps
                model(input_ids=nxt, past_key_values=cache, use_cache=True)
                if setting.startswith("cache"):
                    cache.crop(CONTEXT)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof, torch.no_grad():
            for _ in range(STEPS):
                if setting.startswith("20"):
                    torch.cuda.synchronize()
                    time.sleep(0.02)
                model(input_ids=nxt, past_key_values=cache, use_cache=True)
                if setting.startswith("cache"):
                    cache.crop(CONTEXT)
            torch.cuda.synchronize()
        kern = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                       and "sdpa" in e.name), key=lambda e: e.time_range.start)
        per_step = LLAMA["num_hidden_layers"]
        print(f"== {setting}: SDPA kernel per layer (us), {len(kern)} kernels")
        for s in range(len(kern) // per_step):
            us = [e.time_range.elapsed_us() for e in kern[s * per_step:(s + 1) * per_step]]
            print(f"  step {s}: " + " ".join(f"{u:5.1f}" for u in us))

    cache = fresh_cache()
    for i in range(3):  # torch.profiler as roofline.profile starts it: CPU and CUDA activities, shapes recorded
        with torch.no_grad():
            for _ in range(3):
                model(input_ids=nxt, past_key_values=cache, use_cache=True)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
                model(input_ids=nxt, past_key_values=cache, use_cache=True)
                torch.cuda.synchronize()
        kern = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                       and "sdpa" in e.name), key=lambda e: e.time_range.start)
        print(f"== torch.profiler (CPU + CUDA, record_shapes) #{i}: SDPA kernels per layer (us): "
              + " ".join(f"{e.time_range.elapsed_us():5.1f}" for e in kern))

    import roofline

    cache = fresh_cache()
    for i in range(3):
        with torch.no_grad():
            prof = roofline.profile(lambda: model(input_ids=nxt, past_key_values=cache, use_cache=True))
        sdpa = [r for r in prof.records if "scaled_dot" in r.op]
        print(f"== roofline.profile #{i}: SDPA kernels per layer (us): "
              + " ".join(f"{r.kernel_times_s[0] * 1e6:5.1f}" for r in sdpa))


if __name__ == "__main__":
    main()
