"""A profile's summary as typed records (core/summary.py): what a profile makes reads back from its JSON to the same
JSON, key for key and in order; the stored profiles (tests/data, docs/results: older versions lack keys) too; the
dict-style reads the docs and scripts use (`prof.summary["kernel_time_s"]`) still work; notes carry codes.

The small model: an embedding, q/k/v projections, causal attention given a boolean mask tensor (an analytic run
cannot read its values: the masked-attention note), a GRU and a head; a training step (cross-entropy, backward,
AdamW), its forward in region "forward" and the rest in region "step"."""

from __future__ import annotations

import gzip
import json
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from helpers import DATA, ROOT, run
from torch import nn

import roofline
from roofline.analysis.utilization import REFUSED
from roofline.capture.profile_summary import BUILD_CALLS, INSTRUMENTED, MASKED_ATTENTION, PROFILE_NOTES
from roofline.core.document import dumps
from roofline.core.notes import Note, code_of
from roofline.core.summary import ProfileSummary, RegionSummary, StepPrediction, Utilization

SCRIPT = str(ROOT / "tests" / "scripts" / "tiny_mlp.py")


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(64, 32)
        self.q, self.k, self.v = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 32)
        self.gru = nn.GRU(32, 32, batch_first=True)
        self.head = nn.Linear(32, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.emb(x)
        q, k, v = (m(h).view(2, 16, 4, 8).transpose(1, 2) for m in (self.q, self.k, self.v))
        mask = torch.empty(16, 16, dtype=torch.bool)  # no data in an analytic run: every score counted, said
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(2, 16, 32)
        a, _ = self.gru(a)
        return self.head(a + h)


def training_step(regions: bool, build_inside: bool = False) -> Any:
    """A zero-argument training step of Net on 2 x 16 tokens (built on its first call when `build_inside`)."""
    torch.manual_seed(0)
    x = torch.randint(0, 64, (2, 16))
    state: dict[str, Any] = {"model": None if build_inside else Net()}

    def step() -> None:
        if state["model"] is None:
            state["model"] = Net()
        model = state["model"]
        opt = state.setdefault("opt", torch.optim.AdamW(model.parameters(), lr=1e-3))
        if regions:
            with roofline.region("forward"):
                loss = F.cross_entropy(model(x).flatten(0, 1), x.flatten())
            with roofline.region("step"):
                loss.backward()
                opt.step()
                opt.zero_grad()
        else:
            loss = F.cross_entropy(model(x).flatten(0, 1), x.flatten())
            loss.backward()
            opt.step()
            opt.zero_grad()

    return step


@pytest.fixture(scope="module")
def profiles() -> dict[str, Any]:
    """Analytic on an H200's roofs (regions, tokens), analytic with the build inside, timed on the CPU (regions,
    a warm-up call)."""
    return {"analytic": roofline.profile(training_step(True), time=False, gpu="h200", tokens=32),
            "built": roofline.profile(training_step(False, build_inside=True), time=False, gpu="b200"),
            "timed": roofline.profile(training_step(True), warmup=1, tokens=32)}


@pytest.mark.parametrize("kind", ["analytic", "built", "timed"])
def test_a_profiles_summary_reads_back_from_its_json_to_the_same_json(profiles: dict[str, Any], kind: str) -> None:
    prof = profiles[kind]
    assert isinstance(prof.summary, ProfileSummary) and isinstance(prof.summary.prediction, StepPrediction)
    text = dumps(prof.document())  # what `save` writes
    stored = json.loads(text)["profile"]
    back = ProfileSummary.from_dict(stored)
    assert back.to_dict() == stored
    assert json.dumps(back.to_dict()) == json.dumps(stored)  # the keys in the same order
    assert back.to_dict() == json.loads(json.dumps(prof.summary.to_dict()))  # the record made and the one read
    assert back.missing == frozenset() and back.unknown == {}  # a summary of today has every key, knows each


def test_the_summary_holds_what_the_run_did(profiles: dict[str, Any]) -> None:
    analytic, timed = profiles["analytic"].summary, profiles["timed"].summary
    assert analytic.mode == "analytic" and analytic.wall_s is None and analytic.analytic_coverage is not None
    assert analytic.lower_bound is False  # every op here has a formula: coverage 100% of the time
    assert timed.mode == "timed" and timed.analytic_coverage is None and timed.lower_bound is None
    for s in (analytic, timed):
        assert sorted(s.regions) == ["forward", "step"] and all(isinstance(r, RegionSummary)
                                                                 for r in s.regions.values())
        assert s.regions["forward"].entered == 1 and isinstance(s.utilization, Utilization)
        assert s.utilization.tokens == 32  # tokens= was given: tokens/s and FLOPs per token
        assert set(s.phases) >= {"forward", "backward", "optimizer"}
        assert s.calls == sum(r.calls or 0 for r in s.regions.values())  # every call kept is in a region
    # timed: each region's wall is its one entry's; the step's wall is the regions' sum
    assert all(r.entry_wall_s is not None and r.wall_s == sum(r.entry_wall_s) for r in timed.regions.values())
    assert timed.wall_s == sum(r.wall_s or 0.0 for r in timed.regions.values())
    assert analytic.regions["step"].entry_wall_s is None and "entry_wall_s" in analytic.regions["step"]


def test_the_keys_keep_the_order_of_the_stored_profiles() -> None:
    """Each stored profile's keys are in the order a summary of today writes them (they lack the keys added
    since, and have the sometimes-keys of their run)."""
    order = [f.name for f in fields(ProfileSummary) if f.name not in ("unknown", "missing")]
    for path in _stored():
        keys = list(_summary_of(path))
        assert keys == sorted(keys, key=order.index), path


def _stored() -> list[Path]:
    found = [p for root in (DATA, ROOT / "docs" / "results") for p in sorted(root.rglob("*.json*"))
             if p.suffix in (".json", ".gz") and isinstance(_summary_of(p), dict)]
    assert any(p.parent == DATA for p in found)  # tests/data has a real H200 profile at least
    return found


def _summary_of(path: Path) -> Any:
    try:
        doc = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
    except (OSError, ValueError):
        return None
    return doc.get("profile") if isinstance(doc, dict) else None


def test_every_stored_profile_reads_back_to_the_same_json() -> None:
    """tests/data's and docs/results' profiles (written by older versions: no build_calls, no utilization, no
    prediction in some, regions without their FLOPs) read and write back unchanged, key order included."""
    for path in _stored():
        stored = _summary_of(path)
        back = ProfileSummary.from_dict(stored).to_dict()
        assert json.dumps(back) == json.dumps(stored), path


def test_an_older_summary_lacks_keys_and_keeps_lacking_them_until_set() -> None:
    old = {"name": "old", "mode": "timed", "kernel_time_s": 1e-3, "regions": {"step": {"entered": 2, "time_s": 1e-3}},
           "notes": ["a sentence"], "a_newer_key": {"x": 1}}
    s = ProfileSummary.from_dict(old)
    assert s.to_dict() == old and list(s.to_dict()) == list(old)  # the unknown key written back, last
    assert s.build_calls is None and "build_calls" in s.missing and "build_calls" not in s
    assert s.regions["step"].entry_wall_s is None and "entry_wall_s" not in s.regions["step"]
    assert s.unknown == {"a_newer_key": {"x": 1}} and s["a_newer_key"] == {"x": 1}
    assert replace(s, build_calls=3).to_dict()["build_calls"] == 3  # a key given a value is written
    assert ProfileSummary.from_dict({}).to_dict() == {}  # a document without a summary reads as an empty one


def test_the_summary_reads_as_the_dict_it_was(profiles: dict[str, Any]) -> None:
    """`prof.summary["kernel_time_s"]` (docs/api.md, scripts/) reads what the JSON holds there: a record as
    its dict, a tuple as a list; a key the summary does not write is a KeyError, `get` gives the default."""
    s = profiles["timed"].summary
    assert s["kernel_time_s"] == s.kernel_time_s and s["regions"]["forward"]["calls"] == s.regions["forward"].calls
    assert s["prediction"] == s.prediction.to_dict() and s["dataflow"] == [list(r) for r in s.dataflow]
    assert s.get("communication") is None and "communication" not in s and s.get("energy", {}) == {}
    with pytest.raises(KeyError):
        s["energy"]
    assert list(s["regions"]) == ["forward", "step"] and s["utilization"]["tokens"] == 32


def test_notes_carry_a_code_and_serialise_as_their_sentences(profiles: dict[str, Any]) -> None:
    built, timed = profiles["built"].summary, profiles["timed"].summary
    assert [code_of(n) for n in built.notes] == [MASKED_ATTENTION, BUILD_CALLS]
    assert code_of(timed.notes[0]) == INSTRUMENTED
    assert len(set(PROFILE_NOTES)) == len(PROFILE_NOTES) and REFUSED not in PROFILE_NOTES
    stored = json.loads(dumps(profiles["built"].document()))["profile"]["notes"]
    assert stored == [n.message for n in built.notes if isinstance(n, Note)]  # the sentences, as always


def test_the_command_says_the_targets_notes_once(capsys: pytest.CaptureFixture[str]) -> None:
    """`--gpu h200` where there is none: the target's "analytic only" note goes to stderr once; the header's notes
    leave it out by its code, and the document keeps it."""
    code, out, err = run(capsys, "profile", SCRIPT, "--gpu", "h200")
    assert code == 0, err
    assert err.count("analytic only") == 1 and "analytic only" not in out
    code, out, err = run(capsys, "profile", SCRIPT, "--gpu", "h200", "--json")
    assert code == 0 and any(n.startswith("analytic only") for n in json.loads(out)["profile"]["notes"])


def test_a_step_whose_gpu_sits_idle_most_of_its_wall_is_said_host_bound() -> None:
    # 40 ms of wall without the profiler, the GPU idle 30 of them (75% > HOST_BOUND_SHARE): host-bound, said with
    # the figures; idle 10 of 40 (25%): nothing said; without the plain run's figures, the profiled run's are used
    from roofline.capture.profile_summary import HOST_BOUND, HOST_BOUND_SHARE, host_bound_note
    from roofline.core.summary import ProfileSummary

    assert HOST_BOUND_SHARE == 0.5
    s = ProfileSummary.from_dict({"wall_s": 0.05, "gpu_idle_s": 0.045, "wall_uninstrumented_s": 0.04,
                                  "gpu_idle_uninstrumented_s": 0.03})
    note = host_bound_note(s)
    assert note is not None and note.code == HOST_BOUND
    assert "idle 75.0% of the step (30 of 40 ms without the profiler)" in note
    assert host_bound_note(ProfileSummary.from_dict({"wall_uninstrumented_s": 0.04,
                                                     "gpu_idle_uninstrumented_s": 0.01, "wall_s": 0.04})) is None
    profiled = host_bound_note(ProfileSummary.from_dict({"wall_s": 0.02, "gpu_idle_s": 0.015}))
    assert profiled is not None and "(15 of 20 ms)" in profiled
