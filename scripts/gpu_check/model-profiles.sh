# Stage `profile` of scripts/gpu_check.sh: whole-model profiles of the example models against FlopCounterMode,
# torch.profiler and Nsight Compute (scripts/profile_gpu.sh). Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W,
# $S, $RL, log, secs and counter_metrics are its.
log "whole-model profiles of the three example models against FlopCounterMode, torch.profiler and ncu"
OUT=$W/profile bash scripts/profile_gpu.sh > /dev/null 2>&1; cat "$W/profile/profile_summary.txt" >> "$S"
