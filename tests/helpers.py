"""What several test modules need: the checkout's root, running the CLI in-process, writing a fixture file."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SUITES = ROOT / "suites"
# A fixed CPU calibration seeded into each test's store (conftest.py), so tests that time on the CPU do not spend
# seconds measuring the CPU's roofline; tests of the calibration itself empty the store first.
SEED_CPU = {"cpu_fp32": 1e11, "cpu_fp64": 5e10, "cpu_bf16": 2e10, "cpu_fp16": 2e10}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`roofline ARGS` in this process: (exit code, stdout, stderr)."""
    from roofline.cli.app import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, text: str) -> Path:
    """Write `text` to `path` and return the path."""
    path.write_text(text)
    return path


def seed_cpu_store() -> None:
    """Save `SEED_CPU` as this machine's CPU calibration in the store of $ROOFLINE_CACHE_DIR."""
    from roofline.ceilings import store
    from roofline.core.model import Ceilings
    from roofline.measuring.device import cpu_description

    info = cpu_description()
    store.save(store.cpu_key(info["name"], info["cores"]),
               Ceilings(device_id="cpu", device_name=info["name"], kind="cpu", source="measured",
                        compute=dict(SEED_CPU), memory={"dram": 2e10}), {"seeded_by": "tests"})


def profile_with_counters() -> dict:
    """The H200 profile of examples/cnn.py --preset tiny with ncu counters (tests/data/profile_counters_cnn.json.gz:
    61 records; conv1 read+wrote 209,152 DRAM bytes, bn1 179,200), as JSON."""
    import gzip
    import json

    return json.loads(gzip.decompress((DATA / "profile_counters_cnn.json.gz").read_bytes()))


def rendered(renderable: object, width: int = 80) -> str:
    """What rich prints of `renderable` in `width` columns, as plain text."""
    from rich.console import Console

    con = Console(record=True, width=width, highlight=False)
    con.print(renderable)
    return con.export_text()
