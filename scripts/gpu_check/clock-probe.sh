# Stage `probe` of scripts/gpu_check.sh: the clock probes beside kernels, and the short kernels under each L2
# preparation (scripts/experiments/). Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and
# counter_metrics are its.
log "clock probes beside kernels (self-timed vs event-timed), and the two short kernels under each L2 preparation"
python3 scripts/experiments/clock_probe_experiment.py 2>&1 | tee "$W/probe.txt" | tee -a "$S"
python3 scripts/experiments/flush_experiment.py times 2>&1 | tee "$W/flush.txt" | tee -a "$S"
