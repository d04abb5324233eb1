# Stage `predict` of scripts/gpu_check.sh (issue 32): build the operator efficiency database from the sweep alone
# (`roofline calibrate ops`, suites/sweeps/ops.toml, coarse grid first; resumable: a second run adds only the
# points the first did not reach), then predict real models' steps from it without running them and measure them
# (scripts/predict_accuracy.py, 10 cases). Expected: the sweep stops starting points at PREDICT_BUDGET (default
# 8m; the whole GPU grid, 3087 points of 3569 planned, the rest too large or not warm: 296 s on an H100), the
# accuracy script 1-3 minutes, cut at PREDICT_ACCURACY_S (default 240 s; it writes its JSON after every case).
# One 10-minute device call runs `bash scripts/gpu_check.sh predict` whole from nothing (398 s on an H100,
# 2026-12-06: the sweep 296 s, the cases 92 s). The database is copied to $OUT/h200-ops.json as soon as the sweep ends; with W set to the same folder a later call resumes it,
# and on a fresh machine PREDICT_SEED starts from a database the package ships (roofline/_opdata, one per spec id):
# PREDICT_SEED=roofline/_opdata/h200-sxm.json.gz (2953 points; the 1165 of them timed by events, as the sweep then
# timed operators over 20 us, are timed again by their kernels' timestamps, ~2 minutes), or on an H100
# PREDICT_SEED=roofline/_opdata/h100-sxm.json.gz (3087 points and the L2 write-back readings: nothing left to sweep).
# Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log.
log "predict: operator sweep (roofline calibrate ops --budget ${PREDICT_BUDGET:-8m}) then scripts/predict_accuracy.py"
if [ -n "${PREDICT_SEED:-}" ] && [ ! -s "$W/h200-ops.json" ]; then  # a stored database: the sweep adds what it lacks
  gunzip -c "$PREDICT_SEED" > "$W/h200-ops.json" && echo "seeded from $PREDICT_SEED" | tee -a "$S"
fi
t0=$(secs)
$RL calibrate ops --budget "${PREDICT_BUDGET:-8m}" --db "$W/h200-ops.json" > "$W/predict-sweep.txt" 2> "$W/predict-sweep.err"
echo "calibrate ops exit $? in $(python3 -c "print(f'{$(secs) - $t0:.0f}')") s" | tee -a "$S"
tail -n 25 "$W/predict-sweep.txt" | tee -a "$S"
grep -v '^\s*$' "$W/predict-sweep.err" | tail -n 5 | tee -a "$S"
cp "$W/h200-ops.json" "$OUT/h200-ops.json" 2>/dev/null
if [ -s "$W/h200-ops.json" ]; then
  t0=$(secs)
  # the analytic profiles are placed on this GPU's spec (an H100 may stand in for the H200 on the lent machine)
  gpu=${PREDICT_GPU:-$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100 && echo h100 || echo h200)}
  timeout "${PREDICT_ACCURACY_S:-240}" python3 scripts/predict_accuracy.py --db "$W/h200-ops.json" --gpu "$gpu" "$W/predict" \
    > "$W/predict-accuracy.txt" 2> "$W/predict-accuracy.err"
  echo "predict_accuracy exit $? in $(python3 -c "print(f'{$(secs) - $t0:.0f}')") s" | tee -a "$S"
  sed -n '/^== summary/,$p' "$W/predict-accuracy.txt" | tee -a "$S"
  [ -s "$W/predict/predict_accuracy.txt" ] && ! grep -q '^== summary' "$W/predict-accuracy.txt" \
    && cat "$W/predict/predict_accuracy.txt" | tee -a "$S"  # cut short: the cases it finished
  grep -E 'Error|error' "$W/predict-accuracy.err" | tail -n 5 | tee -a "$S"
  cp "$W/predict/predict_accuracy.json" "$W/predict/predict_accuracy.txt" "$OUT/" 2>/dev/null
else
  log "predict: no database was written; the accuracy script did not run"
fi
