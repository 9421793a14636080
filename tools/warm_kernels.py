"""A pytest plugin: nbval's kernels forked warm from one kit.grading.zygote.

Each notebook's kernel spent about 6.5 s of CPU importing torch,
transformers and datasets; 14 notebooks, two suites. With `-p
tools.warm_kernels` (tools/run_tests.py passes it to the notebook suites)
this pytest process starts the zygote `kit grade` uses, which imports them
once, and points nbval at a kernelspec whose command is the zygote's
client: each kernel is then a fork of that warm process. The zygote must be
started here, in pytest itself: it forks only for its own parent's
children, and nbval's kernels are pytest's children.

Anything wrong (not Linux, the zygote not ready in time, a kernel name
already chosen) leaves nbval as it was; a client that finds no zygote
becomes the cold shim (kit.grading.kernel_shim) and starts ipykernel the usual
way. KIT_WARM_KERNELS=0 turns it off.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

KERNEL_NAME = "kit-warm"
READY_TIMEOUT = 120  # s: the imports take ~7 s alone, far more when busy
_state = {}


def pytest_configure(config):
    option = config.option
    if (not sys.platform.startswith("linux")
            or not (getattr(option, "nbval", False)
                    or getattr(option, "nbval_lax", False))
            or getattr(option, "nbval_kernel_name", None)
            or getattr(option, "current_env", False)
            or os.environ.get("KIT_WARM_KERNELS", "") == "0"):
        return
    folder = Path(tempfile.mkdtemp(prefix="kit-nbval-"))
    token = uuid.uuid4().hex
    process = _start(folder, token)
    if process is None:
        shutil.rmtree(folder, ignore_errors=True)
        return
    # kernels inherit our environment: the zygote forks only for a
    # request carrying a token, and its kernels' own sweep finds them
    os.environ["KIT_GRADE_RUN"] = token
    _write_kernelspec(folder)
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(folder)] + [p for p in [os.environ.get("JUPYTER_PATH")] if p])
    option.nbval_kernel_name = KERNEL_NAME
    _state.update(folder=folder, process=process, token=token)


def pytest_unconfigure(config):
    if not _state:
        return
    from kit.grading import kernel_shim
    process = _state["process"]
    try:
        process.stdin.close()  # its cue to end
        process.wait(5)
    except (OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
    kernel_shim.sweep(_state["token"])  # a kernel left behind
    shutil.rmtree(_state["folder"], ignore_errors=True)
    _state.clear()


def _start(folder, token):
    """The zygote, once it says "ready"; None (and one line) otherwise."""
    # torch's thread pool must not start before the forks (a forked pool
    # hangs); the suites run on one torch thread anyway
    env = dict(os.environ, OMP_NUM_THREADS="1", KIT_GRADE_RUN=token)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "kit.grading.zygote", "serve",
             str(folder / "socket")], env=env, cwd=folder,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as error:
        print(f"warm kernels unavailable ({error}): cold kernels",
              file=sys.stderr)
        return None
    ready = [None]
    reader = threading.Thread(target=lambda: ready.__setitem__(
        0, process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT)
    if ready[0] != b"ready\n":
        said = (ready[0] or b"not ready in time").decode("utf-8", "replace")
        print(f"warm kernels unavailable ({said.strip()}): cold kernels",
              file=sys.stderr)
        process.kill()
        process.wait()
        return None
    return process


def _write_kernelspec(folder):
    """kernels/kit-warm/kernel.json: ipykernel, asked of the zygote."""
    spec = folder / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    work = folder / "work"  # what a shim removes if pytest dies
    work.mkdir()
    argv = [sys.executable, "-m", "kit.grading.zygote", "client",
            str(folder / "socket"), str(work), "--",
            sys.executable, "-m", "ipykernel_launcher",
            "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({
        "argv": argv, "display_name": "Python 3 (warm, for tests)",
        "language": "python"}))
