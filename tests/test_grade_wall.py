"""The wall around each kernel when `kit grade` runs as root (issue 45).

A hostile submission, graded beside another, warm and cold: it must reach
neither the secret in the grader's environment (N48), nor the other's
grade file (N51), nor the grader's source or venv (N60), and nothing it
starts may outlive its grading (N49). Without the wall each of these
succeeds (kit.grading.sandbox says why): the test reports what the spy
found through its own grade record, the one channel it has (written by a
stand-in `check` of its own: the grader reads only a check's lines).
"""

import json
import os
import subprocess
import sys

import pytest

from kit.grading import grade, sandbox
from test_grade import NB, _running, fake, kit_grade, one_zygote, share  # noqa: F401
from test_grade import write_notebook

# the spy's sleep, found on the host by this argument when it outlives us
MARK = f"400.{os.getpid()}"
SPY = """import glob, json, os, signal, site, subprocess, tempfile, time
import kit
found = {"secret": 0}
for path in glob.glob("/proc/[0-9]*/environ"):  # the grader's, the zygote's
    try:
        found["secret"] += b"hunter2" in open(path, "rb").read()
    except OSError:
        pass
found["processes"] = len(glob.glob("/proc/[0-9]*"))
forged = json.dumps({"id": "dpo_loss", "status": "failed"}) + "\\n"
others, deadline = set(), time.time() + 3
while time.time() < deadline:  # another kernel's grade file, while it runs
    for path in (glob.glob("/proc/[0-9]*/cwd/../grades.jsonl")
                 + glob.glob(tempfile.gettempdir() + "/kit-grade-*/grades.jsonl")
                 + glob.glob("/tmp/kit-grade-*/grades.jsonl")):
        if os.path.realpath(path) != os.environ["KIT_GRADE_FILE"]:
            try:
                with open(path, "a") as f:
                    f.write(forged)
                others.add(os.path.realpath(path))
            except OSError:
                pass
    time.sleep(0.1)
found["others"] = len(others)
found["written"] = 0
pth = os.path.join(site.getsitepackages()[0], "kit-wall-test.pth")
for path in [os.path.join(os.path.dirname(kit.__file__), "checks",
                          "report.py"), pth]:
    try:
        open(path, "a").close()  # opened to write: nothing written
        found["written"] += 1
    except OSError:
        pass
if os.path.exists(pth):
    os.remove(pth)
subprocess.Popen(["sleep", "MARK"], env={}, start_new_session=True)
try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError:
    pass
def check(exercise_id, message):  # a stand-in for kit's: its grade line
    with open(os.environ["KIT_GRADE_FILE"], "a") as f:
        f.write(json.dumps({"id": exercise_id, "status": "failed",
                            "message": message}) + "\\n")
check("dpo_snippet", json.dumps(found))
""".replace("MARK", MARK)

WALLS = [mode for mode in ("nobody", "self") if sandbox.why_not(mode) is None
         and (mode == "self" or os.geteuid() == 0)]


@pytest.mark.skipif(not WALLS, reason="no wall here: "
                    f"{sandbox.why_not(sandbox.mode())}")
@pytest.mark.parametrize("mode, kernels", [
    ("nobody", "warm"), ("nobody", "cold"), ("self", "warm"),
    ("self", "cold")])
def test_a_walled_kernel_reaches_no_secret_grade_source_or_lasting_process(
        tmp_path, monkeypatch, one_zygote, mode, kernels):
    if mode not in WALLS:
        pytest.skip(f"no {mode} wall here: {sandbox.why_not(mode)}")
    monkeypatch.setattr(sandbox, "mode", lambda: mode)
    root = tmp_path / "class"
    # the victim passes, then runs on while the spy looks for its file
    write_notebook(root / "amy" / NB, *fake(("dpo_loss", None, "passed")),
                   "import time; time.sleep(4)")
    write_notebook(root / "spy" / NB, SPY)
    command = ["grade", str(root), "--jobs", "2", "--json"]
    if kernels == "warm":  # forked from this module's zygote
        share(one_zygote, monkeypatch)
        result = kit_grade(*command[1:])
    elif mode == "self":  # cold kernels, from this process
        monkeypatch.setattr(grade, "warm_wanted", lambda count, jobs: False)
        result = kit_grade(*command[1:])
    else:  # a grader started with the secret in its environment (N48)
        result = subprocess.run(
            [sys.executable, "-m", "kit", *command], capture_output=True,
            text=True, env={**os.environ, "INSTRUCTOR_SECRET": "hunter2",
                            "KIT_GRADE_COLD": "1"})
    report = json.loads(result.stdout)
    assert report["isolation"] == (
        grade.say("walled", user=sandbox.USER) if mode == "nobody"
        else grade.say("walled_self"))
    cards = {card["submission"].split("/")[0]: card
             for card in report["submissions"]}
    amy = {row["id"]: row for row in cards["amy"]["exercises"]}
    assert amy["dpo_loss"]["status"] == "passed"  # no forged "failed"
    spy = {row["id"]: row for row in cards["spy"]["exercises"]}
    found = json.loads(spy["dpo_snippet"]["message"])
    assert found == {"secret": 0, "processes": 2, "others": 0,
                     "written": 0}  # itself and its pid 1, nothing else
    assert not _running(MARK)  # its sleep ended with its kernel


def test_a_grader_that_is_not_root_walls_kernels_in_as_itself(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert sandbox.mode() == "self"


def test_where_the_wall_does_not_hold_the_report_says_why(monkeypatch):
    monkeypatch.setattr(sandbox, "why_not",
                        lambda mode: "unshare: Operation not permitted")
    grade.choose_isolation()
    try:
        assert "mode" not in grade._wall  # kernels start without --wall
        assert grade.isolation() == grade.say(
            "not_walled", why="unshare: Operation not permitted")
        assert grade.isolation().startswith("isolation: none beyond")
    finally:
        grade._wall.clear()
