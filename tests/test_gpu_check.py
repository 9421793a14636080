"""`make gpu-check` and `make gpu-wheels`, as far as a CPU machine can go."""

import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parents[1]
# a tool, not part of the package: loaded from its file, as make runs it
spec = importlib.util.spec_from_file_location(
    "gpucheck", ROOT / "tools" / "gpucheck.py")
gpucheck = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpucheck)
no_cuda = pytest.mark.skipif(torch.cuda.is_available(),
                             reason="this machine has a GPU")


@no_cuda
@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_gpu_check_without_cuda_is_one_line_and_exit_2():
    start = time.perf_counter()
    done = subprocess.run(["make", "--no-print-directory", "gpu-check",
                           f"GPU_PYTHON={sys.executable}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "a GPU is needed" in lines[0], done.stderr
    assert time.perf_counter() - start < 60  # importing torch, no more


@no_cuda
def test_the_check_itself_refuses_to_run_without_cuda(capsys):
    with pytest.raises(SystemExit) as exit_:
        gpucheck.main([])
    assert exit_.value.code == 2
    assert "a GPU is needed" in capsys.readouterr().err


def test_the_report_names_every_notebook_and_the_bench():
    notebooks = [dict(notebook="00_setup.ipynb", seconds=3.2,
                      status="passed", tail=""),
                 dict(notebook="03_dpo.ipynb", seconds=9.0, status="failed",
                      tail="AssertionError: accuracy")]
    rows = [{"steps_per_generation": 1, "generate_calls": 4,
             "generation_seconds_per_step": 0.01, "seconds_per_step": 0.02,
             "tokens_per_second": 9000.0}]
    text = gpucheck.report("H200", "torch 2.11", notebooks, rows, "", 60)
    assert "| 00_setup.ipynb | 3.2 | passed |" in text
    assert "## 03_dpo.ipynb: failed" in text
    assert "AssertionError: accuracy" in text and "9000" in text
