# Stage `usability` of scripts/gpu_check.sh: a new user's findings: compiled code in analytic profiles, tables at 80
# columns. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are its.
# a new user's review (branch nu): compiled code in analytic profiles, compiled-module counts, 80 columns
log "pytest -m gpu tests/test_compile_gpu.py (the usability checks)"
python3 -m pytest -q -m gpu tests/test_compile_gpu.py 2>&1 | tail -5 | tee -a "$S"
log "profile examples/compiled_mlp.py --no-time (exit 0, a note that compiled code ran eager; was a crash)"
$RL profile examples/compiled_mlp.py --no-time > "$W/nu_analytic.txt" 2>&1; echo "exit $?" | tee -a "$S"
grep -A2 "ran eager" "$W/nu_analytic.txt" | tee -a "$S"
$RL profile examples/compiled_mlp.py -o "$W/nu_compiled.json" --force > /dev/null 2>&1
python3 -c "import json,sys; print('compiled:', json.load(open(sys.argv[1]))['profile']['compiled'])" \
    "$W/nu_compiled.json" 2>&1 | tee -a "$S"
log "check and plot --terminal of it at 80 columns (no cut cell: no '…' in the check table)"
COLUMNS=80 $RL check "$W/nu_compiled.json" --baseline "$W/nu_compiled.json" 2>&1 | head -12 | tee -a "$S"
COLUMNS=80 $RL plot "$W/nu_compiled.json" --terminal 2>&1 | tail -12 | tee -a "$S"
