"""Nsight Compute: everything roofline does with `ncu` and its reports, in one package.

- `run`: find `ncu`, cut the metric list to what the chip offers, run ncu on a target program and read its
  output; `analyze/run --counters`' counters of each operator.
- `target`: what the programs ncu runs share: how ncu starts one, the plan file, the profiled range, `__main__`.
- `target_ops`: the program of `analyze/run --counters`: each operator built, warmed up, profiled once.
- `target_profile`: the program of `profile --counters`: the user's script, the chosen region entries profiled.
- `profile`: `profile --counters`: ncu's kernels of the chosen stretch joined to the profile's records.
- `join`: ncu's kernels paired with a profile's, call by call, by the kernel's own name (pure).
- `read_csv`: ncu's raw CSV read into kernels, the counter metric list, a kernel's metrics as Counters.
- `read_rep`: a binary .ncu-rep read into the same kernels through NVIDIA's `ncu_report`.
- `records`: `import-ncu`: a report's kernels as the records of a results document.

The Counters record type and what is derived from it stay in `core.counters`: every layer reads them.
"""
