# Stage `energy` of scripts/gpu_check.sh: energy per operator on the NVML energy counter (issue 33). The energy
# model (`calibrate energy`), `--energy` on analyze, run and profile, the refusal on the CPU, the chart with its
# power roof, and scripts/energy_accuracy.py (counter update period and resolution, repeatability over five
# windows, the model's prediction of every kernels-h200 kernel, the power roof's clock of a long bf16 GEMM).
# About 4-5 minutes on the H200 (calibrate ~30 s, the commands ~100 s, the benchmark ~115 s; the first version,
# without the second run, check and API profile, ran in 180 s).
# Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log.
E=$W/energy
mkdir -p "$E"
t0=$(secs)
log "roofline calibrate energy (the energy model; ceilings untouched)"
timeout 120 $RL calibrate energy -o "$E/model.json" --force 2>&1 | tail -12 | tee -a "$S"
log "analyze gemm --m 8192 --dtype bf16 --energy; analyze rmsnorm --energy"
timeout 60 $RL analyze gemm --m 8192 --dtype bf16 --energy -o "$E/gemm.json" --force 2>&1 | grep -E \
  "energy|static|per joule|window|clock|advice|error" | tee -a "$S"
timeout 60 $RL analyze rmsnorm --rows 16384 --cols 4096 --dtype bf16 --energy -o "$E/rmsnorm.json" --force 2>&1 | \
  grep -E "energy|static|per joule|window|error" | tee -a "$S"
log "run suites/smoke.toml --energy"
timeout 120 $RL run suites/smoke.toml --energy -o "$E/smoke.json" --force 2>&1 | tail -14 | tee -a "$S"
python3 - "$E/smoke.json" <<'PY' 2>&1 | tee -a "$S"
import json, sys
for r in json.load(open(sys.argv[1]))["records"]:
    e = r.get("energy") or {}
    print(f"  {r['op']:10s} {r['dtype']:5s} {e.get('energy_j', 0) * 1e3:9.3f} mJ/call {e.get('power_w', 0):5.0f} W "
          f"static {e.get('static_j', 0) * 1e3:8.3f} mJ model {e.get('model_error') or 0:+.1%} "
          f"updates {e.get('counter', {}).get('updates')} period {e.get('counter', {}).get('update_period_s')}")
PY
log "profile examples/llm_gqa.py --energy (tiny preset)"
timeout 120 $RL profile examples/llm_gqa.py --energy -o "$E/profile.json" --force -- --preset tiny 2>&1 | \
  grep -iE "energy|joule|step|error" | head -12 | tee -a "$S"
log "run suites/smoke.toml --energy again; check --metric energy against the first (expect no regression)"
timeout 120 $RL run suites/smoke.toml --energy -o "$E/smoke2.json" --force > /dev/null 2>&1
timeout 60 $RL check "$E/smoke2.json" --baseline "$E/smoke.json" --metric energy 2>&1 | tail -14 | tee -a "$S"
log "roofline.profile(step, energy=True): a bf16 MLP step, measured on the counter"
timeout 120 python3 - <<'PY' 2>&1 | tail -8 | tee -a "$S"
import torch, roofline
m = torch.nn.Sequential(torch.nn.Linear(4096, 16384), torch.nn.GELU(), torch.nn.Linear(16384, 4096)).cuda().bfloat16()
x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
with torch.no_grad():
    p = roofline.profile(lambda: m(x), energy=True, tokens=8192)
e = p.summary["energy"]
print(f"step {e['step_j']:.3f} J in {e['step_s'] * 1e3:.2f} ms ({e['power_w']:.0f} W), idle {e['idle_j']:.4f} J, "
      f"{e['per_token_j'] * 1e3:.4f} mJ/token; {e['attribution']}")
for r in sorted(p.records, key=lambda r: -(r.energy or {}).get("step_j", 0))[:4]:
    print(f"  {r.op:28s} {r.energy['step_j']:.4f} J ({r.energy['step_share']:.0%})")
PY
log "plot smoke.json (the power roof beside the compute and memory roofs) and the energy roofline"
timeout 60 $RL plot "$E/smoke.json" -o "$E/smoke_power_roof.png" --force 2>&1 | tail -2 | tee -a "$S"
timeout 60 $RL plot "$E/smoke.json" --energy -o "$E/smoke_energy_roofline.png" --force 2>&1 | tail -2 | tee -a "$S"
log "refusal: --energy on the CPU (expect one line, exit 2)"
timeout 60 $RL analyze gemm --m 64 --device cpu --energy > "$E/refusal.txt" 2>&1; echo "exit $? $(cat "$E/refusal.txt")" | \
  tee -a "$S"
log "scripts/energy_accuracy.py (counter, repeatability, model, power roof)"
timeout 300 python3 scripts/energy_accuracy.py "$E" > "$E/accuracy.txt" 2>&1; echo "exit $?" | tee -a "$S"
sed -n '/^== summary/,$p' "$E/accuracy.txt" | tee -a "$S"
tail -5 "$E/accuracy.txt" | grep -i error | tee -a "$S"
log "energy model forms refitted on this calibration (scripts/experiments/energy_model_forms.py; CPU, ~2 s)"
timeout 60 python3 scripts/experiments/energy_model_forms.py --calibration "$E/model.json" > "$E/forms.txt" 2>&1
echo "exit $?" | tee -a "$S"
cut -c1-150 "$E/forms.txt" | head -14 | tee -a "$S"
tail -1 "$E/forms.txt" | tee -a "$S"
python3 - "$E/model.json" <<'PY' 2>&1 | tee -a "$S"
import json, sys
m = json.load(open(sys.argv[1]))
d, pts = m["details"], {p["name"]: p for p in m["energy_model"]["points"]}
for r in [k for k in d["kernels"] if k["name"].startswith("HBM")] + d.get("probes", []):
    p = r.get("point") or pts.get(r.get("name"), {})
    print(f"  {r.get('name', r.get('error'))}: {r.get('power_w', 0):.0f} W, {r.get('per_call_s', 0) * 1e3:.3f} ms/call, "
          f"read {p.get('read_bytes_per_s', 0) / 1e12:.2f} TB/s, SM {r.get('sm_mhz')} MHz")
PY
log "energy stage: $(python3 -c "print(f'{$(secs) - $t0:.0f}')") s"
