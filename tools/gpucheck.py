"""`make gpu-check`: every solution notebook and `kit bench` on the GPU.

A maintainer's tool, not part of the learners' package `kit`: run as
`python tools/gpucheck.py` (by `make gpu-check` and `make gpu-wheels`).

Run on a CUDA machine, this executes each notebook of notebooks/solutions
on the "gpu" preset (KIT_PRESET=gpu, KIT_STRICT=1: a failed check fails the
notebook), then `python -m kit bench --preset gpu`, and writes to docs/gpu/:
`timings.json` (seconds and outcome per notebook), `bench.json` (the bench
rows, tokens/s included), `bench.png`, the figures each notebook leaves
open (`NN_name_N.png`) and a short `REPORT.md`. Without CUDA it does
nothing and exits 2.

Notebooks run in an IPython shell, one fresh process each, rather than in a
Jupyter kernel: the GPU box is offline, its wheels come from a folder of at
most 64 MiB (`make gpu-wheels`), and nbclient/ipykernel bring zmq, tornado
and a debugger that the folder cannot hold next to pyarrow.
"""

import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks" / "solutions"
OUT = ROOT / "docs" / "gpu"
BUDGET_S = 8 * 60  # the whole check, notebooks and bench together
BENCH_S = 150  # kept back for the bench

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


def environment():
    """What the notebooks and the bench run with, and where."""
    env = dict(os.environ, KIT_PRESET="gpu", KIT_STRICT="1",
               KIT_HEADLESS="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_notebook(path, timeout):
    """Execute one notebook; (seconds, "passed" | "failed" | ..., tail)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", RUN_CELLS, str(path), str(OUT)],
            cwd=ROOT / "notebooks", env=environment(), capture_output=True,
            text=True, timeout=timeout)
        status = "passed" if done.returncode == 0 else "failed"
        tail = (done.stdout + done.stderr)[-2000:]
    except subprocess.TimeoutExpired:
        status, tail = f"stopped after {timeout:.0f} s", ""
    return time.perf_counter() - start, status, tail


def run_bench(timeout):
    """`kit bench --preset gpu`: its rows, or None and why not."""
    command = [sys.executable, "-m", "kit", "bench", "--preset", "gpu",
               "--repeats", "3", "--json", "--plot", str(OUT / "bench.png")]
    try:
        done = subprocess.run(command, cwd=ROOT, env=environment(),
                              capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"stopped after {timeout:.0f} s"
    if done.returncode:
        return None, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), ""


def report(gpu, versions, notebooks, rows, bench_error, total):
    """REPORT.md: what ran, how long, how fast."""
    lines = [
        "# GPU check", "",
        f"`make gpu-check` on {gpu}; {versions}. Every solution notebook on "
        f"the \"gpu\" preset (KIT_PRESET=gpu, KIT_STRICT=1), then "
        f"`python -m kit bench --preset gpu --repeats 3`: "
        f"{total:.0f} s in all.", "",
        "| notebook | seconds | outcome |", "|---|---:|---|"]
    lines += [f"| {n['notebook']} | {n['seconds']:.1f} | {n['status']} |"
              for n in notebooks]
    lines += ["", "## kit bench --preset gpu", ""]
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


# Wheels are zip files, each compressed on its own, so the 64 MiB folder
# held 74 MiB of them. Stored (uncompressed) wheels are still wheels; put
# in one xz archive they compress together, about 40% smaller.
ARCHIVE = "wheels.tar.xz"


def pack_wheels(downloads, folder, max_mib=64):
    """`make gpu-wheels`' last step: pack, then 0 if the archive fits."""
    wheels = sorted(Path(downloads).glob("*.whl"),
                    key=lambda wheel: -wheel.stat().st_size)
    if not wheels:
        print(f"{downloads}: no wheels; run `make gpu-wheels` online",
              file=sys.stderr)
        return 1
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / ARCHIVE
    with tarfile.open(archive, "w:xz") as tar:
        for wheel in wheels:
            stored = folder / wheel.name
            with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(
                    stored, "w", zipfile.ZIP_STORED) as target:
                for item in source.infolist():
                    data = source.read(item)
                    item.compress_type = zipfile.ZIP_STORED
                    target.writestr(item, data)
            tar.add(stored, arcname=wheel.name)
            stored.unlink()
    wheel_mib = sum(wheel.stat().st_size for wheel in wheels) / 2**20
    mib = archive.stat().st_size / 2**20
    print(f"{archive}: {len(wheels)} wheels ({wheel_mib:.1f} MiB as "
          f"downloaded) in {mib:.1f} MiB (limit {max_mib} MiB)")
    if mib > max_mib:
        biggest = ", ".join(f"{w.name.split('-')[0]} "
                            f"{w.stat().st_size / 2**20:.1f}"
                            for w in wheels[:5])
        print(f"{archive}: {mib:.1f} MiB is over the {max_mib} MiB the GPU "
              f"box accepts; the biggest wheels (MiB): {biggest}",
              file=sys.stderr)
        return 1
    return 0


def unpack_wheels(folder, into):
    """On the GPU box: the archive back into wheels pip can install."""
    archive = Path(folder) / ARCHIVE
    if not archive.exists():
        print(f"{archive} is missing: run `make gpu-wheels` online and "
              f"bring {folder} along", file=sys.stderr)
        return 1
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return 0


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(prog="python tools/gpucheck.py",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--pack", nargs=2, metavar=("DOWNLOADS", "FOLDER"),
                        help="pack downloaded wheels into FOLDER/" + ARCHIVE)
    parser.add_argument("--unpack", nargs=2, metavar=("FOLDER", "INTO"),
                        help="unpack FOLDER/" + ARCHIVE + " into INTO")
    parser.add_argument("--max-mib", type=float, default=64)
    args = parser.parse_args(argv)
    if args.pack:
        return pack_wheels(*args.pack, max_mib=args.max_mib)
    if args.unpack:
        return unpack_wheels(*args.unpack)
    gpu = cuda_or_exit()
    import torch
    import transformers
    versions = (f"torch {torch.__version__}, transformers "
                f"{transformers.__version__}")
    OUT.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    notebooks = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        left = BUDGET_S - BENCH_S - (time.perf_counter() - start)
        seconds, status, tail = (run_notebook(path, left) if left > 5
                                 else (0.0, "not run: out of time", ""))
        notebooks.append(dict(notebook=path.name, seconds=seconds,
                              status=status, tail=tail))
        print(f"{path.name:<36} {seconds:6.1f} s  {status}", flush=True)
    left = BUDGET_S - (time.perf_counter() - start)
    rows, bench_error = run_bench(max(left, 30))
    total = time.perf_counter() - start
    (OUT / "timings.json").write_text(json.dumps(
        dict(gpu=gpu, versions=versions, total_seconds=total,
             notebooks=notebooks), indent=1))
    if rows is not None:
        (OUT / "bench.json").write_text(json.dumps(rows, indent=1))
    (OUT / "REPORT.md").write_text(
        report(gpu, versions, notebooks, rows, bench_error, total))
    print(f"wrote {OUT.relative_to(ROOT)}/REPORT.md ({total:.0f} s)")
    ok = rows is not None and all(n["status"] == "passed" for n in notebooks)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
