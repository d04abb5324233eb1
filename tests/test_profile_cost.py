"""The cached formula lookup (capture/cost.py) gives the records an uncached run gives: a cache keyed by what a
formula reads cannot change a profile (issue 28's cost of profiling). The models are built here and small;
the expected records are the uncached run's, the reference the cache must reproduce."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import roofline  # noqa: E402
from roofline.capture import cost as cost_mod  # noqa: E402
from roofline.capture import records as records_mod  # noqa: E402


class Net(nn.Module):
    """Two blocks of one shape (their calls share signatures), a conv, a norm and a GELU."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))
                                     for _ in range(2)])

    def forward(self, x: Any) -> Any:
        h = self.conv(x).flatten(2).transpose(1, 2)  # (B, 16, 8)
        for b in self.blocks:
            h = h + b(h)
        return h.float().pow(2).mean()


def _step() -> Any:
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(2, 3, 4, 4)

    def step() -> None:
        model(x).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def _profile(monkeypatch: pytest.MonkeyPatch, cache: bool) -> Any:
    cost_mod._CACHE.clear()
    monkeypatch.setattr(records_mod, "cost_of", functools.partial(cost_mod.cost_of, cache=cache))
    prof = roofline.profile(_step(), warmup=0, time=False, gpu="h100-sxm")
    monkeypatch.undo()
    return prof


def test_cached_lookup_gives_the_uncached_records(monkeypatch: pytest.MonkeyPatch) -> None:
    uncached = _profile(monkeypatch, cache=False)
    assert not cost_mod._CACHE  # the uncached run stored nothing
    cached = _profile(monkeypatch, cache=True)
    # the two blocks' calls of one shape share entries: fewer entries than calls with a signature
    keyed = [p.call for p in cached.calls if cost_mod.signature(p.call) is not None]
    assert 0 < len(cost_mod._CACHE) < len(keyed)
    assert cached.records == uncached.records
    for key in ("flops", "flops_matmul", "bytes", "min_bytes", "model_flops", "calls_without_formula"):
        assert cached.summary[key] == uncached.summary[key], key
    assert [p.cost for p in cached.calls] == [p.cost for p in uncached.calls]


def test_every_cached_cost_equals_a_fresh_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    prof = _profile(monkeypatch, cache=True)
    for p in prof.calls:  # each call's cost, found again without the cache
        assert cost_mod.cost_of(p.call, cache=False) == p.cost, p.call.op


def test_signature_tells_apart_what_a_formula_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    prof = _profile(monkeypatch, cache=True)
    call = next(p.call for p in prof.calls if p.call.op == "aten::addmm")
    key = cost_mod.signature(call)
    assert key is not None
    bigger = replace(call.args["mat1"], shape=(64, 8))
    other = replace(call, args={**call.args, "mat1": bigger})
    assert cost_mod.signature(other) != key  # another shape, another entry
    flag = replace(call, args={**call.args, "beta": True})
    one = replace(call, args={**call.args, "beta": 1})
    assert cost_mod.signature(flag) != cost_mod.signature(one)  # True and 1 are not one argument
    valued = replace(call, values={"mask": "causal"})
    assert cost_mod.signature(valued) is None  # a count read from tensor values is never cached


def test_the_collector_is_frozen_during_a_profile_only() -> None:
    import gc

    seen: list[int] = []
    model = nn.Linear(4, 4)
    x = torch.randn(2, 4)

    def step() -> None:
        seen.append(gc.get_freeze_count())
        model(x)

    assert gc.get_freeze_count() == 0
    roofline.profile(step, warmup=0, device="cpu")
    assert seen[-1] > 0  # the objects alive before the profile were out of the collector's reach inside it
    assert gc.get_freeze_count() == 0  # and back after it
    with pytest.raises(ZeroDivisionError), roofline.profile(device="cpu"):
        model(x)
        raise ZeroDivisionError("the program's own error")
    assert gc.get_freeze_count() == 0  # a block that raised gives them back too
    gc.freeze()  # the program froze its own: the profile leaves them as they are
    try:
        roofline.profile(step, warmup=0, device="cpu")
        assert gc.get_freeze_count() > 0  # still frozen: the profile did not unfreeze what it did not freeze
    finally:
        gc.unfreeze()
