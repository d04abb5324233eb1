"""What `roofline.profile` costs against a plain torch.profiler run of the same callable (issue 28).

    python scripts/profile_cost.py [--models mlp,resnet,llama] [--modes infer,train] [--repeats 3]
                                   [--device cpu|cuda] [--json OUT.json]

For each model (a stack of small transformer-like blocks: many small ops; a small ResNet; a tiny Llama from
transformers' LlamaConfig with grouped-query attention) and each mode (an inference forward under no_grad; a
training step with AdamW), each repetition runs two fresh processes, the plain one and ours in turn (the CPU
is shared: the two sides are interleaved and the median of the repetitions kept). Each process builds the
model, then measures
- `first`: the first profile in the process (imports, registries and caches paid by it), and
- `steady`: a second one;
each after the same WARMUP plain calls. Plain: `torch.profiler.profile(activities=[CPU(, CUDA)],
record_shapes=True)` around one call, then `key_averages()` (a user reading its table); its wall from before
the profiler starts to the table. Ours: `roofline.profile(fn, warmup=0)` after the same warm-up, to the
profile's records and summary (scripts/training_steps.py counts the same: the profile's wall less its own
warm-up). Beside each wall, the process's CPU time over it (`cpu_s`: steadier than the wall on a shared
CPU). `bare` is one plain call (no profiler) after the warm-up; the overhead per op is
(profiled wall - bare) / recorded calls.

Ours then runs a third profile with timers around the parts of the tracer (`breakdown`, inclusive seconds;
the timers add a little of their own):
- dispatch: Tracer.__torch_dispatch__ (the op's own run included), of it `describe` (the OpCall built) and
  `module_lookup` (the module and phase of the op);
- module_hooks: StepTracker's forward pre/post hooks (the autograd-node tagging included);
- formula: cost_of over every call; traffic: the byte count of every call; records: build_records;
- timeline: the profiler's events read and the kernels joined to the calls (on CUDA), of it `join`
  (kernels.gpu_timeline: the join alone; the rest is torch's own event post-processing);
- summary: the profile's summary; analysis: everything after the run (`phases_s['analysis']`).
Prints a table and writes the JSON (raw figures of every repetition; medians derived).

`--parse` (any device) measures, in one process, torch's own post-processing of the profiler's events
(`events()`: FunctionEvents built, shapes and strides read, the tree built), which a GPU profile pays on top
of the trace: a plain profile's against one with the trace's dispatch mode and `roofline#i` ranges on, as a
GPU profile runs them (CPU process time, the median of 3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

WARMUP = 3
MODELS = ("mlp", "resnet", "llama")
MODES = ("infer", "train")
SIDES = ("plain", "ours")
# The target: a profile costs at most this many plain profiler runs.
TARGET_RATIO = 3.0
# Per worker: a stuck one must not stop the others (a tiny Llama's worker takes ~10 s on a shared 2-core CPU).
WORKER_TIMEOUT_S = 240
# Threads of a CPU worker: one, so its CPU time is its own work (OpenMP's idle threads spin and count).
CPU_THREADS = 1


# -- the models (built in the worker) ----------------------------------------------------------------------

def _block_stack(torch: Any, device: str) -> tuple[Any, Any]:
    """12 pre-norm blocks of width 64 (LayerNorm, attention by SDPA, a GELU MLP): many small ops."""
    nn = torch.nn
    f = torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d: int = 64, heads: int = 4) -> None:
            super().__init__()
            self.heads = heads
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            b, s, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            a = f.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
            return x + self.fc2(f.gelu(self.fc1(self.n2(x))))

    model = nn.Sequential(*[Block() for _ in range(12)]).to(device)
    return model, torch.randn(8, 32, 64, device=device)


def _resnet(torch: Any, device: str) -> tuple[Any, Any]:
    """A ResNet-18-like network (4 stages of 2 basic blocks, 32-256 channels) on 8 x 3 x 64 x 64."""
    nn = torch.nn

    class Basic(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x: Any) -> Any:
            return self.relu(self.b2(self.c2(self.relu(self.b1(self.c1(x))))) + self.down(x))

    layers: list[Any] = [nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
                         nn.MaxPool2d(2)]
    cin = 32
    for cout, stride in ((32, 1), (64, 2), (128, 2), (256, 2)):
        layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10)]
    return nn.Sequential(*layers).to(device), torch.randn(8, 3, 64, 64, device=device)


def _llama(torch: Any, device: str) -> tuple[Any, Any]:
    """A tiny Llama (transformers' LlamaConfig: 4 layers, width 128, GQA 4/2 heads) on 2 x 64 tokens."""
    try:
        import torchvision  # noqa: F401  (transformers imports it when present; a broken one breaks transformers)
    except Exception:  # a torchvision built for another torch: hide it
        sys.modules["torchvision"] = None  # type: ignore[assignment]
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(device), torch.randint(0, 512, (2, 64), device=device)


BUILDERS = {"mlp": _block_stack, "resnet": _resnet, "llama": _llama}


def _step(torch: Any, name: str, mode: str, model: Any, x: Any) -> Callable[[], None]:
    """The callable profiled: a forward under no_grad, or a training step with AdamW."""
    if mode == "infer":
        model.eval()

        def infer() -> None:
            with torch.no_grad():
                model(x)

        return infer
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def train() -> None:
        out = model(x, labels=x).loss if name == "llama" else model(x).float().pow(2).mean()
        out.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return train


# -- the worker: one side, one model, one mode, in a fresh process -----------------------------------------

class Timers:
    """Inclusive seconds and calls of wrapped functions (a call nested in another of the same timer counts once)."""

    def __init__(self) -> None:
        self.s: dict[str, float] = defaultdict(float)
        self.n: dict[str, int] = defaultdict(int)
        self._depth: dict[str, int] = defaultdict(int)
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, key: str) -> None:
        fn = getattr(owner, attr)
        timers = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            timers.n[key] += 1
            if timers._depth[key]:
                return fn(*args, **kwargs)
            timers._depth[key] += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timers.s[key] += time.perf_counter() - t0
                timers._depth[key] -= 1

        self._undo.append((owner, attr, owner.__dict__[attr] if attr in owner.__dict__ else fn))
        setattr(owner, attr, timed)

    def restore(self) -> None:
        for owner, attr, fn in reversed(self._undo):
            setattr(owner, attr, fn)


def _instrument(timers: Timers) -> None:
    import importlib

    from roofline.capture import kernels, records, trace
    from roofline.capture.modules import StepTracker

    profile = importlib.import_module("roofline.capture.profile")  # the package's `profile` is the function

    timers.wrap(trace.Tracer, "__torch_dispatch__", "dispatch")
    timers.wrap(trace.Tracer, "_describe", "describe")
    timers.wrap(StepTracker, "module", "module_lookup")
    timers.wrap(StepTracker, "phase", "module_lookup")
    timers.wrap(StepTracker, "_fw_pre_hook", "module_hooks")
    timers.wrap(StepTracker, "_fw_post_hook", "module_hooks")
    timers.wrap(records, "cost_of", "formula")
    timers.wrap(records, "traffic", "traffic")
    timers.wrap(profile, "build_records", "records")
    timers.wrap(kernels, "timeline", "timeline")
    timers.wrap(kernels, "gpu_timeline", "join")
    timers.wrap(profile.Profile, "_summary", "summary")


def worker(name: str, mode: str, side: str, device: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    import torch

    out: dict[str, Any] = {"model": name, "mode": mode, "side": side, "device": device,
                           "import_torch_s": time.perf_counter() - t0}
    if device == "cpu":  # one thread: idle OpenMP threads spin, which CPU time counts, on a shared machine
        torch.set_num_threads(CPU_THREADS)
    model, x = BUILDERS[name](torch, device)
    fn = _step(torch, name, mode, model, x)
    cuda = device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    for _ in range(WARMUP):
        fn()
    sync()
    t = time.perf_counter()
    fn()
    sync()
    out["bare_s"] = time.perf_counter() - t

    def plain() -> dict[str, Any]:
        from torch.profiler import ProfilerActivity, profile

        for _ in range(WARMUP):
            fn()
        sync()
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        t, c = time.perf_counter(), time.process_time()
        with profile(activities=acts, record_shapes=True) as prof:
            fn()
            sync()
        table = prof.key_averages()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        return {"wall_s": wall, "cpu_s": cpu, "ops": sum(int(e.count) for e in table)}

    def ours() -> dict[str, Any]:
        import roofline

        for _ in range(WARMUP):  # the same warm-up, outside the clocks (as the profile's own would be)
            fn()
        sync()
        t, c = time.perf_counter(), time.process_time()
        prof = roofline.profile(fn, warmup=0, device=device)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        ph = prof.summary["phases_s"]
        return {"wall_s": wall, "cpu_s": cpu, "calls": prof.summary["calls"],
                "skipped": prof.summary["skipped"], "phases_s": ph, "records": len(prof.records)}

    run = plain if side == "plain" else ours
    out["first"] = run()
    out["steady"] = run()
    if side == "ours":
        timers = Timers()
        _instrument(timers)
        out["timed"] = run()
        timers.restore()
        out["breakdown_s"] = {k: round(v, 6) for k, v in sorted(timers.s.items())}
        out["breakdown_calls"] = dict(sorted(timers.n.items()))
        out["breakdown_s"]["analysis"] = out["timed"]["phases_s"]["analysis"]
    return out


def parse_cost(name: str, mode: str, device: str) -> dict[str, Any]:
    """torch's event post-processing, plain against under the trace (`--parse`, module docstring)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from roofline.capture.modules import StepTracker
    from roofline.capture.trace import Tracer

    model, x = BUILDERS[name](torch, device)
    fn = _step(torch, name, mode, model, x)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    for _ in range(WARMUP):
        fn()

    def once(traced: bool) -> tuple[float, int]:
        with profile(activities=acts, record_shapes=True) as prof:
            if traced:
                with StepTracker(ranges=True) as st, Tracer(st.module, lambda: None, ranges=True, phase_of=st.phase):
                    fn()
            else:
                fn()
        t = time.process_time()
        events = prof.events()
        return time.process_time() - t, len(events)

    out: dict[str, Any] = {"model": name, "mode": mode}
    for side, traced in (("plain", False), ("traced", True)):
        runs = [once(traced) for _ in range(3)]
        out[side] = {"parse_s": statistics.median(r[0] for r in runs), "events": runs[0][1]}
    out["ratio"] = out["traced"]["parse_s"] / out["plain"]["parse_s"]
    return out


# -- the driver ----------------------------------------------------------------------------------------

def _spawn(name: str, mode: str, side: str, device: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", name, mode, side, "--device", device]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, env=os.environ.copy())
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {WORKER_TIMEOUT_S} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1][:300]}
    return json.loads(lines[-1])


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the repetitions of one (model, mode): walls, ratios, overhead per op, the breakdown."""
    plain = [r for r in runs if r.get("side") == "plain"]
    ours = [r for r in runs if r.get("side") == "ours"]
    out: dict[str, Any] = {"repeats": len(ours), "errors": [r["error"] for r in runs if "error" in r]}
    if not plain or not ours:
        return out
    calls = ours[0]["steady"]["calls"]
    bare = _median([r["bare_s"] for r in runs if "bare_s" in r]) or 0.0
    for which in ("first", "steady"):
        p = _median([r[which]["wall_s"] for r in plain])
        o = _median([r[which]["wall_s"] for r in ours])
        pc = _median([r[which]["cpu_s"] for r in plain])
        oc = _median([r[which]["cpu_s"] for r in ours])
        out[which] = {"plain_s": p, "ours_s": o, "ratio": o / p if p else None,
                      "plain_cpu_s": pc, "ours_cpu_s": oc, "cpu_ratio": oc / pc if pc else None}
    out["calls"] = calls
    out["plain_ops"] = plain[0]["steady"]["ops"]
    out["bare_s"] = bare
    out["ours_overhead_per_call_us"] = (out["steady"]["ours_s"] - bare) / calls * 1e6 if calls else None
    out["plain_overhead_per_call_us"] = (out["steady"]["plain_s"] - bare) / calls * 1e6 if calls else None
    keys = sorted({k for r in ours for k in r.get("breakdown_s", {})})
    out["breakdown_s"] = {k: _median([r["breakdown_s"].get(k, 0.0) for r in ours]) for k in keys}
    out["analysis_first_s"] = _median([r["first"]["phases_s"]["analysis"] for r in ours])
    return out


def _fmt(x: float | None, scale: float = 1e3, spec: str = ".1f") -> str:
    return "-" if x is None else format(x * scale, spec)


def table(results: dict[str, dict[str, Any]]) -> str:
    head = (f"{'model/mode':<14} {'calls':>5} {'first plain/ours ms':>20} {'x':>5} {'cpu x':>5} "
            f"{'steady plain/ours ms':>21} {'x':>5} {'cpu x':>5} {'us/call':>7}")
    rows = [head, "-" * len(head)]
    for key, s in results.items():
        if "steady" not in s:
            rows.append(f"{key:<14} failed: {'; '.join(s['errors'])[:60]}")
            continue
        f, st = s["first"], s["steady"]
        rows.append(f"{key:<14} {s['calls']:>5} {_fmt(f['plain_s']):>9}/{_fmt(f['ours_s']):<10} "
                    f"{f['ratio']:>5.2f} {f['cpu_ratio']:>5.2f} {_fmt(st['plain_s']):>10}/{_fmt(st['ours_s']):<10} "
                    f"{st['ratio']:>5.2f} {st['cpu_ratio']:>5.2f} {_fmt(s['ours_overhead_per_call_us'], 1):>7}")
    rows.append("")
    rows.append("breakdown of ours (third profile, inclusive ms): " + ", ".join(
        f"{k}" for k in next((s["breakdown_s"] for s in results.values() if "breakdown_s" in s), {})))
    for key, s in results.items():
        if "breakdown_s" in s:
            rows.append(f"{key:<14} " + " ".join(f"{k}={_fmt(v)}" for k, v in s["breakdown_s"].items()))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when torch sees a GPU)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--parse", action="store_true", help="torch's event post-processing, plain vs traced")
    ap.add_argument("--worker", nargs=3, metavar=("MODEL", "MODE", "SIDE"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.device is None:
        import torch

        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    if a.worker:
        print(json.dumps(worker(*a.worker, a.device)))
        return 0
    models, modes = a.models.split(","), a.modes.split(",")
    bad = [m for m in models if m not in BUILDERS] + [m for m in modes if m not in MODES]
    if bad or a.repeats < 1:
        print(f"profile_cost: unknown model or mode {bad} (models {MODELS}, modes {MODES}), or --repeats < 1",
              file=sys.stderr)
        return 2
    if a.parse:
        for name in models:
            for mode in modes:
                r = parse_cost(name, mode, a.device)
                print(f"{name}/{mode}: events() {r['plain']['parse_s'] * 1e3:.0f} ms for {r['plain']['events']} "
                      f"events plain, {r['traced']['parse_s'] * 1e3:.0f} ms for {r['traced']['events']} traced "
                      f"({r['ratio']:.2f}x)")
        return 0
    raw: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rep in range(a.repeats):
        for name in models:
            for mode in modes:
                for side in (SIDES if rep % 2 == 0 else SIDES[::-1]):  # interleaved, order alternating
                    t = time.perf_counter()
                    r = _spawn(name, mode, side, a.device)
                    raw[f"{name}/{mode}"].append(r)
                    print(f"[{rep + 1}/{a.repeats}] {name}/{mode} {side}: "
                          f"{r.get('error') or format(r['steady']['wall_s'] * 1e3, '.1f') + ' ms steady'} "
                          f"({time.perf_counter() - t:.1f} s)", file=sys.stderr, flush=True)
    results = {k: summarise(v) for k, v in raw.items()}
    print(table(results))
    doc = {"device": a.device, "warmup": WARMUP, "repeats": a.repeats, "target_ratio": TARGET_RATIO,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": results, "raw": raw}
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(doc, indent=1))
    else:
        print(json.dumps({"device": a.device, "results": results}))
    worst = max((s[w]["ratio"] for s in results.values() if "steady" in s for w in ("first", "steady")), default=None)
    print(f"worst ratio {worst if worst is None else round(worst, 2)} (target <= {TARGET_RATIO})", file=sys.stderr)
    return 0 if all("steady" in s for s in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
