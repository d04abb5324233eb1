"""Training and decode steps on a GPU: the profile against torch's own tools (issue 28's validation).

    python scripts/training_steps.py OUT_DIR [--models resnet50,vit,llama,decode] [--gpu h200]

For each training step (a CNN, a ViT and a decoder LLM with grouped-query attention; autocast in bf16 or
fp16 with a GradScaler; AdamW), after 3 warm-up steps:
1. `roofline.profile` timed: kernel time, the phases, matmul FLOPs, MFU and MBU, and its own wall time;
2. a plain `torch.profiler` (CPU + CUDA, record_shapes, the same warm-up): the sum of its device kernels,
   memcpys and memsets from its trace (annotation ranges such as `Optimizer.step#AdamW.step` are not kernels
   and are left out), and its wall time: the profiling cost is the ratio of the two walls;
3. FlopCounterMode over one step: its total, against the profile's `flops_matmul`;
4. one block's modules, forward and backward FLOPs against hand arithmetic (2 x tokens x in x out per product);
5. the same step analytic on the spec (`time=False`): its predicted time and MFU beside the measured.
A decode step of a Llama-shaped model (batch 8, a 4096-token DynamicCache): the profile's bytes against
weights + cache worked by hand, and MBU. Writes OUT_DIR/training_steps.json and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

import roofline

WARMUP = 3


def _sync() -> None:
    torch.cuda.synchronize()


def plain_profiler(step: Any, out_dir: Path, name: str) -> dict[str, float]:
    """A plain torch.profiler run of one step after the warm-up: its wall and the device time in its trace."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(WARMUP):
        step()
    _sync()
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        _sync()
    prof.key_averages()
    wall = time.perf_counter() - t0
    trace = out_dir / f"{name}_plain_trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    trace.unlink()
    by_cat: dict[str, float] = defaultdict(float)
    by_kernel: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"):
            by_cat[e["cat"]] += float(e["dur"]) * 1e-6
            if e["cat"] != "gpu_user_annotation":
                by_kernel[e["name"]] += float(e["dur"]) * 1e-6
    device = by_cat["kernel"] + by_cat["gpu_memcpy"] + by_cat["gpu_memset"]
    return {"wall_s": wall, "device_s": device, "kernel_s": by_cat["kernel"],
            "annotation_s": by_cat["gpu_user_annotation"], "by_kernel": dict(by_kernel)}


def kernel_diff(prof: Any, plain: dict[str, Any], top: int = 8) -> list[tuple[str, float, float]]:
    """The kernels whose total differs most between the profile and the plain profiler: (name, ours, plain)."""
    ours: dict[str, float] = defaultdict(float)
    for r in prof.records:
        for name, t in zip(r.kernels or [], r.kernel_times_s or [], strict=False):
            ours[name] += t * (r.count or 1)
    for u in prof.summary.get("unattributed") or []:
        ours[str(u["kernel"])] += float(u.get("time_s") or 0.0)
    theirs = plain.pop("by_kernel", {})
    names = set(ours) | set(theirs)
    rows = sorted(names, key=lambda n: -abs(ours.get(n, 0.0) - theirs.get(n, 0.0)))[:top]
    return [(n[:90], ours.get(n, 0.0), theirs.get(n, 0.0)) for n in rows]


def flop_counter(step: Any) -> float | str:
    """FlopCounterMode's total over one step, or the error it raised (it refuses grouped-query SDPA)."""
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with FlopCounterMode(display=False) as fc:
            step()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return float(fc.get_total_flops())


ATTENTION = ("attention", "sdpa")


def linear_flops(prof: Any) -> float:
    """The step's matrix-product FLOPs outside attention (mm, addmm, bmm records)."""
    return sum((r.flops or 0.0) * (r.count or 1) for r in prof.records
               if r.op.removeprefix("aten::").split(".")[0] in ("mm", "addmm", "bmm", "baddbmm")
               and not any(a in r.op for a in ATTENTION))


def ours(step: Any, gpu: str, tokens: int, timed: bool = True) -> tuple[Any, float]:
    t0 = time.perf_counter()
    prof = roofline.profile(step, warmup=WARMUP if timed else 0, time=timed, gpu=None if timed else gpu,
                            tokens=tokens)
    return prof, time.perf_counter() - t0


def module_flops(prof: Any, prefix: str) -> dict[str, dict[str, float]]:
    """Matmul FLOPs per module under `prefix` by phase."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in prof.records:
        if r.module and r.module.startswith(prefix) and r.op in ("aten::mm", "aten::addmm", "aten::bmm"):
            out[r.module][r.phase] += (r.flops or 0.0) * (r.count or 1)
    return {k: dict(v) for k, v in out.items()}


def summary_of(prof: Any) -> dict[str, Any]:
    s = prof.summary
    return {k: s.get(k) for k in ("kernel_time_s", "coverage", "flops", "flops_matmul", "model_flops", "min_bytes",
                                  "wall_s", "wall_uninstrumented_s", "roofline_time_s", "calls_without_formula")} | {
        "phases": {p: {k: v.get(k) for k in ("calls", "model_flops", "time_s", "roofline_time_s")}
                   for p, v in s["phases"].items()},
        "utilization": {k: s["utilization"].get(k) for k in ("mfu", "mbu", "peak", "refused", "tokens_per_s")},
        "without_formula": s["without_formula"][:8], "notes": s["notes"]}


def training(name: str, model: nn.Module, batch: Any, loss_fn: Any, dtype: torch.dtype, tokens: int, gpu: str,
             out_dir: Path, block: tuple[str, dict[str, tuple[int, int]]] | None = None) -> dict[str, Any]:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)

    def step() -> None:
        with torch.autocast("cuda", dtype=dtype):
            loss = loss_fn(model, batch)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    res: dict[str, Any] = {"model": name, "dtype": str(dtype), "tokens": tokens,
                           "params": sum(p.numel() for p in model.parameters())}
    res["plain"] = plain_profiler(step, out_dir, name)
    res["flop_counter"] = flop_counter(step)
    prof, wall = ours(step, gpu, tokens)
    res["ours_wall_s"] = wall
    res["ours"] = summary_of(prof)
    s = prof.summary
    res["kernel_vs_plain"] = s["kernel_time_s"] / res["plain"]["device_s"] - 1
    res["kernel_diff"] = kernel_diff(prof, res["plain"])
    res["unattributed"] = s["unattributed"][:6]
    fc = res["flop_counter"]
    res["flops_matmul_vs_flop_counter"] = s["flops_matmul"] / fc - 1 if isinstance(fc, float) and fc else None
    # the profile's own warm-up steps are not in the plain profiler's wall (it warmed up before its clock)
    res["cost_ratio"] = (wall - s["phases_s"]["warmup"]) / res["plain"]["wall_s"]
    res["phases_s"] = s["phases_s"]
    res["linear_flops"] = linear_flops(prof)
    prof.save(out_dir / f"{name}.json", force=True)
    if block is not None:
        prefix, shapes = block
        got = module_flops(prof, prefix)
        res["block"] = {m: {"ours": got.get(f"{prefix}{m}", {}),
                            "hand_forward": 2 * tokens * i * o, "hand_backward": 4 * tokens * i * o}
                        for m, (i, o) in shapes.items()}
    try:
        ana, _ = ours(step, gpu, tokens, timed=False)
        a = ana.summary
        res["analytic"] = {"roofline_time_s": a["roofline_time_s"], "model_flops": a["model_flops"],
                           "mfu_predicted": a["utilization"]["mfu"].get("predicted"),
                           "without_formula": a["without_formula"][:5]}
    except Exception as exc:
        res["analytic"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    return res


def resnet(gpu: str, out_dir: Path) -> dict[str, Any]:
    import torchvision

    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    x = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (64,), device="cuda")
    return training("resnet50", model, (x, y), lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1]),
                    torch.bfloat16, 64, gpu, out_dir)


def vit(gpu: str, out_dir: Path) -> dict[str, Any]:
    import timm

    model = timm.create_model("vit_base_patch16_224").cuda()
    x = torch.randn(64, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (64,), device="cuda")
    tokens = 64 * 197
    return training("vit_b16", model, (x, y), lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1]),
                    torch.bfloat16, tokens, gpu, out_dir,
                    block=("blocks.3.", {"attn.qkv": (768, 3 * 768), "attn.proj": (768, 768),
                                         "mlp.fc1": (768, 3072), "mlp.fc2": (3072, 768)}))


LLAMA = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
             num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)


def llama(gpu: str, out_dir: Path) -> dict[str, Any]:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**LLAMA, attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg).cuda()
    b, s = 8, 1024
    ids = torch.randint(0, cfg.vocab_size, (b, s), device="cuda")
    hd = cfg.hidden_size // cfg.num_attention_heads
    kvd = cfg.num_key_value_heads * hd
    res = training("llama_gqa", model, ids, lambda m, ids: m(input_ids=ids, labels=ids).loss, torch.float16,
                   b * s, gpu, out_dir,
                    block=("model.layers.3.", {"self_attn.q_proj": (1024, 1024), "self_attn.k_proj": (1024, kvd),
                                               "self_attn.v_proj": (1024, kvd), "self_attn.o_proj": (1024, 1024),
                                               "mlp.gate_proj": (1024, 2816), "mlp.up_proj": (1024, 2816),
                                               "mlp.down_proj": (2816, 1024)}))
    # closed form: every linear (the LM head included) 2 x tokens x in x out forward, twice that backward
    per_layer = 1024 * 1024 * 2 + 1024 * kvd * 2 + 3 * 1024 * 2816
    res["linear_flops_closed_form"] = 6 * b * s * (cfg.num_hidden_layers * per_layer + 1024 * cfg.vocab_size)
    res["linear_flops_vs_closed_form"] = res["linear_flops"] / res["linear_flops_closed_form"] - 1
    # causal attention forward: QK^T and PV over the half square, 2 x b x heads x s^2 x head dim in all
    res["attention_forward_closed_form"] = 2 * b * cfg.num_attention_heads * s * s * hd * cfg.num_hidden_layers
    # the recipe training code logs (PaLM's appendix B, nanoGPT's estimate_mfu): 6 x parameters + 12 x layers x
    # heads x head dim x sequence per token: the embedding table's parameters counted as matmul weights and
    # causal attention as the full square
    res["recipe_flops"] = (6 * res["params"] + 12 * cfg.num_hidden_layers * cfg.num_attention_heads * hd * s) * b * s
    model_flops = res["ours"]["model_flops"]
    res["recipe_vs_ours"] = res["recipe_flops"] / model_flops if model_flops else None
    return res


def decode(gpu: str, out_dir: Path) -> dict[str, Any]:
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                      num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192,
                      attn_implementation="sdpa", torch_dtype="bfloat16")
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):  # initialised on the GPU: seconds for 8B parameters
            model = LlamaForCausalLM(cfg).eval()
    finally:
        torch.set_default_dtype(torch.float32)
    b, ctx = 8, 4096
    ids = torch.randint(0, cfg.vocab_size, (b, ctx), device="cuda")
    with torch.no_grad():
        cache = DynamicCache()
        model(input_ids=ids, past_key_values=cache, use_cache=True)
        nxt = torch.randint(0, cfg.vocab_size, (b, 1), device="cuda")
        length = cache.get_seq_length()

        def step() -> None:
            cache.crop(length)  # each call decodes the same position: the cache stays 4096 long
            model(input_ids=nxt, past_key_values=cache, use_cache=True)

        prof, wall = ours(step, gpu, b)
        plain = plain_profiler(step, out_dir, "decode")
        phases_s = prof.summary["phases_s"]
        wall -= phases_s["warmup"]
    weights = sum(p.numel() for p in model.parameters()) * 2
    embed = model.model.embed_tokens.weight.numel() * 2  # a lookup reads b rows of the table, not all of it
    hd = cfg.hidden_size // cfg.num_attention_heads
    kv_cache = 2 * cfg.num_hidden_layers * b * cfg.num_key_value_heads * ctx * hd * 2
    s = prof.summary
    prof.save(out_dir / "decode.json", force=True)
    return {"model": "llama3_8b_shape_decode", "batch": b, "context": ctx, "weights_bytes": weights,
            "weights_read_bytes": weights - embed, "kv_cache_bytes": kv_cache,
            "hand_bytes": weights - embed + kv_cache, "ours": summary_of(prof),
            "min_bytes_vs_hand": s["min_bytes"] / (weights - embed + kv_cache) - 1,
            "kernel_vs_plain": s["kernel_time_s"] / plain["device_s"] - 1, "plain": plain,
            "cost_ratio": wall / plain["wall_s"], "ours_wall_s": wall, "phases_s": phases_s,
            "kernel_diff": kernel_diff(prof, plain)}


def inference(gpu: str, out_dir: Path) -> dict[str, Any]:
    """The profiling cost of inference forwards (ResNet-50 and ViT-B/16, bf16, batch 32), as issue 28 measured it."""
    import timm
    import torchvision

    out: dict[str, Any] = {}
    built = (("resnet50", torchvision.models.resnet50()), ("vit_b16", timm.create_model("vit_base_patch16_224")))
    for name, model in built:
        model = model.cuda().to(torch.bfloat16).eval()
        x = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.bfloat16)

        def step(model: nn.Module = model, x: Any = x) -> None:
            with torch.inference_mode():
                model(x)

        plain = plain_profiler(step, out_dir, name)
        prof, wall = ours(step, gpu, 32)
        first = {"plain_wall_s": plain["wall_s"], "ours_wall_s": wall, "phases_s": prof.summary["phases_s"]}
        plain = plain_profiler(step, out_dir, name)  # again: each side's one-time costs paid (imports, caches)
        prof, wall = ours(step, gpu, 32)
        s = prof.summary
        diff = kernel_diff(prof, plain)
        if name == "resnet50":  # where the analysis goes
            import cProfile
            import io
            import pstats

            pr = cProfile.Profile()
            pr.enable()
            roofline.profile(step, warmup=1)
            pr.disable()
            buf = io.StringIO()
            pstats.Stats(pr, stream=buf).sort_stats("cumulative").print_stats(30)
            (out_dir / "inference_cprofile.txt").write_text(buf.getvalue())
        out[name] = {"plain": plain, "ours_wall_s": wall, "phases_s": s["phases_s"], "calls": s["calls"],
                     "kernel_diff": diff, "unattributed": s["unattributed"][:6], "first_run": first,
                     "first_cost_ratio": (first["ours_wall_s"] - first["phases_s"]["warmup"]) / first["plain_wall_s"],
                     "cost_ratio": (wall - s["phases_s"]["warmup"]) / plain["wall_s"],
                     "kernel_vs_plain": s["kernel_time_s"] / plain["device_s"] - 1, "coverage": s["coverage"]}
    return out


def graphs(gpu: str, out_dir: Path) -> dict[str, Any]:
    """A step replayed from CUDA graphs (torch.compile mode='reduce-overhead'): what the profile says of it."""
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda().eval()
    compiled = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(64, 1024, device="cuda")

    def step() -> None:
        with torch.no_grad():
            compiled(x)

    for _ in range(5):
        step()
    prof, _ = ours(step, gpu, 64)
    s = prof.summary
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:  # who launched the kernels
        step()
        _sync()
    owners = []
    for e in p.events():
        if getattr(e, "kernels", None):
            chain, x = [], e
            while x is not None:
                chain.append(x.name)
                x = x.cpu_parent
            owners.append((" < ".join(chain)[:200], len(e.kernels)))
    s = {**s, "owners": owners[:12]}
    return {k: s.get(k) for k in ("kernel_time_s", "attributed_time_s", "unattributed_time_s", "coverage",
                                  "graph_replay_time_s", "owners")} | {"notes": s["notes"]}


MODELS = {"resnet50": resnet, "vit": vit, "llama": llama, "decode": decode, "inference": inference,
          "graphs": graphs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--gpu", default="h200")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in a.models.split(","):
        t0 = time.perf_counter()
        try:
            results[name] = MODELS[name](a.gpu, out)
        except Exception as exc:
            results[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]}
        results[name]["script_s"] = time.perf_counter() - t0
        (out / "training_steps.json").write_text(json.dumps(results, indent=1, default=str))
        print(json.dumps({name: results[name]}, indent=1, default=str)[:4000], flush=True)
        torch.cuda.empty_cache()
    print("== summary")
    print_summary(results)
    sys.stdout.flush()


def _pct(x: Any) -> str:
    return f"{x * 100:+.2f}%" if isinstance(x, float) else str(x)


def print_summary(results: dict[str, Any]) -> None:
    """One block a model: what the profile measured against the references, and what it cost."""
    for name, r in results.items():
        if "error" in r:
            print(f"{name}: ERROR {r['error'][:300]}")
            continue
        if name == "inference":
            for m, v in r.items():
                if isinstance(v, dict):
                    print(f"{name} {m}: kernel vs plain profiler {_pct(v['kernel_vs_plain'])}, coverage "
                          f"{v['coverage']}, cost {v['cost_ratio']:.2f}x a plain profiler, phases_s {v['phases_s']}")
            continue
        if name == "graphs":
            print(f"graphs: {r}")
            continue
        o = r["ours"]
        u = o["utilization"]
        print(f"{name}: kernel vs plain profiler {_pct(r.get('kernel_vs_plain'))}, coverage {o['coverage']}, "
              f"flops_matmul vs FlopCounterMode {_pct(r.get('flops_matmul_vs_flop_counter'))} "
              f"(FlopCounterMode: {r.get('flop_counter')}), cost {r.get('cost_ratio', 0):.2f}x, phases_s "
              f"{r.get('phases_s')}")
        print(f"  model FLOPs {o['model_flops']:.4g}, min bytes {o['min_bytes']:.4g}, MFU {u['mfu']}, MBU {u['mbu']}, "
              f"refused {u['refused']}, without formula {[d['op'] for d in o['without_formula']]}")
        print(f"  phases {o['phases']}")
        for key in ("block", "analytic", "linear_flops_vs_closed_form", "min_bytes_vs_hand", "hand_bytes",
                    "kernel_diff", "unattributed"):
            if key in r:
                print(f"  {key}: {json.dumps(r[key], default=str)[:700]}")


if __name__ == "__main__":
    main()
