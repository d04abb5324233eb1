# Stage `heldout` of scripts/gpu_check.sh (issue 48): the held-out zoo (suites/zoo/heldout.toml, frozen) predicted
# from an operator database without running it, then measured (scripts/predict_accuracy.py --zoo). The database:
# HELDOUT_DB, else the one the predict stage made in this call ($W/h200-ops.json), else the one the package ships for
# this GPU (roofline/_opdata/<spec id>.json.gz). HELDOUT_SPLIT: dev or test (default both), HELDOUT_S the time
# limit (default 420 s; the script writes its JSON after every step). Each step's timed profile comes back in
# $OUT/heldout-profiles.tar.gz, so its ops can be re-predicted on a CPU (--from-profiles).
# Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100 && echo h100 || echo h200)
spec=$(python3 -c "from roofline.ceilings.specs import resolve; print(resolve('$gpu').id)")
db=${HELDOUT_DB:-}
[ -z "$db" ] && [ -s "$W/h200-ops.json" ] && db=$W/h200-ops.json
[ -z "$db" ] && db=roofline/_opdata/$spec.json.gz
log "heldout: the held-out zoo (${HELDOUT_SPLIT:-dev and test}) on $gpu, predicted from $db"
t0=$(secs)
timeout "${HELDOUT_S:-420}" python3 scripts/predict_accuracy.py --zoo ${HELDOUT_SPLIT:+--split "$HELDOUT_SPLIT"} \
  --db "$db" --gpu "$gpu" "$W/heldout" > "$W/heldout.txt" 2> "$W/heldout.err"
echo "predict_accuracy --zoo exit $? in $(python3 -c "print(f'{$(secs) - $t0:.0f}')") s" | tee -a "$S"
cat "$W/heldout/predict_accuracy.txt" 2>/dev/null | tee -a "$S"  # the table, then a line per split
grep -E 'Error|error' "$W/heldout.err" | tail -n 8 | tee -a "$S"
cp "$W/heldout/predict_accuracy.json" "$OUT/heldout.json" 2>/dev/null
cp "$W/heldout/predict_accuracy.txt" "$OUT/heldout.txt" 2>/dev/null
tar -czf "$OUT/heldout-profiles.tar.gz" -C "$W/heldout" --exclude 'predict_accuracy.*' . 2>/dev/null
