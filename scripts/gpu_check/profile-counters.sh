# Stage `profile-counters` of scripts/gpu_check.sh: profile --counters: ncu's kernels joined to a profile's records,
# twice, and the check's counter rules between the two. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S,
# $RL, log, secs and counter_metrics are its.
log "profile --counters: the cnn example's forward and a 3-step MLP, ncu's kernels joined to the profile's"
P=$W/profile_counters; mkdir -p "$P"
python3 -m pytest -q -m gpu tests/test_profile_counters_gpu.py 2>&1 | tail -8 | tee -a "$S"
for i in 1 2; do  # twice: counter bytes must repeat (the dram_bytes gate below)
  t0=$(secs); $RL profile examples/cnn.py --counters --ncu-csv "$P/cnn_ncu$i.csv" -o "$P/cnn$i.json" --force \
      -- --preset tiny > "$P/cnn$i.txt" 2>&1; e=$?; t1=$(secs)
  echo "profile examples/cnn.py --counters -- --preset tiny (run $i): exit $e, wall $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
done
t0=$(secs); $RL profile examples/cnn.py -o "$P/cnn_plain.json" --force -- --preset tiny > /dev/null 2>&1; t1=$(secs)
echo "the same without --counters: $(python3 -c "print(round($t1-$t0,2))") s" | tee -a "$S"
grep -E "^roofline: counters|counters left off" "$P/cnn1.txt" | tee -a "$S"
python3 - "$P/cnn1.json" <<'PY' | tee -a "$S"
import json, sys
d = json.load(open(sys.argv[1])); p = d["profile"]; recs = d["records"]
print("summary counters:", p.get("counters")); print("notes:", *p.get("notes", []), sep="\n  ")
with_c = [r for r in recs if r.get("counters")]
print(f"{len(with_c)} of {len(recs)} records with counters")
for r in sorted(with_c, key=lambda r: -(r.get("time_s") or 0) * (r.get("count") or 1))[:12]:
    c = r["counters"]
    print(f"  {r['op'][:26]:26} {(r.get('module') or '')[:22]:22} excess {c.get('excess_traffic') or 0:6.2f}"
          f" flops_ratio {c.get('flops_ratio') or 0:7.2f} dram {c.get('dram_bytes') or 0:12,.0f}"
          f" ncu {(c.get('duration_s') or 0) * 1e6:8.2f} us ours {(r.get('time_s') or 0) * 1e6:8.2f} us")
PY
rm -f "$P/base.json"; $RL baseline update "$P/cnn1.json" --baseline "$P/base.json" > /dev/null 2>&1
for rule in dram_bytes:1% dram_bytes_read:1% l2_bytes:1% l1_bytes:1% counter_flops:0%; do
  COLUMNS=160 $RL check "$P/cnn2.json" --baseline "$P/base.json" --fail-on "$rule" --wide > "$P/check_${rule%%:*}.txt" 2>&1
  echo "check run 2 against run 1 --fail-on $rule: exit $? (0: the counter repeats)" | tee -a "$S"
  grep -E "^roofline check" "$P/check_${rule%%:*}.txt" | tail -1 | tee -a "$S"
done
# kernel by kernel, each metric's spread between the two profiles' ncu runs (the small kernels of a forward)
M=$(counter_metrics)
python3 scripts/counters_compare.py spread "$M" "$P/cnn_ncu1.csv" "$P/cnn_ncu2.csv" | head -30 | tee -a "$S"
$RL plot "$P/cnn1.json" -o "$P/cnn_counters.png" --force 2>&1 | tail -1
$RL profile tests/scripts/gpu_mlp_steps.py --counters -o "$P/steps.json" --force > "$P/steps.txt" 2>&1
echo "profile tests/scripts/gpu_mlp_steps.py --counters: exit $?" | tee -a "$S"; grep -E "^roofline: counters" "$P/steps.txt" | tee -a "$S"
# the matched pair (profile document + the ncu CSV it joined) for CPU fixtures in tests/data
cp "$P/cnn1.json" "$OUT/prof_counters.json"; cp "$P/cnn_ncu1.csv" "$OUT/prof_counters_ncu.csv"
cp "$P/cnn_counters.png" "$OUT/" 2>/dev/null
