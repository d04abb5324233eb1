"""Measure what an op pays for the dirty L2 lines the op before it left (analysis/l2_drain.py derives the model).

A memory-bound add (`torch.add(x, 1, out=y)`, DRAIN_OP_BYTES in and out) is timed by its kernel's timestamps
(CUPTI, as the sweep's points) after a clean L2 (the sweep's flush: a read of a buffer twice the L2) and after that
flush then a fill writing W bytes of another buffer, W a share of the L2 from DRAIN_WRITES_L2. The raw times are
kept (`OpDB.l2_drain`); ~2 s on the H100.
"""

from __future__ import annotations

from typing import Any

DRAIN_OP_BYTES = 32 * 2**20  # each of the add's input and output: past the write-back's cap on the H100
# Shares of the L2 written before the add: a line through the small ones, the cap from the large ones.
DRAIN_WRITES_L2 = (0.0, 1 / 16, 1 / 8, 1 / 4, 3 / 8, 1 / 2, 3 / 4, 1.0, 2.0)
DRAIN_SAMPLES = 20
DRAIN_WARMUP = 5  # calls of each sequence before its samples: kernels loaded, clocks up


def measure_l2_drain(device: str, l2_bytes: int) -> dict[str, Any]:
    """The raw readings (opdb.l2_drain_from's form) on CUDA `device` with an L2 of `l2_bytes`."""
    import torch

    from roofline.measuring.cupti import device_profiler
    from roofline.measuring.timing_cuda import L2Flush
    from roofline.measuring.timing_cupti import device_activities, kernel_names, split_samples

    n = DRAIN_OP_BYTES // 2
    x = torch.randn(n, device=device, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    flush = L2Flush(device, 2 * l2_bytes)

    def run() -> None:
        torch.add(x, 1, out=y)

    samples = []
    for share in DRAIN_WRITES_L2:
        written = int(share * l2_bytes) // 2 * 2
        other = torch.empty(written // 2, device=device, dtype=torch.bfloat16) if written else None

        def prepare(other: Any = other) -> None:
            flush()
            if other is not None:
                other.fill_(2.0)

        for _ in range(DRAIN_WARMUP):
            prepare()
            run()
        before, op = kernel_names(prepare), kernel_names(run)
        torch.cuda.synchronize(device)
        with device_profiler() as prof:
            for _ in range(DRAIN_SAMPLES):
                prepare()
                run()
            torch.cuda.synchronize(device)
        taken = split_samples(device_activities(prof), before, op, [], DRAIN_SAMPLES)
        samples.append({"written_bytes": written, "times_s": taken.samples})
        del other
    return {"op": "add", "op_bytes": DRAIN_OP_BYTES, "samples": samples}
