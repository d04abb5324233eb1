# Stage `docs` of scripts/gpu_check.sh: every `roofline` line of README.md and docs/*.md as written, on the GPU, and a
# timed shape sweep with its chart. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and
# counter_metrics are its.
log "every command of the README and docs/*.md as written, timed on the GPU (tests/test_docs_commands_gpu.py)"
python3 -m pytest -q -m gpu tests/test_docs_commands_gpu.py tests/test_capture_gpu.py > "$W/docs-tests.txt" 2>&1
grep -E "^(FAILED|ERROR|[0-9]+ (passed|failed))|exit [0-9]" "$W/docs-tests.txt" | tail -40 | tee -a "$S"  # every failure, whole in the tarball
log "a timed shape sweep (one document, one row per shape) and its chart (the sweep joined by a line)"
$RL analyze gemm --m 1024:16384:x2 --n 4096 --k 4096 --dtype bf16 -o "$W/sweep.json" --force 2>&1 | tee -a "$S"
$RL plot "$W/sweep.json" -o "$OUT/sweep.png" --force 2>&1 | tee -a "$S"
