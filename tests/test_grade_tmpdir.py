"""A kernel behind the wall: a temp folder of its own, and its share of the
machine (issue 64): memory (`--memory`), tmpfs, no network, no folder to
write but its own.

As root with TMPDIR outside /tmp (in root's home, which the wall hides),
a zygote cached that folder (tempfile.tempdir) before forking: behind the
wall the kernel's mkdtemp failed, and solved copies of notebook 02 scored
stop_callback 0/3, blamed on the learner (loss_on_eval_log). Cold kernels
found /tmp by themselves. The solved copy of every notebook is graded so,
and passes.
"""

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from kit import cli
from kit.builder import paths
from kit.grading import grade, sandbox
from test_grade import fake, kit_grade, share, write_notebook  # noqa: F401

SOLUTIONS = paths.NOTEBOOKS / "solutions"
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
        # and the solved copy of every notebook with exercises
        for path in sorted(SOLUTIONS.glob("0*.ipynb"))[1:]:
            shutil.copy(path, (root / "sol").mkdir(exist_ok=True)
                        or root / "sol" / path.name)
        result = kit_grade(root, "--jobs", "2", "--json")
    finally:
        grade._zygote.update(zygote)
        grade.stop_zygote()
    report = json.loads(result.stdout)
    assert report["isolation"] == grade.say("walled", user=sandbox.USER)
    rows = [row for card in report["submissions"]
            for row in card["exercises"] if row["id"] == "stop_callback"
            and not card["submission"].startswith("sol/")]
    assert [row["status"] for row in rows] == ["passed", "passed"], rows
    solved = [(card["notebook"], row["id"], row["status"])
              for card in report["submissions"]
              if card["submission"].startswith("sol/")
              for row in card["exercises"]]
    assert {notebook for notebook, *_ in solved} == {
        path.stem for path in SOLUTIONS.glob("0*.ipynb")} - {"00_setup"}
    assert [row for row in solved if row[2] != "passed"] == []
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


# what a kernel reaches of the machine: a server of the test's own on the
# host's 127.0.0.1 (never an outside address), a folder anyone may write
# outside the submission's, a file in the grader's home, and its own folder
REACH = """import socket
said = []
try:
    open(MINE).read()
    said.append("home read")
except OSError as error:
    said.append(type(error).__name__)
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
    said.append("server reached")
except OSError as error:
    said.append(type(error).__name__)
try:
    open(HOST + "/written", "w").close()
    said.append("host written")
except OSError as error:
    said.append(os.strerror(error.errno))
open("mine", "w").write("x")  # its own folder stays its to write
server = socket.create_server(("127.0.0.1", 0))  # and its own loopback
socket.create_connection(server.getsockname(), timeout=3).close()
said.append("own loopback")
check("causal_lm_loss", ", ".join(said), "passed")"""


@pytest.mark.parametrize("mode", ["nobody", "self"])
def test_a_walled_kernel_reaches_no_network_and_writes_only_its_folder(
        tmp_path, monkeypatch, mode):
    if sandbox.why_not(mode) or (mode == "nobody" and os.geteuid() != 0):
        pytest.skip(f"no {mode} wall here")
    monkeypatch.setattr(sandbox, "mode", lambda: mode)
    monkeypatch.setattr(grade, "warm_wanted", lambda count, jobs: False)
    host = Path("/var/tmp") / f"kit-wall-test-{os.getpid()}"
    host.mkdir(exist_ok=True)
    host.chmod(0o777)  # nobody could write it, before the wall
    mine = Path.home() / f".kit-wall-test-{os.getpid()}"
    mine.write_text("the grader's")
    with socket.create_server(("127.0.0.1", 0)) as server:
        source = REACH.replace("PORT", str(server.getsockname()[1])).replace(
            "HOST", repr(str(host))).replace("MINE", repr(str(mine)))
        path = write_notebook(tmp_path / "01.ipynb", SAYS, source)
        try:
            report = json.loads(kit_grade(path, "--json").stdout)
        finally:
            shutil.rmtree(host, ignore_errors=True)
            mine.unlink()
    said = {row["id"]: row["message"] for row in report["exercises"]}
    assert said["causal_lm_loss"] == ("FileNotFoundError, ConnectionRefused"
                                      "Error, Read-only file system, own "
                                      "loopback")


@pytest.mark.skipif(os.geteuid() != 0 or sandbox.why_not("nobody"),
                    reason="the nobody wall needs root and namespaces")
def test_grade_memory_sets_each_kernels_share(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "mode", lambda: "nobody")
    monkeypatch.setattr(sandbox, "MEMORY_LIMIT", sandbox.MEMORY_LIMIT)
    monkeypatch.setattr(grade, "warm_wanted", lambda count, jobs: False)
    path = write_notebook(tmp_path / "01.ipynb", SAYS, HOG.replace(
        "6 << 30", "1536 << 20").replace("range(40)", "range(0)"))
    said = json.loads(kit_grade(path, "--json", "--memory", "1G").stdout)
    assert said["exercises"][0]["message"] == "MemoryError"


@pytest.mark.parametrize("size, why", [
    ("100M", "100M is less than a kernel needs to import torch and the kit:"
             " give at least 512M"),
    ("lots", "must be a size such as 4G or 512M, got 'lots'"),
    ("9e99G", "must be a size"), ("2000T", "2000T is more than a machine")])
def test_grade_memory_refuses_a_size_a_kernel_cannot_use(size, why, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["grade", "x.ipynb", "--memory", size])
    assert stop.value.code == 2
    assert f"argument --memory: {why}" in capsys.readouterr().err
