# Two commands on a fresh machine:
#   make lab    set everything up (first time only) and open the course
#   make test   run every test: the kit's unit tests and both notebook sets
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# torch is the big download. The course needs no particular release: make
# test was last run on 2.13 and 2.15 (README). A torch wheel that pip's
# --find-links already holds (a CPU build our CI keeps on disk) is taken
# first, so a newer release on the index is not downloaded over it.
TORCH ?= torch>=2.6,<2.16
# Tests and graded runs never touch the network.
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

.PHONY: setup lab test unit notebooks build clean gpu-check gpu-wheels

setup: $(VENV)/.ready

# A torch that is already installed (conda, a GPU box) is reused rather than
# downloaded again: the venv then sees the system's packages.
$(VENV)/.ready: pyproject.toml
	@if $(PYTHON) -c "import torch" 2>/dev/null; then \
		$(PYTHON) -m venv --system-site-packages $(VENV); \
	else $(PYTHON) -m venv $(VENV); fi
	-$(PY) -m pip install --quiet --no-index --no-deps "$(TORCH)" 2>/dev/null
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[dev,lab]"
	touch $@

# As root (Docker, cloud VMs) Jupyter refuses to start without --allow-root;
# on Linux without a display (a remote machine) there is no browser to open,
# so it only prints the URL: forward the port (README, "On a remote machine").
LAB_FLAGS := $(if $(filter 0,$(shell id -u)),--allow-root)
ifeq ($(shell uname)$(DISPLAY)$(WAYLAND_DISPLAY),Linux)
LAB_FLAGS += --no-browser
endif

LAB_ROOT ?= notebooks
# The course's JupyterLab settings (kit/builder/lab.py says what each
# does): no news pop-up, src/ and solutions/ out of the file browser,
# notebooks that do not show as modified on opening.
LAB_CONFIG := JUPYTER_CONFIG_PATH=$(CURDIR)/tools/lab$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))

lab: setup
	$(LAB_CONFIG) $(VENV)/bin/jupyter lab --ServerApp.root_dir=$(LAB_ROOT) $(LAB_FLAGS) $(LAB_ARGS)

# Seven suites: five two at a time, two beside them (they mostly wait), one
# torch thread each; the last line says how long each took
# (tools/run_tests.py says why).
test: setup
	$(PY) tools/run_tests.py

unit: setup
	$(PY) tools/run_tests.py unit checkers grading training browser

notebooks: setup
	$(PY) tools/run_tests.py solutions learners

build: setup
	$(PY) -m kit build

clean:
	rm -rf $(VENV) runs

# ------------------------------------------------------------ the GPU check
# `make gpu-wheels` (here, online) downloads into wheels/gpu, --no-deps,
# what tools/gpu-carry.txt pins: only what the offline GPU box's own
# packages (tools/gpu-box.txt) lack. `make gpu-check` (there) installs them
# with --no-index --no-deps --target wheels/site, first on PYTHONPATH, so
# the box's torch, numpy, pyarrow and pandas stay; then tools/gpucheck.py.
GPU_PYTHON ?= python3
GPU_PY_VERSION ?= 3.12
GPU_WHEELS ?= wheels/gpu
GPU_SITE ?= wheels/site
GPU_WHEELS_MIB ?= 40
GPU_PLATFORM := --only-binary=:all: --python-version $(GPU_PY_VERSION) \
	--implementation cp --abi cp$(subst .,,$(GPU_PY_VERSION)) \
	--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
	--platform manylinux_2_28_x86_64

# The box's own Python: wheels/gpu/wheels.lock (what was downloaded, with
# each wheel's Requires-Dist) also becomes tools/gpu-wheels.lock, which
# tests/test_gpu_wheels.py checks without downloading.
gpu-wheels: setup
	rm -rf $(GPU_WHEELS) && mkdir -p $(GPU_WHEELS)
	$(PY) -m pip download --quiet --no-deps --no-cache-dir $(GPU_PLATFORM) \
		-d $(GPU_WHEELS) -r tools/gpu-carry.txt
	$(PY) tools/gpucheck.py --lock $(GPU_WHEELS) --max-mib $(GPU_WHEELS_MIB)
	$(if $(filter 3.12,$(GPU_PY_VERSION)),cp $(GPU_WHEELS)/wheels.lock tools/gpu-wheels.lock)

# Without CUDA: one line, exit 2, in the seconds it takes to import torch.
gpu-check:
	$(if $(shell $(GPU_PYTHON) -c "import torch; print(torch.cuda.is_available())" 2>/dev/null | grep -x True),,$(error a GPU is needed: no CUDA device for $(GPU_PYTHON), so nothing ran))
	$(GPU_PYTHON) tools/gpucheck.py --install $(GPU_WHEELS) $(GPU_SITE)
	$(OFFLINE) PYTHONPATH=$(CURDIR)/$(GPU_SITE):$(CURDIR) $(GPU_PYTHON) tools/gpucheck.py
