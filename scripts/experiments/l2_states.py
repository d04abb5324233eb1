"""Which L2 state times a model's memory-bound op as the model runs it? (issue 32: `warm_blend` predicts a
model's op from the sweep's warm and flushed points; on the H200 it gives ResNet-50's batch norms at batch 32
15-20% slow.)

    python scripts/experiments/l2_states.py OUT.json [--profiles docs/results/predict/profiles-h100-0742]

The batch norms, ReLUs, casts, multiplies and adds of the stored ResNet-50 (batch 32) and Llama prefill profiles,
each catalog shape once, timed by CUDA events around the op alone in four states of the L2 before each call:
- warm: the call again, nothing between (the sweep's warm points);
- flushed clean: a read of a buffer twice the L2 (the sweep's flushed points: `timing_cuda.L2Flush`, mode read);
- flushed dirty: that buffer zeroed instead, leaving the L2 full of dirty lines;
- dirty, inputs warm: zeroed, then the op's inputs read: its reads hit the L2 while its writes evict dirty
  lines, as in a model whose ops write what the next one reads.
Beside each, the profile's own kernel time for that shape (CUPTI, inside the model). Needs a CUDA GPU."""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any

CASES = {"resnet50": ("batchnorm", "relu"), "llama_prefill": ("cast", "mul", "add")}
SAMPLES = 40
MAX_SHAPES = 12  # per profile and op
SPIN_CYCLES = 100_000  # ~50 us at 1.98 GHz: longer than the host takes to queue two events and an op
DTYPES = ("bf16", "fp16", "fp32")


def _records(profiles: Path) -> list[dict[str, Any]]:
    out, seen = [], set()
    for case, ops in CASES.items():
        doc = json.loads(gzip.decompress((profiles / f"{case}.json.gz").read_bytes()))
        counts: dict[str, int] = {}
        for r in doc["records"]:
            src = r.get("flops_source") or ""
            op = src.split(":", 1)[1] if src.startswith("catalog:") else None
            if op not in ops or not r.get("time_s") or r["dtype"] not in DTYPES:
                continue
            key = (op, r["dtype"], json.dumps(r["params"], sort_keys=True))
            if key in seen or counts.get(op, 0) >= MAX_SHAPES:
                continue
            seen.add(key)
            counts[op] = counts.get(op, 0) + 1
            out.append({"case": case, "op": op, "dtype": r["dtype"], "params": r["params"],
                        "profile_s": r["time_s"], "bytes_read": r.get("bytes_read"),
                        "bytes_written": r.get("bytes_written")})
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--profiles", type=Path, default=Path("docs/results/predict/profiles-h100-0742"))
    a = ap.parse_args()
    import torch

    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels import build
    from roofline.ops.base import make

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    buf = torch.ones(2 * l2 // 4, device="cuda")
    out = torch.empty((), device="cuda")

    def clean() -> None:
        torch.sum(buf, dim=0, out=out)

    def dirty() -> None:
        buf.zero_()

    rows = _records(a.profiles)
    for row in rows:
        built = build(make(row["op"], **row["params"]), get_dtype(row["dtype"]), "cuda:0")
        inputs = [t for t in built.inputs if isinstance(t, torch.Tensor)]

        def dirty_inputs_warm(inputs: list[Any] = inputs) -> None:
            dirty()
            for t in inputs:
                torch.sum(t.float() if t.dtype.is_floating_point and t.element_size() < 4 else t)

        states = {"warm": None, "flushed clean": clean, "flushed dirty": dirty,
                  "dirty, inputs warm": dirty_inputs_warm}
        for _ in range(5):
            built.fn()
        for name, before in states.items():
            times = []
            for _ in range(SAMPLES):
                if before is not None:
                    before()
                # the GPU busy while the host queues the events and the op: their launches outside the timing
                torch.cuda._sleep(SPIN_CYCLES)
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                built.fn()
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1) * 1e-3)
            row[name] = statistics.median(times)
        del built
        print(f"{row['case']:13s} {row['op']:9s} {json.dumps(row['params'])[:44]:44s} profile "
              f"{row['profile_s'] * 1e6:7.1f} | " + "  ".join(f"{k} {row[k] * 1e6:7.1f}" for k in states), flush=True)
    json.dump({"device": torch.cuda.get_device_name(0), "l2_bytes": l2, "rows": rows}, open(a.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
