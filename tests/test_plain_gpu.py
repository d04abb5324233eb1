"""On a CUDA GPU: a timed record (its time, clock, kernels over several lines) as `analyze` prints it, drawn by
`roofline.report.plain`, is what rich draws of the record it wrote (tests/test_plain.py: the analytic ones)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run
from test_plain import rich_bytes

from roofline.core.document import read_document
from roofline.report import plain
from roofline.report.rows import record_rows

pytestmark = pytest.mark.gpu


def test_a_timed_gpu_record_reads_as_rich_draws_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "gemm.json"
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "2048", "-o", str(doc))
    assert code == 0
    r = read_document(doc).records[0]
    how = plain.layout()
    assert r.timed and how is not None and not how[1]  # captured: no terminal
    assert plain.boxed(f"roofline: {r.op}", record_rows(r), how[0]) is not None, "rich drew it: see record_rows"
    assert out == rich_bytes(f"roofline: {r.op}", record_rows(r), how[0])
