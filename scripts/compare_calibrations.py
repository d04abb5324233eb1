"""Repeatability of `roofline calibrate --json` runs: each figure's spread (max/min - 1) across runs."""

from __future__ import annotations

import json
import sys


def main(paths: list[str]) -> None:
    docs = [json.load(open(p)) for p in paths]
    keys = sorted(set(docs[0]["compute_flops_per_s"]) | set(docs[0]["memory_bytes_per_s"]))
    print(f"{'figure':<28} " + " ".join(f"{'run ' + str(i + 1):>12}" for i in range(len(docs))) + f" {'spread':>8}")
    for k in keys:
        vals = [d["compute_flops_per_s"].get(k) or d["memory_bytes_per_s"].get(k) for d in docs]
        vals = [v for v in vals if v]
        if not vals:
            continue
        unit = 1e12
        print(f"{k:<28} " + " ".join(f"{v / unit:>12.2f}" for v in vals) + f" {max(vals) / min(vals) - 1:>8.2%}")
    print("(values in T-units: TFLOP/s or TB/s)")


if __name__ == "__main__":
    main(sys.argv[1:])
