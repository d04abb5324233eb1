"""Is a decode's attention slower on the first call at a new KV length? (issue 32)

In the H100's Llama decode profiles (2026-12-06) the first layer's cuDNN SDPA ran 56.5 us where the seven other
layers, same shape, ran 28.3-29.5 (and its split-KV reduction 4.9 us against 2.5); the batch-3 decode the same
(14.3 against 7.4). The sweep's point of that very shape (8 x 32 heads, 8 KV heads, 4100 keys, head dim 64) took
27.3 us. A decode step grows the cache by one key, so every step's first layer meets a KV length no call had.

This times SDPA alone (torch.profiler's kernel durations, CUDA) on that shape at KV lengths 4100, 4101, ... in
three orders: (a) three calls at each new length; (b) two lengths alternated (is it per length, or per change?);
(c) a fresh K and V each call at one length (is it the tensors' new memory?).

    python scripts/experiments/decode_first_call.py            # on a GPU; prints one line a call
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

B, H, HKV, D = 8, 32, 8, 64


Call = tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]


def kernels_per_call(calls: list[Call]) -> list[tuple[str, list[float]]]:
    """Each call's kernel durations (us), in order, from one profiler session over all of them."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for label, q, k, v in calls:
            with torch.profiler.record_function(label):
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            torch.cuda.synchronize()
    kern = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                  key=lambda e: e.time_range.start)
    per = len(kern) // len(calls)
    return [(label, [e.time_range.elapsed_us() for e in kern[i * per:(i + 1) * per]])
            for i, (label, *_) in enumerate(calls)]


def qkv(kv: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r = lambda *s: torch.randn(*s, device="cuda", dtype=torch.bfloat16)  # noqa: E731
    return r(B, H, 1, D), r(B, HKV, kv, D), r(B, HKV, kv, D)


def main() -> None:
    torch.manual_seed(0)
    warm = qkv(4096)
    for _ in range(20):
        F.scaled_dot_product_attention(*warm, enable_gqa=True)
    torch.cuda.synchronize()
    orders = {
        "a: three calls at each new length": [(f"kv={n} call {i}", *t) for n in range(4100, 4104)
                                              for t in [qkv(n)] for i in range(3)],
        "b: two new lengths alternated": [(f"kv={n}", *ts[n]) for ts in [{n: qkv(n) for n in (4200, 4201)}]
                                          for n in (4200, 4201, 4200, 4201, 4200, 4201)],
        "c: fresh K and V each call, one length seen before": [(f"kv=4100 fresh {i}", *qkv(4100)) for i in range(4)],
    }
    for title, calls in orders.items():
        print(f"== {title}")
        for label, us in kernels_per_call(calls):
            print(f"  {label:22s} " + " + ".join(f"{u:6.1f}" for u in us) + f" = {sum(us):6.1f} us")


if __name__ == "__main__":
    main()
