#!/usr/bin/env bash
# Issue 16 on a GPU: the three example models through scripts/profile_benchmark.py, Nsight Compute's kernel
# times of the same region, and the wall times of both tools. Installs nothing; everything under $OUT.
set -u
OUT=${OUT:-$PWD/out}; W=${W:-/tmp/roofline_profile}; mkdir -p "$OUT" "$W"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 ROOFLINE_CACHE_DIR=$W/cache \
       PYTHONPYCACHEPREFIX=$W/pycache PYTHONDONTWRITEBYTECODE=
S=$OUT/profile_summary.txt
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee -a "$S"
for spec in "prefill llm_gqa --preset 1b" "forward cnn" "forward vit"; do
  set -- $spec; region=$1; m=$2; shift 2
  echo "== $m $*" | tee -a "$S"
  timeout 150 python3 scripts/profile_benchmark.py measure examples/$m.py "$W" --gpu h200 -- "$@" \
      > "$W/${m}_measure.txt" 2>&1; echo "measure exit $?" | tee -a "$S"
  t0=$(secs); timeout 120 python3 -m roofline profile examples/$m.py -o "$W/${m}_cli.json" --force -- "$@" \
      > "$W/${m}_cli.txt" 2>&1; t1=$(secs)
  echo "roofline profile process: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  t0=$(secs); timeout 120 python3 examples/$m.py "$@" > /dev/null 2>&1; t1=$(secs)
  echo "plain python process (start, model build, the region; the part both tools share): $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  t0=$(secs); timeout 150 ncu --clock-control none --cache-control none --nvtx --nvtx-include "$region/" --csv --page raw \
      --metrics gpu__time_duration.sum python3 examples/$m.py "$@" > "$W/${m}_ncu.csv" 2> "$W/${m}_ncu.err"; t1=$(secs)
  echo "ncu process: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  python3 scripts/profile_benchmark.py ncu "$W/${m}_launches.json" "$W/${m}_ncu.csv" > "$W/${m}_ncu.json" 2>&1
  python3 - "$W" "$m" <<'PY' | tee -a "$S"
import json, sys
w, m = sys.argv[1], sys.argv[2]
b = json.load(open(f"{w}/{m}_bench.json"))
print("wall", {k: (round(v, 3) if isinstance(v, float) else v) for k, v in b["wall_s"].items() if k != "phases_s"})
print("flops", b["flops"]); print("coverage", b["coverage"], "kernel", b["kernel_time_s"], "attributed", b["attributed_time_s"])
print("measured/predicted", {c: v["ratio"] for c, v in b["measured_vs_predicted"].items()})
try:
    n = json.load(open(f"{w}/{m}_ncu.json")); print("ncu", {k: n[k] for k in ("ours_s", "ncu_s", "ratio", "kernels_ours", "kernels_ncu", "paired")})
    for h in n["heaviest"]: print("  ", h)
except Exception as e: print("ncu compare failed", e)
PY
  tar -czf "$OUT/profile_gpu.tar.gz" -C "$W" --exclude cache --exclude pycache . 2>/dev/null
done
echo "== what-if check: add + rmsnorm unfused vs fused (the fusion the profile's what-if prices)" | tee -a "$S"
python3 -m roofline analyze add_rmsnorm --rows 2048 --cols 2048 --variant unfused --dtype bf16 2>&1 | grep -E "measured|roofline time" | tee -a "$S"
python3 -m roofline analyze add_rmsnorm --rows 2048 --cols 2048 --variant fused --dtype bf16 2>&1 | grep -E "measured|roofline time" | tee -a "$S"
tar -czf "$OUT/profile_gpu.tar.gz" -C "$W" --exclude cache --exclude pycache . 2>/dev/null
