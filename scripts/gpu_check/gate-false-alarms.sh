# Stage `aa` of scripts/gpu_check.sh: the between-run rule on small kernels: ten A/A pairs of decode-small against a
# 5-run baseline, then injected 5% slowdowns. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log,
# secs and counter_metrics are its.
log "between-run rule: ten A/A pairs of decode-small against a 5-run baseline, then 5% slowdowns"
$RL run suites/decode-small.toml --repeat 5 -o "$W/aa_base.json" --force > /dev/null 2>&1
rm -f "$W/aa_baseline.json"; $RL baseline update "$W/aa_base.json" --baseline "$W/aa_baseline.json" | tail -2
for i in 1 2 3 4 5 6 7 8 9 10; do
  $RL run suites/decode-small.toml --repeat 2 -o "$W/aa_cur$i.json" --force > /dev/null 2>&1
  $RL check "$W/aa_cur$i.json" --baseline "$W/aa_baseline.json" --fail-on median:5% > "$W/aa_check$i.txt" 2>&1
  echo "A/A pair $i: exit $? $(grep -c ' same' "$W/aa_check$i.txt") same" | tee -a "$S"
done
# entry 10 (relu) repeats within 1% between processes; entry 1 (rmsnorm) is bimodal between processes
for e in 10 1; do
  python3 scripts/inject_slowdown.py $e=0.05 run suites/decode-small.toml --repeat 2 -o "$W/aa_slow$e.json" --force > /dev/null 2>&1
  $RL check "$W/aa_slow$e.json" --baseline "$W/aa_baseline.json" --fail-on median:5% --wide > "$W/aa_slow$e.txt" 2>&1
  echo "injected 5% slowdown of entry $e: exit $?" | tee -a "$S"; grep -E "worse|roofline check" "$W/aa_slow$e.txt" | tee -a "$S"
done
