# Stage `collectives` of scripts/gpu_check.sh: the collectives over every GPU against a plain torch.distributed loop,
# inside a torchrun job, a rank that dies, and run --devices. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W,
# $S, $RL, log, secs and counter_metrics are its.
# NVLink multicast (NVLS) is off on the lent machines: keep NCCL_NVLS_ENABLE=0 (set when absent, never unset)
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
NG=$(python3 -c "import torch; print(torch.cuda.device_count())")
log "collectives: the five over $NG GPU(s), 1KiB..4GiB (NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE), then a plain loop"
t0=$(secs); $RL collectives -o "$W/comm.json" --force > "$W/comm.txt" 2>&1; echo "exit $?" | tee -a "$S"; t1=$(secs)
echo "wall time: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
cat "$W/comm.txt" | tee -a "$S"
python3 -m torch.distributed.run --nproc-per-node "$NG" scripts/collectives_plain.py "$W/comm.json" 2>&1 \
    | grep -v "^\*\*\*\|OMP_NUM_THREADS" | tee -a "$S"
$RL plot "$W/comm.json" -o "$W/comm.png" --force 2>&1 | tee -a "$S"
$RL plot "$W/comm.json" --terminal 2>&1 | tee -a "$S"
log "collectives inside a torchrun job (rank 0 writes), and check of it against the first run"
python3 -m torch.distributed.run --nproc-per-node "$NG" -m roofline collectives --ops all_reduce \
    --sizes 1MiB:1GiB -o "$W/comm_job.json" --force > "$W/comm_job.txt" 2>&1; echo "exit $?" | tee -a "$S"
tail -20 "$W/comm_job.txt" | tee -a "$S"
# the same collective and sizes launched by roofline itself: the baseline the job is checked against
$RL collectives --ops all_reduce --sizes 1MiB:1GiB -o "$W/comm_ar.json" --force > /dev/null 2>&1
$RL check "$W/comm_job.json" --baseline "$W/comm_ar.json" > "$W/comm_check.txt" 2>&1; echo "check exit $?" | tee -a "$S"
tail -8 "$W/comm_check.txt" | tee -a "$S"
$RL collectives --ops all_reduce --sizes 1MiB,2MiB --inject-failure $((NG - 1)) -o "$W/comm_dead.json" 2>&1 \
    | tee -a "$S"; echo "a rank that dies: exit ${PIPESTATUS[0]}, file: $(ls "$W/comm_dead.json" 2>&1)" | tee -a "$S"
log "run suites/smoke.toml --devices all (parallel, then serial)"
$RL run suites/smoke.toml --devices all -o "$W/smoke_devices.json" --force 2>&1 | tee -a "$S"
$RL run suites/smoke.toml --devices all --devices-mode serial -o "$W/smoke_devices_serial.json" --force \
    > "$W/smoke_devices_serial.txt" 2>&1; echo "serial exit $?" | tee -a "$S"
$RL run suites/smoke.toml --devices 7 2>&1 | tee -a "$S"
log "pytest -m gpu tests/test_comm_gpu.py"
python3 -m pytest -q -m gpu tests/test_comm_gpu.py 2>&1 | tail -8 | tee -a "$S"
