# Stage `compile` of scripts/gpu_check.sh: torch.compile'd models in profiles: Triton kernels attributed to the aten
# ops they fused. Sourced by scripts/gpu_check.sh, in its shell: $OUT, $W, $S, $RL, log, secs and counter_metrics are
# its.
# torch.compile'd models (issue 16): Triton kernels attributed to the aten ops they fused; the generated
# kernel files and launch arguments come back in $OUT/compile_fixture.tar.gz (fixtures for tests/test_compile.py)
log "pytest -m gpu tests/test_compile_gpu.py"
ROOFLINE_COMPILE_OUT=$W/compile python3 -m pytest -q -s -m gpu tests/test_compile_gpu.py 2>&1 \
    | grep -E "^eager|^compiled|^fused|^aten|passed|failed|Error|assert" | tail -30 | tee -a "$S"
log "roofline profile examples/compiled_mlp.py, compiled and eager"
$RL profile examples/compiled_mlp.py -o "$W/compile/compiled.json" --force 2>&1 | tail -40 | tee -a "$S"
$RL profile examples/compiled_mlp.py -o "$W/compile/eager.json" --force -- --eager 2>&1 | tail -12 | tee -a "$S"
tar -czf "$OUT/compile_fixture.tar.gz" -C "$W" compile 2>/dev/null; ls "$W/compile" | tee -a "$S"
