"""The held-out zoo (suites/zoo/heldout.toml, issue 48): frozen before any rule changed, split once into a dev and a
test half, covering what the issue asks of it; its steps build and run (tiny, on the CPU) through
scripts/zoo_models.py, the harness scripts/predict_accuracy.py --zoo uses on a GPU."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import zoo_models  # noqa: E402  (a script of the repository, not a package module)


def test_the_zoo_is_the_one_frozen() -> None:
    # the list may not change after its freeze: a step edited, added or removed shows here. To change the zoo is
    # to freeze a new one (a new date and hash) and say so beside every figure measured on it.
    date, sha = zoo_models.frozen()
    assert sha == zoo_models.digest(), "suites/zoo/heldout.toml changed after its freeze (suites/zoo/FROZEN)"
    assert date == "2026-12-07"


def test_the_zoo_covers_what_the_issue_asks() -> None:
    steps = zoo_models.load()
    assert len(steps) >= 30 and len({s["name"] for s in steps}) == len(steps)
    splits = {s["split"] for s in steps}
    assert splits == set(zoo_models.SPLITS)
    for split in zoo_models.SPLITS:  # each half has at least a third of the steps
        assert sum(s["split"] == split for s in steps) >= len(steps) // 3
    kinds = {s["kind"] for s in steps}
    assert kinds == {"inference", "training", "decode"}
    assert {s["dtype"] for s in steps} == {"fp16", "bf16", "fp32"}
    models = {s["model"] for s in steps}
    assert {"mobilenet_v3_large", "resnext50_32x4d", "regnet_y_800mf"} <= models  # depthwise and grouped convs
    assert {"MixtralForCausalLM", "OlmoeForCausalLM"} <= models  # mixtures of experts
    assert "swin_t" in models and any((s.get("config") or {}).get("sliding_window") for s in steps)  # windows
    assert any(m.startswith("segmentation.") for m in models)  # segmentation heads
    assert "video.r3d_18" in models  # 3D convolutions
    assert any((s.get("config") or {}).get("vocab_size", 0) % 8 for s in steps)  # a vocabulary not a multiple of 8
    assert {"BertForMaskedLM", "T5ForConditionalGeneration", "WhisperEncoder"} <= models  # encoders, enc-dec
    decodes = [(s["batch"], s["context"]) for s in steps if s["kind"] == "decode"]
    assert len({b for b, _ in decodes}) >= 3 and len({c for _, c in decodes}) >= 3


def test_the_split_is_the_stated_rule() -> None:
    # within each group, sorted by the sha256 of the name, alternately dev and test (the file's header)
    import hashlib

    steps = zoo_models.load()
    for group in {s["group"] for s in steps}:
        names = sorted((s["name"] for s in steps if s["group"] == group),
                       key=lambda n: hashlib.sha256(n.encode()).hexdigest())
        split = {s["name"]: s["split"] for s in steps}
        assert [split[n] for n in names] == [("dev", "test")[i % 2] for i in range(len(names))]


def _runnable(entry: dict) -> bool:
    need = {"torchvision": "torchvision", "timm": "timm", "transformers": "transformers"}[entry["source"]]
    return importlib.util.find_spec(need) is not None


@pytest.mark.parametrize("entry", zoo_models.load(), ids=lambda e: e["name"])
def test_each_step_builds_and_runs_tiny_on_the_cpu(entry: dict) -> None:
    if not _runnable(entry):
        pytest.skip(f"{entry['source']} is not installed (the [models] extra)")
    zoo_models.build_step(entry, "cpu", tiny=True)()
