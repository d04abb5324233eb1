# Stage `small` of scripts/gpu_check.sh: decode-sized kernels (suites/decode-small.toml) by their own timestamps, two
# runs. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are its.
log "decode-sized kernels (suites/decode-small.toml): kernel timestamps vs Nsight Compute, kernel by kernel"
$RL run suites/decode-small.toml -o "$W/small1.json" --force > "$W/small1.txt" 2>&1
$RL run suites/decode-small.toml -o "$W/small2.json" --force > /dev/null 2>&1
cat "$W/small1.txt" | tee -a "$S"
python3 scripts/compare_runs.py "$W/small1.json" "$W/small2.json" | tee -a "$S"
