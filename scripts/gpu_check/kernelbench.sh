# Stage `kernelbench` of scripts/gpu_check.sh: KernelBench levels 1-3 as published (issue 51), every problem's
# reference timed by `roofline sol FOLDER --time --json` in folders of 25 (scripts/kernelbench_run.py): verdicts,
# failures by reason, wall time, peak memory, references faster than their fused bound. The problems are not in
# the repository: KERNELBENCH_DIR names KernelBench's problem folder (level1, level2, level3), carried to the
# machine. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, log.
log "KernelBench levels 1-3 (scripts/kernelbench_run.py, KERNELBENCH_DIR=${KERNELBENCH_DIR:-unset})"
if [ -d "${KERNELBENCH_DIR:-}/level1" ]; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader | tee -a "$S"
  timeout 470 python3 scripts/kernelbench_run.py "$W/kernelbench" --levels 1,2,3 --chunk 25 --timeout 300 \
    > "$W/kernelbench_stdout.txt" 2> "$W/kernelbench_stderr.txt"; echo "exit $?" | tee -a "$S"
  tail -25 "$W/kernelbench_stderr.txt" | tee -a "$S"
  cat "$W/kernelbench/kernelbench.txt" 2>/dev/null | head -60 | tee -a "$S"
else
  echo "skipped: KERNELBENCH_DIR is not KernelBench's problem folder" | tee -a "$S"
fi
