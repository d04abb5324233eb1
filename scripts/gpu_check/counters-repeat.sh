# Stage `counters-repeat` of scripts/gpu_check.sh: Nsight Compute's own repeatability: two plain ncu runs with the
# --counters metrics. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics
# are its.
log "ncu's own repeatability: two plain ncu runs of kernels-h200 with the --counters metrics, call by call"
C=$W/counters; mkdir -p "$C"
M=$(counter_metrics)
for i in 1 2; do
  ncu --profile-from-start off --clock-control none --print-units base --metrics "$M" --csv --page raw \
      python3 scripts/ncu_compare.py target suites/kernels-h200.toml > "$C/plain$i.csv" 2> "$C/plain$i.err"
done
python3 scripts/counters_compare.py plain "$C/plain1.csv" "$C/plain2.csv" | tee -a "$S"
