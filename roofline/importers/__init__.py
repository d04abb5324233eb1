"""Reading other tools' output into results records (Nsight Compute reports and CSV)."""
