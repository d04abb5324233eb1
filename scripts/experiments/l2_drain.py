"""What does an op pay for the dirty lines the op before it left in the L2? (issue 32)

In the H100's Llama decode (2026-12-06) the KV cache's key append (a cat of 33.6 MB) ran 19.2 us, its predicted
19.3, where the value append right after it, the same shape, ran 24.4; the attention after that ran 30.7 where
the sweep's point of that very shape took 27.3. An op alone (the sweep) starts on a clean L2; in a model it
starts on the lines its predecessor wrote, which must go back to HBM as its own traffic evicts them.

This times one memory-bound op, `torch.add(x, 1, out=y)` over 32 MB (16 Mi bf16 elements, in and out), by its
kernel's duration (torch.profiler, CUPTI), after: a clean L2 (a read of a buffer twice the L2's size); that read
then a fill writing W bytes of an unrelated buffer (W from 0 to twice the L2); and the fill of its own input (its
reads hit the L2 the writer left). Median of SAMPLES each; the extra time against the clean start, and what it is
in bytes at the add's own achieved bandwidth.

    python scripts/experiments/l2_drain.py            # on a GPU, ~20 s
"""

from __future__ import annotations

import statistics

import torch
from torch.profiler import ProfilerActivity, profile

SAMPLES = 20
MB = 1 << 20
OP_BYTES = 32 * MB  # each of the add's input and output


def add_times(before: list, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    """The add's kernel duration (us) in each of SAMPLES runs of `before` (callables) then the add."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(SAMPLES):
            for fn in before:
                fn()
            torch.add(x, 1, out=y)
        torch.cuda.synchronize()
    kern = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "add" in e.name
            and "reduce" not in e.name]
    return [e.time_range.elapsed_us() for e in kern][-SAMPLES:]


def main() -> None:
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    n = OP_BYTES // 2
    x, y = (torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    flush = torch.empty(2 * l2 // 4, device="cuda", dtype=torch.float32).fill_(1.0)
    clean = [lambda: flush.sum()]
    for _ in range(3):
        add_times(clean, x, y)  # warm-up: the kernels loaded, the clocks up
    base = statistics.median(add_times(clean, x, y))
    gbps = 2 * OP_BYTES / base / 1e3
    print(f"{torch.cuda.get_device_name()}: L2 {l2 / MB:.0f} MiB; add of 2 x {OP_BYTES // MB} MiB after a clean L2: "
          f"{base:.1f} us ({gbps:.0f} GB/s)")
    print(f"{'before the add':44s} {'us':>7s} {'extra':>7s} {'as MiB':>7s}")
    for w_mb in (0, 4, 8, 16, 24, 32, 48, 64, 100):
        w = torch.empty(max(w_mb * MB // 2, 1), device="cuda", dtype=torch.bfloat16)
        t = statistics.median(add_times([*clean, lambda w=w: w.fill_(2.0)], x, y))
        extra = t - base
        print(f"  clean, then a fill writing {w_mb:3d} MiB elsewhere      {t:7.1f} {extra:+7.1f} "
              f"{extra * 1e3 * gbps / MB:7.1f}")
        del w
    t = statistics.median(add_times([*clean, lambda: x.fill_(2.0)], x, y))
    print(f"  clean, then a fill of the add's own input     {t:7.1f} {t - base:+7.1f}   (reads hit the L2)")


if __name__ == "__main__":
    main()
