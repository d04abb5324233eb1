# Stage `ncu` of scripts/gpu_check.sh: the kernel suite's times against Nsight Compute's (needs stage timing's runs),
# and both tools' wall time with and without a bytecode cache. Sourced by scripts/gpu_check.sh, in its shell: $OUT,
# $W, $S, $RL, log, secs and counter_metrics are its.
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
