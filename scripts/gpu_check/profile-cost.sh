# Stage `cost` of scripts/gpu_check.sh: what `roofline profile` costs against a plain torch.profiler (CPU + CUDA,
# record_shapes, the same warm-up) of the same callable, first profile in a fresh process and steady state, with
# the tracer's breakdown (issue 28: at most 3x). Three small models, inference and an AdamW training step, one
# repetition (12 fresh processes, ~100 s; the stage capped at 150 s), then torch's own post-processing of the
# events, plain against traced, for the tiny Llama's training step (~15 s, capped at 60 s): ~2 min in all.
# Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log.
log "cost of profiling (scripts/profile_cost.py --device cuda --repeats 1)"
timeout 150 python3 scripts/profile_cost.py --device cuda --repeats 1 --json "$W/profile_cost.json" \
  > "$W/profile_cost.txt" 2> "$W/profile_cost_progress.txt"; echo "exit $?" | tee -a "$S"
cat "$W/profile_cost.txt" | tee -a "$S"
tail -3 "$W/profile_cost_progress.txt" | tee -a "$S"
log "torch's event post-processing, plain vs traced (scripts/profile_cost.py --parse)"
timeout 60 python3 scripts/profile_cost.py --device cuda --parse --models llama --modes train 2>&1 | grep -v '^USDT' \
  | tail -4 | tee -a "$S"
