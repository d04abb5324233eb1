"""Does a reuse-distance rule for which inputs are still in the L2 predict a model's step better than
`warm_blend`'s share of bytes written? (issue 32; offline, on stored profiles; ~75 s on the CPU)

    python scripts/experiments/reuse_distance.py [--profiles docs/results/predict/profiles-h100-0742]
                                                 [--db roofline/_opdata/h100-sxm.json.gz]

(Its answer was read on the H200's profiles of 2026-12-02, which git keeps: docs/history.md.)

For each record, the bytes it reads of an earlier record's output (the profile's dataflow rows) that an LRU L2 of
`capacity` would still hold: min(edge bytes, capacity - the bytes the records between them moved); the rest of
its reads are cold. Its warm and flushed predictions are then mixed (geometrically, as `warm_blend` does) by the
cold share of its reads, of all its bytes, or of its bytes with half its writes, at the L2's size and half of
it. Prints each variant's step error per case beside today's rule."""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import roofline.analysis.predict as P
from roofline.analysis.predict_step import step_prediction
from roofline.ceilings import opdb
from roofline.core.document import validate_document

L2_BYTES = 50 * 2**20  # the H200's L2 (its spec file's l2_cache_kib)
CASES = ["llama_prefill", "llama_decode", "resnet50", "vit_b16", "llama_train", "llama_prefill_b2_s1500",
         "llama_decode_b3_c3000", "resnet50_b12", "vit_b16_b12"]
VARIANTS: list[tuple[str, float]] = [("current", 1.0), ("cold/read", 1.0), ("cold/read", 0.5), ("cold/total", 1.0),
                                     ("cold/total", 0.5), ("cold+w/2/total", 1.0), ("cold+w/2/total", 0.5)]


def cold_shares(records: list[Any], dataflow: list[list[float]], capacity: float, mode: str) -> dict[int, float]:
    """id(record) -> the share its blend gives the flushed prediction, under `mode`."""
    moved = [(r.bytes or 0.0) * (r.count or 1) for r in records]
    before = [0.0]
    for b in moved:
        before.append(before[-1] + b)
    warm = [0.0] * len(records)
    for producer, consumer, nbytes, n in dataflow:
        p, c = int(producer), int(consumer)
        if c > p:
            between = before[c] - before[p + 1]
            warm[c] += max(0.0, min(nbytes, capacity - between)) * n / max(records[c].count or 1, 1)
    out = {}
    for i, r in enumerate(records):
        read, total = r.bytes_read or 0.0, r.bytes or 0.0
        cold = max(0.0, read - warm[i])
        share = {"cold/read": cold / read if read else 0.0, "cold/total": cold / total if total else 0.0,
                 "cold+w/2/total": (cold + 0.5 * (r.bytes_written or 0.0)) / total if total else 0.0}[mode]
        out[id(r)] = min(max(share, 0.0), 1.0)
    return out


def step_errors(profiles: Path, db: opdb.OpDB, mode: str, capacity_share: float) -> dict[str, float]:
    original = P.warm_blend
    out = {}
    for name in CASES:
        path = profiles / f"{name}.json.gz"
        raw = json.loads(gzip.decompress(path.read_bytes()))
        records = validate_document(raw, str(path)).records
        if mode != "current":
            shares = cold_shares(records, raw["profile"]["dataflow"], capacity_share * L2_BYTES, mode)

            def blend(w: Any, f: Any, record: Any, shares: dict[int, float] = shares) -> Any:
                g = shares.get(id(record), 0.0)

                def mix(a: float, b: float) -> float:
                    return a ** (1 - g) * b ** g

                return dataclasses.replace(w, time_s=mix(w.time_s, f.time_s), low_s=mix(w.low_s, f.low_s),
                                           high_s=mix(w.high_s, f.high_s))

            P.warm_blend = blend
        try:
            predictor = P.predictor_for(records[0].gpu, db, opdb.WARM)
            step = step_prediction(P.predicted(records, predictor), predictor).to_dict()
        finally:
            P.warm_blend = original
        out[name] = step["predicted_kernel_time_s"] / raw["profile"]["kernel_time_s"] - 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", type=Path, default=Path("docs/results/predict/profiles-h100-0742"))
    ap.add_argument("--db", type=Path, default=Path("roofline/_opdata/h100-sxm.json.gz"))
    a = ap.parse_args()
    db = opdb.read(a.db)
    print(f"{'':24s}" + " ".join(f"{c[:6]:>6s}" for c in CASES))
    for mode, share in VARIANTS:
        e = step_errors(a.profiles, db, mode, share)
        print(f"{mode + ' @' + format(share, 'g'):24s}" + " ".join(f"{v * 100:+6.1f}" for v in e.values())
              + f"  mean |e| {sum(abs(v) for v in e.values()) / len(e) * 100:.1f}%, max "
              f"{max(abs(v) for v in e.values()) * 100:.1f}%", flush=True)


if __name__ == "__main__":
    main()
