# Stage `tests` of scripts/gpu_check.sh: the GPU tests (`pytest -m gpu`), the documented commands aside (stage docs).
# Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are its.
log "pytest -m gpu (the documented commands: stage docs)"
python3 -m pytest -q -m gpu tests/ --ignore=tests/test_docs_commands_gpu.py 2>&1 | tail -25 | tee -a "$S"
