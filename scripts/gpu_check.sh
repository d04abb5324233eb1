#!/usr/bin/env bash
# The GPU check: runs on a machine with an NVIDIA GPU from the repository root, installs nothing, and
# writes everything under $OUT (default ./out). Stages (default all): tests occupancy probe timing ncu small aa
# calibrate check charts profile; only when named: framing and small-ncu (issue 21), counters (it goes on
# into profile-counters), profile-counters, counters-repeat, counters-l2, counters-cost (issue 17),
# collectives, docs, comm-profile, startup (issue 19), compile (torch.compile'd models in profiles),
# usability (a new user's findings), training (training and decode steps, issue 28), sol (kernel benchmarks'
# speed of light and the untrusted timer, issue 31), predict (the operator efficiency database and predicted step
# times, issue 32), energy (joules per operator, the power roof, issue 33), zoo (a MoE and a sliding-window
# model timed, issue 29), cost (the cost of profiling against a plain profiler, issue 28), newuser (the profile's
# analysis status line and Ctrl-C in calibrate ops, issue 30), heldout (the held-out zoo predicted and
# measured, issue 48), traces (torch.profiler traces against profiles, a CUDA graph replay, the parse over 256
# ranks and of a 1 GB trace, ranks sharing one GPU, issue 49), kernelbench (KernelBench levels 1-3 timed, a verdict per
# problem, KERNELBENCH_DIR naming its tree, issue 51), history (30 fresh-process runs of the smoke suite into a store:
# change points on A/A runs and on injected 5% steps, issue 50).
#   bash scripts/gpu_check.sh tests timing
# Results: $OUT/summary.txt (the figures that matter) and $OUT/gpu_check.tar.gz (every file).
# Each stage is one file of scripts/gpu_check/, named for what it checks (STAGES below), sourced in this shell
# in the order the stages are named; the figures they made are in docs/measurements.md, by claim.
set -u
OUT=${OUT:-$PWD/out}
W=${W:-/tmp/roofline_gpu_check}
mkdir -p "$OUT" "$W"
# A bytecode cache: the lent machine sets PYTHONDONTWRITEBYTECODE=1 and its torch venv has no compiled
# bytecode, so every process compiled ~1000 modules from source (2-3 s of each start). A pip-installed torch
# has its .pyc files; PYTHONPYCACHEPREFIX keeps ours outside the venv. It applies to our runs and ncu's alike;
# the ncu stage also times both without it.
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 ROOFLINE_CACHE_DIR=$W/cache COLUMNS=160 \
       PYTHONPYCACHEPREFIX=$W/pycache PYTHONDONTWRITEBYTECODE=
RL="python3 -m roofline"
stages=${*:-tests occupancy probe timing ncu small aa calibrate check charts profile}
S=$OUT/summary.txt
log() { echo "== $*" | tee -a "$S"; }
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }
# the --counters metric list, cut to what this GPU offers (as `ncu.run` asks ncu for it)
counter_metrics() { python3 -c "from roofline.ncu.run import available_metrics, find_ncu, usable_metrics
print(','.join(usable_metrics(available_metrics(find_ncu(), 'gpu_check'))))"; }

log "$(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader)"
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)" | tee -a "$S"

# stage -> its file in scripts/gpu_check/
declare -A STAGES=(
  [docs]=documented-commands [tests]=gpu-tests [timing]=timing-repeatability [framing]=kernel-framing
  [small]=small-kernels [small-ncu]=small-kernels-vs-ncu [aa]=gate-false-alarms [ncu]=timing-vs-ncu
  [calibrate]=calibration [check]=regression-gate [occupancy]=occupancy [probe]=clock-probe [charts]=charts
  [profile]=model-profiles [counters]=counters [profile-counters]=profile-counters [counters-l2]=counters-l2
  [counters-cost]=counters-cost [counters-repeat]=counters-repeat [collectives]=collectives
  [comm-profile]=collectives-in-profiles [startup]=startup [compile]=compiled-models [usability]=usability
  [training]=training-steps [sol]=sol [predict]=predict [energy]=energy [zoo]=zoo [cost]=profile-cost
  [newuser]=newuser [heldout]=heldout-zoo [traces]=traces [kernelbench]=kernelbench
  [history]=history-aa
)
GC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/gpu_check

for stage in $stages; do
if [ -n "${STAGES[$stage]:-}" ]; then
  . "$GC/${STAGES[$stage]}.sh"
else
  echo "unknown stage $stage"
fi
# after every stage, so a run cut short by a time limit still brings back what it made
tar -czf "$OUT/gpu_check.tar.gz" -C "$W" --exclude cache --exclude pycache . 2>/dev/null
tar -czf "$OUT/cache.tar.gz" -C "$W" cache 2>/dev/null
done
echo "done: $S"
