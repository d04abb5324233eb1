# Stage `calibrate` of scripts/gpu_check.sh: measured ceilings: `calibrate --quick` timed, then three full
# calibrations and their spread. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and
# counter_metrics are its.
log "calibrate --quick (timed), then full x3"
t0=$(secs); $RL calibrate --quick > "$W/cal_quick.txt" 2>&1; t1=$(secs)
echo "calibrate --quick wall: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
for i in 1 2 3; do
  t0=$(secs); $RL calibrate --json > "$W/cal$i.json" 2> "$W/cal$i.err"; t1=$(secs)
  echo "calibrate run $i wall: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
done
$RL calibrate 2>&1 | tee -a "$S"
python3 scripts/compare_calibrations.py "$W"/cal1.json "$W"/cal2.json "$W"/cal3.json | tee -a "$S"
