"""Would charging an op the write-back of its predecessor's dirty L2 lines make steps' predictions better? (issue 32)

The sweep times an op alone after a clean flush (a read of a buffer twice the L2) or warm (again and again on the
same buffers: its rewrites hit its own dirty lines); in a model it starts on the lines its predecessor wrote.
On the H100 (2026-12-06, scripts/experiments/l2_drain.py) a 32 MB add paid about 0.8 of the bytes written before
it at its own bandwidth, up to ~21 MiB (~40% of the L2). This re-predicts stored timed profiles (no GPU) and adds
to chosen records `min(KEEP * W, CAP_SHARE * L2) / HBM bandwidth`, W the bytes the record before it wrote:
- current: today's predictor, nothing added;
- all: every record;
- cold: the records predicted from flushed points only (families without warm points, and every record of a
  training step, which `Predictor.for_step` predicts from the flushed points);
- cold, no training: the records of the families the sweep has no warm points of (GEMMs, attention, decode
  attention, ...), in a training step too;
- built: those of them that are memory-bound (what `analysis.predict.with_drain` does: a compute-bound kernel
  writes the lines back under its math). The H200's rows use the H100's KEEP and CAP_SHARE (not measured there).

    python scripts/experiments/drain_rule.py            # the stored H100 profiles, ~20 s

The answer in docs/results/predict/drain_rule-2026-12-06.txt was read on the H100's profiles of two earlier runs
and the H200's of 2026-12-02 (docs/history.md says where git keeps them); the database's own write-back readings
are set aside here, so that `current` adds nothing.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

from roofline.analysis.families import family_of
from roofline.analysis.predict import predicted, predictor_for
from roofline.ceilings import opdb
from roofline.core.document import validate_document

ROOT = Path(__file__).resolve().parents[2]
R = ROOT / "docs/results/predict"  # the timed profiles
DBS = ROOT / "roofline/_opdata"  # the databases the package ships, by spec id
KEEP = 0.8  # l2_drain.py: extra time x bandwidth / bytes written, below the cap
CAP_SHARE = 0.42  # ~21 of the H100's 50 MiB
# (profiles, database, L2 bytes, HBM bytes/s): the H100's kept timed profiles and its database
SETS = [("profiles-h100-0742", "h100-sxm.json.gz", 50 * 2**20, 3.35e12)]
VARIANTS = ("current", "all", "cold", "cold, no training", "built")


def load(path: Path) -> tuple[list[Any], float]:
    doc = validate_document(json.loads(gzip.decompress(path.read_bytes())), str(path))
    return doc.records, (doc.extra.get("profile") or {})["kernel_time_s"]


def step_errors(records: list[Any], measured: float, db: opdb.OpDB, l2: int, bw: float) -> dict[str, float]:
    predictor = predictor_for(records[0].gpu, db, opdb.WARM)
    training = predictor.for_step(records) is not predictor
    records = predicted(records, predictor.for_step(records))
    warm_families = {p.family for p in db.points if p.l2 == opdb.WARM}
    out = {}
    for variant in VARIANTS:
        total, written = 0.0, 0.0
        for r in records:
            if r.predicted_time_s:
                warm_family = family_of(r) in warm_families
                cold = training or not warm_family
                charged = {"current": False, "all": True, "cold": cold, "cold, no training": not warm_family,
                           "built": not warm_family and r.bound == "memory"}[variant]
                total += r.predicted_time_s + (min(KEEP * written, CAP_SHARE * l2) / bw if charged else 0.0)
            written = r.bytes_written or 0.0
        out[variant] = total / measured - 1
    return out


def main() -> None:
    print(f"{'profiles':20s} {'case':24s} " + " ".join(f"{v[:10]:>10s}" for v in VARIANTS))
    worst = {v: 0.0 for v in VARIANTS}
    inside = {v: 0 for v in VARIANTS}
    n = 0
    for folder, dbname, l2, bw in SETS:
        db = dataclasses.replace(opdb.read(DBS / dbname), l2_drain=None)  # `current`: no write-back added
        for path in sorted((R / folder).glob("*.json.gz")):
            records, measured = load(path)
            errs = step_errors(records, measured, db, l2, bw)
            n += 1
            for v, e in errs.items():
                worst[v] = max(worst[v], abs(e))
                inside[v] += abs(e) <= 0.05
            print(f"{folder:20s} {path.name[:-8]:24s} " + " ".join(f"{errs[v]:+10.1%}" for v in VARIANTS))
    print(f"{'within 5%':45s} " + " ".join(f"{inside[v]:>7d}/{n}" for v in VARIANTS))
    print(f"{'worst':45s} " + " ".join(f"{worst[v]:10.1%}" for v in VARIANTS))


if __name__ == "__main__":
    main()
