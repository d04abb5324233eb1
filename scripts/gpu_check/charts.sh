# Stage `charts` of scripts/gpu_check.sh: the operator suites the charts of docs/images/ are drawn from. Sourced by
# scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are its.
log "operator suites for the charts"
for s in operators llm-prefill llm-decode cnn; do
  $RL run suites/$s.toml -o "$W/$s.json" --force > "$W/$s.txt" 2>&1; tail -25 "$W/$s.txt" | tee -a "$S"
done
