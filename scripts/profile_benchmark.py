"""Issue 16's accuracy and speed benchmark for `roofline profile`, one example model per call.

    python scripts/profile_benchmark.py measure examples/llm_gqa.py OUT_DIR --gpu h200 -- --preset 1b
    python scripts/profile_benchmark.py ncu OUT_DIR/llm_gqa.json NCU.csv

`measure` runs the script four times in this process (torch and the model libraries imported once):
1. under a plain `torch.profiler.profile` (CPU + CUDA activities) with `key_averages()` read, as a user of
   the profiler would: the wall time the profiling speed target compares against;
2. under torch's `FlopCounterMode` with `--warmup 0` (one forward): its total, or the error it raises;
3. under `roofline.capture.profile_script` timed: the results document, its wall time, coverage, the
   attributed kernel time and FLOPs;
4. the same analytic (`time=False`, fake tensors) on `--gpu`'s spec: the predicted time per op class beside
   the measured one.
Each run is the whole script (model build and warm-up included), so the wall times compare like with like.
It writes OUT_DIR/<script>.json (the profile document), OUT_DIR/<script>_analytic.json and
OUT_DIR/<script>_bench.json (the figures), and prints them.

`ncu` compares the profile's kernel times (OUT_DIR/<script>_launches.json, memcpys and memsets left out: ncu
profiles kernels only) with Nsight Compute's for the same region (`ncu --clock-control none --cache-control none
--nvtx --nvtx-include "REGION/" --csv --page raw --metrics gpu__time_duration.sum python SCRIPT ARGS`; caches
left as the program leaves them, as in the profiled run): in total and per (op, module), kernels paired in
launch order by name.
"""

from __future__ import annotations

import json
import runpy
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

CLASSES = (("attention", ("attention", "sdpa")), ("matmul", ("mm", "addmm", "bmm", "baddbmm", "linear", "matmul")),
           ("conv", ("convolution", "conv")), ("norm", ("norm",)), ("softmax", ("softmax",)))


def op_class(op: str) -> str:
    """'aten::addmm' -> 'matmul', 'aten::_scaled_dot_product_flash_attention' -> 'attention', else 'other'."""
    name = op.removeprefix("aten::").split(".")[0]
    for cls, keys in CLASSES:
        if any(k == name or (k in name and len(k) > 3) for k in keys):
            return cls
    return "other"


def _run(script: str, args: list[str]) -> None:
    argv = sys.argv[:]
    sys.argv = [script, *args]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise
    finally:
        sys.argv = argv


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def plain_profiler(script: str, args: list[str]) -> float:
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        _run(script, args)
        _sync()
    prof.key_averages()
    return time.perf_counter() - t0


def flop_counter(script: str, args: list[str]) -> dict[str, Any]:
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    try:
        with counter:
            _run(script, [*args, "--warmup", "0"])
    except Exception as exc:  # FlopCounterMode raises on some ops (grouped-query SDPA): that is a finding
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    return {"flops": float(counter.get_total_flops())}


def by_class(doc: Any, field: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for r in doc.records:
        v = getattr(r, field)
        if v is not None:
            out[op_class(r.op)] += v * (r.count or 1)
    return dict(out)


def measure(script: str, out_dir: Path, gpu: str, args: list[str]) -> dict[str, Any]:
    from roofline.capture.script import profile_script
    from roofline.core.document import write_document

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = Path(script).stem
    _run(script, [*args, "--warmup", "1"])  # first run: kernels, autotuning and lazy imports out of the way
    plain_s = plain_profiler(script, args)
    flops_ref = flop_counter(script, args)
    t0 = time.perf_counter()
    prof = profile_script(script, args)
    ours_s = time.perf_counter() - t0
    doc = prof.document()
    write_document(doc, out_dir / f"{stem}.json", force=True)
    t0 = time.perf_counter()
    fake = profile_script(script, args, time=False, gpu=gpu)
    analytic_s = time.perf_counter() - t0
    fake_doc = fake.document()
    write_document(fake_doc, out_dir / f"{stem}_analytic.json", force=True)
    s, f = prof.summary, fake.summary
    measured, predicted = by_class(doc, "time_s"), by_class(fake_doc, "roofline_time_s")
    top = sorted(doc.records, key=lambda r: -(r.time_s or 0) * (r.count or 1))[:10]
    result = {
        "script": script, "args": args, "gpu_spec": gpu,
        "wall_s": {"plain_torch_profiler": plain_s, "roofline_profile": ours_s,
                   "ratio": ours_s / plain_s if plain_s else None, "roofline_analytic": analytic_s,
                   "phases_s": s.get("phases_s")},
        "flops": {"flop_counter_mode": flops_ref, "roofline_matmul": s.get("flops_matmul"),
                  "roofline_total": s.get("flops"), "analytic_matmul": f.get("flops_matmul"),
                  "roofline_by_class": by_class(doc, "flops"), "analytic_by_class": by_class(fake_doc, "flops")},
        "kernel_time_s": s.get("kernel_time_s"), "attributed_time_s": s.get("attributed_time_s"),
        "coverage": s.get("coverage"), "wall_region_s": s.get("wall_s"), "gpu_idle_s": s.get("gpu_idle_s"),
        "without_formula": s.get("without_formula"), "unattributed": s.get("unattributed"),
        "measured_vs_predicted": {c: {"measured_s": measured.get(c), "predicted_s": predicted.get(c),
                                      "ratio": measured[c] / predicted[c] if predicted.get(c) else None}
                                  for c in sorted(set(measured) | set(predicted))},
        "top_ops": [{"op": r.op, "module": r.module, "count": r.count, "time_s": (r.time_s or 0) * (r.count or 1),
                     "kernels": r.kernels} for r in top],
    }
    (out_dir / f"{stem}_bench.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    # every kernel of the profiled region in launch order, with its op call, for `ncu`'s pairing
    launches = [{"call": p.call.index, "op": p.call.op, "module": p.call.module, "kernel": n, "time_s": t}
                for p in prof.calls for n, t in p.kernels]
    (out_dir / f"{stem}_launches.json").write_text(json.dumps(launches) + "\n")
    return result


NOT_KERNELS = ("Memcpy", "Memset")  # copies and memsets are timed by CUPTI but not profiled by ncu


def ncu_compare(launches_path: str, csv_path: str) -> dict[str, Any]:
    """Totals and, per op call (paired with ncu's kernels in launch order by kernel name), the ten heaviest
    (op, module) records."""
    from difflib import SequenceMatcher

    from roofline.ncu.join import kernel_key
    from roofline.ncu.read_csv import read_raw_csv

    ours = [k for k in json.loads(Path(launches_path).read_text()) if not k["kernel"].startswith(NOT_KERNELS)]
    theirs = read_raw_csv(csv_path)
    paired: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    matched = 0
    if len(ours) == len(theirs):
        # Same number of kernels: ncu's list, in launch order, is cut into op calls by each call's kernel
        # count (the order of kernels inside one call can differ between the two tools' lists).
        for k, m in zip(ours, theirs, strict=True):
            key = (k["op"], k["module"])
            paired[key][0] += k["time_s"]
            paired[key][1] += m.duration_s
            matched += 1
    else:
        a, b = [kernel_key(k["kernel"]) for k in ours], [kernel_key(k.name) for k in theirs]
        for block in SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks():
            for n in range(block.size):
                k, m = ours[block.a + n], theirs[block.b + n]
                key = (k["op"], k["module"])
                paired[key][0] += k["time_s"]
                paired[key][1] += m.duration_s
                matched += 1
    total_ours, total_ncu = sum(k["time_s"] for k in ours), sum(k.duration_s for k in theirs)
    heaviest = sorted(paired.items(), key=lambda kv: -kv[1][1])[:10]
    return {"ours_s": total_ours, "ncu_s": total_ncu, "ratio": total_ours / total_ncu if total_ncu else None,
            "kernels_ours": len(ours), "kernels_ncu": len(theirs), "paired": matched,
            "heaviest": [{"op": op, "module": mod, "ours_s": o, "ncu_s": n, "ratio": o / n if n else None}
                         for (op, mod), (o, n) in heaviest]}


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "measure":
        rest = argv[3:]
        gpu = "h200"
        if rest[:1] == ["--gpu"]:
            gpu, rest = rest[1], rest[2:]
        args = rest[1:] if rest[:1] == ["--"] else rest
        print(json.dumps(measure(argv[1], Path(argv[2]), gpu, args), indent=1, default=str))
        return 0
    if len(argv) == 3 and argv[0] == "ncu":
        print(json.dumps(ncu_compare(argv[1], argv[2]), indent=1, default=str))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
