# Stage `check` of scripts/gpu_check.sh: the regression check: five A/A pairs of the smoke suite, then an injected 7%
# slowdown. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are its.
log "smoke suite: 5 pairs checked against each other, then an injected 7% slowdown of entry 5"
for i in 1 2 3 4 5; do
  $RL run suites/smoke.toml -o "$W/smoke_a$i.json" --force > /dev/null 2>&1
  $RL run suites/smoke.toml -o "$W/smoke_b$i.json" --force > /dev/null 2>&1
  $RL check "$W/smoke_b$i.json" --baseline "$W/smoke_a$i.json" --fail-on median:5% > "$W/check$i.txt" 2>&1
  echo "pair $i: exit $?" | tee -a "$S"
  tail -14 "$W/check$i.txt" >> "$S"
done
python3 scripts/inject_slowdown.py 5=0.07 run suites/smoke.toml -o "$W/smoke_slow.json" --force > /dev/null 2>&1
$RL check "$W/smoke_slow.json" --baseline "$W/smoke_a1.json" --fail-on median:5% > "$W/check_slow.txt" 2>&1
echo "slowed: exit $?" | tee -a "$S"
cat "$W/check_slow.txt" | tee -a "$S"
