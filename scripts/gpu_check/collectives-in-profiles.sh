# Stage `comm-profile` of scripts/gpu_check.sh: collectives inside whole-model profiles (an NCCL world of one, or two
# GPUs) and the tensor-parallel example under torchrun. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S,
# $RL, log, secs and counter_metrics are its.
# collectives inside whole-model profiles (issue 16/18): an NCCL world of one, two GPUs when there are two,
# and the tensor-parallel example under torchrun (each rank's document; rank 0 prints)
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
NG=$(python3 -c "import torch; print(torch.cuda.device_count())")
log "pytest -m gpu tests/test_comm_profile_gpu.py ($NG GPU(s))"
python3 -m pytest -q -s -m gpu tests/test_comm_profile_gpu.py 2>&1 | grep -E "^rank |^\{|passed|failed|skipped|Error" \
    | tail -12 | tee -a "$S"
log "torchrun --nproc-per-node $NG -m roofline profile examples/tp_mlp.py -o tp.json"
python3 -m torch.distributed.run --nproc-per-node "$NG" -m roofline profile examples/tp_mlp.py \
    -o "$W/tp.json" --force > "$W/tp.txt" 2>&1; echo "exit $?" | tee -a "$S"
grep -v "^\*\*\*\|OMP_NUM_THREADS" "$W/tp.txt" | head -30 | tee -a "$S"
ls "$W"/tp*.json | tee -a "$S"
