"""`python -m kit doctor`: is this machine ready for the course?"""

import os
import platform
import socket
import sys
from importlib import metadata

# package -> the oldest version the course is written for. transformers 5.19
# is the first with `Trainer.loss_is_scaled_for_ga`; before it the attribute
# is silently ignored and notebook 01's gradient-accumulation demo is wrong.
REQUIRED = {"torch": "2.6", "transformers": "5.19", "datasets": "3.0",
            "accelerate": "1.0", "matplotlib": "3.7", "ipywidgets": "7.7"}
# jupyterlab: `make lab` brings it; Colab runs the notebooks without it
OPTIONAL = ["jupyterlab", "nbval", "jupytext", "pytest", "trl", "peft"]


def _version_tuple(version):
    parts = []
    for part in version.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _installed(package):
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def is_online(timeout=1.0):
    """True when the Hugging Face Hub can be reached and is not switched
    off (HF_HUB_OFFLINE)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false"):
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout).close()
        return True
    except OSError:
        return False


def report():
    """Print the report; return the problems (none when all is well)."""
    problems = []
    print(f"python        {sys.version.split()[0]} ({platform.platform()})")
    for package, oldest in REQUIRED.items():
        version = _installed(package)
        if version is None:
            problems.append(f"{package} is not installed: run `make setup`")
            version = "MISSING"
        elif _version_tuple(version) < _version_tuple(oldest):
            problems.append(f"{package} {version} is too old, the course "
                            f"needs >= {oldest}: run `make setup`")
        print(f"{package:<13} {version}")
    for package in OPTIONAL:
        print(f"{package:<13} {_installed(package) or '-'} (optional)")
    if problems:  # the rest needs torch and transformers
        return problems

    from kit.models import PRESETS, default_preset, pick_device, policy_path
    from kit.outputs import policy_problem
    device = pick_device()
    print(f"device        {device}")
    if device.type == "cuda":
        import torch
        print(f"gpu           {torch.cuda.get_device_name(0)}")
    preset = default_preset()
    print(f"preset        {preset}")
    for name in PRESETS:  # both ship: a training run must not change them
        problem = policy_problem(name)
        problems += [problem] if problem else []
        state = "NOT AS BUILT, see below" if problem else "as built"
        print(f"policy {name:<6} {policy_path(name)} ({state})")
    print(f"hub           {'online' if is_online() else 'offline'}")
    return problems + private_methods_report() + probe_report()


def private_methods_report():
    """One line per private Trainer method the kit overrides or calls;
    return the problems (kit.private_methods: the methods may change without notice).
    """
    from kit.private_methods import CALLED, RECORD, RECORDED_WITH, check
    moved = {finding.name: finding for finding in check()}
    for name, (recorded, _) in {**RECORD, **CALLED}.items():
        finding = moved.get(name)
        if finding is None:
            state = f"as in {RECORDED_WITH}"
        elif finding.installed is None:
            state = "GONE, see below"
        else:
            state = f"CHANGED to {finding.installed}, see below"
        print(f"private       Trainer.{name}{recorded} {state}")
    return [finding.message for finding in moved.values()]


def probe_report():
    """A run through the methods: a signature cannot say whether Trainer
    still calls them (kit.private_methods.probe). Return the problems."""
    from kit.private_methods import probe
    skipped = probe()
    print(f"probe         GRPO, 2 steps, saved, resumed: "
          f"{'PROBLEM, see below' if skipped else 'ok'}")
    return skipped


def main():
    problems = report()
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    print("ready for the course" if not problems else "not ready")
    return 1 if problems else 0
