# Stage `zoo` of scripts/gpu_check.sh (issue 29): one MoE model (Mixtral, 8 experts, top-2) and one sliding-window
# model (Mistral, window 512 < 2048 tokens), bf16 from config, one forward each timed with `roofline profile`;
# logs FLOPs against the closed form and the coverage (scripts/zoo_gpu.py). About 2 min (each step capped).
# Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log.
for model in mixtral mistral; do
  log "zoo: $model timed (scripts/zoo_gpu.py)"
  timeout 150 $RL profile scripts/zoo_gpu.py -o "$W/zoo_$model.json" --force -- --model "$model" \
    > "$W/zoo_${model}_stdout.txt" 2>&1; echo "exit $?" | tee -a "$S"
  head -12 "$W/zoo_${model}_stdout.txt" | tee -a "$S"
  timeout 60 python3 scripts/zoo_gpu.py --model "$model" --check "$W/zoo_$model.json" 2>&1 | tail -3 | tee -a "$S"
done
