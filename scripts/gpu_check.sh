#!/usr/bin/env bash
# The GPU check: runs on a machine with an NVIDIA GPU from the repository root, installs nothing, and
# writes everything under $OUT (default ./out). Stages (default all): tests occupancy probe timing ncu small aa
# calibrate check charts profile; only when named: framing and small-ncu (issue 21), counters (it goes on
# into profile-counters), profile-counters, counters-repeat, counters-l2, counters-cost (issue 17),
# collectives, docs, comm-profile, startup (issue 19), compile (torch.compile'd models in profiles),
# usability (a new user's findings).
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
stages=${*:-tests occupancy probe timing ncu small aa calibrate check charts profile}
S=$OUT/summary.txt
log() { echo "== $*" | tee -a "$S"; }
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }
# the --counters metric list, cut to what this GPU offers (as `ncu.run` asks ncu for it)
counter_metrics() { python3 -c "from roofline.ncu.run import available_metrics, find_ncu, usable_metrics
print(','.join(usable_metrics(available_metrics(find_ncu(), 'gpu_check'))))"; }

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
  log "pytest -m gpu (the documented commands: stage docs)"
  python3 -m pytest -q -m gpu tests/ --ignore=tests/test_docs_commands.py 2>&1 | tail -25 | tee -a "$S"
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
framing)
  log "which tool frames a kernel as the kernel: a spin of known length, by its own clock, CUPTI, events, ncu"
  python3 scripts/framing_truth.py cupti "$W/framing_cupti.json" 2>&1 | tail -3 | tee -a "$S"
  for cc in all none; do
    ncu --clock-control none --cache-control $cc --csv --page raw --metrics gpu__time_duration.sum \
        -k regex:^spin$ python3 scripts/framing_truth.py target "$W/framing_own_$cc.json" \
        > "$W/framing_ncu_$cc.csv" 2> "$W/framing_ncu_$cc.err"
  done
  python3 scripts/framing_truth.py compare "$W/framing_cupti.json" "$W/framing_ncu_all.csv" \
      "$W/framing_own_all.json" "$W/framing_ncu_none.csv" "$W/framing_own_none.json" \
      --markdown "$OUT/framing.md" 2>&1 | tee -a "$S"
  ;;
small)
  log "decode-sized kernels (suites/decode-small.toml): kernel timestamps vs Nsight Compute, kernel by kernel"
  $RL run suites/decode-small.toml -o "$W/small1.json" --force > "$W/small1.txt" 2>&1
  $RL run suites/decode-small.toml -o "$W/small2.json" --force > /dev/null 2>&1
  cat "$W/small1.txt" | tee -a "$S"
  python3 scripts/compare_runs.py "$W/small1.json" "$W/small2.json" | tee -a "$S"
  ;;
small-ncu)
  log "decode-small against Nsight Compute, kernel by kernel (needs the small stage's runs; ~6 min)"
  ncu --clock-control none --profile-from-start off --csv --page raw \
      --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max.per_second \
      python3 scripts/ncu_compare.py target suites/decode-small.toml --repeats 5 > "$W/ncu_small.csv" 2> "$W/ncu_small.err"
  python3 scripts/small_kernels.py "$W/small1.json" "$W/ncu_small.csv" --markdown "$W/small_ncu.md" | tee -a "$S"
  python3 scripts/small_kernels.py "$W/small2.json" "$W/ncu_small.csv" | tail -2 | tee -a "$S"
  echo "-- ncu with --cache-control none (no flush before each kernel; ours flushes the L2 only)" | tee -a "$S"
  ncu --clock-control none --cache-control none --profile-from-start off --csv --page raw \
      --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max.per_second \
      python3 scripts/ncu_compare.py target suites/decode-small.toml --repeats 5 > "$W/ncu_small_none.csv" \
      2> "$W/ncu_small_none.err"
  python3 scripts/small_kernels.py "$W/small1.json" "$W/ncu_small_none.csv" --markdown "$W/small_ncu_none.md" \
      | tail -2 | tee -a "$S"
  echo "-- the same kernels timed by device events (--timer graph), operator sums against ncu's" | tee -a "$S"
  $RL run suites/decode-small.toml --timer graph -o "$W/small_graph.json" --force > /dev/null 2>&1
  python3 scripts/ncu_compare.py compare "$W/small_graph.json" "$W/ncu_small.csv" | tee -a "$S"
  python3 scripts/ncu_compare.py compare "$W/small1.json" "$W/ncu_small.csv" | tail -3 | tee -a "$S"
  ;;
aa)
  log "between-run rule: ten A/A pairs of decode-small against a 5-run baseline, then 5% slowdowns"
  $RL run suites/decode-small.toml --repeat 5 -o "$W/aa_base.json" --force > /dev/null 2>&1
  rm -f "$W/aa_baseline.json"; $RL baseline update "$W/aa_base.json" --baseline "$W/aa_baseline.json" | tail -2
  for i in 1 2 3 4 5 6 7 8 9 10; do
    $RL run suites/decode-small.toml --repeat 2 -o "$W/aa_cur$i.json" --force > /dev/null 2>&1
    $RL check "$W/aa_cur$i.json" --baseline "$W/aa_baseline.json" --fail-on median:5% > "$W/aa_check$i.txt" 2>&1
    echo "A/A pair $i: exit $? $(grep -c ' same' "$W/aa_check$i.txt") same" | tee -a "$S"
  done
  # entry 10 (relu) repeats within 1% between processes; entry 1 (rmsnorm) is bimodal between processes
  for e in 10 1; do
    python3 scripts/inject_slowdown.py $e=0.05 run suites/decode-small.toml --repeat 2 -o "$W/aa_slow$e.json" --force > /dev/null 2>&1
    $RL check "$W/aa_slow$e.json" --baseline "$W/aa_baseline.json" --fail-on median:5% --wide > "$W/aa_slow$e.txt" 2>&1
    echo "injected 5% slowdown of entry $e: exit $?" | tee -a "$S"; grep -E "worse|roofline check" "$W/aa_slow$e.txt" | tee -a "$S"
  done
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
  python3 scripts/inject_slowdown.py 5=0.07 run suites/smoke.toml -o "$W/smoke_slow.json" --force > /dev/null 2>&1
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
counters)
  log "counters (issue 17): analyze --counters vs ncu --set roofline; run --counters vs a plain ncu run; import-ncu"
  C=$W/counters; mkdir -p "$C"
  python3 -m pytest -q -m gpu tests/test_gpu_counters.py 2>&1 | tail -8 | tee -a "$S"
  t0=$(secs); $RL analyze gemm --m 4096 --counters -o "$C/gemm.json" --force > "$C/gemm.txt" 2>&1; e=$?; t1=$(secs)
  echo "analyze gemm --m 4096 --counters: exit $e, wall $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  grep -E "^│ (ncu|measured|advice)" "$C/gemm.txt" | tee -a "$S"
  t0=$(secs); $RL analyze gemm --m 4096 -o "$C/gemm_plain.json" --force > /dev/null 2>&1; t1=$(secs)
  echo "the same without --counters: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  python3 -c "from pathlib import Path; from roofline.ops import make; from roofline.core.dtypes import get_dtype
from roofline.ncu.target_ops import write_plan; write_plan([(make('gemm', m=4096), get_dtype('fp16'))], Path('$C/gemm_plan.json'))"
  t0=$(secs); ncu --set roofline --clock-control none --profile-from-start off \
      python3 -m roofline.ncu.target_ops "$C/gemm_plan.json" > "$C/gemm_roofline.txt" 2>&1; t1=$(secs)
  echo "ncu --set roofline, same kernel (one call, same target): $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  M=$(counter_metrics)
  echo "metrics: $M" | tee -a "$S"
  t0=$(secs); $RL run suites/kernels-h200.toml --counters -o "$C/kernels.json" --force > "$C/kernels.txt" 2>&1; e=$?
  t1=$(secs); echo "run kernels-h200 --counters: exit $e, wall $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  tail -28 "$C/kernels.txt" | tee -a "$S"
  ncu --profile-from-start off --clock-control none --print-units base --metrics "$M" --csv --page raw \
      python3 scripts/ncu_compare.py target suites/kernels-h200.toml > "$C/kernels_plain.csv" 2> "$C/kernels_plain.err"
  python3 scripts/counters_compare.py suite "$C/kernels.json" "$C/kernels_plain.csv" | tee -a "$S"
  $RL plot "$C/kernels.json" -o "$C/kernels_counters.png" --force 2>&1 | tail -1
  # a real model forward (the cnn example's NVTX range "forward"), as a user's own report: .ncu-rep and its CSV
  ncu --clock-control none --nvtx --nvtx-include "forward/" --metrics "$M" -f -o "$C/ncu_forward" \
      python3 examples/cnn.py --preset tiny > "$C/forward.txt" 2>&1; echo "ncu forward: exit $?" | tee -a "$S"
  ncu --import "$C/ncu_forward.ncu-rep" --csv --page raw --print-units base > "$C/ncu_forward.csv" 2>> "$C/forward.txt"
  ls -la "$C"/ncu_forward.* | tee -a "$S"
  $RL import-ncu "$C/ncu_forward.ncu-rep" -o "$C/forward_rep.json" --force > "$C/import_rep.txt" 2>&1
  echo "import-ncu .ncu-rep: exit $? ($(tail -1 "$C/import_rep.txt"))" | tee -a "$S"
  $RL import-ncu "$C/ncu_forward.csv" -o "$C/forward_csv.json" --force > "$C/import_csv.txt" 2>&1
  echo "import-ncu CSV: exit $? ($(tail -1 "$C/import_csv.txt"))" | tee -a "$S"
  python3 scripts/counters_compare.py imports "$C/forward_rep.json" "$C/forward_csv.json" | tee -a "$S"
  # the fixtures for tests/data (the CSV trimmed there if large), apart from the big tarball
  tar -czf "$OUT/counters_fixtures.tar.gz" -C "$C" ncu_forward.ncu-rep ncu_forward.csv gemm.json 2>/dev/null
  ;&  # on into profile-counters
profile-counters)
  log "profile --counters: the cnn example's forward and a 3-step MLP, ncu's kernels joined to the profile's"
  P=$W/profile_counters; mkdir -p "$P"
  python3 -m pytest -q -m gpu tests/test_profile_counters_gpu.py 2>&1 | tail -8 | tee -a "$S"
  for i in 1 2; do  # twice: counter bytes must repeat (the dram_bytes gate below)
    t0=$(secs); $RL profile examples/cnn.py --counters --ncu-csv "$P/cnn_ncu$i.csv" -o "$P/cnn$i.json" --force \
        -- --preset tiny > "$P/cnn$i.txt" 2>&1; e=$?; t1=$(secs)
    echo "profile examples/cnn.py --counters -- --preset tiny (run $i): exit $e, wall $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  done
  t0=$(secs); $RL profile examples/cnn.py -o "$P/cnn_plain.json" --force -- --preset tiny > /dev/null 2>&1; t1=$(secs)
  echo "the same without --counters: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  grep -E "^roofline: counters|counters left off" "$P/cnn1.txt" | tee -a "$S"
  python3 - "$P/cnn1.json" <<'PY' | tee -a "$S"
import json, sys
d = json.load(open(sys.argv[1])); p = d["profile"]; recs = d["records"]
print("summary counters:", p.get("counters")); print("notes:", *p.get("notes", []), sep="\n  ")
with_c = [r for r in recs if r.get("counters")]
print(f"{len(with_c)} of {len(recs)} records with counters")
for r in sorted(with_c, key=lambda r: -(r.get("time_s") or 0) * (r.get("count") or 1))[:12]:
    c = r["counters"]
    print(f"  {r['op'][:26]:26} {(r.get('module') or '')[:22]:22} excess {c.get('excess_traffic') or 0:6.2f}"
          f" flops_ratio {c.get('flops_ratio') or 0:7.2f} dram {c.get('dram_bytes') or 0:12,.0f}"
          f" ncu {(c.get('duration_s') or 0) * 1e6:8.2f} us ours {(r.get('time_s') or 0) * 1e6:8.2f} us")
PY
  rm -f "$P/base.json"; $RL baseline update "$P/cnn1.json" --baseline "$P/base.json" > /dev/null 2>&1
  for rule in dram_bytes:1% dram_bytes_read:1% l2_bytes:1% l1_bytes:1% counter_flops:0%; do
    COLUMNS=160 $RL check "$P/cnn2.json" --baseline "$P/base.json" --fail-on "$rule" --wide > "$P/check_${rule%%:*}.txt" 2>&1
    echo "check run 2 against run 1 --fail-on $rule: exit $? (0: the counter repeats)" | tee -a "$S"
    grep -E "^roofline check" "$P/check_${rule%%:*}.txt" | tail -1 | tee -a "$S"
  done
  # kernel by kernel, each metric's spread between the two profiles' ncu runs (the small kernels of a forward)
  M=$(counter_metrics)
  python3 scripts/counters_compare.py spread "$M" "$P/cnn_ncu1.csv" "$P/cnn_ncu2.csv" | head -30 | tee -a "$S"
  $RL plot "$P/cnn1.json" -o "$P/cnn_counters.png" --force 2>&1 | tail -1
  $RL profile tests/scripts/gpu_mlp_steps.py --counters -o "$P/steps.json" --force > "$P/steps.txt" 2>&1
  echo "profile tests/scripts/gpu_mlp_steps.py --counters: exit $?" | tee -a "$S"; grep -E "^roofline: counters" "$P/steps.txt" | tee -a "$S"
  # the matched pair (profile document + the ncu CSV it joined) for CPU fixtures in tests/data
  cp "$P/cnn1.json" "$OUT/prof_counters.json"; cp "$P/cnn_ncu1.csv" "$OUT/prof_counters_ncu.csv"
  cp "$P/cnn_counters.png" "$OUT/" 2>/dev/null
  ;;
counters-l2)
  # issue 17: which L2 byte counter is a property of the kernel, and which depends on where its data landed.
  # lts__t_bytes counts every L2 slice lookup; on a partitioned L2 a miss in the near partition is looked up
  # again in the far one over the LTC fabric (srcunit_ltcfabric). Four plain runs: two fresh, two beside a
  # process that holds 40 or 20 GiB (other physical pages), then `run --counters` twice against the fresh ones.
  log "counters-l2: L2 byte counters over plain ncu runs with the data at other physical pages"
  C=$W/counters_l2; mkdir -p "$C"
  ncu --query-metrics 2>/dev/null | grep -E "^(lts__t_(sectors|requests|bytes)|lts__lts2xbar|l1tex__m_)" \
      > "$C/query_lts.txt"; echo "L2/L1 metric names offered: $(wc -l < "$C/query_lts.txt")" | tee -a "$S"
  M=$(python3 -c "from roofline.ncu.run import available_metrics, base_name, find_ncu, usable_metrics
have = available_metrics(find_ncu(), 'gpu_check')
extra = ['lts__t_sectors.sum', 'lts__t_sectors_srcunit_tex.sum', 'lts__t_sectors_srcunit_tex_op_read.sum',
         'lts__t_sectors_srcunit_tex_op_write.sum', 'lts__t_sectors_srcunit_ltcfabric.sum',
         'lts__t_sectors_srcnode_gpc.sum', 'lts__t_sectors_op_read.sum', 'lts__t_sectors_op_write.sum',
         'lts__lts2xbar_cycles_active.sum', 'l1tex__m_xbar2l1tex_read_bytes.sum',
         'l1tex__m_l1tex2xbar_write_bytes.sum']
print(','.join(usable_metrics(have) + [m for m in extra if base_name(m) in have]))")
  echo "metrics: $M" | tee -a "$S"
  for run in ${L2_RUNS:-fresh1 hog40 fresh2 hog20}; do
    hog=""
    case $run in hog*)
      rm -f "$C/hog.ready"
      python3 -c "import sys, time, torch
x = [torch.ones(1 << 30, dtype=torch.uint8, device='cuda') for _ in range(int(sys.argv[1]))]
torch.cuda.synchronize(); open(sys.argv[2], 'w').write('ready'); time.sleep(900)" "${run#hog}" "$C/hog.ready" &
      hog=$!
      for _ in $(seq 120); do [ -f "$C/hog.ready" ] && break; sleep 0.5; done ;;
    esac
    t0=$(secs)
    ncu --profile-from-start off --clock-control none --print-units base --metrics "$M" --csv --page raw \
        python3 scripts/ncu_compare.py target suites/kernels-h200.toml > "$C/$run.csv" 2> "$C/$run.err"
    echo "plain ncu run $run: exit $?, $(python3 -c "print(round($(secs)-$t0,1))") s" | tee -a "$S"
    [ -n "$hog" ] && kill "$hog" && wait "$hog" 2>/dev/null
  done
  python3 scripts/counters_compare.py spread "$M" "$C/fresh1.csv" "$C/fresh2.csv" | head -40 | tee -a "$S"
  [ -f "$C/hog20.csv" ] && python3 scripts/counters_compare.py spread "$M" "$C"/fresh1.csv "$C"/fresh2.csv \
      "$C"/hog40.csv "$C"/hog20.csv | tee -a "$S"
  for i in 1 2; do
    $RL run suites/kernels-h200.toml --counters -o "$C/ours$i.json" --force > "$C/ours$i.txt" 2>&1
    echo "run --counters ($i): exit $?" | tee -a "$S"
    python3 scripts/counters_compare.py suite "$C/ours$i.json" "$C/fresh1.csv" | tee -a "$S"
  done
  python3 scripts/counters_compare.py envelope "$C"/ours1.json "$C"/ours2.json -- "$C"/*.csv | tee -a "$S"
  ;;
counters-cost)
  # issue 17: where the time of `analyze --counters` goes: ncu's passes per kernel with the --counters metric
  # list, without its SASS instruction counters (CUDA-core FLOPs), and with `--set roofline`, on one GEMM
  log "counters-cost: ncu passes and wall time per metric list, one fp16 GEMM 4096^3 call"
  C=$W/counters_cost; mkdir -p "$C"
  python3 -c "from pathlib import Path; from roofline.ops import make; from roofline.core.dtypes import get_dtype
from roofline.ncu.target_ops import write_plan; write_plan([(make('gemm', m=4096), get_dtype('fp16'))], Path('$C/plan.json'))"
  M=$(counter_metrics)
  NOSASS=$(python3 -c "import sys; print(','.join(m for m in sys.argv[1].split(',') if 'sass' not in m))" "$M")
  t0=$(secs); python3 -m roofline.ncu.target_ops "$C/plan.json"; echo "target alone: $(python3 -c "print(round($(secs)-$t0,2))") s" | tee -a "$S"
  for v in full nosass roofline; do
    case $v in full) what=(--metrics "$M") ;; nosass) what=(--metrics "$NOSASS") ;; roofline) what=(--set roofline) ;; esac
    t0=$(secs)
    ncu --profile-from-start off --clock-control none "${what[@]}" python3 -m roofline.ncu.target_ops \
        "$C/plan.json" > "$C/$v.txt" 2>&1
    echo "$v: exit $?, $(python3 -c "print(round($(secs)-$t0,2))") s, $(grep -o '[0-9]* passes' "$C/$v.txt" | sort | uniq -c | tr '\n' ' ')" | tee -a "$S"
  done
  t0=$(secs); $RL analyze gemm --m 4096 --counters -o "$C/gemm.json" --force > "$C/gemm.txt" 2>&1
  echo "analyze gemm --m 4096 --counters: $(python3 -c "print(round($(secs)-$t0,2))") s" | tee -a "$S"
  t0=$(secs); $RL analyze gemm --m 4096 -o "$C/gemm0.json" --force > /dev/null 2>&1
  echo "analyze gemm --m 4096: $(python3 -c "print(round($(secs)-$t0,2))") s" | tee -a "$S"
  ;;
counters-repeat)
  log "ncu's own repeatability: two plain ncu runs of kernels-h200 with the --counters metrics, call by call"
  C=$W/counters; mkdir -p "$C"
  M=$(counter_metrics)
  for i in 1 2; do
    ncu --profile-from-start off --clock-control none --print-units base --metrics "$M" --csv --page raw \
        python3 scripts/ncu_compare.py target suites/kernels-h200.toml > "$C/plain$i.csv" 2> "$C/plain$i.err"
  done
  python3 scripts/counters_compare.py plain "$C/plain1.csv" "$C/plain2.csv" | tee -a "$S"
  ;;
collectives)
  # NVLink multicast (NVLS) is off on the lent machines: keep NCCL_NVLS_ENABLE=0 (set when absent, never unset)
  export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
  NG=$(python3 -c "import torch; print(torch.cuda.device_count())")
  log "collectives: the five over $NG GPU(s), 1KiB..4GiB (NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE), then a plain loop"
  t0=$(secs); $RL collectives -o "$W/comm.json" --force > "$W/comm.txt" 2>&1; echo "exit $?" | tee -a "$S"; t1=$(secs)
  echo "wall time: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
  cat "$W/comm.txt" | tee -a "$S"
  python3 -m torch.distributed.run --nproc-per-node "$NG" scripts/collectives_plain.py "$W/comm.json" 2>&1 \
      | grep -v "^\*\*\*\|OMP_NUM_THREADS" | tee -a "$S"
  $RL plot "$W/comm.json" -o "$W/comm.png" --force 2>&1 | tee -a "$S"
  $RL plot "$W/comm.json" --terminal 2>&1 | tee -a "$S"
  log "collectives inside a torchrun job (rank 0 writes), and check of it against the first run"
  python3 -m torch.distributed.run --nproc-per-node "$NG" -m roofline collectives --ops all_reduce \
      --sizes 1MiB:1GiB -o "$W/comm_job.json" --force > "$W/comm_job.txt" 2>&1; echo "exit $?" | tee -a "$S"
  tail -20 "$W/comm_job.txt" | tee -a "$S"
  # the same collective and sizes launched by roofline itself: the baseline the job is checked against
  $RL collectives --ops all_reduce --sizes 1MiB:1GiB -o "$W/comm_ar.json" --force > /dev/null 2>&1
  $RL check "$W/comm_job.json" --baseline "$W/comm_ar.json" > "$W/comm_check.txt" 2>&1; echo "check exit $?" | tee -a "$S"
  tail -8 "$W/comm_check.txt" | tee -a "$S"
  $RL collectives --ops all_reduce --sizes 1MiB,2MiB --inject-failure $((NG - 1)) -o "$W/comm_dead.json" 2>&1 \
      | tee -a "$S"; echo "a rank that dies: exit ${PIPESTATUS[0]}, file: $(ls "$W/comm_dead.json" 2>&1)" | tee -a "$S"
  log "run suites/smoke.toml --devices all (parallel, then serial)"
  $RL run suites/smoke.toml --devices all -o "$W/smoke_devices.json" --force 2>&1 | tee -a "$S"
  $RL run suites/smoke.toml --devices all --devices-mode serial -o "$W/smoke_devices_serial.json" --force \
      > "$W/smoke_devices_serial.txt" 2>&1; echo "serial exit $?" | tee -a "$S"
  $RL run suites/smoke.toml --devices 7 2>&1 | tee -a "$S"
  log "pytest -m gpu tests/test_comm_gpu.py"
  python3 -m pytest -q -m gpu tests/test_comm_gpu.py 2>&1 | tail -8 | tee -a "$S"
  ;;
comm-profile)
  # collectives inside whole-model profiles (issue 16/18): an NCCL world of one, two GPUs when there are two,
  # and the tensor-parallel example under torchrun (each rank's document; rank 0 prints)
  export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
  NG=$(python3 -c "import torch; print(torch.cuda.device_count())")
  log "pytest -m gpu tests/test_comm_profile_gpu.py ($NG GPU(s))"
  python3 -m pytest -q -s -m gpu tests/test_comm_profile_gpu.py 2>&1 | grep -E "^rank |^\{|passed|failed|skipped|Error" \
      | tail -12 | tee -a "$S"
  log "torchrun --nproc-per-node $NG -m roofline profile examples/tp_mlp.py -o tp.json"
  python3 -m torch.distributed.run --nproc-per-node "$NG" -m roofline profile examples/tp_mlp.py \
      -o "$W/tp.json" --force > "$W/tp.txt" 2>&1; echo "exit $?" | tee -a "$S"
  grep -v "^\*\*\*\|OMP_NUM_THREADS" "$W/tp.txt" | head -30 | tee -a "$S"
  ls "$W"/tp*.json | tee -a "$S"
  ;;
startup)
  # issue 19: the analytic path's start-up, and a timed record's table drawn without rich (report/plain.py)
  log "start-up: scripts/startup.py (median and fastest of 20 runs each, interleaved with a bare python)"
  python3 scripts/startup.py --runs 20 2>/dev/null | tee -a "$S"
  log "timed records' tables, report/plain.py against rich (scripts/startup.py --check-table)"
  $RL analyze gemm --m 4096 -o "$W/startup_gemm.json" --force > "$W/startup_gemm.txt" 2>&1
  $RL analyze attention --batch 8 --heads 32 --seq 4096 --head-dim 128 --causal -o "$W/startup_attn.json" \
      --force > "$W/startup_attn.txt" 2>&1
  $RL analyze gemv --m 1 --counters -o "$W/startup_counters.json" --force > "$W/startup_counters.txt" 2>&1
  for f in startup_gemm startup_attn startup_counters; do
    if [ -f "$W/$f.json" ]; then python3 scripts/startup.py --check-table "$W/$f.json" 2>&1 | tail -3 | tee -a "$S"
    else echo "$f: no document ($(tail -1 "$W/$f.txt"))" | tee -a "$S"; fi
  done
  ;;
compile)
  # torch.compile'd models (issue 16): Triton kernels attributed to the aten ops they fused; the generated
  # kernel files and launch arguments come back in $OUT/compile_fixture.tar.gz (fixtures for tests/test_compile.py)
  log "pytest -m gpu tests/test_compile_gpu.py"
  ROOFLINE_COMPILE_OUT=$W/compile python3 -m pytest -q -s -m gpu tests/test_compile_gpu.py 2>&1 \
      | grep -E "^eager|^compiled|^fused|^aten|passed|failed|Error|assert" | tail -30 | tee -a "$S"
  log "roofline profile examples/compiled_mlp.py, compiled and eager"
  $RL profile examples/compiled_mlp.py -o "$W/compile/compiled.json" --force 2>&1 | tail -40 | tee -a "$S"
  $RL profile examples/compiled_mlp.py -o "$W/compile/eager.json" --force -- --eager 2>&1 | tail -12 | tee -a "$S"
  tar -czf "$OUT/compile_fixture.tar.gz" -C "$W" compile 2>/dev/null; ls "$W/compile" | tee -a "$S"
  ;;
usability)
  # a new user's review (branch nu): compiled code in analytic profiles, compiled-module counts, 80 columns
  log "pytest -m gpu tests/test_usability_gpu.py"
  python3 -m pytest -q -m gpu tests/test_usability_gpu.py 2>&1 | tail -5 | tee -a "$S"
  log "profile examples/compiled_mlp.py --no-time (exit 0, a note that compiled code ran eager; was a crash)"
  $RL profile examples/compiled_mlp.py --no-time > "$W/nu_analytic.txt" 2>&1; echo "exit $?" | tee -a "$S"
  grep -A2 "ran eager" "$W/nu_analytic.txt" | tee -a "$S"
  $RL profile examples/compiled_mlp.py -o "$W/nu_compiled.json" --force > /dev/null 2>&1
  python3 -c "import json,sys; print('compiled:', json.load(open(sys.argv[1]))['profile']['compiled'])" \
      "$W/nu_compiled.json" 2>&1 | tee -a "$S"
  log "check and plot --terminal of it at 80 columns (no cut cell: no '…' in the check table)"
  COLUMNS=80 $RL check "$W/nu_compiled.json" --baseline "$W/nu_compiled.json" 2>&1 | head -12 | tee -a "$S"
  COLUMNS=80 $RL plot "$W/nu_compiled.json" --terminal 2>&1 | tail -12 | tee -a "$S"
  ;;
*) echo "unknown stage $stage" ;;
esac
# after every stage, so a run cut short by a time limit still brings back what it made
tar -czf "$OUT/gpu_check.tar.gz" -C "$W" --exclude cache --exclude pycache . 2>/dev/null
tar -czf "$OUT/cache.tar.gz" -C "$W" cache 2>/dev/null
done
echo "done: $S"
