# Stage `small-ncu` of scripts/gpu_check.sh: decode-small against Nsight Compute, kernel by kernel (needs stage
# small's runs). Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are
# its.
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
