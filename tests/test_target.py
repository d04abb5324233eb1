"""What a command runs against (roofline.measuring.target): the CPU with its measured roof, a named GPU spec
analytically when that GPU is not here, and clear errors for devices that are not there. conftest forces
the CPU (ROOFLINE_NO_GPU=1) and seeds a CPU calibration, so NVML sees no GPU in these tests."""

from __future__ import annotations

import pytest
from helpers import SEED_CPU

from roofline.core.errors import RooflineError, UsageError
from roofline.measuring.target import resolve_target


def test_no_gpu_means_the_cpu_and_its_measured_roof() -> None:
    t = resolve_target()
    assert t.is_cpu and t.time_device == "cpu" and t.spec is None
    assert t.ceilings.compute["cpu_fp32"] == SEED_CPU["cpu_fp32"]  # the seeded calibration, not a datasheet
    assert resolve_target(time=False).time_device is None


def test_a_gpu_spec_that_is_not_here_is_analytic_only_and_says_so() -> None:
    t = resolve_target(gpu="h100")
    assert t.time_device is None and t.spec is not None and t.spec.id == "h100-sxm"
    assert t.ceilings.source == "datasheet" and t.ceilings.kind == "gpu"
    assert any("analytic only" in m for m in t.messages)
    assert resolve_target(gpu="h100", time=False).messages == []  # nothing was asked to be timed


def test_measured_roof_without_a_calibration_is_a_clear_error() -> None:
    with pytest.raises(RooflineError, match=r"no calibration.*roofline calibrate"):
        resolve_target(gpu="h200", roof="measured")


@pytest.mark.parametrize(("device", "error", "match"), [  # a GPU the machine has not: bad input, exit 2
    # named as given, in Python's words (`--device cuda:3` said `--device cuda`, and so did the Python API)
    ("cuda", UsageError, "^device cuda: no NVIDIA GPU"), ("cuda:3", UsageError, "^device cuda:3: no NVIDIA GPU"),
    ("tpu", UsageError, "unknown device 'tpu'"), ("cuda:x", UsageError, "unknown device")])
def test_devices_that_are_not_there(device: str, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        resolve_target(device=device)


def test_the_command_line_names_the_device_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import run

    code, _, err = run(capsys, "analyze", "gemm", "--m", "64", "--device", "cuda:3")
    assert code == 2 and err == "error: --device cuda:3: no NVIDIA GPU found on this machine (NVML sees none)\n"


def test_unknown_gpu_spec() -> None:
    with pytest.raises(UsageError):
        resolve_target(gpu="no-such-gpu")
