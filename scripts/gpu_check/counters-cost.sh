# Stage `counters-cost` of scripts/gpu_check.sh: where the time of `analyze --counters` goes: ncu's passes per metric
# list (issue 17). Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are
# its.
# issue 17: where the time of `analyze --counters` goes: ncu's passes per kernel with the --counters metric
# list, without its SASS instruction counters (CUDA-core FLOPs), and with `--set roofline`, on one GEMM
log "counters-cost: ncu passes and wall time per metric list, one fp16 GEMM 4096^3 call"
C=$W/counters_cost; mkdir -p "$C"
python3 -c "from pathlib import Path; from roofline.ops import make; from roofline.core.dtypes import get_dtype
from roofline.ncu.run import write_plan; write_plan([(make('gemm', m=4096), get_dtype('fp16'))], Path('$C/plan.json'))"
M=$(counter_metrics)
NOSASS=$(python3 -c "import sys; print(','.join(m for m in sys.argv[1].split(',') if 'sass' not in m))" "$M")
t0=$(secs); python3 -m roofline.ncu.target_ops "$C/plan.json"; echo "target alone: $(python3 -c "print(round($(secs)-$t0,2))") s" | tee -a "$S"
for v in full nosass roofline; do
  case $v in full) what=(--metrics "$M") ;; nosass) what=(--metrics "$NOSASS") ;; roofline) what=(--set roofline) ;; esac
  t0=$(secs)
  ncu --profile-from-start off --clock-control none "${what[@]}" python3 -m roofline.ncu.target_ops \
      "$C/plan.json" > "$C/$v.txt" 2>&1
  echo "$v: exit $?, $(python3 -c "print(round($(secs)-$t0,2))") s, $(grep -o '[0-9]* passes' "$C/$v.txt" | sort | uniq -c | tr '\n' ' ')" | tee -a "$S"
done
t0=$(secs); $RL analyze gemm --m 4096 --counters -o "$C/gemm.json" --force > "$C/gemm.txt" 2>&1
echo "analyze gemm --m 4096 --counters: $(python3 -c "print(round($(secs)-$t0,2))") s" | tee -a "$S"
t0=$(secs); $RL analyze gemm --m 4096 -o "$C/gemm0.json" --force > /dev/null 2>&1
echo "analyze gemm --m 4096: $(python3 -c "print(round($(secs)-$t0,2))") s" | tee -a "$S"
