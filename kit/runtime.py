"""Where runs write; which device, preset and how many threads torch gets."""

import os
from pathlib import Path

# the notebook copy this kernel runs, as its setup_notebook(...) call said
# (kit.course sets it; kit.checks.ready reads it, below kit.course)
COPY = {"notebook": None, "solved": False}

# The folder that holds kit/: in a checkout, the repository's root.
ROOT = Path(__file__).resolve().parents[1]

# torch is imported where it is used: `python -m kit` builds its argument
# parser from PRESETS without waiting seconds for torch.

# Model sizes, which kit.models builds. "cpu" trains in seconds on a laptop;
# "gpu" is ~20x larger and only makes sense with an accelerator. Both are
# small Llama models.
PRESETS = {
    "cpu": dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=4),
    "gpu": dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=4,
                num_attention_heads=8, num_key_value_heads=8),
}


def runs_dir():
    """Where course runs write: one `runs/` at the repository's root.

    In a checkout (make lab, make test) that is the folder beside kit/,
    whichever folder a notebook runs in, so runs stay out of the learner's
    file browser; installed from pip (Colab), `runs/` here. KIT_RUNS
    overrides both.
    """
    if os.environ.get("KIT_RUNS"):
        return Path(os.environ["KIT_RUNS"])
    checkout = ROOT
    if (checkout / "pyproject.toml").exists():
        return checkout / "runs"
    return Path("runs")


def run_path(output_dir):
    """A relative `runs/NAME` -> runs_dir() / NAME; other paths as given."""
    path = Path(output_dir)
    if not path.is_absolute() and path.parts[:1] == ("runs",):
        return runs_dir().joinpath(*path.parts[1:])
    return path


# Where accelerate's PartialState reads the number of processes: torchrun
# (accelerate launch --multi_gpu), then the MPI launchers.
WORLD_SIZES = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE",
               "MV2_COMM_WORLD_SIZE")


def launched_alone(environ=os.environ):
    """True when `accelerate launch --num_processes N`, N > 1, started one
    process: without --multi_gpu and a second GPU (or mpirun), accelerate
    1.16 runs the script once, silently.

    Its single-process launcher sets ACCELERATE_USE_CPU always, and
    MASTER_ADDR only when asked for more than one process; the launchers
    that start several set a world size instead.
    """
    def size(name):
        text = environ.get(name, "")
        return int(text) if text.strip().isdigit() else 1
    asked_for_more = ("ACCELERATE_USE_CPU" in environ
                      and "MASTER_ADDR" in environ)
    return asked_for_more and max(map(size, WORLD_SIZES)) == 1


def pick_device():
    """The best device here: cuda, then mps, then cpu."""
    import torch
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def one_cpu_thread():
    """In a notebook on CPU with the toy world, torch gets a single thread.

    Alone on 2 cores, two threads are faster (700 DPO steps: 20-25 s
    against 32 s on one), so `python -m kit train` keeps them. But a
    notebook shares the cores with JupyterLab and the browser drawing its
    live plot, and two threads then wait on each other at every op: 150
    SFT steps took 80 s instead of 3, and notebook 01 ran in 72 s in
    JupyterLab instead of 20. One thread never does that.
    """
    import torch
    if pick_device().type == "cpu" and default_preset() == "cpu":
        torch.set_num_threads(1)


def default_preset():
    """$KIT_PRESET if set, else "gpu" with CUDA, else "cpu"."""
    import torch
    return os.environ.get("KIT_PRESET") or (
        "gpu" if torch.cuda.is_available() else "cpu")
