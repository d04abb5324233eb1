"""`make models` keeps the user's torch and gets a torchvision that loads beside it (issue 30). Read from
`make -n` (what make would run), not run: the install needs a network and minutes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_models_pins_torch_uses_the_cpu_index_for_a_cpu_torch_and_checks_the_import() -> None:
    out = subprocess.run(["make", "-n", "models", "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    install = next(line for line in out.splitlines() if "pip install -q -e '.[models]'" in line)
    assert "-c /nonexistent-venv/torch-constraint.txt" in install  # torch pinned to the version installed
    # a +cpu torch adds PyTorch's CPU index (PyPI's Linux torchvision is a CUDA build: its extension does not
    # load beside a CPU torch, seen on this project's CPU machine with torchvision 0.28.0 and torch 2.13.0+cpu)
    assert "grep -q '+cpu' /nonexistent-venv/torch-constraint.txt" in out
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in out
    assert 'import torchvision.ops, transformers, timm' in out  # and the result is checked, one line if not


# A stand-in for the venv's python: the torch it reports, pip's effect on a list of installed packages (`state`),
# torchvision's import failing as PyPI's CUDA build does beside a CPU torch; the index check runs for real.
FAKE_PYTHON = """#!/bin/sh
echo "$*" >> "{log}"
case "$*" in
  *"import torch;"*) echo "torch==2.13.0+cpu" ;;
  *sysconfig*) echo "{site}" ;;
  *"pip freeze"*) cat "{state}" ;;
  *"pip uninstall"*) for p in "$@"; do grep -v "^$p==" "{state}" > "{state}.new"; mv "{state}.new" "{state}"; done ;;
  *"pip install"*) echo "torchvision==0.28.0" >> "{state}" ;;
  *"import torchvision"*) echo "RuntimeError: operator torchvision::nms does not exist" >&2; exit 1 ;;
  *) exec "{python}" "$@" ;;
esac
"""


def _fake_venv(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A venv that `make models` finds set up (its .ready newer than pyproject.toml), whose python is FAKE_PYTHON;
    returns it, the log of its calls and its package list (one installed package)."""
    import os
    import sys
    import time

    venv, log, state = tmp_path / "venv", tmp_path / "calls.log", tmp_path / "installed.txt"
    (venv / "bin").mkdir(parents=True)
    state.write_text("numpy==2.0.0\n")
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.format(log=log, site=tmp_path / "site", state=state, python=sys.executable))
    python.chmod(0o755)
    (venv / ".ready").touch()
    later = time.time() + 3600
    os.utime(venv / ".ready", (later, later))
    return venv, log, state


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_models_fails_fast_and_installs_nothing_when_the_cpu_index_is_out_of_reach(tmp_path: Path) -> None:
    """Issue 52: with PyTorch's CPU index out of reach, pip retried it in silence (63 s here, 169 s where
    connections hung), then installed PyPI's CUDA torchvision, which breaks transformers. Now the index is tried
    first (INDEX_TIMEOUT_S) and nothing is installed: one line says what to do. Port 9 of this host: nothing
    listens there, so the connection is refused at once (no network needed)."""
    venv, log, state = _fake_venv(tmp_path)
    p = subprocess.run(["make", "models", f"VENV={venv}", "CPU_INDEX=http://127.0.0.1:9/whl/cpu"], cwd=ROOT,
                       capture_output=True, text=True, check=False)
    assert p.returncode != 0
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("make models:")]
    assert len(said) == 1 and "is out of reach" in said[0] and "nothing was installed" in said[0], p.stderr
    assert "CPU_INDEX=URL" in said[0] and "torch==2.13.0+cpu" in said[0]
    assert "pip install" not in log.read_text()  # nothing was tried
    assert state.read_text() == "numpy==2.0.0\n"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_models_takes_back_what_it_installed_when_torchvision_does_not_load(tmp_path: Path) -> None:
    """The index answers (a local server), pip installs a torchvision that does not load beside the CPU torch:
    the venv's packages are put back as they were (it was left with the CUDA torchvision, breaking transformers)."""
    import http.server
    import threading

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the http.server protocol's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html></html>")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        venv, log, state = _fake_venv(tmp_path)
        p = subprocess.run(["make", "models", f"VENV={venv}",
                            f"CPU_INDEX=http://127.0.0.1:{server.server_address[1]}/whl/cpu"], cwd=ROOT,
                           capture_output=True, text=True, check=False)
    finally:
        server.shutdown()
    assert p.returncode != 0
    assert "pip install -q -e .[models]" in log.read_text()  # it installed (torchvision, in the fake)
    assert "pip uninstall -q -y torchvision" in log.read_text()
    assert state.read_text() == "numpy==2.0.0\n"  # as it was
    assert "make models: torchvision does not load" in p.stderr and "back as they were" in p.stderr
