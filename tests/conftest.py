"""Shared fixtures: an isolated cache directory, the CPU forced unless a test asks for CUDA, and the
`gpu` marker skipped where torch sees no CUDA device."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import seed_cpu_store


def _plugin_installed() -> bool:
    """Is the package's pytest11 entry point registered (an installed roofline, editable or not)?"""
    return any(ep.value == "roofline.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))


# Running from a source tree without installing it (PYTHONPATH=., as scripts/gpu_check.sh does), pytest finds
# no entry point: load the plugin here so that its fixture and options exist; installed, the entry point does.
pytest_plugins = [] if _plugin_installed() else ["roofline.pytest_plugin"]


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


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A seeded store for what runs before a test's own (a module-scoped fixture is set up before the
    function-scoped `_isolated_cache`): without it such a fixture read the user's real cache, or calibrated this
    machine, and its records' bounds depended on the machine (a CPU profile's addmm memory- or compute-bound)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.mktemp("session-cache")))
        seed_cpu_store()
        yield


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                    request: pytest.FixtureRequest) -> None:
    """Each test gets its own calibration store (seeded with a CPU entry); CPU tests never see a GPU."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    if "gpu" not in request.keywords:
        monkeypatch.setenv("ROOFLINE_NO_GPU", "1")
        seed_cpu_store()


# ---------------------------------------------------------------- a real browser (HTML pages: report, history)
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1300,1000")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (None: they can): selenium, Debian's Chromium and its ChromeDriver."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium; .ci/run installs it)"
    if not (shutil.which("chromium") or os.path.exists("/usr/bin/chromium")):
        return "no chromium (apt-get install chromium chromium-driver; .ci/run installs them)"
    if not shutil.which("chromedriver"):
        return "no chromedriver (apt-get install chromium-driver; .ci/run installs it)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by selenium, with the page's console kept; skipped, saying why, without them."""
    if (why := browser_missing()) is not None:
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The Debian driver, named: selenium's own manager would go looking on the network for one.
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    yield driver
    driver.quit()
