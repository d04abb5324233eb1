"""How good is `--energy` on this GPU (issue 33's accuracy check; figures for docs/measurements.md, "Energy").

    python scripts/energy_accuracy.py OUT_DIR [--suite suites/kernels-h200.toml] [--runs 5] [--kernels 10]

1. The NVML energy counter: its update period (median spacing of its changes, idle and busy) and resolution
   (its unit and the least step seen).
2. Repeatability: the energy per call of the suite's kernels of 0.05-5 ms (the first `--kernels`), `--runs`
   windows each; the coefficient of variation of each (target: within 2%). Zeus's ZeusMonitor over the same
   windows beside ours where Zeus can be imported (on the lent H200, which has no network, as wheels carried
   to it: docs/energy.md, "Zeus"); where not, the import's error is said.
3. The energy model (stored by `roofline calibrate energy`; fitted now if none) predicting every suite
   kernel's energy per call from its FLOPs, bytes and time (target: within 10%).
4. The power roof: the SM clock a long bf16 GEMM can hold under the cap, predicted from a burst run's rate and
   clock, against the clock measured during it (target: within 5%): the in-kernel trace of a `--power
   sustained` record (the clock its SMs ran at, back to back under the cap), NVML's reported clock over
   SUSTAIN_S of back-to-back calls beside it (NVML's clock lags the cap's controller and reads above the
   kernel's: at 14:06 on 2026-12-02, 668 TFLOP/s back to back at NVML's 1410 MHz would be 474k FLOP/cycle,
   where the burst run did 522k at its in-kernel 1491 MHz); and the sustained rate against the power roof at
   its intensity.

Writes OUT_DIR/energy_accuracy.json (every figure and raw window) and prints a summary ending in
"== summary". Exit 0 when it ran (the targets are reported, not enforced), 2 without a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

PER_CALL_RANGE_S = (0.05e-3, 5e-3)  # the kernels: 0.05-5 ms each
LONG_GEMM_N = 16384  # 8.8 TFLOP per call, ~13 ms at the cap's clock: a long bf16 GEMM
SUSTAIN_S = 6.0  # back-to-back before and while its clock is read (the cap settles within ~1-2 s)
SETTLE_S = 2.0  # the first seconds of the sustained run are left out of its clock
REPEAT_WARMUP_S = 0.5  # warm-up per repeatability window (the first window of a kernel gets the full one)


def _zeus() -> tuple[Any | None, str]:
    """Zeus's ZeusMonitor on GPU 0, or None, and what was found: its version, or why it is not there (the
    import's or the monitor's error, as raised)."""
    try:
        import zeus  # type: ignore[import-not-found]
        from zeus.monitor import ZeusMonitor  # type: ignore[import-not-found]

        monitor = ZeusMonitor(gpu_indices=[0])
    except Exception as e:  # any failure is reported, not raised: the comparison is optional
        return None, f"not usable ({type(e).__name__}: {e}): skipped"
    return monitor, f"zeus {getattr(zeus, '__version__', '?')}: ZeusMonitor over the same windows"


def counter_figures(counter: Any) -> dict[str, Any]:
    """The counter's update period and resolution, idle and under a bf16 GEMM."""
    import torch

    from roofline.measuring.energy import idle_window, window

    idle = idle_window(counter).counter_figures()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)

    def chunk() -> None:
        (a @ b).sum()
        torch.cuda.synchronize()

    busy = window(counter, chunk).counter_figures()
    return {"idle": idle, "busy": busy}


def repeatability(entries: list[Any], counter: Any, runs: int, zeus: Any, static: tuple[float, str]
                  ) -> list[dict[str, Any]]:
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record
    from roofline.measuring.energy import measure_fn
    from roofline.measuring.kernels import build
    from roofline.measuring.target import resolve_target

    target = resolve_target(device="cuda", time=True)
    rows = []
    for i, entry in enumerate(entries, start=1):
        op, dt = entry.operator(True), get_dtype(entry.dtype_for(True))
        rec = analytic_record(op, dt, target.ceilings, entry.tensor_cores)
        built = build(op, dt, "cuda:0")
        windows = []
        for r in range(runs):
            if zeus is not None:
                zeus.begin_window("w")
            e = measure_fn(built.fn, counter, flops=rec.flops, nbytes=rec.bytes, static_w=static[0],
                           static_source=static[1], warmup_s=1.0 if r == 0 else REPEAT_WARMUP_S,
                           graph=built.graph_safe)
            if zeus is not None:
                z = zeus.end_window("w")
                e["zeus_power_w"] = z.total_energy / z.time
            windows.append(e)
        js = [w["energy_j"] for w in windows]

        def cv(xs: list[float]) -> float | None:
            return statistics.pstdev(xs) / statistics.mean(xs) if len(xs) > 1 else None

        row = {"entry": i, "op": entry.op, "label": f"{rec.label} {rec.shape}", "pipe": rec.compute_pipe,
               "flops": rec.flops, "bytes": rec.bytes, "bytes_read": rec.bytes_read, "bytes_written": rec.bytes_written,
               "per_call_s": statistics.median(w["per_call_s"] for w in windows),
               "energy_j": statistics.median(js), "cv": cv(js),
               "power_w": statistics.median(w["power_w"] for w in windows),
               # J per call is power x time per call: which of the two varies from window to window
               "cv_power": cv([w["power_w"] for w in windows]), "cv_time": cv([w["per_call_s"] for w in windows]),
               "windows": windows}
        if zeus is not None:
            row["zeus_vs_ours"] = statistics.median(w["zeus_power_w"] / w["power_w"] for w in windows) - 1
        rows.append(row)
        print(f"  {i:2d} {row['label'][:48]:48s} {row['per_call_s'] * 1e3:8.3f} ms {row['energy_j'] * 1e3:9.3f} mJ "
              f"{row['power_w']:5.0f} W  CV {row['cv'] or 0:.2%} (power {row['cv_power'] or 0:.2%}, time "
              f"{row['cv_time'] or 0:.2%})", flush=True)
        del built
    return rows


def long_gemm(model: Any) -> dict[str, Any]:
    """A long bf16 GEMM: its FLOPs per SM cycle from a burst run (`roofline.analyze`, the in-kernel SM clock),
    the clock the power roof then allows, against the clock NVML reports while it runs back to back; and a
    `--power sustained` record's rate against the power roof."""
    import torch

    import roofline
    from roofline.core.energy import power_roof_flops_per_s, sustained_clock_mhz
    from roofline.measuring.nvml import ClockSampler

    n = LONG_GEMM_N
    pipe = "bf16_tensor_dense_tflops"
    burst = roofline.analyze("gemm", m=n, dtype="bf16", kernels=False)
    sustained_rec = roofline.analyze("gemm", m=n, dtype="bf16", kernels=False, power="sustained")
    per_cycle = (burst.achieved_flops_per_s or 0) / ((burst.sm_clock_mhz or 1) * 1e6)
    share = (burst.bytes_read or 0) / (burst.bytes or 1)
    intensity = burst.arithmetic_intensity or 0.0
    predicted = sustained_clock_mhz(model, pipe, intensity, per_cycle, model.max_sm_mhz, share)
    roof = power_roof_flops_per_s(model, pipe, intensity, share)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    flops = 2.0 * n**3
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    calls = 0
    while time.perf_counter() - t0 < SETTLE_S:
        a @ b
        calls += 1
        if calls % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    with ClockSampler(0) as cs:
        s.record()
        k = 0
        while time.perf_counter() - t0 < SUSTAIN_S:
            a @ b
            k += 1
            if k % 8 == 0:
                torch.cuda.synchronize()
        e.record()
        e.synchronize()
    rate = flops * k / (s.elapsed_time(e) * 1e-3)
    nvml = cs.report.sm_mhz_median
    clocks = sustained_rec.clocks
    measured = sustained_rec.sm_clock_mhz
    return {"n": n, "burst_mhz": burst.sm_clock_mhz, "burst_flops_per_s": burst.achieved_flops_per_s,
            "flops_per_cycle": per_cycle, "predicted_mhz": predicted, "measured_mhz": measured,
            "measured_source": clocks.sm_mhz_source if clocks is not None else None,
            "clock_error": (predicted or 0) / measured - 1 if measured else None, "nvml_mhz": nvml,
            "clock_error_vs_nvml": (predicted or 0) / nvml - 1 if nvml else None,
            "limited_by": cs.report.reason_names(), "power_w": cs.report.to_dict()["power_w"],
            "sustained_flops_per_s": rate, "power_roof_flops_per_s": roof,
            "sustained_vs_roof": rate / roof - 1 if roof else None,
            "power_sustained_record": {"flops_per_s": sustained_rec.achieved_flops_per_s,
                                       "sm_mhz": sustained_rec.sm_clock_mhz,
                                       "vs_roof": (sustained_rec.achieved_flops_per_s or 0) / roof - 1 if roof
                                       else None}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--suite", default="suites/kernels-h200.toml")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kernels", type=int, default=10)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("error: needs a CUDA GPU", file=sys.stderr)
        return 2
    from roofline.analysis.suite import load_suite
    from roofline.core.dtypes import get_dtype
    from roofline.measuring.energy import counter_for, static_watts, stored_model
    from roofline.measuring.energy_calibrate import calibrate_and_store
    from roofline.measuring.kernels import build

    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    counter = counter_for(0)
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    print("== the NVML energy counter", flush=True)
    out["counter"] = counter_figures(counter)
    for k, v in out["counter"].items():
        print(f"  {k}: update period {v['update_period_s'] * 1e3:.1f} ms (min {v['update_period_min_s'] * 1e3:.1f}, "
              f"max {v['update_period_max_s'] * 1e3:.1f}), unit {v['resolution_mj']} mJ, least step "
              f"{v['least_step_mj']} mJ", flush=True)
    model = stored_model(0)
    if model is None:
        print("== no stored energy model: fitting one (roofline calibrate energy)", flush=True)
        model, _ = calibrate_and_store(0, lambda m: print(f"  {m}", flush=True))
    out["model"] = model.to_dict()
    static = static_watts(0)
    zeus, out["zeus"] = _zeus()
    print(f"== zeus: {out['zeus']}", flush=True)

    suite = load_suite(args.suite)
    chosen, rest = [], []
    print("== per-call times (to choose the 0.05-5 ms kernels)", flush=True)
    for entry in suite.entries:
        op, dt = entry.operator(True), get_dtype(entry.dtype_for(True))
        built = build(op, dt, "cuda:0")
        built.fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(5):
            built.fn()
        torch.cuda.synchronize()
        per = (time.perf_counter() - t0) / 5
        (chosen if PER_CALL_RANGE_S[0] <= per <= PER_CALL_RANGE_S[1] and len(chosen) < args.kernels
         else rest).append(entry)
        del built
    print(f"== repeatability: {len(chosen)} kernels x {args.runs} windows", flush=True)
    rows = repeatability(chosen, counter, args.runs, zeus, static)
    print(f"== the other {len(rest)} kernels of the suite, one window each (model prediction)", flush=True)
    rows += repeatability(rest, counter, 1, None, static)
    for row in rows:
        model_j = model.energy_j(row["pipe"], row["flops"], row["bytes_read"], row["bytes_written"], row["per_call_s"],
                                 op=row["op"])
        row["model_j"], row["model_error"] = model_j, model_j / row["energy_j"] - 1
    out["kernels"] = rows
    print("== the power roof: a long bf16 GEMM under the cap", flush=True)
    out["long_gemm"] = long_gemm(model)
    out["seconds"] = time.perf_counter() - t_start
    (args.out / "energy_accuracy.json").write_text(json.dumps(out, indent=1, default=str))

    cvs = [r["cv"] for r in rows if r["cv"] is not None]
    errors = [abs(r["model_error"]) for r in rows]
    g = out["long_gemm"]
    print("== summary")
    c = out["counter"]["busy"]
    print(f"counter: update period {c['update_period_s'] * 1e3:.1f} ms busy, "
          f"{out['counter']['idle']['update_period_s'] * 1e3:.1f} ms idle; unit 1 mJ; least step "
          f"{min(out['counter']['idle']['least_step_mj'], c['least_step_mj'])} mJ")
    print(f"model: {', '.join(f'{k} {v:.3g} pJ/FLOP' for k, v in model.pj_per_flop.items())}, HBM read "
          f"{model.pj_per_byte_read:.3g} / write {model.pj_per_byte_written:.3g} / read+write overlap "
          f"{model.pj_per_byte_mixed:.3g} pJ/B, static {model.static_w:.0f} W "
          f"+ {model.active_w:.0f} W while a kernel runs, idle {model.idle_w or 0:.0f} W, cap "
          f"{model.power_cap_w:.0f} W, fit residual {model.residual or 0:.1%}; operators' own watts: "
          + (", ".join(f"{k} {v:+.0f}" for k, v in model.op_w.items()) or "none"))
    if cvs:
        print(f"repeatability: CV of J/call over {args.runs} windows, {len(cvs)} kernels: median "
              f"{statistics.median(cvs):.2%}, max {max(cvs):.2%} (target 2%); "
              f"{sum(v <= 0.02 for v in cvs)}/{len(cvs)} within")
    print(f"model prediction of {len(rows)} suite kernels: median |error| {statistics.median(errors):.1%}, max "
          f"{max(errors):.1%} (target 10%); {sum(e <= 0.10 for e in errors)}/{len(errors)} within")
    for r in rows:
        print(f"  {r['label'][:50]:50s} {r['energy_j'] * 1e3:9.3f} mJ measured, {r['model_j'] * 1e3:9.3f} mJ "
              f"model ({r['model_error']:+.1%})")
    ps = g["power_sustained_record"]
    print(f"long bf16 GEMM n={g['n']}: burst {g['burst_mhz'] or 0:.0f} MHz (in-kernel), "
          f"{(g['burst_flops_per_s'] or 0) / 1e12:.0f} TFLOP/s = {g['flops_per_cycle']:.0f} FLOP/cycle; predicted "
          f"sustained clock {g['predicted_mhz'] or 0:.0f} MHz vs {g['measured_mhz'] or 0:.0f} MHz measured in the "
          f"--power sustained run ({g['measured_source']}; {g['clock_error'] or 0:+.1%}, target 5%) and NVML's "
          f"{g['nvml_mhz'] or 0:.0f} MHz back to back ({g['clock_error_vs_nvml'] or 0:+.1%}), held by "
          f"{', '.join(g['limited_by']) or 'nothing'}; "
          f"back to back {g['sustained_flops_per_s'] / 1e12:.0f} TFLOP/s vs the power roof "
          f"{(g['power_roof_flops_per_s'] or 0) / 1e12:.0f} ({(g['sustained_vs_roof'] or 0):+.1%}); "
          f"--power sustained {(ps['flops_per_s'] or 0) / 1e12:.0f} TFLOP/s at {ps['sm_mhz'] or 0:.0f} MHz "
          f"({(ps['vs_roof'] or 0):+.1%} vs the roof)")
    zs = [r["zeus_vs_ours"] for r in rows if r.get("zeus_vs_ours") is not None]
    print(f"zeus: {out['zeus']}" + (f"; its window's power vs ours (its window also holds the warm-up and the "
                                    f"host's edges): median {statistics.median(zs):+.2%}, range "
                                    f"{min(zs):+.2%} to {max(zs):+.2%} over {len(zs)} kernels" if zs else ""))
    print(f"ran in {out['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
