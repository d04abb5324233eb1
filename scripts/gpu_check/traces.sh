# Stage `traces` of scripts/gpu_check.sh (issue 49): torch.profiler traces read by `roofline trace`, against
# `roofline profile` of the same steps, and the parse's speed over many ranks. Sourced by scripts/gpu_check.sh, in
# its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are its. At most 6 minutes (each step under its own timeout: 150 + 60 + 90 + 40 + 20 s).
# Writes $OUT/traces_summary.json: each case's two kernel times, FLOPs and coverage (tests/test_trace_models_gpu.py),
# the CUDA graph replay's attribution, the parse of a 256-rank set by 1..16 processes and one 1 GB trace's peak
# memory (scripts/trace_bench.py), and ranks as processes sharing one GPU (gloo).
TR=$W/traces
rm -rf "$TR" && mkdir -p "$TR"
log "pytest -m gpu tests/test_trace_models_gpu.py: traces against profiles (ResNet-50, ViT-B/16, Llama-shaped prefill and decode, AdamW step, MoE, compile reduce-overhead) and a CUDA graph replay"
ROOFLINE_TRACE_OUT=$TR timeout 150 python3 -m pytest -q -m gpu tests/test_trace_models_gpu.py 2>&1 | tail -20 | tee -a "$S"

log "trace_bench: a 256-rank set made from the Llama prefill's real trace, parsed by 1, 2, 4, 8 and 16 processes"
if [ -f "$TR/llama_prefill.json" ]; then
  timeout 60 python3 scripts/trace_bench.py --template "$TR/llama_prefill.json" --out "$W/bench" --ranks 256 \
      --mb 1 --jobs 1,2,4,8,16 > "$TR/bench_ranks.jsonl" 2>&1; tail -6 "$TR/bench_ranks.jsonl" | tee -a "$S"
  log "trace_bench: one 1 GB trace, its peak memory"
  timeout 90 python3 scripts/trace_bench.py --template "$TR/llama_prefill.json" --out "$W/bench" --ranks 1 \
      --mb 1000 --jobs 1 > "$TR/bench_1gb.jsonl" 2>&1; tail -2 "$TR/bench_1gb.jsonl" | tee -a "$S"
  rm -rf "$W/bench"
fi

log "ranks as processes sharing one GPU: 4 gloo ranks, CUDA tensors, all_reduce after a skew of 50 ms a rank"
cat > "$TR/job.py" <<'PY'
import sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp

def run(rank, world, out):
    dist.init_process_group("gloo", init_method=f"file://{out}/store", rank=rank, world_size=world)
    a = torch.randn(2048, 2048, device="cuda")
    dist.barrier()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        for _ in range(2):
            a @ a
            torch.cuda.synchronize()
            dist.barrier()
            time.sleep(0.05 * rank)
            dist.all_reduce(torch.ones(1 << 20))
    prof.export_chrome_trace(f"{out}/ranks/rank{rank}.json")
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(run, args=(4, sys.argv[1]), nprocs=4)
PY
mkdir -p "$TR/ranks" && timeout 40 python3 "$TR/job.py" "$TR" 2>&1 | tail -3 | tee -a "$S"
timeout 20 $RL trace "$TR/ranks" -o "$TR/ranks_doc.json" --force 2>&1 | tail -20 | tee -a "$S"
python3 - "$TR" > "$OUT/traces_summary.json" <<'PY'
import json, sys
from pathlib import Path
tr = Path(sys.argv[1])
out = {"cases": [json.loads(p.read_text()) for p in sorted(tr.glob("trace_*.json"))]}
for name in ("bench_ranks", "bench_1gb"):
    p = tr / f"{name}.jsonl"
    out[name] = [json.loads(l) for l in p.read_text().splitlines() if l.startswith("{")] if p.exists() else None
doc = tr / "ranks_doc.json"
if doc.exists():
    trace = json.loads(doc.read_text()).get("extra", {}).get("trace", {})
    # what the job did: 2 all_reduces of 2^20 fp32 (4 MiB) over 4 ranks, rank 3 entering 150 ms after rank 0
    out["ranks"] = {"collectives": trace.get("collectives"), "ranks": len(trace.get("ranks") or [])}
print(json.dumps(out, indent=1))
PY
tail -c 3000 "$OUT/traces_summary.json" | tee -a "$S"
