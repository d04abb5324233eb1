# Stage `timing` of scripts/gpu_check.sh: the kernel suite twice (two runs must agree within 2%), burst against
# sustained, and one command's wall time. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs
# and counter_metrics are its.
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
