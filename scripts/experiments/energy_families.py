"""Does the energy the model misses in torch's GELU, SiLU, softmax, LayerNorm and RMS norm scale with their
elements, shape by shape? (issue 33: the model's terms are FLOPs, HBM bytes and time; on the H200 at 19:09,
2026-12-02, softmax took 49% more than it, LayerNorm 30%, GELU 21%, RMS norm 15%).

    python scripts/experiments/energy_families.py OUT.json

Each operator at three shapes (one of them the kernels suite's), one counter window each (measuring.energy's
measure_fn, CUDA-graph chunks), beside the stored energy model's figure: the joules it misses, per element and
per second of the kernel. Needs a CUDA GPU and a stored energy model (`roofline calibrate energy`)."""

from __future__ import annotations

import json
import sys
from typing import Any

# (operator, params): the kernels suite's shape of each, and two others of other widths and sizes
CASES: list[tuple[str, dict[str, int]]] = [
    ("gelu", {"numel": 2**28}), ("gelu", {"numel": 2**26}), ("gelu", {"numel": 2**24}),
    ("silu", {"numel": 2**28}), ("silu", {"numel": 2**26}),
    ("relu", {"numel": 2**28}), ("relu", {"numel": 2**26}),
    ("softmax", {"rows": 16384, "cols": 4096}), ("softmax", {"rows": 65536, "cols": 1024}),
    ("softmax", {"rows": 4096, "cols": 16384}),
    ("layernorm", {"rows": 16384, "cols": 4096}), ("layernorm", {"rows": 65536, "cols": 1024}),
    ("layernorm", {"rows": 8192, "cols": 8192}),
    ("rmsnorm", {"rows": 16384, "cols": 4096}), ("rmsnorm", {"rows": 65536, "cols": 1024}),
    ("rmsnorm", {"rows": 8192, "cols": 8192}),
]


def main() -> int:
    import torch

    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record
    from roofline.measuring.energy import counter_for, measure_fn, static_watts, stored_model
    from roofline.measuring.kernels import build
    from roofline.measuring.target import resolve_target
    from roofline.ops.base import make

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    model = stored_model(0)
    if model is None:
        print("no stored energy model: run `roofline calibrate energy` first", file=sys.stderr)
        return 2
    counter, static = counter_for(0), static_watts(0)
    target = resolve_target(device="cuda", time=True)
    dt = get_dtype("bf16")
    rows: list[dict[str, Any]] = []
    for name, params in CASES:
        op = make(name, **params)
        rec = analytic_record(op, dt, target.ceilings, False)
        built = build(op, dt, "cuda:0")
        e = measure_fn(built.fn, counter, flops=rec.flops, nbytes=rec.bytes, static_w=static[0],
                       static_source=static[1], warmup_s=1.0, graph=built.graph_safe)
        t = e["per_call_s"]
        model_j = model.linear_j(rec.compute_pipe, rec.flops, rec.bytes_read, rec.bytes_written, t)
        elements = params.get("numel") or params["rows"] * params["cols"]
        missed = e["energy_j"] - model_j
        row = {"op": name, "params": params, "elements": elements, "flops": rec.flops, "bytes_read": rec.bytes_read,
               "bytes_written": rec.bytes_written, "roofline_time_s": rec.roofline_time_s, "per_call_s": t,
               "energy_j": e["energy_j"], "power_w": e["power_w"], "model_j": model_j,
               "model_error": model_j / e["energy_j"] - 1, "missed_pj_per_element": missed / elements * 1e12,
               "missed_w": missed / t, "method": e.get("method")}
        rows.append(row)
        print(f"{name:9s} {params!s:34s} {t * 1e6:8.1f} us {e['power_w']:4.0f} W model {row['model_error']:+6.1%} "
              f"missed {row['missed_pj_per_element']:6.1f} pJ/element, {row['missed_w']:5.0f} W", flush=True)
        del built
    json.dump({"device": torch.cuda.get_device_name(0), "model": model.to_dict(), "rows": rows},
              open(sys.argv[1], "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
