"""Nsight Compute: its runner and metric list, the programs it runs, its CSV and .ncu-rep readers, and the
join of its kernels to records."""
