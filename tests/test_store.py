"""The calibration store: keying, stale entries, a corrupted file, and the CPU calibration."""

from __future__ import annotations

import pytest

from roofline.ceilings import store
from roofline.ceilings.calibrate import cpu_ceilings, measure_cpu
from roofline.core.model import Ceilings


def _ceilings(rate: float) -> Ceilings:
    return Ceilings(device_id="cpu", device_name="Test CPU", kind="cpu", source="measured",
                    compute={"cpu_fp32": rate}, memory={"dram": 1e10})


@pytest.fixture(autouse=True)
def _empty_store() -> None:
    """These tests start from an empty store (conftest seeds a CPU entry for everyone else)."""
    store.store_path().unlink(missing_ok=True)


def test_save_and_lookup_by_key() -> None:
    key = store.cpu_key("Test CPU", 2)
    assert store.lookup(key) is None
    store.save(key, _ceilings(1e11), {"x": 1})
    found = store.lookup(key)
    assert found is not None and found[0].compute["cpu_fp32"] == 1e11 and found[1] == {"x": 1}
    store.save(key, _ceilings(2e11), {})  # replacing an entry keeps one per key
    assert store.lookup(key)[0].compute["cpu_fp32"] == 2e11  # type: ignore[index]


def test_stale_entries_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    key = store.gpu_key("NVIDIA H200", "580.1")
    store.save(key, _ceilings(1e12), {})
    assert store.lookup(store.gpu_key("NVIDIA H200", "590.0")) is None  # another driver
    monkeypatch.setattr(store, "torch_version", lambda: "9.9.9")
    assert store.lookup(store.gpu_key("NVIDIA H200", "580.1")) is None  # another torch


def test_corrupted_store_warns_and_remeasures() -> None:
    store.store_path().parent.mkdir(parents=True, exist_ok=True)
    store.store_path().write_text("{not json")
    with pytest.warns(UserWarning, match="unreadable"):
        assert store.lookup(store.cpu_key("x", 1)) is None
    with pytest.warns(UserWarning):
        store.save(store.cpu_key("x", 1), _ceilings(1e9), {})
    assert store.lookup(store.cpu_key("x", 1)) is not None  # rewritten whole


def test_bad_values_in_store_are_rejected() -> None:
    store.save(store.cpu_key("x", 1), _ceilings(1e9), {})
    text = store.store_path().read_text().replace("1000000000.0", "-1.0")
    store.store_path().write_text(text)
    with pytest.warns(UserWarning):
        assert store.lookup(store.cpu_key("x", 1)) is None


def test_cpu_calibration_measures_then_caches() -> None:
    messages: list[str] = []
    first = cpu_ceilings(messages)
    assert messages and "measured" in messages[0]
    assert first.compute["cpu_fp32"] > 1e8 and first.memory["dram"] > 1e8  # any CPU: > 0.1 GFLOP/s, 0.1 GB/s
    again: list[str] = []
    second = cpu_ceilings(again)
    assert not again and second.compute == first.compute  # from the store, not measured again


def test_measure_cpu_reports_each_dtype() -> None:
    ceilings, details = measure_cpu()
    assert {"cpu_fp32", "cpu_fp64", "cpu_bf16"} <= set(ceilings.compute)
    assert details["bandwidth"]["bytes"] >= 2**28
