"""Issue 4's open question: why do gemv 16x8192x8192 and rmsnorm 16384x4096 time 4-6% above Nsight Compute
when 13 other kernels agree within 1.6%? Times them (and two kernels that agree, as controls) under each
L2 preparation, so one GPU call tells whether the flush explains the gap:

    PYTHONPATH=. python3 scripts/flush_experiment.py        # then compare with docs/measurements.md's ncu column

read x3 L2 (the default), read x8 L2, write x3 L2 (do_bench's zeroing), and no flush (--warm-l2).
"""

from __future__ import annotations

from roofline.dtypes import get_dtype
from roofline.kernels import build
from roofline.ops import make
from roofline.timing import time_cuda

CASES = [  # (label, op, params, ncu time in µs from the 2026-11-29 H200 run)
    ("gemv 16x8192x8192 bf16", "gemv", {"m": 16, "n": 8192, "k": 8192}, 33.4),
    ("rmsnorm 16384x4096 bf16", "rmsnorm", {"rows": 16384, "cols": 4096}, 77.5),
    ("gemv 1x8192x8192 bf16 (control)", "gemv", {"m": 1, "n": 8192, "k": 8192}, 35.8),
    ("layernorm 16384x4096 bf16 (control)", "layernorm", {"rows": 16384, "cols": 4096}, 104.9),
]
PREPARATIONS = [("read x3", {"flush_mode": "read", "flush_multiple": 3}),
                ("read x8", {"flush_mode": "read", "flush_multiple": 8}),
                ("write x3", {"flush_mode": "write", "flush_multiple": 3}),
                ("warm L2", {"warm_l2": True})]


def main() -> None:
    l2 = 61440 * 1024
    print(f"{'kernel':38s} {'ncu':>8s} " + " ".join(f"{name:>10s}" for name, _ in PREPARATIONS))
    for label, op, params, ncu_us in CASES:
        built = build(make(op, **params), get_dtype("bf16"), "cuda")
        times = [time_cuda(built.fn, "cuda:0", l2, **kw).median_s * 1e6 for _, kw in PREPARATIONS]
        print(f"{label:38s} {ncu_us:8.1f} " + " ".join(f"{t:10.1f}" for t in times))


if __name__ == "__main__":
    main()
