"""Concurrent writers, each race run many times with real processes (issue 50's "concurrent writers run 50 times each
with no lost update and no false 'written'"): prints, per race, how each round ended.

    python scripts/writers_stress.py [--runs 50] [--only NAME ...]

Races (each round in a fresh folder; the CPU only, a seeded calibration in a private cache):
- analyze-o: six `analyze gemm --m 64+i --no-time -o same.json --json` at once: one must write (the file is its
  document) and five be refused in one line ("exists": the check before the work; "made it": the exclusive write).
- analyze-o-force: the same with --force onto an existing file: all replace it in turn; the file is one whole document.
- exclusive: eight `atomic_write(exclusive=True)` released at once past any check: one written.
- opdb: four writers of one operator database, 5 points each, written after each point: 20 points kept.
- store: four processes saving 5 calibrations each into the store: 20 entries kept.
- sweeps: two `calibrate ops --db same.json` of 4 distinct CPU points each, at once: 8 points kept.
- baseline: two `baseline update` at once into one new baseline, from documents of two GPUs: one made it, the other
  refused as another GPU's (the baseline read, compared and written under `roofline.core.files.locked`).
- signals: a sweep stopped by SIGTERM and one by SIGINT once each says "level 1": both keep their points, say so in
  the same line, exit 143 and 130, and leave no temporary file.
- stopped-write: a forced `-o` stopped by SIGTERM, then one by SIGINT, as soon as its temporary file appears (its
  write waiting on the folder's lock, held by this script): exit 143 / 130, one line, no temporary file left.
A round is "lost" when a writer said it wrote (exit 0) what is not in the file, or a point or an entry is missing.
Exit 0 when no round of any race lost anything.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from roofline.core.files import TMP_SUFFIX
from roofline.core.process import child_env

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "tests" / "data" / "results_h200.json"
# A bound against a hang, not a measurement.
PATIENCE_S = 300.0

OPDB_WRITER = """
import sys, time
from pathlib import Path
from roofline.ceilings import opdb
go, path, me = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
db = opdb.open_for_sweep({"kind": "cpu", "id": "cpu", "name": "Test CPU"}, path, me)
Path(f"{go}.{me}").touch()
while not go.exists():
    time.sleep(0.001)
for i in range(5):
    db.points.append(opdb.Point(family="gemm", op="gemm", dtype="fp32", params={"m": i, "writer": me}, flops=1.0,
                                bytes=1.0, roofline_time_s=1e-6, time_s=2e-6))
    opdb.write(db)
"""
STORE_WRITER = """
import sys, time
from pathlib import Path
from roofline.ceilings import store
from roofline.core.model import Ceilings
go, me = Path(sys.argv[1]), sys.argv[2]
Path(f"{go}.{me}").touch()
while not go.exists():
    time.sleep(0.001)
for i in range(5):
    store.save(store.cpu_key(f"{me} {i}", 1), Ceilings(device_id="cpu", device_name=me, kind="cpu",
               source="measured", compute={"cpu_fp32": 1e11}, memory={"dram": 1e10}), {})
"""
EXCLUSIVE_WRITER = """
import sys, time
from pathlib import Path
from roofline.core.errors import RooflineError
from roofline.core.files import atomic_write
go, path, me = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
Path(f"{go}.{me}").touch()
while not go.exists():
    time.sleep(0.001)
try:
    atomic_write(path, f"writer {me}\\n", exclusive=True)
except RooflineError as exc:
    sys.exit(str(exc))
print("written")
"""
SWEEP = """[sweep]
name = "{name}"
cpu_dtypes = ["fp32"]

[[family]]
op = "gemm"
cpu = {{ m = [{ms}], n = [64], k = [64] }}
"""


def start(args: list[str], **kw: object) -> subprocess.Popen[str]:
    """A process with SIGINT at its default (a script run in the background of a shell inherits it ignored)."""
    return subprocess.Popen(args, env=child_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)  # type: ignore[call-overload]


def roofline(*args: str) -> subprocess.Popen[str]:
    return start([sys.executable, "-m", "roofline", *args])


def python(code: str, *args: str) -> subprocess.Popen[str]:
    return start([sys.executable, "-c", code, *args])


def ends(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str, str]]:
    outs = [p.communicate(timeout=PATIENCE_S) for p in procs]
    return [(p.returncode, o, e) for p, (o, e) in zip(procs, outs, strict=True)]


def together(go: Path, procs: list[subprocess.Popen[str]]) -> None:
    """Release the writers at once, when each has said it is ready (touched `go`.<n>)."""
    deadline = time.monotonic() + PATIENCE_S
    while not all(Path(f"{go}.{i}").exists() or p.poll() is not None for i, p in enumerate(procs)):
        if time.monotonic() > deadline:
            raise SystemExit("writers never became ready")
        time.sleep(0.005)
    go.touch()


def leftovers(folder: Path) -> int:
    return sum(1 for n in os.listdir(folder) if n.endswith(TMP_SUFFIX))


# Each race takes a fresh folder and returns what the round came to: outcome words counted by `main`.
def analyze_o(tmp: Path) -> Counter[str]:
    out = tmp / "same.json"
    got = ends([roofline("analyze", "gemm", "--m", str(64 + i), "--n", "64", "--k", "64", "--no-time", "-o",
                         str(out), "--json") for i in range(6)])
    c: Counter[str] = Counter()
    won = [o for code, o, _ in got if code == 0]
    c["written"] = len(won)
    c["refused before the work"] = sum(1 for code, _, e in got if code == 1 and "(pass --force" in e
                                       and "another writer" not in e)
    c["refused at the exclusive write"] = sum(1 for code, _, e in got if code == 1 and "another writer" in e)
    c["one-line refusals"] = sum(1 for code, _, e in got if code == 1 and e.count("\n") == 1)
    c["lost"] = int(len(won) != 1 or json.loads(out.read_text()) != json.loads(won[0]))
    c["temporary files left"] = leftovers(tmp)
    return c


def analyze_o_force(tmp: Path) -> Counter[str]:
    out = tmp / "same.json"
    out.write_text("{}\n")
    got = ends([roofline("analyze", "gemm", "--m", str(64 + i), "--n", "64", "--k", "64", "--no-time", "-o",
                         str(out), "--json", "--force") for i in range(6)])
    docs = [json.loads(o) for code, o, _ in got if code == 0]
    c: Counter[str] = Counter(written=len(docs))
    c["lost"] = int(len(docs) != 6 or json.loads(out.read_text()) not in docs)  # whole, and one writer's
    c["temporary files left"] = leftovers(tmp)
    return c


def exclusive(tmp: Path) -> Counter[str]:
    go, out = tmp / "go", tmp / "new.json"
    procs = [python(EXCLUSIVE_WRITER, str(go), str(out), str(i)) for i in range(8)]
    together(go, procs)
    got = ends(procs)
    won = [i for i, (code, o, _) in enumerate(got) if code == 0 and o == "written\n"]
    c: Counter[str] = Counter(written=len(won), refused=sum(1 for code, _, _ in got if code == 1))
    c["lost"] = int(len(won) != 1 or out.read_text() != f"writer {won[0]}\n")
    c["temporary files left"] = leftovers(tmp)
    return c


def opdb_writers(tmp: Path) -> Counter[str]:
    from roofline.ceilings import opdb

    go, path = tmp / "go", tmp / "db.json"
    procs = [python(OPDB_WRITER, str(go), str(path), str(w)) for w in range(4)]
    together(go, procs)
    failed = sum(1 for code, _, _ in ends(procs) if code != 0)
    kept = len({(p.params["writer"], p.params["m"]) for p in opdb.read(path).points})
    return Counter({"points kept (of 20)": kept, "failed": failed, "lost": int(kept != 20 or failed > 0),
                    "temporary files left": leftovers(tmp)})


def store_writers(tmp: Path) -> Counter[str]:
    go = tmp / "go"
    os.environ["ROOFLINE_CACHE_DIR"] = str(tmp / "cache")  # this round's own store (the children inherit it)
    procs = [python(STORE_WRITER, str(go), str(w)) for w in range(4)]
    together(go, procs)
    failed = sum(1 for code, _, _ in ends(procs) if code != 0)
    entries = json.loads((tmp / "cache" / "calibration.json").read_text())["entries"]
    kept = len({e["key"]["name"] for e in entries})
    return Counter({"entries kept (of 20)": kept, "failed": failed, "lost": int(kept != 20 or failed > 0),
                    "temporary files left": leftovers(tmp / "cache")})


def sweeps(tmp: Path) -> Counter[str]:
    db = tmp / "db.json"
    suites = [tmp / "a.toml", tmp / "b.toml"]
    suites[0].write_text(SWEEP.format(name="a", ms="16, 32, 48, 64"))
    suites[1].write_text(SWEEP.format(name="b", ms="80, 96, 112, 128"))
    got = ends([roofline("calibrate", "ops", "--suite", str(s), "--device", "cpu", "--db", str(db), "--json")
                for s in suites])
    failed = sum(1 for code, _, _ in got if code != 0)
    kept = len(json.loads(db.read_text())["points"]) if db.exists() else 0
    return Counter({"points kept (of 8)": kept, "failed": failed, "lost": int(kept != 8 or failed > 0),
                    "temporary files left": leftovers(tmp)})


def baseline(tmp: Path) -> Counter[str]:
    h200 = json.loads(RESULTS.read_text())
    h100 = json.loads(RESULTS.read_text())
    h100["device"].update(spec_id="h100-sxm", spec_name="NVIDIA H100 SXM 80GB", name="NVIDIA H100 80GB HBM3")
    for rec in h100["records"]:
        rec["gpu"] = "h100-sxm"
    docs = [tmp / "h200.json", tmp / "h100.json"]
    for path, doc in zip(docs, (h200, h100), strict=True):
        path.write_text(json.dumps(doc))
    base = tmp / "base.json"
    got = ends([roofline("baseline", "update", str(d), "--baseline", str(base)) for d in docs])
    won = [i for i, (code, _, _) in enumerate(got) if code == 0]
    other_gpu = sum(1 for code, _, e in got if code != 0 and "another GPU" in e)
    same = bool(won) and json.loads(base.read_text())["device"]["spec_id"] == (h200, h100)[won[-1]]["device"]["spec_id"]
    c: Counter[str] = Counter(written=len(won))
    c["refused as another GPU's"] = other_gpu
    c["lost"] = int(len(won) != 1 or other_gpu != 1 or not same)
    c["temporary files left"] = leftovers(tmp)
    return c


def signals(tmp: Path) -> Counter[str]:
    suite = tmp / "long.toml"
    suite.write_text(SWEEP.format(name="long", ms=", ".join(str(16 + 4 * i) for i in range(33))))
    runs = {sig: (tmp / f"{sig.name}.json", roofline("calibrate", "ops", "--suite", str(suite), "--device", "cpu",
                                                    "--db", str(tmp / f"{sig.name}.json")))
            for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig, (_, proc) in runs.items():
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("note: level 1:"):
                proc.send_signal(sig)
                break
    c: Counter[str] = Counter()
    for sig, status in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        db, proc = runs[sig]
        code, _, err = ends([proc])[0]
        kept = len(json.loads(db.read_text())["points"]) if db.exists() else 0
        line = err.splitlines()[-1] if err else ""
        ok = code == status and kept >= 2 and line == (f"interrupted: {kept} points measured kept in {db} ({kept} "
                                                       "in all); the same command resumes")
        c[f"{sig.name}: exit {code}"] += 1
        c[f"{sig.name}: points kept and said"] += int(ok)
        c["lost"] += int(not ok)
    c["temporary files left"] = leftovers(tmp)
    return c


def stopped_write(tmp: Path) -> Counter[str]:
    """A forced `-o` whose write waits on the folder's lock (held here), its temporary file written: stopped by
    SIGTERM, then another by SIGINT; each must exit 143 / 130 with one line and leave no temporary file."""
    from roofline.core.files import locked

    c: Counter[str] = Counter()
    out = tmp / "out.json"
    out.write_text("theirs\n")
    for sig, status in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        with locked(out):
            proc = roofline("analyze", "gemm", "--m", "64", "--no-time", "-o", str(out), "--force")
            deadline = time.monotonic() + PATIENCE_S
            while not leftovers(tmp) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.001)
            proc.send_signal(sig)
            code, _, err = ends([proc])[0]
        ok = code == status and err == "interrupted\n" and leftovers(tmp) == 0 and out.read_text() == "theirs\n"
        c[f"{sig.name}: exit {code}"] += 1
        c["lost"] += int(not ok)
        c["temporary files left"] += leftovers(tmp)
        for name in os.listdir(tmp):  # the next round starts clean
            if name.endswith(TMP_SUFFIX):
                os.unlink(tmp / name)
    return c


RACES: dict[str, Callable[[Path], Counter[str]]] = {
    "analyze-o": analyze_o, "analyze-o-force": analyze_o_force, "exclusive": exclusive, "opdb": opdb_writers,
    "store": store_writers, "sweeps": sweeps, "baseline": baseline, "signals": signals,
    "stopped-write": stopped_write}


def seed_cpu_store(cache: Path) -> None:
    """A CPU calibration in `cache`, so the sweeps do not measure the CPU's roofline first (tests/helpers.py's)."""
    from roofline.ceilings import store
    from roofline.core.model import Ceilings
    from roofline.measuring.device import cpu_description

    os.environ["ROOFLINE_CACHE_DIR"] = str(cache)
    info = cpu_description()
    store.save(store.cpu_key(info["name"], info["cores"]),
               Ceilings(device_id="cpu", device_name=info["name"], kind="cpu", source="measured",
                        compute={"cpu_fp32": 1e11}, memory={"dram": 2e10}), {"seeded_by": "writers_stress"})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--only", nargs="*", choices=sorted(RACES), default=None)
    opts = parser.parse_args()
    os.environ["ROOFLINE_NO_GPU"] = "1"
    lost_any = False
    with tempfile.TemporaryDirectory(prefix="writers-stress-") as top:
        cache = Path(top) / "cache"
        for name in opts.only or list(RACES):
            total: Counter[str] = Counter()
            for i in range(opts.runs):
                seed_cpu_store(cache)  # a store race sets its own: each round starts from the seeded one
                folder = Path(top) / f"{name}-{i}"
                folder.mkdir()
                total.update(RACES[name](folder))
            lost_any |= total["lost"] > 0
            counts = ", ".join(f"{k} {v}" for k, v in sorted(total.items()))
            print(f"{name}: {opts.runs} rounds: {counts}", flush=True)
    return 1 if lost_any else 0


if __name__ == "__main__":
    sys.exit(main())
