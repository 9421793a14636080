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

.PHONY: setup lab test unit notebooks build clean

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

lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(LAB_ROOT) $(LAB_FLAGS) $(LAB_ARGS)

test: unit notebooks

unit: setup
	$(OFFLINE) $(PY) -m pytest tests

# nbval runs every notebook top to bottom: solutions must pass every checker
# (KIT_STRICT=1 turns a failed check into an error), learner copies must run
# with their stubs untouched.
notebooks: setup
	$(OFFLINE) KIT_STRICT=1 $(PY) -m pytest --nbval-lax notebooks/solutions
	$(OFFLINE) $(PY) -m pytest --nbval-lax notebooks/*.ipynb

build: setup
	$(PY) -m kit build

clean:
	rm -rf $(VENV) runs
