# Stage `counters` of scripts/gpu_check.sh: Nsight Compute's counters (issue 17): analyze and run --counters against
# plain ncu runs, and import-ncu of a real forward; it goes on into stage profile-counters. Sourced by
# scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are its.
log "counters (issue 17): analyze --counters vs ncu --set roofline; run --counters vs a plain ncu run; import-ncu"
C=$W/counters; mkdir -p "$C"
python3 -m pytest -q -m gpu tests/test_counters_gpu.py 2>&1 | tail -8 | tee -a "$S"
t0=$(secs); $RL analyze gemm --m 4096 --counters -o "$C/gemm.json" --force > "$C/gemm.txt" 2>&1; e=$?; t1=$(secs)
echo "analyze gemm --m 4096 --counters: exit $e, wall $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
grep -E "^│ (ncu|measured|advice)" "$C/gemm.txt" | tee -a "$S"
t0=$(secs); $RL analyze gemm --m 4096 -o "$C/gemm_plain.json" --force > /dev/null 2>&1; t1=$(secs)
echo "the same without --counters: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
python3 -c "from pathlib import Path; from roofline.ops import make; from roofline.core.dtypes import get_dtype
from roofline.ncu.run import write_plan; write_plan([(make('gemm', m=4096), get_dtype('fp16'))], Path('$C/gemm_plan.json'))"
t0=$(secs); ncu --set roofline --clock-control none --profile-from-start off \
    python3 -m roofline.ncu.target_ops "$C/gemm_plan.json" > "$C/gemm_roofline.txt" 2>&1; t1=$(secs)
echo "ncu --set roofline, same kernel (one call, same target): $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
M=$(counter_metrics)
echo "metrics: $M" | tee -a "$S"
t0=$(secs); $RL run suites/kernels-h200.toml --counters -o "$C/kernels.json" --force > "$C/kernels.txt" 2>&1; e=$?
t1=$(secs); echo "run kernels-h200 --counters: exit $e, wall $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
tail -28 "$C/kernels.txt" | tee -a "$S"
ncu --profile-from-start off --clock-control none --print-units base --metrics "$M" --csv --page raw \
    python3 scripts/ncu_compare.py target suites/kernels-h200.toml > "$C/kernels_plain.csv" 2> "$C/kernels_plain.err"
python3 scripts/counters_compare.py suite "$C/kernels.json" "$C/kernels_plain.csv" | tee -a "$S"
$RL plot "$C/kernels.json" -o "$C/kernels_counters.png" --force 2>&1 | tail -1
# a real model forward (the cnn example's NVTX range "forward"), as a user's own report: .ncu-rep and its CSV
ncu --clock-control none --nvtx --nvtx-include "forward/" --metrics "$M" -f -o "$C/ncu_forward" \
    python3 examples/cnn.py --preset tiny > "$C/forward.txt" 2>&1; echo "ncu forward: exit $?" | tee -a "$S"
ncu --import "$C/ncu_forward.ncu-rep" --csv --page raw --print-units base > "$C/ncu_forward.csv" 2>> "$C/forward.txt"
ls -la "$C"/ncu_forward.* | tee -a "$S"
$RL import-ncu "$C/ncu_forward.ncu-rep" -o "$C/forward_rep.json" --force > "$C/import_rep.txt" 2>&1
echo "import-ncu .ncu-rep: exit $? ($(tail -1 "$C/import_rep.txt"))" | tee -a "$S"
$RL import-ncu "$C/ncu_forward.csv" -o "$C/forward_csv.json" --force > "$C/import_csv.txt" 2>&1
echo "import-ncu CSV: exit $? ($(tail -1 "$C/import_csv.txt"))" | tee -a "$S"
python3 scripts/counters_compare.py imports "$C/forward_rep.json" "$C/forward_csv.json" | tee -a "$S"
# the fixtures for tests/data (the CSV trimmed there if large), apart from the big tarball
tar -czf "$OUT/counters_fixtures.tar.gz" -C "$C" ncu_forward.ncu-rep ncu_forward.csv gemm.json 2>/dev/null
. "$GC/profile-counters.sh"  # on into profile-counters
