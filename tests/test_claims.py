"""The evidence behind docs/measurements.md: its claims table is what the files under docs/results give
(scripts/claims.py reads each figure from the JSON, CSV or log a run wrote), every file there is cited by a page,
the folder stays small, and the operator databases that users need ship with the package instead."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest
from helpers import ROOT

from roofline.core.errors import UsageError
from roofline.core.tomlfile import read_toml

# du -sb's figure for the folder, which the issue bounds: its files and each folder's own entry (4096 bytes on
# ext4), so a folder more costs as much as a 4 KiB file.
RESULTS_BYTES = 3_000_000
FOLDER_BYTES = 4096
# The rows whose figure is an accuracy (a prediction or a model against measurements).
ACCURACY = {"predicted-step-times-issue-32", "a-training-step-from-the-flushed-points", "energy-issue-33"}
OPDATA = ROOT / "roofline" / "_opdata"


@pytest.fixture(scope="module")
def claims() -> ModuleType:
    spec = importlib.util.spec_from_file_location("claims", ROOT / "scripts" / "claims.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["claims"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def found(claims: ModuleType) -> list:
    return claims.claims()


def test_the_page_table_is_what_the_files_give(claims: ModuleType, found: list) -> None:
    assert claims.problems(claims.PAGE.read_text(), found) == []
    assert claims.main(["--check"]) == 0


def test_a_figure_edited_by_hand_fails_the_check(claims: ModuleType, found: list) -> None:
    page = claims.PAGE.read_text()
    # the first row's figure as the files give it (timing-vs-ncu/2026-11-30_*: gemv 16x8192 at +3.2% is out)
    assert "15 of 16 kernels within 3%" in claims.page_block(page)
    edited = page.replace("15 of 16 kernels within 3%", "16 of 16 kernels within 3%", 1)
    (bad,) = claims.problems(edited, found)
    assert "not what the files give" in bad
    with pytest.raises(ValueError, match="no claims table"):
        claims.problems(page.replace(claims.BEGIN, ""), found)


def test_every_accuracy_figure_says_in_sample_or_held_out(found: list) -> None:
    rows = [c for c in found if c.anchor in ACCURACY]
    assert len(rows) == 5  # the H100's and the H200's steps, the training step, energy on both GPUs
    assert all("in-sample" in c.figure or "held out" in c.figure for c in rows), [c.figure for c in rows]
    # the prediction's ten H100 steps are the cases the predictor was tuned on
    (h100,) = [c for c in found if c.anchor == "predicted-step-times-issue-32" and c.gpu == "H100"]
    assert h100.figure.startswith("in-sample") and "10 of 10 steps within 5%" in h100.figure


def test_a_figure_read_from_a_text_log_says_so(found: list) -> None:
    logged = [c for c in found if c.text_log]
    assert logged and all("text log" in c.figure for c in logged)
    assert all(not any(e.endswith((".json", ".json.gz")) for e in c.evidence) for c in logged)


def test_every_file_under_docs_results_is_cited(claims: ModuleType) -> None:
    assert claims.uncited() == []


def test_what_counts_as_a_citation(claims: ModuleType) -> None:
    """By its path's tail or a glob of it (braces expanded), or by its run's folder; a claim's whole folder or a
    glob with too little of a name cites nothing, so the test above can fail."""
    rel = "predict/profiles-h100-0742/resnet50.json.gz"
    tokens = claims.cited_tokens([ROOT / "docs" / "measurements.md"])
    assert claims.is_cited(rel, tokens) and claims.is_cited(rel, {"profiles-h100-0742/"})
    assert claims.is_cited("predict/summary-h100-0742-lazyfix.txt", {*claims.expand("{summary,sweep}-h100-0742*")})
    assert claims.is_cited("counters/summary_call4.txt", {*claims.expand("summary_call{1,2,3,4,5,6}.txt")})
    for token in ("predict/", "predict", "*.json.gz", "predict/*", "resnet50.json", "summary_call5.txt"):
        assert not claims.is_cited(rel, {token}), token


def test_docs_results_stays_under_3_mb() -> None:
    results = ROOT / "docs" / "results"
    files = [p for p in results.rglob("*") if p.is_file()]
    folders = [p for p in results.rglob("*") if p.is_dir()]
    assert sum(p.stat().st_size for p in files) + FOLDER_BYTES * (len(folders) + 1) < RESULTS_BYTES


def test_the_shipped_databases_are_read_and_named_by_spec_id() -> None:
    from roofline.ceilings import opdb
    from roofline.ceilings.specs import as_spec

    shipped = sorted(OPDATA.glob("*.json.gz"))
    assert [p.name for p in shipped] == ["h100-sxm.json.gz", "h200-sxm.json.gz"]
    for path in shipped:
        db = opdb.read(path)
        spec_id = path.name.removesuffix(".json.gz")
        assert db.device["id"] == spec_id and as_spec(spec_id).id == spec_id
        assert len(db.points) > 2000  # a whole GPU grid (3087 and 2953 points: roofline/_opdata/README.md)
    setuptools = read_toml(ROOT / "pyproject.toml", "pyproject.toml", UsageError)["tool"]["setuptools"]
    assert "roofline._opdata" in setuptools["packages"]
    assert "*.json.gz" in setuptools["package-data"]["roofline._opdata"]
