# Stage `sol` of scripts/gpu_check.sh: `roofline sol` (issue 31): every problem's reference against its speed of
# light, the candidates, the fused-bound refusals and the red team, then the GPU tests of the untrusted timer.
# Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log.
log "roofline sol: problems, candidates, red team (scripts/sol_check.py)"
timeout 330 python3 scripts/sol_check.py "$W/sol" > "$W/sol_check_stdout.txt" 2>&1; echo "exit $?" | tee -a "$S"
tail -70 "$W/sol_check_stdout.txt" | tee -a "$S"
log "pytest -m gpu tests/test_sol_gpu.py"
timeout 240 python3 -m pytest -q -m gpu tests/test_sol_gpu.py 2>&1 | tail -12 | tee -a "$S"
