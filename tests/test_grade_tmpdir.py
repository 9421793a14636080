"""Warm kernels behind the wall get a temp folder of their own (issue 64).

As root with TMPDIR outside /tmp (in root's home, which the wall hides),
a zygote cached that folder (tempfile.tempdir) before forking: behind the
wall the kernel's mkdtemp failed, and solved copies of notebook 02 scored
stop_callback 0/3, blamed on the learner (loss_on_eval_log). Cold kernels
found /tmp by themselves.
"""

import json
import os
import shutil
from pathlib import Path

import pytest

from kit.grading import grade, sandbox
from test_grade import fake, kit_grade, share, write_notebook  # noqa: F401

# the check is reached only when mkdtemp works, as in notebook 02's
# checker, whose training run writes into a temp folder
MKDTEMP = ("import tempfile\n"
           "made = tempfile.mkdtemp()\n"
           "check('stop_callback', None, 'passed')")


@pytest.fixture
def outside_tmp(monkeypatch):
    """TMPDIR in the grader's home, outside /tmp, for the zygote it
    starts (this process keeps its own cached folder)."""
    folder = Path.home() / f".kit-test-tmpdir-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    monkeypatch.setenv("TMPDIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0 or sandbox.why_not("nobody"),
                    reason="the nobody wall needs root and namespaces")
def test_a_warm_kernel_behind_the_wall_makes_temp_folders(
        tmp_path, monkeypatch, outside_tmp):
    monkeypatch.setattr(sandbox, "mode", lambda: "nobody")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    grade.start_zygote()  # it caches TMPDIR, as a grader's would
    zygote = dict(grade._zygote)
    grade._zygote.clear()
    try:
        share(zygote, monkeypatch)
        root = tmp_path / "class"
        for name in ("amy", "ben"):
            write_notebook(root / name / "02.ipynb", fake()[0], MKDTEMP)
        result = kit_grade(root, "--jobs", "1", "--json")
    finally:
        grade._zygote.update(zygote)
        grade.stop_zygote()
    report = json.loads(result.stdout)
    assert report["isolation"] == grade.say("walled", user=sandbox.USER)
    rows = [row for card in report["submissions"]
            for row in card["exercises"] if row["id"] == "stop_callback"]
    assert [row["status"] for row in rows] == ["passed", "passed"], rows
    # no mkdtemp of a kernel's in the grader's folder (the zygote, as
    # root, may keep its own caches there)
    assert not list(outside_tmp.glob("tmp*"))


# a check that records what it is given as its message
SAYS = """import json, os
def check(exercise_id, said, status):
    with open(os.environ["KIT_GRADE_FILE"], "a") as f:
        f.write(json.dumps({"id": exercise_id, "status": status,
                            "message": said}) + "\\n")"""
HOG = """try:
    big = bytearray(6 << 30)  # 6 GiB: past the kernel's share
    said = "allocated"
except MemoryError:
    said = "MemoryError"
written = 0
try:
    with open("/dev/shm/fill", "wb") as f:
        for _ in range(40):  # up to 2.5 GiB
            f.write(b"x" * (64 << 20))
            f.flush()
            written += 64
except OSError:
    said += f", /dev/shm full at {written} MB"
if os.path.exists("/dev/shm/fill"):
    os.remove("/dev/shm/fill")
check("causal_lm_loss", said, "passed")"""


@pytest.mark.skipif(os.geteuid() != 0 or sandbox.why_not("nobody"),
                    reason="the nobody wall needs root and namespaces")
def test_a_kernel_is_held_to_its_memory_and_tmpfs_share(tmp_path,
                                                        monkeypatch):
    monkeypatch.setattr(sandbox, "mode", lambda: "nobody")
    monkeypatch.setattr(grade, "warm_wanted", lambda count, jobs: False)
    path = write_notebook(tmp_path / "01.ipynb", SAYS, HOG)
    report = json.loads(kit_grade(path, "--json").stdout)
    said = {row["id"]: row["message"] for row in report["exercises"]}
    limit = int(sandbox.TMPFS_SIZE.rstrip("g")) * 1024
    assert said["causal_lm_loss"] == (
        f"MemoryError, /dev/shm full at {limit} MB")
