"""The roofline math, dtypes, the typed record, the results document and statistics. Never imports torch,
matplotlib or the measuring code."""
