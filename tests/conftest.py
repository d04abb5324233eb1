"""Shared fixtures: an isolated cache directory, the CPU forced unless a test asks for CUDA, and the
`gpu` marker skipped where torch sees no CUDA device."""

from __future__ import annotations

import importlib.util

import pytest


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any("gpu" in item.keywords for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


# A fixed CPU calibration seeded into each test's store, so tests that time on the CPU do not spend
# seconds measuring the CPU's roofline; tests of the calibration itself empty the store first.
SEED_CPU = {"cpu_fp32": 1e11, "cpu_fp64": 5e10, "cpu_bf16": 2e10, "cpu_fp16": 2e10}


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                    request: pytest.FixtureRequest) -> None:
    """Each test gets its own calibration store (seeded with a CPU entry); CPU tests never see a GPU."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    if "gpu" not in request.keywords:
        monkeypatch.setenv("ROOFLINE_NO_GPU", "1")
        from roofline.ceilings import store
        from roofline.core.model import Ceilings
        from roofline.measuring.device import cpu_description

        info = cpu_description()
        store.save(store.cpu_key(info["name"], info["cores"]),
                   Ceilings(device_id="cpu", device_name=info["name"], kind="cpu", source="measured",
                            compute=dict(SEED_CPU), memory={"dram": 2e10}), {"seeded_by": "tests"})
