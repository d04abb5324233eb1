"""Analytic builds (capture/build.py): a model built inside an analytic profile needs no data, its build's calls
are left out; the analytic coverage and the lower-bound header; masks built from constants read without data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import roofline
from roofline.capture.build import CONSTANT_NUMEL, MASK_NUMEL
from roofline.capture.masks import has_data
from roofline.capture.profile_summary import LOWER_BOUND_COVERAGE

ROOT = Path(__file__).resolve().parents[1]
B, IN, OUT = 4, 8, 16  # batch, widths: one Linear's matrix product is 2 x 4 x 8 x 16 = 1024 FLOPs


class TruncInit(torch.nn.Module):
    """A Linear whose weight torch's trunc_normal_ initialises: its rejection loop reads `mask.any()`."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(IN, OUT)
        torch.nn.init.trunc_normal_(self.fc.weight, std=0.02)
        self.cls = torch.nn.Parameter(torch.zeros(1, IN))  # a small constant parameter, initialised too
        torch.nn.init.trunc_normal_(self.cls, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x + self.cls)


class Scheduled(torch.nn.Module):
    """Widths and drop-path rates read with `.tolist()` and `.item()` during the build (timm's, torchvision's)."""

    def __init__(self) -> None:
        super().__init__()
        widths = [int(w) for w in torch.linspace(IN, OUT, 2).tolist()]  # [8, 16]
        self.rates = [r.item() for r in torch.linspace(0, 0.1, 3)]
        self.fc = torch.nn.Linear(widths[0], widths[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


@pytest.mark.parametrize("build", [TruncInit, Scheduled])
def test_a_model_built_inside_an_analytic_profile_counts_only_its_forward(build: Any) -> None:
    def program() -> None:
        model = build()
        model(torch.randn(B, IN))

    prof = roofline.profile(program, time=False, gpu="h100")
    s = prof.summary
    assert s["flops_matmul"] == 2 * B * IN * OUT  # the forward's one product: 1024
    assert s["build_calls"] > 0 and s["without_formula"] == []
    assert any("model's build" in n for n in s["notes"])
    assert not any(p.call.op in ("aten::normal_", "aten::uniform_") for p in prof.calls)  # initialisers left out
    if build is Scheduled:
        assert [int(w) for w in torch.linspace(IN, OUT, 2).tolist()] == [8, 16]  # what the build read for real


def test_a_build_inside_a_region_is_kept() -> None:
    with roofline.profile(time=False, gpu="h100") as prof:
        with roofline.region("build"):
            model = TruncInit()
        with roofline.region("forward"):
            model(torch.randn(B, IN))
    assert prof.summary["build_calls"] == 0
    assert any(p.call.region == "build" and p.call.op == "aten::normal_" for p in prof.calls)


def test_a_script_with_trunc_normal_profiles_with_no_time(tmp_path: Path) -> None:
    script = tmp_path / "trunc.py"
    script.write_text("import torch\n"
                      "net = torch.nn.Linear(8, 16)\n"
                      "torch.nn.init.trunc_normal_(net.weight, std=0.02)\n"
                      "net(torch.randn(4, 8))\n")
    out = tmp_path / "p.json"
    run = subprocess.run([sys.executable, "-m", "roofline", "profile", str(script), "--no-time", "--gpu", "h100",
                          "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "needs tensor values" not in run.stderr


def test_a_data_dependent_read_outside_the_build_still_fails() -> None:
    class Net(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    def program() -> None:
        net = Net()
        y = net(torch.randn(2048, 1024))  # 2**21 elements: more than a constant keeps (CONSTANT_NUMEL)
        if y.sum().item() > 0:
            pass

    assert 2048 * 1024 > CONSTANT_NUMEL
    with pytest.raises(roofline.RooflineError, match="needs tensor values"):
        roofline.profile(program, time=False, gpu="h100")


def test_module_to_dtype_on_fake_parameters() -> None:
    def program() -> None:
        net = torch.nn.Linear(IN, OUT).to(torch.bfloat16)
        net(torch.randn(B, IN, dtype=torch.bfloat16))

    prof = roofline.profile(program, time=False, gpu="h100")
    (mm,) = [p for p in prof.calls if p.cost.matmul_flops]
    assert mm.dtype == "bf16" and mm.cost.matmul_flops == 2 * B * IN * OUT


def test_a_module_moved_to_another_device_meets_its_inputs_there() -> None:
    """A model built on the CPU and moved (`.to(device)`, then a cast, then both at once) before its optimizer is
    made, as examples/train_step.py does on a GPU: under fake mode its parameters and buffers follow. torch alone
    failed ("Couldn't swap Embedding.weight" on 2.13, "found two different devices cpu, cuda:0" on 2.11, the
    H200). "lazy" stands in for the GPU: the one other device a CPU build of torch makes fake tensors on."""
    def program() -> None:
        net = torch.nn.Sequential(torch.nn.Embedding(10, IN), torch.nn.Linear(IN, OUT), torch.nn.BatchNorm1d(3))
        net.to("lazy")
        assert {t.device.type for t in (*net.parameters(), *net.buffers())} == {"lazy"}
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        net(torch.randint(0, 10, (B, 3), device="lazy")).sum().backward()
        opt.step()
        net.to("cpu", torch.bfloat16)
        net(torch.randint(0, 10, (B, 3)))

    prof = roofline.profile(program, time=False, gpu="h100")
    mms = [(p.dtype, p.cost.matmul_flops) for p in prof.calls if p.cost.matmul_flops]
    # forward (fp32), the input and weight gradients, forward again (bf16): 2 x (B x 3) x IN x OUT each
    assert mms == [("fp32", 2 * B * 3 * IN * OUT)] * 3 + [("bf16", 2 * B * 3 * IN * OUT)]


def test_analytic_coverage_and_the_lower_bound() -> None:
    x, w = torch.randn(64, 64), torch.randn(64, 64)
    dense = roofline.profile(lambda: x @ w, time=False, gpu="h100")
    assert dense.summary["analytic_coverage"] == {"time": 1.0, "calls": 1.0, "without_formula_s": 0.0}
    assert dense.summary["lower_bound"] is False

    prof = roofline.profile(lambda: (torch.linalg.qr(x), x @ w), time=False, gpu="h100")
    s = prof.summary
    assert [m["op"] for m in s["without_formula"]] == ["aten::linalg_qr"]
    # qr reads 64 x 64 fp32 (16 KiB) and writes Q (16 KiB) and R (16 KiB): 48 KiB at the DRAM bandwidth
    dram = prof.target.ceilings.dram_bytes_per_s
    cov = s["analytic_coverage"]
    assert cov["without_formula_s"] == pytest.approx(3 * 64 * 64 * 4 / dram)
    assert cov["calls"] == 0.5  # one call of two has a formula
    assert cov["time"] == pytest.approx(s["roofline_time_s"] / (s["roofline_time_s"] + cov["without_formula_s"]))
    assert s["lower_bound"] is (cov["time"] < LOWER_BOUND_COVERAGE)

    from rich.console import Console

    from roofline.analysis.profile_view import profile_view
    from roofline.report.profile import header

    console = Console(width=80, record=True)
    console.print(header(profile_view(prof.document()), 80))
    text = console.export_text()
    assert "of the time" in text and "of calls" in text
    assert ("predicted step at least" in text) is s["lower_bound"]


def _transformers() -> Any:
    return pytest.importorskip("transformers")


@pytest.mark.parametrize(("window", "seq", "pairs"), [
    (None, 16, 16 * 17 // 2),  # causal over 16: 136 scores per head
    (4, 16, 1 + 2 + 3 + 13 * 4),  # a window of 4 over 16: rows see 1, 2, 3, then 13 rows 4 keys: 58
    (4, 1100, 1 + 2 + 3 + 1097 * 4)])  # 1100 x 1100 scores: past CONSTANT_NUMEL, a boolean mask (MASK_NUMEL)
def test_a_mask_built_from_the_config_counts_the_same_whatever_use_cache(window: int | None, seq: int,
                                                                         pairs: int) -> None:
    """Built and run inside the analytic profile: 1 x seq tokens, 4 heads of 8, one layer; attention counts
    4 x 8 FLOPs per kept score per head (QK^T and PV), the mask Hugging Face builds read as a constant."""
    transformers = _transformers()
    name = "Mistral" if window else "Llama"
    extra = {"sliding_window": window} if window else {}
    cfg = getattr(transformers, f"{name}Config")(vocab_size=64, hidden_size=32, intermediate_size=48,
                                                 num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                                                 max_position_embeddings=2048, **extra)
    cfg._attn_implementation = "sdpa"
    counts = []
    for use_cache in (True, False):
        def program(use_cache: bool = use_cache) -> None:
            model = getattr(transformers, f"{name}ForCausalLM")(cfg).eval()
            with torch.no_grad():
                model(torch.randint(0, 64, (1, seq)), use_cache=use_cache)

        prof = roofline.profile(program, time=False, gpu="h100")
        (attn,) = [p for p in prof.calls if p.call.op == "aten::scaled_dot_product_attention"]
        counts.append(attn.cost.flops)
    if seq * seq > CONSTANT_NUMEL:
        assert seq * seq <= MASK_NUMEL
    expected = 4 * 8 * 4 * pairs  # is_causal (no window) keeps the triangle with its diagonal, S(S+1)/2
    assert counts == [expected, expected]


def test_a_fake_padding_mask_is_read_as_no_padding_and_said() -> None:
    """A 2-D attention mask computed from fake tensors (here from the embedding's output; a tokenizer's, faked) has
    no data:
    the mask transformers builds from it is read as if no token were padding (causal over 1100 tokens, with the
    window of 4: the counts of the test above), and the pattern's source says so. Before 2026-12-02 such a mask
    was unknown and every score counted (1100 x 1100)."""
    transformers = _transformers()
    seq = 1100
    cfg = transformers.MistralConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                                     sliding_window=4)
    cfg._attn_implementation = "sdpa"

    def program() -> None:
        model = transformers.MistralForCausalLM(cfg).eval()
        ids = torch.randint(0, 64, (1, seq))  # a small constant: it keeps its values
        with torch.no_grad():
            mask = (model.model.embed_tokens(ids)[..., 0] > float("-inf")).long()  # fake: no values
            assert not has_data(mask)
            model(ids, attention_mask=mask, use_cache=False)

    prof = roofline.profile(program, time=False, gpu="h100")
    (attn,) = [p for p in prof.calls if p.call.op == "aten::scaled_dot_product_attention"]
    assert attn.cost.flops == 4 * 8 * 4 * (1 + 2 + 3 + (seq - 3) * 4)
    assert "assuming no padding" in (attn.cost.mask or "") + attn.cost.note


class _ClassBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(IN, IN)

    def forward(self, x: torch.Tensor, cls: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.cat([cls, x], 1))


class _ClassAttention(torch.nn.Module):
    """CaiT's pattern: a parameter (expanded) passed into a submodule. torch's ModuleTracker (and FlopCounterMode
    with it) fails on it under no_grad ("Expected gradient function to be set") and inference_mode."""

    def __init__(self) -> None:
        super().__init__()
        self.cls = torch.nn.Parameter(torch.zeros(1, 1, IN))
        self.block = _ClassBlock()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x, self.cls.expand(x.shape[0], -1, -1))


@pytest.mark.parametrize("grad_off", [torch.no_grad, torch.inference_mode])
@pytest.mark.parametrize("timed", [True, False])
def test_a_parameter_passed_into_a_submodule_under_no_grad_is_tracked(grad_off: Any, timed: bool) -> None:
    net = _ClassAttention()
    x = torch.randn(2, 4, IN)

    def program() -> None:
        with grad_off():
            net(x)

    prof = roofline.profile(program, time=timed, warmup=0, **({} if timed else {"gpu": "h100"}))
    (mm,) = [p for p in prof.calls if p.cost.matmul_flops]
    assert mm.call.module == "block.fc" and mm.cost.matmul_flops == 2 * 2 * 5 * IN * IN  # 2 x 10 tokens x 8 x 8


def test_the_zoo_script_on_two_decoders(tmp_path: Path) -> None:
    """scripts/zoo_validation.py on a GQA decoder and a MoE one (tiny configs, 64 tokens): within 0.5% of the
    closed form, no op without a formula, the JSON and the table written."""
    _transformers()
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import zoo_validation
    finally:
        sys.path.pop(0)
    assert zoo_validation.main(["--family", "hf", "--only", "llama,mixtral", "--out", str(tmp_path)]) == 0
    import json

    doc = json.loads((tmp_path / "zoo.json").read_text())
    names = [m["name"] for m in doc["models"]]
    assert names == ["llama (GQA)", "mixtral (MoE top-2 of 4)"]
    for m in doc["models"]:
        assert m["status"] in ("exact", "within") and abs(m["ratio"] - 1) <= zoo_validation.TOLERANCE
        assert m["without_formula"] == [] and m["build_calls"] > 0
    assert doc["counts"]["within_0.5%"] == 2 and "| llama (GQA) |" in (tmp_path / "zoo.md").read_text()
