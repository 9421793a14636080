"""`make gpu-check`: every solution notebook and `kit bench` on the GPU.

A maintainer's tool, not part of the learners' package `kit`: run as
`python tools/gpucheck.py` (by `make gpu-check` and `make gpu-wheels`).

Run on a CUDA machine, this executes each notebook of notebooks/solutions
on the "gpu" preset (KIT_PRESET=gpu, KIT_STRICT=1: a failed check fails the
notebook), then `python -m kit bench --preset gpu`, and writes to docs/gpu/:
`timings.json` (seconds and outcome per notebook), `bench.json` (the bench
rows, tokens/s included), `bench.png`, the figures each notebook leaves
open (`NN_name_N.png`) and a short `REPORT.md`. Without CUDA it does
nothing and exits 2; `--cpu FOLDER` rehearses the same run on the "cpu"
preset, on a CPU, into FOLDER (a box-like install: docs/gpu.md).

`--lock FOLDER` (the end of `make gpu-wheels`) records the downloaded
wheels and checks them against the box's packages; `--install FOLDER
TARGET` (the start of `make gpu-check`, on the box) installs what the box
lacks into TARGET (tools/gpuwheels.py says how each is decided).

Notebooks run in an IPython shell, one fresh process each, rather than in a
Jupyter kernel: nbclient/ipykernel bring zmq, tornado and a debugger that
the box lacks and the check does not need.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks" / "solutions"
OUT = ROOT / "docs" / "gpu"
BUDGET_S = 8 * 60  # the whole check, notebooks and bench together
BENCH_S = 150  # kept back for the bench
# what the report names, beside the GPU
VERSIONS = ("torch", "transformers", "datasets", "accelerate", "trl",
            "numpy", "pyarrow")

# Executed in the child: each code cell in turn, stopping at the first
# error. Figures a cell leaves open are saved, so the report can show them.
RUN_CELLS = r"""
import json, sys
from pathlib import Path
from IPython.core.interactiveshell import InteractiveShell
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
notebook, out = Path(sys.argv[1]), Path(sys.argv[2])
shell = InteractiveShell.instance()
cells = [c for c in json.loads(notebook.read_text())["cells"]
         if c["cell_type"] == "code"]
for number, cell in enumerate(cells, 1):
    result = shell.run_cell("".join(cell["source"]))
    if not result.success:
        print(f"cell {number} of {len(cells)} failed", file=sys.stderr)
        sys.exit(1)
for n in plt.get_fignums():
    plt.figure(n).savefig(out / f"{notebook.stem}_{n}.png", dpi=80)
"""


def cuda_or_exit():
    """Exit 2, in one line, when there is no CUDA device."""
    import torch
    if not torch.cuda.is_available():
        print("make gpu-check: a GPU is needed (no CUDA device here); "
              "nothing was run", file=sys.stderr)
        sys.exit(2)
    return torch.cuda.get_device_name(0)


def environment(preset="gpu"):
    """What the notebooks and the bench run with, and where."""
    env = dict(os.environ, KIT_PRESET=preset, KIT_STRICT="1",
               KIT_HEADLESS="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_notebook(path, timeout, out=OUT, preset="gpu"):
    """Execute one notebook; (seconds, "passed" | "failed" | ..., tail)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", RUN_CELLS, str(path), str(out)],
            cwd=ROOT / "notebooks", env=environment(preset),
            capture_output=True,
            text=True, timeout=timeout)
        status = "passed" if done.returncode == 0 else "failed"
        tail = (done.stdout + done.stderr)[-2000:]
    except subprocess.TimeoutExpired:
        status, tail = f"stopped after {timeout:.0f} s", ""
    return time.perf_counter() - start, status, tail


def run_bench(timeout, out=OUT, preset="gpu"):
    """`kit bench --preset gpu`: its rows, or None and why not."""
    command = [sys.executable, "-m", "kit", "bench", "--preset", preset,
               "--repeats", "3", "--json", "--plot", str(out / "bench.png")]
    try:
        done = subprocess.run(command, cwd=ROOT, env=environment(preset),
                              capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"stopped after {timeout:.0f} s"
    if done.returncode:
        return None, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), ""


def report(gpu, versions, notebooks, rows, bench_error, total,
           preset="gpu"):
    """REPORT.md: what ran, how long, how fast."""
    lines = [
        "# GPU check", "",
        f"`make gpu-check` on {gpu}; {versions}. Every solution notebook on "
        f"the \"{preset}\" preset (KIT_PRESET={preset}, KIT_STRICT=1), "
        f"then `python -m kit bench --preset {preset} --repeats 3`: "
        f"{total:.0f} s in all.", "",
        "| notebook | seconds | outcome |", "|---|---:|---|"]
    lines += [f"| {n['notebook']} | {n['seconds']:.1f} | {n['status']} |"
              for n in notebooks]
    lines += ["", f"## kit bench --preset {preset}", ""]
    if rows is None:
        lines += ["The bench did not finish:", "", "```", bench_error, "```"]
    else:
        from kit.bench import table
        lines += ["```", table(rows), "```", "", "![bench](bench.png)"]
    failed = [n for n in notebooks if n["status"] != "passed"]
    for n in failed:
        lines += ["", f"## {n['notebook']}: {n['status']}", "", "```",
                  n["tail"], "```"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------ the wheels

def lock_wheels(folder, max_mib=64):
    """`make gpu-wheels`' last step: record the wheels, check them; 0 if ok."""
    import gpuwheels
    facts = gpuwheels.write_lock(folder, Path(folder) / "wheels.lock")
    if not facts:
        print(f"{folder}: no wheels; run `make gpu-wheels` online",
              file=sys.stderr)
        return 1
    mib = sum(w.stat().st_size for w in Path(folder).glob("*.whl")) / 2**20
    problems = gpuwheels.unmet(facts, gpuwheels.read_box(),
                               gpuwheels.kit_floors(_names(facts)))
    if mib > max_mib:
        problems.append(f"{mib:.1f} MiB of wheels is over the {max_mib} MiB "
                        f"the GPU box accepts")
    for problem in problems:
        print(f"{folder}: {problem}", file=sys.stderr)
    print(f"{folder}: {len(facts)} wheels, {mib:.1f} MiB, "
          f"{'problems above' if problems else 'every requirement met'}")
    return 1 if problems else 0


def install_wheels(folder, target):
    """On the box: install what it lacks into `target`; 0 if all is met."""
    import gpuwheels
    lock = gpuwheels.read_lock(Path(folder) / "wheels.lock") if (
        Path(folder) / "wheels.lock").exists() else None
    if lock is None or not all((Path(folder) / w["file"]).exists()
                               for w in lock):
        print(f"{folder} is missing wheels: run `make gpu-wheels` online "
              f"and bring {folder} along", file=sys.stderr)
        return 1
    installed = gpuwheels.installed_versions()
    chosen, problems, said = gpuwheels.install_plan(
        lock, installed, gpuwheels.kit_floors(_names(lock)))
    for line in said:
        print(f"make gpu-check: {line}")
    for problem in problems:
        print(f"make gpu-check: {problem}", file=sys.stderr)
    if problems:
        print("make gpu-check: the box cannot run the course with these "
              "wheels; nothing was installed", file=sys.stderr)
        return 2
    shutil.rmtree(target, ignore_errors=True)
    files = [str(Path(folder) / w["file"]) for w in chosen]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
         "--no-deps", "--no-compile", "--disable-pip-version-check",
         "--target", str(target), *files])
    print(f"make gpu-check: {len(chosen)} wheels into {target}")
    return done.returncode


def _names(facts):
    """The distributions whose floors the kit's pyproject sets, and ours."""
    return {w["name"] for w in facts} | {"torch", "accelerate", "matplotlib",
                                          "tqdm"}


def versions():
    """One line: the versions the notebooks ran with."""
    from importlib import metadata
    found = []
    for name in VERSIONS:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} missing")
    return ", ".join(found)


def run_check(out, preset, device):
    """Every solution notebook, then the bench; 0 when all passed."""
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    notebooks = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        left = BUDGET_S - BENCH_S - (time.perf_counter() - start)
        seconds, status, tail = (run_notebook(path, left, out, preset)
                                 if left > 5 else
                                 (0.0, "not run: out of time", ""))
        notebooks.append(dict(notebook=path.name, seconds=seconds,
                              status=status, tail=tail))
        print(f"{path.name:<36} {seconds:6.1f} s  {status}", flush=True)
    left = BUDGET_S - (time.perf_counter() - start)
    rows, bench_error = run_bench(max(left, 30), out, preset)
    total = time.perf_counter() - start
    used = versions()
    (out / "timings.json").write_text(json.dumps(
        dict(gpu=device, versions=used, preset=preset, total_seconds=total,
             notebooks=notebooks), indent=1))
    if rows is not None:
        (out / "bench.json").write_text(json.dumps(rows, indent=1))
    (out / "REPORT.md").write_text(
        report(device, used, notebooks, rows, bench_error, total, preset))
    print(f"wrote {out}/REPORT.md ({total:.0f} s)")
    ok = rows is not None and all(n["status"] == "passed" for n in notebooks)
    return 0 if ok else 1


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(prog="python tools/gpucheck.py",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--lock", metavar="FOLDER",
                        help="record and check the wheels in FOLDER")
    parser.add_argument("--install", nargs=2, metavar=("FOLDER", "TARGET"),
                        help="install what this Python lacks into TARGET")
    parser.add_argument("--cpu", metavar="FOLDER",
                        help="rehearse on a CPU, the cpu preset, into FOLDER")
    parser.add_argument("--max-mib", type=float, default=64)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.lock:
        return lock_wheels(args.lock, max_mib=args.max_mib)
    if args.install:
        return install_wheels(*args.install)
    if args.cpu:
        return run_check(Path(args.cpu).resolve(), "cpu", "a CPU (rehearsal)")
    return run_check(OUT, "gpu", cuda_or_exit())


if __name__ == "__main__":
    sys.exit(main())
