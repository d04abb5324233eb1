# Two entry points on a fresh machine (Python 3.10+, no GPU needed):
#   make demo   set up .venv and run `roofline analyze gemm --m 4096` on the default device
#   make test   set up .venv and run the whole test suite
# The venv sees the packages of the Python that runs `make` (its system site-packages, and a virtual
# environment's own site-packages when `make` runs inside one, through a .pth file), so on a GPU machine the
# user's own torch is used; where no torch is importable, the CPU build of torch 2.13.0 is installed.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test setup models lint clean

$(VENV)/.ready: pyproject.toml
	$(PY) -m venv --system-site-packages $(VENV)
	$(PY) -c "import site, sys; sys.prefix != sys.base_prefix and print('\n'.join(site.getsitepackages()))" \
	  > "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/outer-env.pth"
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

setup: $(VENV)/.ready

demo: setup
	$(BIN)/roofline analyze gemm --m 4096

test: setup
	$(BIN)/python -m pytest -q

# The example models' libraries (the [models] extra), with the venv's torch kept: the constraint pins torch to the
# version installed, so pip picks the torchvision built for it (unconstrained, torchvision pulls the newest torch
# and its CUDA libraries over a CPU build). A CPU torch (+cpu) also needs PyTorch's CPU index: PyPI's Linux
# torchvision is a CUDA build, whose extension does not load beside a CPU torch (`operator torchvision::nms does not
# exist`, and transformers, which imports torchvision when present, fails with it). The last line checks it loads.
CPU_INDEX := https://download.pytorch.org/whl/cpu
models: setup
	$(BIN)/python -c "import torch; print('torch==' + torch.__version__)" > $(VENV)/torch-constraint.txt
	$(BIN)/python -m pip install -q -e '.[models]' -c $(VENV)/torch-constraint.txt \
	  $$(grep -q '+cpu' $(VENV)/torch-constraint.txt && echo --extra-index-url $(CPU_INDEX))
	$(BIN)/python -c "import torchvision.ops, transformers, timm" || { echo "make models: torchvision does not load \
	with $$(cat $(VENV)/torch-constraint.txt); install the build for it: $(BIN)/python -m pip install torchvision \
	--extra-index-url $(CPU_INDEX) -c $(VENV)/torch-constraint.txt (a CPU torch), see pytorch.org" >&2; exit 1; }

lint: setup
	$(BIN)/ruff check roofline tests scripts
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist *.egg-info
