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
# A CPU torch's index must answer within this many seconds, or nothing is installed: pip retries an index it
# cannot reach five times a package without a word (63 s where the name did not resolve, 169 s where connections
# hung) and then takes PyPI's CUDA torchvision. A mirror of the index: make models CPU_INDEX=URL.
INDEX_TIMEOUT_S := 10
SITE = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# The venv's own packages (not the outer environment's its .pth shows), editable installs left out.
FROZEN = $(BIN)/python -m pip freeze --all --path "$(SITE)" | grep -v '^[-\#]'
# A failed install or import check takes back what it installed or replaced, so the venv is as it was: new
# packages uninstalled, replaced ones reinstalled at their old versions (pip's cache has them).
ROLLBACK = $(FROZEN) > $(VENV)/models-after.txt; \
	new=$$(grep -vxFf $(VENV)/models-before.txt $(VENV)/models-after.txt | sed 's/[=@ ].*//'); \
	old=$$(grep -vxFf $(VENV)/models-after.txt $(VENV)/models-before.txt); \
	[ -z "$$new" ] || $(BIN)/python -m pip uninstall -q -y $$new; \
	[ -z "$$old" ] || $(BIN)/python -m pip install -q --no-deps $$old; \
	echo "make models: the venv's packages are back as they were" >&2
models: setup
	$(BIN)/python -c "import torch; print('torch==' + torch.__version__)" > $(VENV)/torch-constraint.txt
	@! grep -q '+cpu' $(VENV)/torch-constraint.txt || $(BIN)/python -c "import sys, urllib.request; \
	urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2]))" $(CPU_INDEX)/torchvision/ $(INDEX_TIMEOUT_S) \
	2> $(VENV)/index-check.txt || { echo "make models: PyTorch's CPU index $(CPU_INDEX) is out of reach ($$(tail \
	-n 1 $(VENV)/index-check.txt); waited up to $(INDEX_TIMEOUT_S) s): $$(cat $(VENV)/torch-constraint.txt) needs \
	its torchvision from there (PyPI's is a CUDA build), so nothing was installed; reach it (a proxy: HTTPS_PROXY) \
	or name a mirror: make models CPU_INDEX=URL" >&2; exit 1; }
	@$(FROZEN) > $(VENV)/models-before.txt
	@echo "make models: the [models] extra (transformers, torchvision, timm) for $$(cat $(VENV)/torch-constraint.txt)"
	@$(BIN)/python -m pip install -q -e '.[models]' -c $(VENV)/torch-constraint.txt \
	  $$(grep -q '+cpu' $(VENV)/torch-constraint.txt && echo --extra-index-url $(CPU_INDEX)) || { $(ROLLBACK); exit 1; }
	@$(BIN)/python -c "import torchvision.ops, transformers, timm" || { echo "make models: torchvision does not load \
	with $$(cat $(VENV)/torch-constraint.txt); install the build for it: $(BIN)/python -m pip install torchvision \
	--extra-index-url $(CPU_INDEX) -c $(VENV)/torch-constraint.txt (a CPU torch), see pytorch.org" >&2; \
	$(ROLLBACK); exit 1; }

lint: setup
	$(BIN)/ruff check roofline tests scripts
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist *.egg-info
