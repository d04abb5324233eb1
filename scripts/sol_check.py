"""The GPU check of `roofline sol` (issue 31): run on a GPU machine, it writes what it saw under OUT_DIR.

    PYTHONPATH=. python3 scripts/sol_check.py OUT_DIR

1. Every problem of suites/sol at SOL_SCALE 64, timed (the reference in this process, the candidates of
   suites/sol/candidates each in a child process): each reference's % of its fused speed of light, each
   candidate's speedup and verdict. The results document: OUT_DIR/sol_gpu.json.
2. The algebraic shortcut of matmul_sum (suites/sol/candidates/matmul_sum.py) with rtol 1e-4 (its sums run in
   another order): expected to be refused as impossible, below the reference's FLOPs at peak.
3. The red team (tests/data/sol_redteam) at SOL_SCALE 256: each candidate's verdict and reason beside the
   expected one.
OUT_DIR/sol_check.json holds all of it, OUT_DIR/sol_check.txt the same as text. Exit status 0 when every
reference stands and every expectation held, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "suites" / "sol"
REDTEAM = ROOT / "tests" / "data" / "sol_redteam"
GPU_SCALE = 64
RED_SCALE = 256
# What each red-team candidate must get (tests/test_sol_gpu.py asserts the reasons).
EXPECTED = {"honest": ("ok",), "cached": ("wrong",), "side_stream": ("refused",), "early_return": ("wrong", "refused"),
            "patch_timer": ("refused",), "low_precision": ("wrong",)}


def say(msg: str) -> None:
    sys.stderr.write(f"sol_check: {msg}\n")
    sys.stderr.flush()


class Progress:
    """The Reporter the runs report to: their steps on stderr."""

    def status(self, text: str) -> None:
        say(text)

    def notice(self, text: str) -> None:
        say(f"note: {text}")

    def long_run(self, seconds: float, detail: str) -> None:
        say(detail)


def _verdict(v: Any) -> dict[str, Any]:
    return {"status": v.status, "reason": v.reason, "time_s": v.time_s, "speedup": v.speedup,
            "of_fused": v.of_fused, "of_unfused": v.of_unfused}


def _timing(t: Any) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"method": t.method, "median_s": t.median_s, "span_s": t.span_s, "reps": t.reps, "kernels": len(t.kernels),
            "checked": t.checked, "wrong": t.wrong, "refused": t.refused, "failed": t.failed}


def problems(out: Path) -> dict[str, Any]:
    from roofline.capture.sol import sol
    from roofline.core.document import write_document

    started = time.perf_counter()
    run = sol(SUITE, time=True, candidate=SUITE / "candidates", scale=GPU_SCALE, progress=Progress())
    write_document(run.document(), out / "sol_gpu.json", force=True)
    rows = []
    for r in run.results:
        row: dict[str, Any] = {"problem": r.name, "error": r.error}
        if r.sol is not None:
            row.update(fused_s=r.sol.fused_s, unfused_s=r.sol.unfused_s, fused_bound=r.sol.fused_bound,
                       flops=r.sol.flops, fused_bytes=r.sol.fused_bytes, complete=r.sol.complete)
        for role in ("reference", "candidate"):
            if role in r.verdicts:
                row[role] = {**_verdict(r.verdicts[role]), "timing": _timing(getattr(r, role))}
        rows.append(row)
    return {"device": run.target.ceilings.device_name, "scale": GPU_SCALE, "rows": rows,
            "seconds": time.perf_counter() - started}


def shortcut() -> dict[str, Any]:
    from roofline.capture.sol import sol
    from roofline.measuring.untrusted import TimerSettings

    r = sol(SUITE / "matmul_sum.py", time=True, candidate=SUITE / "candidates" / "matmul_sum.py", scale=GPU_SCALE,
            settings=TimerSettings(rtol=1e-4), progress=Progress()).results[0]
    got = r.verdicts["candidate"]
    return {"problem": "matmul_sum", "expected": "impossible", "got": got.status, "pass": got.status == "impossible",
            "candidate": {**_verdict(got), "timing": _timing(r.candidate)},
            "reference": _verdict(r.verdicts["reference"]), "fused_s": r.sol.fused_s,
            "fused_compute_s": r.sol.fused_compute_s}


def red_team() -> list[dict[str, Any]]:
    from roofline.capture.sol import sol

    rows = []
    for name, expected in EXPECTED.items():
        started = time.perf_counter()
        r = sol(REDTEAM / "problem.py", time=True, candidate=REDTEAM / f"{name}.py", scale=RED_SCALE,
                progress=Progress()).results[0]
        got = r.verdicts["candidate"]
        rows.append({"candidate": name, "expected": list(expected), "got": got.status, "pass": got.status in expected,
                     "reason": got.reason, "timing": _timing(r.candidate), "seconds": time.perf_counter() - started})
    return rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def text(summary: dict[str, Any]) -> str:
    from roofline.core.format import duration

    p = summary["problems"]
    lines = [f"roofline sol on {p['device']}, SOL_SCALE {p['scale']} ({p['seconds']:.0f} s)", "",
             f"{'problem':20s} {'fused SoL':>10s} {'bound':7s} {'reference':>10s} {'% fused':>8s} {'% unfused':>9s} "
             "verdict"]
    for row in p["rows"]:
        if row.get("error"):
            lines.append(f"{row['problem']:20s} failed: {row['error']}")
            continue
        ref = row.get("reference", {})
        lines.append(f"{row['problem']:20s} {duration(row['fused_s']):>10s} {row['fused_bound']:7s} "
                     f"{duration(ref.get('time_s') or (ref.get('timing') or {}).get('median_s')):>10s} "
                     f"{_pct(ref.get('of_fused')):>8s} {_pct(ref.get('of_unfused')):>9s} {ref.get('status', '-')}")
    fractions = sorted(r["reference"]["of_fused"] for r in p["rows"] if r.get("reference", {}).get("of_fused"))
    if fractions:
        lines.append(f"references at {_pct(fractions[0])} to {_pct(fractions[-1])} of their fused speed of light, "
                     f"median {_pct(fractions[len(fractions) // 2])}")
    lines += ["", f"{'candidate':20s} {'time':>10s} {'speedup':>8s} {'% fused':>8s} verdict"]
    for row in p["rows"]:
        if "candidate" in row:
            c = row["candidate"]
            sp = "-" if c.get("speedup") is None else f"{c['speedup']:.2f}x"
            took = duration(c.get("time_s") or (c.get("timing") or {}).get("median_s"))
            lines.append(f"{row['problem']:20s} {took:>10s} {sp:>8s} {_pct(c.get('of_fused')):>8s} {c['status']}"
                         + (f": {c['reason']}" if c["status"] != "ok" else ""))
    s = summary["shortcut"]
    lines += ["", f"shortcut matmul_sum (rtol 1e-4): expected impossible, got {s['got']} "
                  f"({'PASS' if s['pass'] else 'FAIL'}): {s['candidate']['reason']}", "",
              f"red team, SOL_SCALE {RED_SCALE}:"]
    for row in summary["red_team"]:
        lines.append(f"  {row['candidate']:14s} expected {'/'.join(row['expected']):13s} got {row['got']:9s} "
                     f"{'PASS' if row['pass'] else 'FAIL'}" + (f": {row['reason']}" if row["reason"] else ""))
    lines += ["", f"all expectations held: {summary['pass']}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python3 scripts/sol_check.py OUT_DIR\n")
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    import torch

    if not torch.cuda.is_available():
        sys.stderr.write("sol_check: no CUDA GPU here: this check runs on a GPU machine\n")
        return 2
    summary: dict[str, Any] = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
    say("1/3 suites/sol, timed, with the candidates")
    summary["problems"] = problems(out)
    say("2/3 the shortcut of matmul_sum")
    summary["shortcut"] = shortcut()
    say("3/3 the red team")
    summary["red_team"] = red_team()
    refs_ok = all(r.get("reference", {}).get("status") == "ok" for r in summary["problems"]["rows"])
    summary["pass"] = bool(refs_ok and summary["shortcut"]["pass"] and all(r["pass"] for r in summary["red_team"]))
    (out / "sol_check.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    report = text(summary)
    (out / "sol_check.txt").write_text(report)
    sys.stdout.write(report)
    return 0 if summary["pass"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
