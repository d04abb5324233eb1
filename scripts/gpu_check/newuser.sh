# Stage `newuser` of scripts/gpu_check.sh (issue 30, the new user's last round, branch newuser): on the GPU, the
# profile's analysis after the script's run shows a moving status line (it sat 4-5 s without a word), and Ctrl-C
# during `calibrate ops` keeps the points measured and says so, exit 130. About 70 s.
# Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log and secs are its.
log "profile examples/llm_gqa.py --preset tiny on a pseudo-terminal: the analysis's status line (want 'analysing')"
if command -v script > /dev/null; then
  t0=$(secs)
  timeout 120 script -qec "$RL profile examples/llm_gqa.py -o $W/nu_gqa.json --force -- --preset tiny" \
      "$W/nu_tty.txt" > /dev/null 2>&1; echo "exit $? in $(python3 -c "print(f'{$(secs) - $t0:.1f}')") s" | tee -a "$S"
  # each redraw of the line, escapes stripped: the step and its clock (0:00:0N), which moves during the analysis
  tr '\r' '\n' < "$W/nu_tty.txt" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' | grep -o "analysing .*" | tr -s ' ' \
      | sort -u | head -12 | tee -a "$S"
  python3 -c "import json,sys; print('phases_s', json.load(open(sys.argv[1]))['profile']['phases_s'])" \
      "$W/nu_gqa.json" 2>&1 | tee -a "$S"
else
  log "no \`script\` (util-linux) here: the status line is not checked"
fi
log "Ctrl-C (SIGINT) 30 s into calibrate ops --budget 5m (want: exit 130, 'interrupted: N points measured kept')"
rm -f "$W/nu_ops.json"
timeout --preserve-status -s INT 30 $RL calibrate ops --budget 5m --db "$W/nu_ops.json" > "$W/nu_ops_out.txt" \
    2> "$W/nu_ops_err.txt"; echo "exit $?" | tee -a "$S"
grep -v "^note: level" "$W/nu_ops_err.txt" | tail -3 | tee -a "$S"
python3 -c "import json,sys; print('points in the file:', len(json.load(open(sys.argv[1]))['points']))" \
    "$W/nu_ops.json" 2>&1 | tee -a "$S"
