"""Diagnosis (issue 28): which op of a timm ViT-B/16 inference forward launches the Memcpy DtoD kernels that a
plain torch.profiler run does not see, and where a CUDA-graph-replayed step's kernels land in the profile.
Run on a GPU: python3 scripts/experiments/diagnose_vit_graphs.py OUT_DIR."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

import roofline


def chains(p: Any) -> list[tuple[str, int, list[str]]]:
    out = []
    for e in p.events():
        if getattr(e, "kernels", None):
            chain, x = [], e
            while x is not None:
                chain.append(x.name)
                x = x.cpu_parent
            out.append((" < ".join(chain)[:300], len(e.kernels), [k.name[:60] for k in e.kernels]))
    return out


def vit(out: dict[str, Any]) -> None:
    import timm

    model = timm.create_model("vit_base_patch16_224").cuda().to(torch.bfloat16).eval()
    x = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        with torch.inference_mode():
            model(x)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        step()
        torch.cuda.synchronize()
    plain = [c for c in chains(p) if any("Memcpy" in k for k in c[2])]
    out["vit_plain_memcpy_owners"] = plain[:10]
    out["vit_plain_ops"] = Counter(e.name for e in p.events() if e.name.startswith("aten::")).most_common(40)
    prof = roofline.profile(step, warmup=2)
    rows = []
    for r in prof.records:
        if r.kernels and any("Memcpy" in k for k in r.kernels):
            shapes = str(r.extra.get("shapes") or r.to_dict().get("inputs"))[:300]
            rows.append({"op": r.op, "module": r.module, "shapes": shapes,
                         "kernels": r.kernels[:6], "count": r.count, "time_s": r.to_dict().get("time_s")})
    out["vit_ours_memcpy_records"] = rows[:20]
    out["vit_ours_ops"] = Counter(r.op for r in prof.records).most_common(40)


def graphs(out: dict[str, Any]) -> None:
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda().eval()
    compiled = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(64, 1024, device="cuda")

    def step() -> None:
        with torch.no_grad():
            compiled(x)

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    prof = roofline.profile(step, warmup=2)
    s = prof.summary
    out["graphs_summary"] = {k: s.get(k) for k in ("kernel_time_s", "attributed_time_s", "unattributed_time_s",
                                                   "coverage", "graph_replay_time_s", "unattributed", "notes")}
    out["graphs_records"] = [(r.op, r.module, r.kernels) for r in prof.records][:30]
    # the raw events of a profile with our tracer's structure: what owns each kernel
    from roofline.capture.profile import Profile  # noqa: F401  (the class roofline.profile returns)
    tp = getattr(prof, "_torch_prof", None)
    if tp is not None:
        out["graphs_ours_owners"] = chains(tp)[:20]


def main() -> None:
    d = Path(sys.argv[1])
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}
    for f in (vit, graphs):
        try:
            f(out)
        except Exception as e:  # a diagnosis: say what failed, go on
            out[f.__name__ + "_error"] = f"{type(e).__name__}: {e}"
    (d / "diagnose_vit_graphs.json").write_text(json.dumps(out, indent=1, default=str))
    print(json.dumps(out, indent=1, default=str)[:12000])


if __name__ == "__main__":
    main()
