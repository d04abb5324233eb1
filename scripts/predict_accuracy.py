"""How good are predicted step times? Issue 32's benchmark: predict real models' kernel time from the operator
database alone, then measure them.

    python scripts/predict_accuracy.py --db DB.json OUT_DIR [--cases llama_prefill,llama_decode,...] [--gpu h200]

For each case (a Llama-shaped decoder prefill with GQA, 8 layers, hidden 2048, bf16; a decode step with a
4096-token KV cache; ResNet-50 and ViT-B/16 inference from torchvision, bf16; a training step of a small GQA
Llama; and the same models at batch sizes and lengths the sweep never measured):
1. predicted, without running a kernel: the model profiled analytically (`roofline.profile(time=False, db=DB)`,
   fake tensors): each record predicted from the database, the step summed (the summary's `prediction`);
2. measured: the same step profiled on the GPU (`roofline.profile(db=DB)`, CUPTI kernel times; its records carry
   the same predictions, per op);
3. compared: the step's predicted kernel time against the measured one (and the bound's), the median per-op
   error of the ten heaviest ops (measured), the share of ops whose measured time falls inside the predicted
   interval (every record carries one: the bound's is the bound alone, and `in_interval_from_db` counts only the
   database's), and the share within 20% for prediction and bound alike.
The database is built from the sweep alone (suites/sweeps/ops.toml): no model's shapes are in it. Writes
OUT_DIR/predict_accuracy.json and OUT_DIR/predict_accuracy.txt (the table, also printed), and each case's
timed profile as OUT_DIR/NAME.json.

    python scripts/predict_accuracy.py --db DB.json OUT_DIR --from-profiles DIR   # no GPU
    python scripts/predict_accuracy.py --db DB.json OUT_DIR --zoo [--split test]   # the held-out zoo

`--zoo` runs the steps of the held-out zoo (suites/zoo/heldout.toml, frozen: scripts/zoo_models.py) instead of the
ten cases above, which are in-sample (the predictor's rules were chosen on them); `--split` keeps its dev or test
half. The summary gives, per split, the share of steps within 5% and 10%, the median |error| (the bound's beside it),
the share of ops inside their interval and the median of the steps' top-10 errors.

re-predicts the timed profiles a GPU run kept (DIR/NAME.json, or .json.gz) with today's predictor and DB: the same
figures, the step summed from the timed records' predictions instead of an analytic run (they are the same ops
and shapes), so a change of the predictor's rules is measured against the GPU's times without a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import roofline
from roofline.analysis.predict import from_database
from roofline.ceilings import opdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_models import SPLITS, build_step
from zoo_models import digest as zoo_digest
from zoo_models import load as load_zoo

DEVICE = "cuda"  # --device cpu: a smoke run of the script itself (with --tiny), no figures worth keeping
HEAVIEST = 10
WITHIN = 0.20  # the "within 20%" share, for prediction and bound alike
LLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=32,
             num_key_value_heads=8, vocab_size=32000, max_position_embeddings=8192)
SMALL_LLAMA = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
                   num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)


TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            vocab_size=256, max_position_embeddings=512)
# --tiny: every case at a few-second size (the script's own smoke test on a CPU)
TINY_ARGS = {"llama_prefill": (1, 32), "llama_decode": (2, 64), "llama_train": (2, 32),
             "llama_prefill_b2_s1500": (2, 24), "llama_decode_b3_c3000": (3, 48), "resnet50": ("resnet50", 1),
             "vit_b16": ("vit_b_16", 1), "resnet50_b12": ("resnet50", 1), "vit_b16_b12": ("vit_b_16", 1),
             "llama_train_b2_s1536": (1, 48)}


def _sync() -> None:
    if DEVICE.startswith("cuda"):
        torch.cuda.synchronize()


def _llama(cfg: dict[str, Any], train: bool = False) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**cfg, attn_implementation="sdpa")).to(DEVICE, torch.bfloat16)
    return model.train() if train else model.eval()


def llama_prefill(batch: int, seq: int) -> Callable[[], Any]:
    model = _llama(LLAMA)
    ids = torch.randint(0, LLAMA["vocab_size"], (batch, seq), device=DEVICE)

    def step() -> None:
        with torch.no_grad():
            model(input_ids=ids, use_cache=False)
    return step


def llama_decode(batch: int, context: int) -> Callable[[], Any]:
    from transformers import DynamicCache

    model = _llama(LLAMA)
    ids = torch.randint(0, LLAMA["vocab_size"], (batch, context), device=DEVICE)
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, use_cache=True)
    nxt = torch.randint(0, LLAMA["vocab_size"], (batch, 1), device=DEVICE)

    def step() -> None:
        # each call decodes the next position, as a server does: the cache grows by one token a call (4096 ->
        # 4096 + a few calls) and stays contiguous. (Cropping it back to `context` each call, as this did before
        # 2026-12-02, left the cache a strided view and made aten::cat gather it: 53 us a call instead of ~9.)
        with torch.no_grad():
            model(input_ids=nxt, past_key_values=cache, use_cache=True)
    return step


def vision(name: str, batch: int) -> Callable[[], Any]:
    import torchvision

    model = getattr(torchvision.models, name)().to(DEVICE, torch.bfloat16).eval()
    x = torch.randn(batch, 3, 224, 224, device=DEVICE, dtype=torch.bfloat16)
    if name == "resnet50":
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)

    def step() -> None:
        # ViT: grad mode on (nothing is backpropagated), so nn.MultiheadAttention takes its SDPA path, not the
        # inference fast path's fused op (aten::_native_multi_head_attention, which has no family to predict)
        with torch.set_grad_enabled(name == "vit_b_16"):
            model(x)
    return step


def llama_train(batch: int, seq: int) -> Callable[[], Any]:
    model = _llama(SMALL_LLAMA, train=True)
    ids = torch.randint(0, SMALL_LLAMA["vocab_size"], (batch, seq), device=DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


# name -> (builder, its arguments, whether those shapes are the case's main ones or "other" sizes). These ten are
# in-sample: the predictor's rules were chosen on them (the held-out zoo is --zoo).
CASES: dict[str, tuple[Callable[..., Callable[[], Any]], tuple[Any, ...], str]] = {
    "llama_prefill": (llama_prefill, (1, 2048), "main"),
    "llama_decode": (llama_decode, (8, 4096), "main"),
    "resnet50": (vision, ("resnet50", 32), "main"),
    "vit_b16": (vision, ("vit_b_16", 32), "main"),
    "llama_train": (llama_train, (4, 1024), "main"),
    "llama_prefill_b2_s1500": (llama_prefill, (2, 1500), "other"),
    "llama_decode_b3_c3000": (llama_decode, (3, 3000), "other"),
    "resnet50_b12": (vision, ("resnet50", 12), "other"),
    "vit_b16_b12": (vision, ("vit_b_16", 12), "other"),
    # a training step of another size, measured after the training rule (`Predictor.for_step`) was built on
    # llama_train's profile
    "llama_train_b2_s1536": (llama_train, (2, 1536), "other"),
}


IN_SAMPLE = tuple(CASES)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b - 1 if a is not None and b else None


def op_metrics(records: list[Any]) -> dict[str, Any]:
    """Per-op figures over the timed records that have a prediction."""
    rows = [r for r in records if r.time_s and r.predicted_time_s]
    heavy = sorted(rows, key=lambda r: (r.count or 1) * r.time_s, reverse=True)[:HEAVIEST]
    from_db = [r for r in rows if from_database(r)]
    inside = [r for r in rows if r.predicted_low_s <= r.time_s <= r.predicted_high_s]
    inside_db = [r for r in from_db if r.predicted_low_s <= r.time_s <= r.predicted_high_s]
    return {
        "ops": len(rows), "ops_from_db": len(from_db),
        "median_heaviest_error": statistics.median(abs(r.predicted_time_s / r.time_s - 1) for r in heavy)
        if heavy else None,
        "median_heaviest_error_bound": statistics.median(abs(r.roofline_time_s / r.time_s - 1) for r in heavy)
        if heavy else None,
        "in_interval": len(inside) / len(rows) if rows else None,
        "in_interval_from_db": len(inside_db) / len(from_db) if from_db else None,
        "within_20pct": sum(abs(r.predicted_time_s / r.time_s - 1) <= WITHIN for r in rows) / len(rows)
        if rows else None,
        "within_20pct_bound": sum(abs(r.roofline_time_s / r.time_s - 1) <= WITHIN for r in rows) / len(rows)
        if rows else None,
        "heaviest": [{"op": r.op, "module": r.module, "count": r.count, "measured_s": r.time_s,
                      "predicted_s": r.predicted_time_s, "low_s": r.predicted_low_s, "high_s": r.predicted_high_s,
                      "bound_s": r.roofline_time_s, "source": r.prediction_source} for r in heavy],
    }


def by_op(records: list[Any]) -> list[dict[str, Any]]:
    """The timed records rolled up by (op, dtype, where the prediction came from), largest |predicted - measured|
    first: where a step's error comes from."""
    from roofline.analysis.families import family_of

    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in records:
        if not r.time_s or not r.predicted_time_s:
            continue
        key = (r.op, r.dtype, family_of(r) if from_database(r) else "bound")
        row = rows.setdefault(key, {"op": key[0], "dtype": key[1], "from": key[2], "calls": 0, "measured_s": 0.0,
                                    "predicted_s": 0.0, "bound_s": 0.0})
        n = r.count or 1
        row["calls"] += n
        row["measured_s"] += n * r.time_s
        row["predicted_s"] += n * r.predicted_time_s
        row["bound_s"] += n * r.roofline_time_s
    return sorted(rows.values(), key=lambda x: -abs(x["predicted_s"] - x["measured_s"]))


def run_case(name: str, db: Path, gpu: str, tiny: bool = False, out: Path | None = None) -> dict[str, Any]:
    """One case's figures; with `out`, its timed profile (every record measured and predicted) as
    out/NAME.json, to see which records an error comes from."""
    build, args, kind = CASES[name]
    if kind in SPLITS:  # a zoo step: its entry
        step = build_step(args[0], DEVICE, tiny)
    else:
        args = TINY_ARGS[name] if tiny else args
        step = build(*args)
    res: dict[str, Any] = {"case": name, "args": list(args), "kind": kind}
    timed = roofline.profile(step, name=name, warmup=3, device=DEVICE, db=db)
    _sync()
    measured = timed.summary["kernel_time_s"]
    if out is not None:
        timed.save(out / f"{name}.json", force=True)
    res["measured_kernel_s"] = measured
    res["measured_wall_s"] = timed.summary.get("wall_uninstrumented_s")
    try:  # the prediction proper: fake tensors, no kernel runs
        ana = roofline.profile(step, name=name, time=False, gpu=None if DEVICE == "cpu" else gpu, db=db)
        predicted = ana.summary["prediction"]
        res["predicted_from"] = "analytic profile"
    except Exception as exc:  # a model the fake run cannot follow: the timed run's shapes (times unused)
        res["analytic_error"] = f"{type(exc).__name__}: {exc}"[:300]
        predicted = {k: v for k, v in timed.summary["prediction"].items() if k != "measured_kernel_time_s"}
        res["predicted_from"] = "the timed profile's shapes"
    res["predicted"] = predicted
    res["step_error"] = _ratio(predicted["predicted_kernel_time_s"], measured)
    res["step_error_bound"] = _ratio(predicted["bound_time_s"], measured)
    res["in_step_interval"] = (predicted["predicted_kernel_low_s"] <= measured <= predicted["predicted_kernel_high_s"]
                               if measured else None)
    res["eager_step_error"] = _ratio(predicted["predicted_step_s"], res["measured_wall_s"])
    res.update(op_metrics(timed.records))
    res["by_op"] = by_op(timed.records)
    return res


def repredict_case(name: str, profiles: Path, db: Path) -> dict[str, Any]:
    """One case's figures from its stored timed profile, every record predicted again from `db`."""
    import gzip

    from roofline.analysis.predict import predicted, predictor_for
    from roofline.analysis.predict_step import step_prediction
    from roofline.core.document import validate_document

    path = next((p for p in (profiles / f"{name}.json", profiles / f"{name}.json.gz") if p.exists()), None)
    if path is None:
        raise FileNotFoundError(f"no {name}.json(.gz) in {profiles}")
    text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    doc = validate_document(json.loads(text), str(path))
    records = doc.records
    predictor = predictor_for(records[0].gpu if records else "", opdb.read(db), opdb.WARM, in_sequence=True)
    records = predicted(records, predictor)
    measured = (doc.extra.get("profile") or {}).get("kernel_time_s")
    step = step_prediction(records, predictor).to_dict()
    res: dict[str, Any] = {"case": name, "args": [], "kind": CASES[name][2] if name in CASES else "stored",
                           "measured_kernel_s": measured, "predicted_from": f"{path.name}, re-predicted",
                           "predicted": step}
    res["step_error"] = _ratio(step["predicted_kernel_time_s"], measured)
    res["step_error_bound"] = _ratio(step["bound_time_s"], measured)
    res["in_step_interval"] = (step["predicted_kernel_low_s"] <= measured <= step["predicted_kernel_high_s"]
                               if measured else None)
    res.update(op_metrics(records))
    res["by_op"] = by_op(records)
    return res


WITHIN_STEP = (0.05, 0.10)  # the step goals: within 5% (on 80% of steps) and 10% (on all)


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind of case (a zoo's dev and test halves, or main/other): the step and op figures the goals name."""
    out: dict[str, Any] = {}
    for kind in sorted({r.get("kind", "?") for r in results}):
        rows = [r for r in results if r.get("kind") == kind and r.get("step_error") is not None]
        failed = [r["case"] for r in results if r.get("kind") == kind and r.get("step_error") is None]
        if not rows:
            out[kind] = {"steps": 0, "failed": failed}
            continue
        errs = [abs(r["step_error"]) for r in rows]
        ops = sum(r.get("ops") or 0 for r in rows)
        inside = sum((r.get("in_interval") or 0.0) * (r.get("ops") or 0) for r in rows)
        tops = [r["median_heaviest_error"] for r in rows if r.get("median_heaviest_error") is not None]
        out[kind] = {"steps": len(rows), "failed": failed,
                     **{f"within_{round(w * 100)}pct": sum(e <= w for e in errs) / len(errs) for w in WITHIN_STEP},
                     "median_abs_error": statistics.median(errs), "mean_abs_error": statistics.mean(errs),
                     "median_abs_error_bound": statistics.median(abs(r["step_error_bound"]) for r in rows),
                     "ops_in_interval": inside / ops if ops else None,
                     "median_top10_error": statistics.median(tops) if tops else None}
    return out


def summary_lines(s: dict[str, Any]) -> list[str]:
    lines = []
    for kind, f in s.items():
        if not f["steps"]:
            lines.append(f"{kind}: no step measured ({', '.join(f['failed'])} failed)")
            continue
        lines.append(f"{kind}: {f['steps']} steps, within 5% {f['within_5pct']:.0%}, "
                     f"within 10% {f['within_10pct']:.0%}, "
                     f"median |error| {f['median_abs_error']:.1%} (bound {f['median_abs_error_bound']:.1%}), ops in "
                     f"interval {_share(f['ops_in_interval'])}, top-10 median {_share(f['median_top10_error'])}"
                     + (f"; failed: {', '.join(f['failed'])}" if f["failed"] else ""))
    return lines


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def table(results: list[dict[str, Any]]) -> str:
    head = (f"{'case':24} {'meas ms':>8} {'pred ms':>8} {'step':>7} {'bound':>7} {'top10':>6} {'top10b':>6} "
            f"{'in int':>6} {'<20%':>5} {'<20%b':>5}")
    lines = [head, "-" * len(head)]
    for r in results:
        if "error" in r:
            lines.append(f"{r['case']:24} error: {r['error'][:50]}")
            continue
        lines.append(f"{r['case']:24} {r['measured_kernel_s'] * 1e3:8.3f} "
                     f"{r['predicted']['predicted_kernel_time_s'] * 1e3:8.3f} {_pct(r['step_error']):>7} "
                     f"{_pct(r['step_error_bound']):>7} {_share(r['median_heaviest_error']):>6} "
                     f"{_share(r['median_heaviest_error_bound']):>6} {_share(r['in_interval']):>6} "
                     f"{_share(r['within_20pct']):>5} {_share(r['within_20pct_bound']):>5}")
    for r in results:  # where each step's error comes from: the three largest differences by op
        for row in (r.get("by_op") or [])[:3]:
            lines.append(f"  {r['case'][:14]:14} {row['op'][:34]:34} {row['dtype']:5} {row['from'][:11]:11} "
                         f"{row['calls']:4d} calls {row['measured_s'] * 1e6:8.0f} us meas "
                         f"{row['predicted_s'] * 1e6:8.0f} pred")
    lines += ["step: predicted kernel time vs measured (bound: the roofline's sum); top10: median |error| of the 10 "
              "heaviest ops (b: the bound's); in int: ops whose measured time is inside the predicted interval; "
              "<20%: ops within 20% (b: the bound)"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="every case at a tiny size (a smoke run of the script)")
    ap.add_argument("--from-profiles", type=Path, help="re-predict the timed profiles stored in this folder")
    ap.add_argument("--zoo", action="store_true", help="the held-out zoo's steps (suites/zoo/heldout.toml)")
    ap.add_argument("--split", choices=SPLITS, help="with --zoo: its dev or test half only")
    a = ap.parse_args()
    if a.zoo:
        zoo = [e for e in load_zoo() if a.split is None or e["split"] == a.split]
        CASES.clear()
        CASES.update({e["name"]: (build_step, (e,), e["split"]) for e in zoo})
        if a.cases == ",".join(IN_SAMPLE):
            a.cases = ",".join(CASES)
    global DEVICE, LLAMA, SMALL_LLAMA
    DEVICE = a.device
    if a.tiny:
        LLAMA = SMALL_LLAMA = TINY
    a.out.mkdir(parents=True, exist_ok=True)
    db = opdb.read(a.db)  # validated here once; each profile applies it (another GPU's: as a transfer, said)
    results = []
    for name in a.cases.split(","):
        print(f"-- {name}", file=sys.stderr, flush=True)
        try:
            results.append(repredict_case(name, a.from_profiles, a.db) if a.from_profiles
                           else run_case(name, a.db, a.gpu, a.tiny, a.out))
        except Exception as exc:  # one case's failure must not stop the others
            traceback.print_exc()
            results.append({"case": name, "error": f"{type(exc).__name__}: {exc}"[:500]})
        if DEVICE.startswith("cuda"):
            torch.cuda.empty_cache()
        # after every case: a run cut short by a time limit keeps the cases it finished
        doc = {"db": str(a.db), "db_points": len(db.points), "device": db.device, "gpu": a.gpu, "results": results,
               "summary": summary(results), "zoo": {"file": "suites/zoo/heldout.toml", "sha256": zoo_digest()}
               if a.zoo else None}
        (a.out / "predict_accuracy.json").write_text(json.dumps(doc, indent=1, default=str))
        text = "\n".join([table(results), *summary_lines(doc["summary"])])
        (a.out / "predict_accuracy.txt").write_text(text + "\n")
    print("== summary")
    print(f"database {a.db}: {len(db.points)} points, {db.device.get('name')}")
    print(text)


if __name__ == "__main__":
    main()
