# Two commands on a fresh machine:
#   make lab    set everything up (first time only) and open the course
#   make test   run every test: the kit's unit tests and both notebook sets
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# torch is the big download. The course needs no particular release; the cap
# lets a machine that already caches a CPU build of 2.13 (our CI) reuse it.
TORCH ?= torch>=2.6,<2.14
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
# The course's JupyterLab settings (kit/lab.py says what each does): no news
# pop-up, src/ and solutions/ out of the file browser, notebooks that do
# not show as modified on opening.
LAB_CONFIG := JUPYTER_CONFIG_PATH=$(CURDIR)/tools/lab$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))

lab: setup
	$(LAB_CONFIG) $(VENV)/bin/jupyter lab --ServerApp.root_dir=$(LAB_ROOT) $(LAB_FLAGS) $(LAB_ARGS)

# Six suites, two at a time, one torch thread each; the last line says how
# long each took (tools/run_tests.py says why).
test: setup
	$(PY) tools/run_tests.py

unit: setup
	$(PY) tools/run_tests.py unit grading training browser

notebooks: setup
	$(PY) tools/run_tests.py solutions learners

build: setup
	$(PY) -m kit build

clean:
	rm -rf $(VENV) runs

# ------------------------------------------------------------ the GPU check
# `make gpu-wheels` (here, online) fills wheels/gpu with what an offline GPU
# box lacks; `make gpu-check` (there) installs them into that box's own
# python, next to its torch, and runs tools/gpucheck.py (see its docstring).
# The box has Python 3.12, torch, transformers 5.17, accelerate, matplotlib.
GPU_PYTHON ?= python3
GPU_WHEELS := wheels/gpu
GPU_WHEELS_MIB ?= 64
GPU_PLATFORM := --only-binary=:all: --python-version 3.12 --implementation cp \
	--abi cp312 --platform manylinux2014_x86_64 \
	--platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64
# Already on the box (torch's, transformers 5.17's, accelerate's and
# matplotlib's dependencies): not downloaded again.
GPU_BOX_HAS := torch nvidia_* triton numpy pyyaml packaging tqdm filelock \
	typing_extensions sympy mpmath networkx jinja2 markupsafe setuptools \
	tokenizers safetensors regex hf_xet httpx httpcore h11 anyio idna \
	certifi sniffio click typer rich shellingham pygments markdown_it_py \
	mdurl annotated_doc pydantic pydantic_core typing_inspection \
	annotated_types psutil pillow contourpy cycler fonttools kiwisolver \
	pyparsing python_dateutil six

# The downloads are packed into one archive, wheels/gpu/wheels.tar.xz:
# the wheels themselves add up to more than the box's 64 MiB.
gpu-wheels:
	rm -rf wheels/download $(GPU_WHEELS) && mkdir -p wheels/download
	$(PYTHON) -m pip download --quiet --no-cache-dir $(GPU_PLATFORM) \
		-d wheels/download -r tools/gpu-requirements.txt
	cd wheels/download && rm -f $(addsuffix -*.whl,$(GPU_BOX_HAS))
	$(PYTHON) tools/gpucheck.py --pack wheels/download $(GPU_WHEELS) \
		--max-mib $(GPU_WHEELS_MIB)
	rm -rf wheels/download

# Without CUDA: one line, exit 2, in the seconds it takes to import torch.
gpu-check:
	$(if $(shell $(GPU_PYTHON) -c "import torch; print(torch.cuda.is_available())" 2>/dev/null | grep -x True),,$(error a GPU is needed: no CUDA device for $(GPU_PYTHON), so nothing ran))
	rm -rf wheels/unpacked
	$(GPU_PYTHON) tools/gpucheck.py --unpack $(GPU_WHEELS) wheels/unpacked
	$(GPU_PYTHON) -m pip install --quiet --no-index \
		--find-links wheels/unpacked -r tools/gpu-requirements.txt
	$(OFFLINE) PYTHONPATH=$(CURDIR) $(GPU_PYTHON) tools/gpucheck.py
