"""The wall around each kernel when `kit grade` runs as root (issue 45).

A hostile submission, graded beside another, warm and cold: it must reach
neither the secret in the grader's environment (N48), nor the other's
grade file (N51), nor the grader's source or venv (N60), and nothing it
starts may outlive its grading (N49). Without the wall each of these
succeeds (kit.grading.sandbox says why): the test reports what the spy
found through its own grade record, the one channel it has.
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
with open(os.environ["KIT_GRADE_FILE"], "a") as f:
    f.write(json.dumps({"id": "dpo_snippet", "status": "failed",
                        "message": json.dumps(found)}) + "\\n")
""".replace("MARK", MARK)

walled_here = pytest.mark.skipif(
    sandbox.why_not() is not None,
    reason=f"no wall here: {sandbox.why_not()}")


@walled_here
@pytest.mark.parametrize("kernels", ["warm", "cold"])
def test_a_walled_kernel_reaches_no_secret_grade_source_or_lasting_process(
        tmp_path, monkeypatch, one_zygote, kernels):
    root = tmp_path / "class"
    # the victim passes, then runs on while the spy looks for its file
    write_notebook(root / "amy" / NB, *fake(("dpo_loss", None, "passed")),
                   "import time; time.sleep(4)")
    write_notebook(root / "spy" / NB, SPY)
    command = ["grade", str(root), "--jobs", "2", "--json"]
    if kernels == "warm":  # forked from this module's zygote
        share(one_zygote, monkeypatch)
        result = kit_grade(*command[1:])
    else:  # a grader started with the secret in its environment (N48)
        result = subprocess.run(
            [sys.executable, "-m", "kit", *command], capture_output=True,
            text=True, env={**os.environ, "INSTRUCTOR_SECRET": "hunter2",
                            "KIT_GRADE_COLD": "1"})
    report = json.loads(result.stdout)
    assert report["isolation"] == grade.say("walled", user=sandbox.USER)
    cards = {card["submission"].split("/")[0]: card
             for card in report["submissions"]}
    amy = {row["id"]: row for row in cards["amy"]["exercises"]}
    assert amy["dpo_loss"]["status"] == "passed"  # no forged "failed"
    spy = {row["id"]: row for row in cards["spy"]["exercises"]}
    found = json.loads(spy["dpo_snippet"]["message"])
    assert found == {"secret": 0, "processes": 2, "others": 0,
                     "written": 0}  # itself and its pid 1, nothing else
    assert not _running(MARK)  # its sleep ended with its kernel


def test_no_wall_when_the_grader_is_not_root_and_the_report_says_so(
        monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert sandbox.why_not.__wrapped__() == "the grader is not root"
    monkeypatch.setattr(sandbox, "why_not", sandbox.why_not.__wrapped__)
    grade.choose_isolation()
    assert grade.isolation().startswith("isolation: none beyond a process")
    assert "the grader is not root" in grade.isolation()
    assert "ids" not in grade._wall  # kernels start without --wall
    grade._wall.clear()
