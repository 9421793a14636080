"""tools/run_tests.py, what `make test` runs: suites side by side, timed."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
spec = importlib.util.spec_from_file_location(
    "run_tests", ROOT / "tools" / "run_tests.py")
run_tests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_tests)


@pytest.fixture
def suites(monkeypatch):
    python = [sys.executable, "-c"]
    fake = {
        "good": ("good suite", python + ["print('all fine')"], {}),
        "bad": ("bad suite", python + ["import sys; sys.exit(3)"], {}),
        "env": ("env suite", python + [
            "import os, sys; sys.exit(os.environ['OMP_NUM_THREADS'] != '1'"
            " or os.environ['HF_HUB_OFFLINE'] != '1' or "
            "os.environ['KIT_X'] != 'y')"], {"KIT_X": "y"}),
    }
    monkeypatch.setattr(run_tests, "SUITES", fake)


def test_a_failed_suite_fails_the_run_and_is_named(suites, capsys):
    assert run_tests.main(["good", "bad"]) == 1
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("make test: good suite ")
    assert "bad suite" in last and last.count("FAILED") == 1
    assert "s in all" in last
    assert "all fine" in out  # each suite's own output is shown


def test_suites_run_offline_on_one_thread_with_their_own_env(suites):
    assert run_tests.main(["good", "env", "--jobs", "1"]) == 0


def test_an_unknown_suite_is_refused(suites, capsys):
    with pytest.raises(SystemExit):
        run_tests.main(["units"])
    assert "no suite 'units'" in capsys.readouterr().err


def test_no_suite_at_a_time_is_refused(suites, capsys):
    with pytest.raises(SystemExit):
        run_tests.main(["good", "--jobs", "0"])
    assert "--jobs must be 1 or more, got 0" in capsys.readouterr().err


def test_the_real_suites_cover_every_test_and_notebook():
    ran = [arg for _, command, _ in run_tests.SUITES.values()
           for arg in command[3:]]
    ignored = {arg.split("=", 1)[1] for arg in ran
               if arg.startswith("--ignore=")}
    separate = {arg for arg in ran if arg.startswith("tests/test_")}
    assert ignored == separate  # each file once: in `tests` or on its own
    assert "tests" in ran and "notebooks/solutions" in ran
    assert {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob(
        "*.ipynb")} <= set(ran)
    assert run_tests.SUITES["solutions"][2] == {"KIT_STRICT": "1"}
