# Stage `history` of scripts/gpu_check.sh (issue 50): does `roofline history detect` stay quiet on a GPU's own
# run-to-run noise, and find a 5% step?
#   1. A/A: RUNS runs of suites/smoke.toml (4 records), each a fresh process, added to a store as commits aa01..;
#      `history detect` on it: zero change points expected. Beside it, the pairwise gate on the same runs: `check`
#      of each run against the one before (its false alarms on a GPU).
#   2. Steps on the real noise: 10 stores of the same runs with every time x 1.05 from a random run k (5..25) on;
#      each series' change found within two runs of k, counted (9 of 10 or better expected).
#   3. A real slowdown: STEP_RUNS more runs with entry 1 (gemm) slowed 5% by scripts/inject_slowdown.py, added to
#      the A/A store: a change in gemm at run RUNS+1 (within two) expected, none in the other records.
# Sourced by scripts/gpu_check.sh (its $OUT, $W, $S, $RL, log); run alone: bash scripts/gpu_check/history-aa.sh
if [ -z "${RL:-}" ]; then
  set -u
  OUT=${OUT:-$PWD/out}; W=${W:-/tmp/roofline_gpu_check}; mkdir -p "$OUT" "$W"; S=$OUT/summary.txt
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} ROOFLINE_CACHE_DIR=$W/cache
  RL="python3 -m roofline"
  log() { echo "== $*" | tee -a "$S"; }
fi
RUNS=${HISTORY_RUNS:-30}
STEP_RUNS=${HISTORY_STEP_RUNS:-10}
H=$W/history
rm -rf "$H"; mkdir -p "$H"
log "history: $RUNS A/A runs of suites/smoke.toml, each a fresh process, into a store; detect; then 5% steps"
t0=$(date +%s)
for i in $(seq -w 1 "$RUNS"); do
  $RL run suites/smoke.toml -o "$H/run$i.json" --force > "$H/run$i.log" 2>&1 || echo "run $i failed" | tee -a "$S"
  $RL history add "$H/run$i.json" --commit "aa$i" --branch main --history "$H/aa.sqlite" > /dev/null
done
echo "history: $RUNS runs in $(( $(date +%s) - t0 )) s" | tee -a "$S"
$RL history show --history "$H/aa.sqlite" | tee -a "$S"
$RL history detect --history "$H/aa.sqlite" --json > "$H/aa_detect.json"; echo "detect exit $?" | tee -a "$S"
$RL history detect --history "$H/aa.sqlite" | tail -1 | sed 's/^/A\/A time: /' | tee -a "$S"
$RL history detect --history "$H/aa.sqlite" --metric fraction | tail -1 | sed 's/^/A\/A fraction at clock: /' \
  | tee -a "$S"
alarms=0; pairs=0
for i in $(seq 2 "$RUNS"); do
  a=$(printf "%0${#RUNS}d" $((i - 1))); b=$(printf "%0${#RUNS}d" "$i")
  $RL check "$H/run$b.json" --baseline "$H/run$a.json" --fail-on median:5% > "$H/check$b.txt" 2>&1
  rc=$?; pairs=$((pairs + 1)); [ "$rc" = 1 ] && alarms=$((alarms + 1))
done
echo "pairwise check of consecutive A/A runs: $alarms of $pairs pairs exit 1 (false alarms)" | tee -a "$S"

python3 - "$H" "$RUNS" <<'EOF' | tee -a "$S"
# Phase 2: the A/A runs with a 5% step from a random run k on, ten times; each series' change within two of k?
# In this process (the store's API, as `history add` and `history detect` call it): 300 adds, no process starts.
import dataclasses, random, sys
from pathlib import Path
from roofline.ci.inputs import load_for_check
from roofline.history.detect import judge
from roofline.history.store import open_store
h, runs = Path(sys.argv[1]), int(sys.argv[2])
docs = [load_for_check(h / f"run{i:0{len(str(runs))}d}.json", as_results=True) for i in range(1, runs + 1)]
def slower(doc, f):
    recs = [dataclasses.replace(r, time_s=r.time_s * f, time_samples_s=[t * f for t in r.time_samples_s or []],
                                extra={k: v for k, v in r.extra.items() if k != "run_samples_s"}) if r.timed else r
            for r in doc.records]
    return dataclasses.replace(doc, records=recs)
rng = random.Random(50)
found = total = extra = 0
for trial in range(10):
    k = rng.randint(5, min(25, runs - 3))  # runs k+1.. are 5% slower: the change is at index k (0-based)
    with open_store(h / f"step{trial}.sqlite", create=True) as store:
        for i, doc in enumerate(docs):
            store.add(slower(doc, 1.05) if i >= k else doc, f"run {i + 1}", commit=f"s{i + 1}")
        judged = judge(store.matching(None), "time", "median:5%")
    for j in judged:
        total += 1
        near = [f for f in j.changes if abs(f.change.index - k) <= 2]
        found += bool(near)
        extra += len(j.changes) - len(near)
        print(f"step trial {trial + 1} (5% from run {k + 1}): {j.series.name}: "
              f"{[(f.change.index + 1, round(f.change.size * 100, 1)) for f in j.changes]}")
print(f"5% steps on the GPU's own noise: found within two runs in {found} of {total} series; {extra} other changes")
EOF

log "history: $STEP_RUNS more runs with entry 1 (gemm) 5% slower (scripts/inject_slowdown.py)"
for i in $(seq 1 "$STEP_RUNS"); do
  python3 scripts/inject_slowdown.py 1=0.05 run suites/smoke.toml -o "$H/slow$i.json" --force > "$H/slow$i.log" 2>&1
  $RL history add "$H/slow$i.json" --commit "slow$i" --branch main --history "$H/aa.sqlite" > /dev/null
done
$RL history detect --history "$H/aa.sqlite" | tee -a "$S"
$RL history plot -o "$OUT/history_aa.png" --history "$H/aa.sqlite" --force > /dev/null
$RL history plot -o "$OUT/history_aa.html" --history "$H/aa.sqlite" --force > /dev/null
cp "$H/aa.sqlite" "$OUT/history_aa.sqlite"
