# Stage `counters-l2` of scripts/gpu_check.sh: which L2 byte counters repeat when the data lands at other physical
# pages (issue 17). Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics
# are its.
# issue 17: which L2 byte counter is a property of the kernel, and which depends on where its data landed.
# lts__t_bytes counts every L2 slice lookup; on a partitioned L2 a miss in the near partition is looked up
# again in the far one over the LTC fabric (srcunit_ltcfabric). Four plain runs: two fresh, two beside a
# process that holds 40 or 20 GiB (other physical pages), then `run --counters` twice against the fresh ones.
log "counters-l2: L2 byte counters over plain ncu runs with the data at other physical pages"
C=$W/counters_l2; mkdir -p "$C"
ncu --query-metrics 2>/dev/null | grep -E "^(lts__t_(sectors|requests|bytes)|lts__lts2xbar|l1tex__m_)" \
    > "$C/query_lts.txt"; echo "L2/L1 metric names offered: $(wc -l < "$C/query_lts.txt")" | tee -a "$S"
M=$(python3 -c "from roofline.ncu.run import available_metrics, base_name, find_ncu, usable_metrics
have = available_metrics(find_ncu(), 'gpu_check')
extra = ['lts__t_sectors.sum', 'lts__t_sectors_srcunit_tex.sum', 'lts__t_sectors_srcunit_tex_op_read.sum',
         'lts__t_sectors_srcunit_tex_op_write.sum', 'lts__t_sectors_srcunit_ltcfabric.sum',
         'lts__t_sectors_srcnode_gpc.sum', 'lts__t_sectors_op_read.sum', 'lts__t_sectors_op_write.sum',
         'lts__lts2xbar_cycles_active.sum', 'l1tex__m_xbar2l1tex_read_bytes.sum',
         'l1tex__m_l1tex2xbar_write_bytes.sum']
print(','.join(usable_metrics(have) + [m for m in extra if base_name(m) in have]))")
echo "metrics: $M" | tee -a "$S"
for run in ${L2_RUNS:-fresh1 hog40 fresh2 hog20}; do
  hog=""
  case $run in hog*)
    rm -f "$C/hog.ready"
    python3 -c "import sys, time, torch
x = [torch.ones(1 << 30, dtype=torch.uint8, device='cuda') for _ in range(int(sys.argv[1]))]
torch.cuda.synchronize(); open(sys.argv[2], 'w').write('ready'); time.sleep(900)" "${run#hog}" "$C/hog.ready" &
    hog=$!
    for _ in $(seq 120); do [ -f "$C/hog.ready" ] && break; sleep 0.5; done ;;
  esac
  t0=$(secs)
  ncu --profile-from-start off --clock-control none --print-units base --metrics "$M" --csv --page raw \
      python3 scripts/ncu_compare.py target suites/kernels-h200.toml > "$C/$run.csv" 2> "$C/$run.err"
  echo "plain ncu run $run: exit $?, $(python3 -c "print(round($(secs)-$t0,1))") s" | tee -a "$S"
  [ -n "$hog" ] && kill "$hog" && wait "$hog" 2>/dev/null
done
python3 scripts/counters_compare.py spread "$M" "$C/fresh1.csv" "$C/fresh2.csv" | head -40 | tee -a "$S"
[ -f "$C/hog20.csv" ] && python3 scripts/counters_compare.py spread "$M" "$C"/fresh1.csv "$C"/fresh2.csv \
    "$C"/hog40.csv "$C"/hog20.csv | tee -a "$S"
for i in 1 2; do
  $RL run suites/kernels-h200.toml --counters -o "$C/ours$i.json" --force > "$C/ours$i.txt" 2>&1
  echo "run --counters ($i): exit $?" | tee -a "$S"
  python3 scripts/counters_compare.py suite "$C/ours$i.json" "$C/fresh1.csv" | tee -a "$S"
done
python3 scripts/counters_compare.py envelope "$C"/ours1.json "$C"/ours2.json -- "$C"/*.csv | tee -a "$S"
