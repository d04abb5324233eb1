# Stage `framing` of scripts/gpu_check.sh: which tool's time is the kernel's (issue 21): a spin of known length timed
# by its own clock, by CUPTI and by Nsight Compute. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL,
# log, secs and counter_metrics are its.
log "which tool frames a kernel as the kernel: a spin of known length, by its own clock, CUPTI, events, ncu"
python3 scripts/experiments/framing_truth.py cupti "$W/framing_cupti.json" 2>&1 | tail -3 | tee -a "$S"
for cc in all none; do
  ncu --clock-control none --cache-control $cc --csv --page raw --metrics gpu__time_duration.sum \
      -k regex:^spin$ python3 scripts/experiments/framing_truth.py target "$W/framing_own_$cc.json" \
      > "$W/framing_ncu_$cc.csv" 2> "$W/framing_ncu_$cc.err"
done
python3 scripts/experiments/framing_truth.py compare "$W/framing_cupti.json" "$W/framing_ncu_all.csv" \
    "$W/framing_own_all.json" "$W/framing_ncu_none.csv" "$W/framing_own_none.json" \
    --markdown "$OUT/framing.md" 2>&1 | tee -a "$S"
