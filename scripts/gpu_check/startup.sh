# Stage `startup` of scripts/gpu_check.sh: the analytic path's start-up (issue 19) and timed records' tables drawn
# without rich. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are
# its.
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
