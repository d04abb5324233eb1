"""An analytic run (time=False) leaves the program as it found it, computes nothing real, survives many runs in one
process, and takes the path the real run takes (capture/fake.py's NoData, capture/isolate.py, capture/stand_ins.py).

Each test reproduces a finding of issue 48's zoo re-run; its docstring says what it guards against."""

from __future__ import annotations

import copy
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor, is_fake

import roofline
import roofline.capture.formulas_models as fm
from roofline.capture import build, fake_mode
from roofline.capture.isolate import Snapshot
from roofline.capture.stand_ins import routed_indices, slot_counts
from roofline.core.errors import RooflineError

# The folder holding the roofline package this process imported (the checkout, or an overlay of it): the
# subprocesses below import the same one.
PACKAGE_PARENT = str(Path(roofline.__file__).resolve().parents[1])


def _python(code: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _fakes_in(obj: Any, seen: set[int] | None = None) -> int:
    """Fake tensors reachable from `obj` through containers and attributes."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (str, int, float, type(None))):
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return int(is_fake(obj))
    items: list[Any] = []
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple, set)):
        items = list(obj)
    elif hasattr(obj, "__dict__"):
        items = list(vars(obj).values())
    return sum(_fakes_in(x, seen) for x in items)


class Stateful(torch.nn.Module):
    """A step that keeps state: a history list, a step counter buffer written in place, an attribute it sets."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.register_buffer("steps", torch.zeros(3))
        self.history: list[torch.Tensor] = []
        self.cache: dict[str, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        self.history.append(y)
        self.steps.add_(1)
        self.cache["last"] = y
        self.last = y
        return y


# -- it leaves the program as it found it ----------------------------------------------------------------------

def test_a_stateful_step_is_left_as_it_was() -> None:
    """Guards against a FakeTensor left in the history and the real buffer incremented (FakeTensorMode alone runs
    add_ on a real buffer: its Python-number path computes an op whose inputs are all real)."""
    model, x = Stateful(), torch.randn(2, 8)
    weight, steps, version = model.fc.weight, model.steps, model.steps._version
    prof = roofline.profile(lambda: model(x), time=False)
    assert prof.records
    assert model.history == [] and model.cache == {} and not hasattr(model, "last")
    assert model.steps is steps and steps.tolist() == [0.0, 0.0, 0.0] and steps._version == version
    assert model.fc.weight is weight and weight.grad is None
    assert _fakes_in(model) == 0
    model(x)  # the real step after it: its own state, real
    assert len(model.history) == 1 and not is_fake(model.history[0]) and steps.tolist() == [1.0, 1.0, 1.0]


def test_a_training_step_leaves_the_real_model_and_optimizer_as_they_were() -> None:
    """The backward sets .grad on real parameters and the optimizer fills its state: both put back; the weights'
    values untouched (no version bump)."""
    torch.manual_seed(0)
    model, x = torch.nn.Linear(8, 4), torch.randn(16, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    versions = [p._version for p in model.parameters()]

    def step() -> None:
        model(x).square().mean().backward()
        opt.step()
        opt.zero_grad()

    roofline.profile(step, time=False)
    assert all(p.grad is None for p in model.parameters()) and len(opt.state) == 0
    assert [p._version for p in model.parameters()] == versions
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))
    assert _fakes_in(opt) == 0 and _fakes_in(model) == 0


def test_the_with_form_puts_back_what_its_variables_hold() -> None:
    """`with roofline.profile(...)`: the block's variables reach the state (the history list); what it appends is
    taken out again; names the block binds keep their (fake) results."""
    model, x = Stateful(), torch.randn(2, 8)
    seen: list[torch.Tensor] = []
    with roofline.profile(time=False):
        out = model(x)
        seen.append(out)
    assert seen == [] and model.history == [] and is_fake(out)


def test_a_decode_step_leaves_its_dynamic_cache_as_it_was() -> None:
    """Guards against a cache left holding fake keys and values one token longer, on which the real step profiled
    next runs partly fake (issue 48: 32 of ~340 ops recorded)."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    cache = transformers.DynamicCache(config=cfg)
    with torch.no_grad():
        logits = model(torch.randint(0, 64, (1, 8)), past_key_values=cache, use_cache=True).logits
    token = logits[:, -1:].argmax(-1)
    keys = [layer.keys for layer in cache.layers]

    def step() -> Any:
        with torch.no_grad():
            return model(token, past_key_values=cache, use_cache=True)

    roofline.profile(step, time=False)
    assert cache.get_seq_length() == 8 and [layer.keys for layer in cache.layers] == keys
    assert _fakes_in(cache) == 0
    real = roofline.profile(step, warmup=0, device="cpu")
    assert cache.get_seq_length() == 9 and _fakes_in(cache) == 0  # the real step appended a real token
    assert len(real.calls) == len(roofline.profile(step, time=False).calls)  # the same ops, fake or real


def test_the_random_generators_are_left_as_they_were() -> None:
    """A small random draw inside the run is a constant, drawn for real: the generators are put back."""
    torch.manual_seed(1)
    random.seed(1)
    expected_torch, expected_python = torch.rand(3), random.random()
    torch.manual_seed(1)
    random.seed(1)
    roofline.profile(lambda: (torch.rand(4) * 2, random.random()), time=False)
    assert torch.equal(torch.rand(3), expected_torch) and random.random() == expected_python


_COUNTER = 0  # a global the step below binds


def test_the_snapshot_puts_back_lists_dicts_cells_globals_and_slots() -> None:
    class Slotted:
        __slots__ = ("value",)
        value: int

    holder = Slotted()
    holder.value = 1
    items, table, cell = [1, 2], {"a": 1}, "before"

    def step() -> None:
        global _COUNTER
        nonlocal cell
        items.append(3)
        table["b"] = 2
        holder.value = 2
        cell = "after"
        _COUNTER += 1

    snapshot = Snapshot([step, holder])
    step()
    assert snapshot.restore() == 5  # the list, the dict, the slot, the closure's cell, the global
    assert items == [1, 2] and table == {"a": 1} and holder.value == 1 and cell == "before" and _COUNTER == 0


def test_a_step_that_reaches_too_much_is_refused_in_one_line() -> None:
    objects = [[i] for i in range(50)]
    with pytest.raises(RooflineError, match=r"reaches more than 10 objects") as exc:
        Snapshot([objects], limit=10)
    assert "\n" not in str(exc.value)


# -- it computes nothing real --------------------------------------------------------------------------------

def test_a_product_of_two_factory_tensors_is_not_computed() -> None:
    """Guards against two factory tensors of 2**20 elements made constants and their product (2**30 elements,
    4 GiB) computed for real (issue 48: a 4.9 GB peak). A draw past build.RANDOM_NUMEL stays fake and a
    contraction never runs on constants: the process's peak RSS grows by far less than the product's 4 GiB."""
    result = _python("""
        import resource, torch, roofline
        roofline.profile(lambda: torch.rand(64, 32) @ torch.rand(32, 64), time=False)  # imports and caches
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        def step():
            a, b = torch.rand(32768, 32), torch.rand(32, 32768)
            return (a @ b, torch.arange(1024.0)[:, None] @ torch.arange(1024.0)[None, :])
        prof = roofline.profile(step, time=False)
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
        print(grown, sum(r.flops * r.count for r in prof.records if r.op == "aten::mm"))
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    grown, flops = (float(v) for v in result.stdout.split())
    assert flops == 2 * 32768 * 32 * 32768 + 2 * 1024 * 1 * 1024  # both products counted
    assert grown < 512 * 2**20  # the product alone is 4 GiB of fp32


def test_ops_on_real_tensors_run_fake() -> None:
    """Guards against `x * 2` on a real tensor made before the profile running for real (FakeTensorMode's
    Python-number path): a 512 MiB tensor's product would allocate 512 MiB more."""
    result = _python("""
        import resource, torch, roofline
        x = torch.zeros(1 << 27)  # 512 MiB, real
        roofline.profile(lambda: x[:4] * 2, time=False)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        roofline.profile(lambda: (x * 2 + 1).sum(), time=False)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert float(result.stdout) < 256 * 2**20


def test_constants_are_computed_only_when_bounded() -> None:
    """A product of two constants is fake; elementwise work on constants keeps values; a large random draw is no
    constant, a small one is. (Checked inside the step: what it stores is put back after the run.)"""

    def step() -> None:
        a = torch.arange(6.0).reshape(2, 3)
        assert not build.is_constant(a @ a.t()) and build.is_constant((a + 1).sum())
        assert build.is_constant(torch.rand(4)) and not build.is_constant(torch.rand(build.RANDOM_NUMEL + 1))
        assert int(torch.tensor([3, 4]).sum().item()) == 7

    assert roofline.profile(step, time=False).records


def test_a_real_index_or_flag_is_read_as_with_data() -> None:
    """A real integer or boolean tensor made before the run enters it as a constant: its values steer the program
    (a real flag's `.item()` is read, not refused as "the program needs tensor values")."""
    flag, index = torch.tensor(True), torch.tensor([2, 0])
    table = torch.nn.Embedding(4, 8)
    prof = roofline.profile(lambda: table(index) * 2 if flag.item() else table(index), time=False)
    assert [r.op for r in prof.records][-1] == "aten::mul.Tensor"


# -- it survives any number of runs ---------------------------------------------------------------------------

def test_fifty_profiles_with_deep_copies_in_one_process() -> None:
    """Guards against torch's deep copy of a fake tensor: it copies the fake mode with the tensor's `__dict__`, and
    the copied converter's weak storage references are freed twice ("corrupted double-linked list", SIGSEGV
    within five profiles); it copies a constant's real storage onto a fake (a meta-storage error for
    `copy.deepcopy(torch.randn(1000))`). Run in a subprocess: a crash fails this test instead of killing pytest."""
    result = _python("""
        import copy, gc, torch, roofline
        from roofline.capture import fake_mode
        with fake_mode():
            built = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.LayerNorm(16))
        outer = torch.nn.Linear(16, 16)
        for i in range(50):
            def step():
                inner = torch.nn.Linear(16, 16)
                layers = [copy.deepcopy(m) for m in (inner, outer, built) for _ in range(2)]
                x = copy.deepcopy(torch.randn(4, 16))
                y = copy.deepcopy(torch.randn(1000))
                for m in layers:
                    x = m(x)
                return x, y * 2
            prof = roofline.profile(step, time=False)
            assert prof.records
            gc.collect()
        twin = copy.deepcopy(built)  # outside any profile: the fake mode shared, not copied
        assert twin[0].weight.fake_mode is built[0].weight.fake_mode
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", (result.returncode, result.stderr[-3000:])


def test_a_deep_copy_inside_a_profile_is_recorded_as_a_copy() -> None:
    prof = roofline.profile(lambda: copy.deepcopy(torch.randn(1000)) * 2, time=False)
    assert [r.op for r in prof.records] == ["aten::randn", "aten::clone", "aten::mul.Tensor"]


# -- it takes the real run's path -----------------------------------------------------------------------------

@pytest.mark.parametrize("shares", ["balanced", [1, 1, 0, 0]])
def test_eager_experts_take_the_assumed_routing_of_the_grouped_ones(shares: Any) -> None:
    """Mixtral, top-2 of 4 experts, 16 tokens. Eager experts need `nonzero` of the routing mask, which has no data:
    a router's topk without data takes the assumed routing (capture/stand_ins.py), so the experts'
    matrix products are 2 x (3 x 32 x 48) x 2 x 16 = 294912 FLOPs either way, and their bytes match the grouped
    path's assumption (idle experts read no weights)."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.MixtralConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                     num_key_value_heads=2, max_position_embeddings=64, intermediate_size=48,
                                     num_local_experts=4, num_experts_per_tok=2)
    torch.manual_seed(0)
    model = transformers.MixtralForCausalLM(cfg).eval().to(torch.bfloat16)
    x = torch.randint(0, 64, (2, 8))
    flops, weights = {}, {}
    for impl in ("grouped_mm", "eager"):
        model.set_experts_implementation(impl)
        with torch.no_grad(), fm.routing(shares):
            prof = roofline.profile(lambda: model(x), time=False, gpu="h100")
        experts = [r for r in prof.records if r.module.startswith("model.layers.0.mlp.experts")
                   and r.flops_source in ("rule:grouped gemm", "catalog:gemm")]
        flops[impl] = sum(r.flops * r.count for r in experts)
        weights[impl] = sum(r.bytes_by_kind.get("weights", 0) * r.count for r in experts)
        assert "routing" in " ".join(prof.summary.notes)  # the router's choice without data, said
    assert flops == {"grouped_mm": 294912, "eager": 294912}
    idle = 0 if shares == "balanced" else 2
    assert weights["grouped_mm"] == weights["eager"] == 3 * 32 * 48 * 2 * (4 - idle)  # bf16 experts read


def test_routed_indices_follow_the_shares() -> None:
    """8 tokens, top-2 of 4: balanced gives each expert 4 slots, never twice to one token; shares 2:1:1:0 give
    8, 4, 4, 0."""
    balanced = routed_indices((8, 2), -1, 4)
    assert balanced.shape == (8, 2) and torch.bincount(balanced.flatten(), minlength=4).tolist() == [4, 4, 4, 4]
    assert all(len(set(row)) == 2 for row in balanced.tolist())
    assert slot_counts([2, 1, 1, 0], 16) == [8, 4, 4, 0]


def test_a_padded_transformer_encoder_counts_each_sequence_at_its_own_length() -> None:
    """nn.TransformerEncoder in eval with a padding mask runs on nested tensors: each sequence its own length.
    Guards against counting the padded batch and every score (2.1x the timed count here: lengths 32, 16, 8, 8 of
    32): the fast path off (the analytic run's torch function modes), or a nested tensor, which cannot be fake."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
    encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    lengths = torch.tensor([32, 16, 8, 8])
    x = torch.randn(4, 32, 64)
    padding = torch.arange(32)[None, :] >= lengths[:, None]

    def step() -> Any:
        with torch.inference_mode():
            return encoder(x, src_key_padding_mask=padding)

    def built_inside() -> Any:  # the mask built inside the run, from constants
        with torch.inference_mode():
            return encoder(x, src_key_padding_mask=torch.arange(32)[None, :] >= torch.tensor([32, 16, 8, 8])[:, None])

    # torch warns once per process that nested tensors are a prototype: warned every time here, so the once is
    # left to tests/test_capture_models.py, which expects it
    def without_values() -> Any:  # a mask without values (uninitialised): read as no padding
        with torch.inference_mode():
            return encoder(x, src_key_padding_mask=torch.empty(4, 32, dtype=torch.bool))

    def unpadded() -> Any:
        with torch.inference_mode():
            return encoder(x, src_key_padding_mask=torch.zeros(4, 32, dtype=torch.bool))

    always = torch._C._get_warnAlways()
    torch._C._set_warnAlways(True)
    try:
        _same_count_as_timed(step, built_inside)
        layers = [[r.flops * r.count for r in prof.records if r.op == "aten::_transformer_encoder_layer_fwd"]
                  for prof in (roofline.profile(without_values, time=False),
                               roofline.profile(unpadded, warmup=0, device="cpu"))]
        assert layers[0] == layers[1] and len(layers[0]) == 2
    finally:
        torch._C._set_warnAlways(always)


def _same_count_as_timed(*programs: Any) -> None:
    def total(prof: Any) -> float:
        return sum(r.flops * r.count for r in prof.records)

    for program in programs:
        timed = roofline.profile(program, warmup=0, device="cpu")
        assert {r.op for r in timed.records} >= {"aten::_nested_tensor_from_mask",
                                                 "aten::_transformer_encoder_layer_fwd"}
        analytic = roofline.profile(program, time=False)
        assert total(analytic) == total(timed)
        layers = [r for r in analytic.records if r.op == "aten::_transformer_encoder_layer_fwd"]
        assert len(layers) == 2 and all("4 sequences of 32, 16, 8, 8 tokens" in r.model_note for r in layers)


def test_multi_head_attention_takes_its_fast_path_without_data_as_with_it() -> None:
    """nn.MultiheadAttention in eval under inference_mode runs one fused op; the analytic run's own torch function
    modes turned the fast path off (has_torch_function), so it recorded the slow path's ops instead."""
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
    x = torch.randn(2, 8, 32)

    def step() -> Any:
        with torch.inference_mode():
            return mha(x, x, x, need_weights=False)

    ops = [sorted({r.op for r in roofline.profile(step, **kw).records})
           for kw in ({"warmup": 0, "device": "cpu"}, {"time": False})]
    assert ops[0] == ops[1] and "aten::_native_multi_head_attention" in ops[0]


def test_the_recipe_builds_what_needs_values_without_a_profile() -> None:
    """`with fake_mode(): model = build()` (docs/profile.md): drop-path rates read with `.tolist()`, and
    trunc_normal_'s rejection loop, as timm's and torchvision's builds do (without the build's constants and
    stand-ins: "DataDependentOutputException", issue 48's 33 of 80 torchvision classification builders)."""

    class Built(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rates = torch.linspace(0, 0.1, 4).tolist()
            self.fc = torch.nn.Linear(8, 8)
            torch.nn.init.trunc_normal_(self.fc.weight, std=0.02)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.gelu(self.fc(x))

    with fake_mode():
        model = Built()
        x = torch.randn(2, 8)
    assert isinstance(model.fc.weight, FakeTensor) and model.rates[-1] == pytest.approx(0.1)
    assert len(roofline.profile(lambda: model(x), time=False).records) == 2
