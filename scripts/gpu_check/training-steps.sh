# Stage `training` of scripts/gpu_check.sh: training and decode steps (issue 28) against a plain torch.profiler's
# kernel total and FlopCounterMode, module FLOPs by hand, MFU/MBU, the analytic step beside the measured one, the
# profiling cost, a CUDA-graph-replayed step. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log.
log "training and decode steps (scripts/training_steps.py: ResNet-50, ViT-B/16, a GQA Llama; decode; inference; graphs)"
python3 scripts/training_steps.py "$W/training" > "$W/training.txt" 2>&1; echo "exit $?" | tee -a "$S"
sed -n '/^== summary/,$p' "$W/training.txt" | tee -a "$S"
