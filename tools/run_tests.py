"""`make test`: the test suites side by side, then one line of timings.

Each suite is its own pytest process. The suites run `--jobs` at a time
(2 by default: one per core of the machines we test on), the longest
first, each taking the next free place, so the two places end close
together. The browser suite and the grader's suite run beside them, each
in a place of its own: they mostly wait, on JupyterLab and Chromium (run
alone, the browser suite left two cores 45% idle over its 80 s) and on
kernels starting and time limits running out (in the pool, the grader's
tests with the checkers' used 128 CPU-s in 190 s). In a place of the pool
each left a core idle while it waited. Each process keeps torch to one thread
(OMP_NUM_THREADS=1): two threads a process on a shared core wait on each
other at every op and run up to 25 times slower (see
kit.runtime.one_cpu_thread). A suite's output is printed whole when it
ends, so suites never interleave. The exit code is 1 if any suite failed.

The Japanese copies (notebooks/ja/) have the English copies' code cells
(`kit build --check` insists), so each notebook runs once a suite, in one
language or the other: an even-numbered notebook (00, 02, ...) runs its
English solution copy and its Japanese learner copy, an odd-numbered one
its Japanese solution copy and its English learner copy. Across the two
suites every notebook's code runs in both languages, at no extra kernel.
When both notebook suites run, the learner suite skips the training and
explorer cells that do in its copy what they do in the solution copy
(tools/shared_cells.py says which): the solution suite runs them. When the
browser test runs too, and finds Chromium and Playwright, the solution
suite leaves it the solution copies it runs whole, as strictly
(tests/test_browser.py, RUNS_WHOLE).

    python tools/run_tests.py                 # every suite
    python tools/run_tests.py unit browser    # some of them
"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PYTEST = [sys.executable, "-m", "pytest"]
# Test files run as suites of their own, beside the rest of tests/: the
# browser test, the slowest trainings (two processes, resumed runs) and the
# graders.
BROWSER = ["tests/test_browser.py", "tests/test_grade_feedback_browser.py"]
TRAINING = ["tests/test_multiprocess.py", "tests/test_resume.py"]
# The grader's tests start kernels and `kit grade` processes, and mostly
# wait on them: a suite of their own, beside the pool as the browser's is.
GRADING = ["tests/test_grade.py", "tests/test_grade_wall.py",
           "tests/test_grade_tmpdir.py", "tests/test_grade_class.py",
           "tests/test_grade_feedback.py"]
# The checkers' tests: CPU-bound, a suite of the pool.
CHECKERS = sorted(str(path.relative_to(ROOT))
                  for path in ROOT.glob("tests/test_checks_*.py"))
# The notebook suites' kernels fork from one warm process that has
# imported torch (tools/warm_kernels.py): ~6.5 s of CPU saved a notebook.
# A Japanese copy's cell fails if it prints English (tools/japanese_outputs).
NBVAL = PYTEST + ["-p", "tools.warm_kernels", "-p", "tools.japanese_outputs",
                  "--nbval-lax"]


def copies(kind):
    """The notebooks a suite runs, each once, in the language the
    docstring's rule gives it: `kind` is "solutions" or "learners"."""
    folders = {("solutions", "en"): "notebooks/solutions",
               ("solutions", "ja"): "notebooks/ja/solutions",
               ("learners", "en"): "notebooks", ("learners", "ja"):
               "notebooks/ja"}
    chosen = []
    for path in sorted(ROOT.glob("notebooks/*.ipynb")):
        even = int(path.name[:2]) % 2 == 0
        english = even == (kind == "solutions")
        chosen.append(f"{folders[kind, 'en' if english else 'ja']}/"
                      f"{path.name}")
    return chosen


# name -> (what it is, command, extra environment); longest first. One
# `make test` on a 2-core Intel Xeon (AVX-512), the browser and the grader
# beside the pool: unit 175 s, checkers 103, solutions 83, training 43,
# learners 28, grading 178, browser 92; 218 s in all, the cores 98% busy
# (the same day with the grader's tests in the pool: 224 to 246 s, the
# cores 91% busy).
SUITES = {
    "unit": ("unit tests", PYTEST + ["tests"] + [
        f"--ignore={path}"
        for path in BROWSER + TRAINING + GRADING + CHECKERS], {}),
    "grading": ("grading tests", PYTEST + GRADING, {}),
    "checkers": ("checker tests", PYTEST + CHECKERS, {}),
    # solutions must pass every checker: KIT_STRICT=1 turns a failed
    # check into an error; learner copies must run with stubs untouched
    "solutions": ("solution notebooks",
                  NBVAL + copies("solutions"),
                  {"KIT_STRICT": "1"}),
    "training": ("multi-process and resume tests", PYTEST + TRAINING, {}),
    "browser": ("browser test", PYTEST + BROWSER, {}),
    "learners": ("learner notebooks", NBVAL + [
        "-p", "tools.shared_cells"] + copies("learners"), {}),
}
# suites that run beside the --jobs pool, each in a place of its own
BESIDE = {"browser", "grading"}
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}


def command_for(name, suites):
    """A suite's command when `suites` run: the learner suite skips the
    cells the solution suite runs as they are, if that runs too
    (tools/shared_cells.py); the solution suite leaves out the copies the
    browser test runs whole, if that runs too (browser_runs)."""
    command = SUITES[name][1]
    if name == "learners" and "solutions" in suites:
        command = command + ["--skip-shared-cells"]
    if name == "solutions":
        command = [arg for arg in command if arg not in browser_runs(suites)]
    return command


def browser_runs(suites):
    """The solution copies the browser test will run whole: none unless it
    is among `suites` and finds what it needs, so that a browser test that
    skips takes no notebook with it."""
    if "browser" not in suites or not importlib.util.find_spec("playwright"):
        return []
    spec = importlib.util.spec_from_file_location(
        "test_browser", ROOT / BROWSER[0])
    browser = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(browser)
    return browser.RUNS_WHOLE if browser.chromium_found() else []


def run_suite(name, command):
    """Run one suite; (name, seconds, CPU seconds, exit code, output).

    The CPU seconds are the suite's processes' own (wait4): far fewer than
    its seconds means it mostly waits (timeouts, kernels starting)."""
    extra = SUITES[name][2]
    env = {**os.environ, **OFFLINE, "OMP_NUM_THREADS": "1", **extra}
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, stdout=log,
                                   stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = code = os.waitstatus_to_exitcode(status)
        log.seek(0)
        output = log.read()
    return (name, time.monotonic() - start, usage.ru_utime + usage.ru_stime,
            code, output)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", metavar="SUITE",
                        help=f"some of {', '.join(SUITES)} (default: all)")
    parser.add_argument("--jobs", type=int, default=2,
                        help="suites at a time (default 2)")
    args = parser.parse_args(argv)
    suites = args.suites or list(SUITES)
    if args.jobs < 1:
        parser.error(f"--jobs must be 1 or more, got {args.jobs}")
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        parser.error(f"no suite {unknown[0]!r}: pick from {list(SUITES)}")
    beside = [name for name in suites if name in BESIDE]
    print(f"make test: {', '.join(suites)}, {args.jobs} at a time"
          + "".join(f", {name} beside them" for name in beside), flush=True)
    if "solutions" in suites and browser_runs(suites):
        print("the browser test runs", " and ".join(browser_runs(suites)),
              "(not the solution suite)", flush=True)
    start, results = time.monotonic(), []
    with ThreadPoolExecutor(args.jobs) as pool, \
            ThreadPoolExecutor(max(1, len(beside))) as own_places:
        runs = [(own_places if name in beside else pool).submit(
            run_suite, name, command_for(name, suites)) for name in suites]
        for run in runs:  # in the suites' order, each once it ends
            name, seconds, cpu, code, output = run.result()
            what = SUITES[name][0]
            print(f"\n{'=' * 25} {what}: {seconds:.0f} s {'=' * 25}\n"
                  f"{output}", flush=True)
            results.append((what, seconds, cpu, code))
    times = ", ".join(f"{what} {seconds:.0f} s ({cpu:.0f} CPU-s)"
                      f"{'' if code == 0 else ' FAILED'}"
                      for what, seconds, cpu, code in results)
    print(f"\nmake test: {times}; {time.monotonic() - start:.0f} s in all")
    return 1 if any(code for *_, code in results) else 0


if __name__ == "__main__":
    sys.exit(main())
