#!/usr/bin/env bash
# The GPU check: runs on a machine with an NVIDIA GPU from the repository root, installs nothing, and
# writes everything under $OUT (default ./out). Stages (default all): tests occupancy probe timing ncu calibrate
# check charts profile.
#   bash scripts/gpu_check.sh tests timing
# Results: $OUT/summary.txt (the figures that matter) and $OUT/gpu_check.tar.gz (every file).
set -u
OUT=${OUT:-$PWD/out}
W=${W:-/tmp/roofline_gpu_check}
mkdir -p "$OUT" "$W"
# A bytecode cache: the lent machine sets PYTHONDONTWRITEBYTECODE=1 and its torch venv has no compiled
# bytecode, so every process compiled ~1000 modules from source (2-3 s of each start). A pip-installed torch
# has its .pyc files; PYTHONPYCACHEPREFIX keeps ours outside the venv. It applies to our runs and ncu's alike;
# the ncu stage also times both without it.
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 ROOFLINE_CACHE_DIR=$W/cache COLUMNS=160 \
       PYTHONPYCACHEPREFIX=$W/pycache PYTHONDONTWRITEBYTECODE=
RL="python3 -m roofline"
stages=${*:-tests occupancy probe timing ncu calibrate check charts profile}
S=$OUT/summary.txt
log() { echo "== $*" | tee -a "$S"; }
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }

log "$(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader)"
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)" | tee -a "$S"

for stage in $stages; do
case $stage in
docs)
  log "every command of the README and docs/*.md as written, timed on the GPU (tests/test_docs_commands.py)"
  python3 -m pytest -q -m gpu tests/test_docs_commands.py tests/test_capture_gpu.py 2>&1 | tail -25 | tee -a "$S"
  log "a timed shape sweep (one document, one row per shape) and its chart (the sweep joined by a line)"
  $RL analyze gemm --m 1024:16384:x2 --n 4096 --k 4096 --dtype bf16 -o "$W/sweep.json" --force 2>&1 | tee -a "$S"
  $RL plot "$W/sweep.json" -o "$OUT/sweep.png" --force 2>&1 | tee -a "$S"
  ;;
tests)
  log "pytest -m gpu"
  python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tail -25 | tee -a "$S"
  ;;
timing)
  log "kernels suite, run 1 and 2 (two runs must agree within 2%)"
  t0=$(secs); $RL run suites/kernels-h200.toml -o "$W/kernels1.json" --force > "$W/kernels1.txt" 2>&1; t1=$(secs)
  echo "wall time run 1: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  $RL run suites/kernels-h200.toml -o "$W/kernels2.json" --force > "$W/kernels2.txt" 2>&1
  cat "$W/kernels1.txt" | tee -a "$S"
  python3 scripts/compare_runs.py "$W/kernels1.json" "$W/kernels2.json" | tee -a "$S"
  $RL run suites/kernels-h200.toml --power sustained -o "$W/kernels_sustained.json" --force \
      > "$W/kernels_sustained.txt" 2>&1
  echo "-- burst (default, run 1) vs sustained" | tee -a "$S"
  python3 scripts/compare_runs.py "$W/kernels1.json" "$W/kernels_sustained.json" | tee -a "$S"
  t0=$(secs); $RL run suites/kernels-h200.toml --no-kernels -o "$W/kernels_fast.json" --force > /dev/null 2>&1
  t1=$(secs)
  echo "wall time, one command, --no-kernels: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  ;;
ncu)
  log "Nsight Compute on the same kernels (--clock-control none)"
  ncu --clock-control none --profile-from-start off --csv --page raw \
      --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max.per_second \
      python3 scripts/ncu_compare.py target suites/kernels-h200.toml --repeats 5 > "$W/ncu.csv" 2> "$W/ncu.err"
  python3 scripts/ncu_compare.py compare "$W/kernels1.json" "$W/ncu.csv" --markdown "$W/ncu_compare.md" | tee -a "$S"
  [ -f "$W/kernels_sustained.json" ] && python3 scripts/ncu_compare.py compare "$W/kernels_sustained.json" \
      "$W/ncu.csv" --markdown "$W/ncu_compare_sustained.md" | tee -a "$S"
  t0=$(secs)
  ncu --set roofline --clock-control none --profile-from-start off \
      python3 scripts/ncu_compare.py target suites/kernels-h200.toml > "$W/ncu_roofline.txt" 2>&1
  t1=$(secs)
  echo "ncu --set roofline wall time: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  # the same two commands without the bytecode cache, as this machine's bare python runs them
  t0=$(secs); env -u PYTHONPYCACHEPREFIX PYTHONDONTWRITEBYTECODE=1 $RL run suites/kernels-h200.toml --no-kernels -o "$W/kernels_fast2.json" \
      --force > /dev/null 2>&1; t1=$(secs)
  echo "without a bytecode cache: --no-kernels $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  t0=$(secs)
  env -u PYTHONPYCACHEPREFIX PYTHONDONTWRITEBYTECODE=1 ncu --set roofline --clock-control none --profile-from-start off \
      python3 scripts/ncu_compare.py target suites/kernels-h200.toml > /dev/null 2>&1
  t1=$(secs)
  echo "without a bytecode cache: ncu --set roofline $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  ;;
calibrate)
  log "calibrate --quick (timed), then full x3"
  t0=$(secs); $RL calibrate --quick > "$W/cal_quick.txt" 2>&1; t1=$(secs)
  echo "calibrate --quick wall: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  for i in 1 2 3; do
    t0=$(secs); $RL calibrate --json > "$W/cal$i.json" 2> "$W/cal$i.err"; t1=$(secs)
    echo "calibrate run $i wall: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  done
  $RL calibrate 2>&1 | tee -a "$S"
  python3 scripts/compare_calibrations.py "$W"/cal1.json "$W"/cal2.json "$W"/cal3.json | tee -a "$S"
  ;;
check)
  log "smoke suite: 5 pairs checked against each other, then an injected 7% slowdown of entry 5"
  for i in 1 2 3 4 5; do
    $RL run suites/smoke.toml -o "$W/smoke_a$i.json" --force > /dev/null 2>&1
    $RL run suites/smoke.toml -o "$W/smoke_b$i.json" --force > /dev/null 2>&1
    $RL check "$W/smoke_b$i.json" --baseline "$W/smoke_a$i.json" --fail-on median:5% > "$W/check$i.txt" 2>&1
    echo "pair $i: exit $?" | tee -a "$S"
    tail -14 "$W/check$i.txt" >> "$S"
  done
  $RL run suites/smoke.toml -o "$W/smoke_slow.json" --force --inject-slowdown 5=0.07 > /dev/null 2>&1
  $RL check "$W/smoke_slow.json" --baseline "$W/smoke_a1.json" --fail-on median:5% > "$W/check_slow.txt" 2>&1
  echo "slowed: exit $?" | tee -a "$S"
  cat "$W/check_slow.txt" | tee -a "$S"
  ;;
occupancy)
  log "occupancy: roofline's arithmetic vs the CUDA occupancy API on real kernels"
  python3 scripts/occupancy_check.py --markdown "$W/occupancy_check.md" 2>&1 | tail -45 | tee -a "$S"
  ;;
probe)
  log "clock probes beside kernels (self-timed vs event-timed), and the two short kernels under each L2 preparation"
  python3 scripts/clock_probe_experiment.py 2>&1 | tee "$W/probe.txt" | tee -a "$S"
  python3 scripts/flush_experiment.py times 2>&1 | tee "$W/flush.txt" | tee -a "$S"
  ;;
charts)
  log "operator suites for the charts"
  for s in operators llm-prefill llm-decode cnn; do
    $RL run suites/$s.toml -o "$W/$s.json" --force > "$W/$s.txt" 2>&1; tail -25 "$W/$s.txt" | tee -a "$S"
  done
  ;;
profile)
  log "whole-model profiles of the three example models against FlopCounterMode, torch.profiler and ncu"
  OUT=$W/profile bash scripts/profile_gpu.sh > /dev/null 2>&1; cat "$W/profile/profile_summary.txt" >> "$S"
  ;;
*) echo "unknown stage $stage" ;;
esac
# after every stage, so a run cut short by a time limit still brings back what it made
tar -czf "$OUT/gpu_check.tar.gz" -C "$W" --exclude cache --exclude pycache . 2>/dev/null
tar -czf "$OUT/cache.tar.gz" -C "$W" cache 2>/dev/null
done
echo "done: $S"
