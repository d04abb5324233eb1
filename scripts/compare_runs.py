"""Median-by-median agreement of two results documents of the same suite (e.g. two runs, two timers)."""

from __future__ import annotations

import json
import sys


def main(a: str, b: str) -> None:
    ra, rb = (json.load(open(p))["records"] for p in (a, b))
    worst = 0.0
    print(f"{'#':>2} {'op':<18} {'dtype':<5} {'A median':>12} {'B median':>12} {'B/A':>7}  clocks A/B MHz")
    for i, (x, y) in enumerate(zip(ra, rb, strict=False), start=1):
        r = y["time_s"] / x["time_s"]
        worst = max(worst, abs(r - 1))
        ca = ((x.get("clocks") or {}).get("sm_mhz") or {}).get("median") or 0
        cb = ((y.get("clocks") or {}).get("sm_mhz") or {}).get("median") or 0
        name = x["op"] + ("/" + x["variant"] if x.get("variant") else "")
        print(f"{i:>2} {name:<18} {x['dtype']:<5} {x['time_s'] * 1e6:>10.1f}us {y['time_s'] * 1e6:>10.1f}us "
              f"{r:>7.3f}  {ca:.0f}/{cb:.0f}")
    print(f"worst |B/A - 1| = {worst:.2%}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
