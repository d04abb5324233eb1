# Stage `occupancy` of scripts/gpu_check.sh: roofline's occupancy arithmetic against the CUDA occupancy API on real
# kernels. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are its.
log "occupancy: roofline's arithmetic vs the CUDA occupancy API on real kernels"
python3 scripts/occupancy_check.py --markdown "$W/occupancy_check.md" 2>&1 | tail -45 | tee -a "$S"
