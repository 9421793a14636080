"""tools/run_tests.py, what `make test` runs: suites side by side, timed."""

import importlib.util
import re
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


def test_the_browser_suite_runs_beside_the_pool(monkeypatch, tmp_path):
    """With one place in the pool, a pooled suite and the browser suite
    still run at once: each waits for the other's mark."""
    def meets(mine, theirs):
        return [sys.executable, "-c", (
            "import pathlib, sys, time\n"
            f"pathlib.Path({str(tmp_path / mine)!r}).touch()\n"
            "for _ in range(300):\n"
            f"    if pathlib.Path({str(tmp_path / theirs)!r}).exists():\n"
            "        sys.exit(0)\n"
            "    time.sleep(0.1)\n"
            "sys.exit(1)")]
    monkeypatch.setattr(run_tests, "SUITES", {
        "pooled": ("pooled suite", meets("pooled", "browser"), {}),
        "browser": ("browser suite", meets("browser", "pooled"), {})})
    assert run_tests.main(["--jobs", "1"]) == 0


def test_the_solution_suite_leaves_the_browser_its_notebooks(monkeypatch):
    """Only when the browser test runs beside it and will find Chromium
    and Playwright: a browser test that skips takes no notebook with it."""
    import importlib.util
    import shutil
    everything = list(run_tests.SUITES)
    full = run_tests.SUITES["solutions"][1]
    found = {"chromium": True, "playwright": True}
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/chromium"
                        if name == "chromium" and found["chromium"] else None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: (
        found["playwright"] or None) if name == "playwright"
        else find_spec(name))
    left = run_tests.browser_runs(everything)
    assert left and set(left) < set(full)  # copies it would run itself
    assert run_tests.command_for("solutions", everything) == [
        arg for arg in full if arg not in left]
    assert run_tests.command_for("solutions", ["solutions"]) == full
    for missing in found:
        found[missing] = False
        assert run_tests.browser_runs(everything) == []
        assert run_tests.command_for("solutions", everything) == full
        found[missing] = True


def test_the_browsers_copies_run_strict_as_the_solution_suite(
        monkeypatch):
    """What the solution suite leaves to the browser test still fails on
    a failed check: the cell its copies start with sets KIT_STRICT=1, and
    the cell before its deliberate mistake takes it back."""
    import torch.nn.functional as F
    from kit.checks import check
    spec = importlib.util.spec_from_file_location(
        "test_browser", ROOT / "tests" / "test_browser.py")
    browser = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(browser)
    import os
    monkeypatch.setenv("KIT_STRICT", "0")  # restored after the test

    def not_shifted(logits, labels):
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(),
                               ignore_index=-100)
    exec(browser.STRICT["source"], {})
    with pytest.raises(AssertionError, match="causal_lm_loss"):
        check("causal_lm_loss", not_shifted)
    exec(browser.LENIENT["source"], {"os": os})
    assert check("causal_lm_loss", not_shifted).status == "failed"


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
    assert "tests" in ran
    assert run_tests.SUITES["solutions"][2] == {"KIT_STRICT": "1"}


def test_every_notebook_runs_in_both_languages_across_two_suites():
    """Each suite runs each notebook once, English or Japanese (their code
    cells are the same); the other suite runs it in the other language."""
    names = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    seen = {}
    for kind in ("solutions", "learners"):
        command = run_tests.SUITES[kind][1]
        ran = [arg for arg in command if arg.endswith(".ipynb")]
        assert sorted(Path(arg).name for arg in ran) == names, kind
        for arg in ran:
            assert (ROOT / arg).is_file(), arg
            seen.setdefault(Path(arg).name, set()).add(
                (kind, "/ja/" in f"/{arg}"))
    assert len(names) >= 7 and all(  # one language a suite, both in all
        {ja for _, ja in both} == {False, True} for both in seen.values())
    assert run_tests.copies("solutions")[:2] == [
        "notebooks/solutions/00_setup.ipynb",
        "notebooks/ja/solutions/01_stock_compute_loss.ipynb"]


def test_the_notebook_suites_use_warm_kernels():
    for name in ("solutions", "learners"):
        command = run_tests.SUITES[name][1]
        assert command[3:8] == ["-p", "tools.warm_kernels", "-p",
                                "tools.japanese_outputs", "--nbval-lax"]


def test_a_japanese_notebook_that_prints_english_fails(tmp_path):
    """tools.japanese_outputs: a cell of a copy under notebooks/ja/ that
    prints an English sentence fails; names, numbers, Japanese, the
    source show() displays and English copies pass."""
    import os
    import subprocess
    folder = tmp_path / "notebooks" / "ja"
    folder.mkdir(parents=True)
    cells = ["print('the loss fell, the margin rose')",
             "print(f'損失: {0.5:.2f}、loss_type=\\'sigmoid\\'、"
             "rewards/margins 1.2')",
             "def show(x): print('the source of a function')\nshow(1)"]
    ja = notebook(folder / "ja.ipynb", *cells)
    en = notebook(tmp_path / "en.ipynb", *cells)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tools.japanese_outputs",
         "--nbval-lax", "-q", "-p", "no:cacheprovider", ja, en],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1",
             "KIT_WARM_KERNELS": "0"})
    out = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout)
    assert "1 failed, 5 passed" in out, out
    assert "English in a Japanese notebook's output" in out
    assert "['the loss fell', 'the margin rose']" in out


def notebook(path, *cells):
    import nbformat
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(cell) for cell in cells]
    nbformat.write(book, str(path))
    return str(path)


def test_warm_kernels_run_cells_and_a_failing_cell_still_fails(tmp_path):
    """nbval under tools.warm_kernels: the kernel is a fork that already
    has torch, its outputs and errors reach nbval, a failing cell fails,
    and the zygote ends with the run."""
    import os
    import subprocess
    import nbformat
    warm = notebook(tmp_path / "warm.ipynb",
                    "import sys\nprint('torch' in sys.modules)",
                    "assert 'torch' in sys.modules, 'a cold kernel'")
    fails = notebook(tmp_path / "fails.ipynb", "1 + 1",
                     "raise ValueError('the cell failed')")
    # and a training cell its solution copy has as it is: skipped
    (tmp_path / "solutions").mkdir()
    for folder in (tmp_path, tmp_path / "solutions"):
        nbformat.write(copy(("print('trained')", ["train"]),
                            "print('checked')"), str(folder / "shared.ipynb"))
    shared = str(tmp_path / "shared.ipynb")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tools.warm_kernels",
         "-p", "tools.shared_cells", "--skip-shared-cells", "-rs",
         "--nbval-lax", "-q", "-p", "no:cacheprovider", warm, fails, shared],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"})
    out = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout)  # nbval's colours
    assert "ValueError: the cell failed" in out, out
    assert "1 failed, 4 passed, 1 skipped" in out, out + run.stderr
    assert "the solution suite runs" in out, out
    assert "warm kernels unavailable" not in run.stderr


def test_warm_kernels_leave_other_runs_alone(monkeypatch):
    """No nbval, or a kernel already named: no zygote, nbval as it was."""
    spec = importlib.util.spec_from_file_location(
        "warm_kernels", ROOT / "tools" / "warm_kernels.py")
    warm_kernels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(warm_kernels)
    started = []
    monkeypatch.setattr(warm_kernels, "_start",
                        lambda *args: started.append(args))

    class Option:
        nbval = nbval_lax = current_env = False
        nbval_kernel_name = None

    class Config:
        option = Option()

    warm_kernels.pytest_configure(Config)  # a plain pytest run
    Option.nbval_lax, Option.nbval_kernel_name = True, "python3"
    warm_kernels.pytest_configure(Config)  # the kernel was chosen
    assert started == [] and Option.nbval_kernel_name == "python3"
    monkeypatch.setenv("KIT_WARM_KERNELS", "0")
    Option.nbval_kernel_name = None
    warm_kernels.pytest_configure(Config)
    assert started == [] and Option.nbval_kernel_name is None


# ----------------------- learner cells the solution suite already runs

def load_shared_cells():
    spec = importlib.util.spec_from_file_location(
        "shared_cells", ROOT / "tools" / "shared_cells.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy(*cells):
    """A notebook of code cells: (source, tags) or a source alone."""
    import nbformat
    book = nbformat.v4.new_notebook()
    for cell in cells:
        source, tags = cell if isinstance(cell, tuple) else (cell, [])
        book.cells.append(nbformat.v4.new_code_cell(
            source, metadata={"tags": tags}))
    return book


def test_only_cells_that_do_the_same_in_both_copies_are_skipped():
    shared_cells = load_shared_cells().shared_cells
    before = ["import torch\n!pip list",                        # 0
              ("curves = {}\nfor k in 'ab':\n    curves[k] = k",  # 1 skipped
               ["train"])]
    after = [("trainer = MyTrainer()", ["train"]),     # 3 uses the stub
             ("result = trainer.train()", ["train"]),  # 4 through 3
             ("held_out = load()", ["train"]),         # 5 read by 7
             ("explore()", ["plot"]),                  # 6 skipped
             "print(held_out)",                        # 7 not tagged
             ("side = 1", ["train", "raises-exception"])]  # 8
    last = ("from kit import losses\nlosses.dpo_loss", ["train"])  # 10
    learner = copy(*before, "class MyTrainer:\n    raise NotImplementedError",
                   *after, ("other = 3", ["train"]), last)
    solution = copy(*before, "class MyTrainer:\n    pass",  # 2 the stub
                    *after, ("other = 2", ["train"]), last)  # 9 differs
    assert shared_cells(learner, solution) == {1, 6, 10}
    assert shared_cells(learner, copy(*before)) == set()  # not one source


def test_a_skipped_cell_is_one_whose_names_no_later_cell_reads():
    shared_cells = load_shared_cells().shared_cells
    cells = [("x = 1", ["train"]), ("y = x + 1", ["train"]), "print(y)"]
    assert shared_cells(copy(*cells), copy(*cells)) == set()
    cells[2] = "print('no y')"
    assert shared_cells(copy(*cells), copy(*cells)) == {0, 1}


def test_the_learner_suite_skips_shared_cells_only_beside_the_solutions():
    assert "--skip-shared-cells" in run_tests.command_for(
        "learners", ["learners", "solutions"])
    assert "--skip-shared-cells" not in run_tests.command_for(
        "learners", ["learners"])
    assert "--skip-shared-cells" not in run_tests.command_for(
        "solutions", ["learners", "solutions"])
    shared_cells = load_shared_cells().shared_cells
    import nbformat
    path = ROOT / "notebooks" / "07_loss_types.ipynb"
    learner, solution = (nbformat.read(p, as_version=4) for p in (
        path, path.parent / "solutions" / path.name))
    code = [c for c in learner.cells if c.cell_type == "code"]
    skipped = shared_cells(learner, solution)
    # the grpo-vs-dapo training, not the exercises or their checks
    assert any("loss_type_comparison" in code[i].source for i in skipped)
    assert not any("check(" in code[i].source for i in skipped)
