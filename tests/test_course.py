"""One source, two notebook sets: the build, its check, the exercises."""

import subprocess
import sys

import nbformat
import torch
import pytest

from kit import course
from kit.builder import notebooks, paths
from kit.grading import submissions
from kit.checks import EXERCISES

SOURCE = '''\
def f(x):
    ### BEGIN SOLUTION
    return x + 1
    ### END SOLUTION

### BEGIN SOLUTION
y = f(1)
### END SOLUTION
'''


def test_the_solved_cell_drops_the_markers():
    assert (notebooks.solved(SOURCE)
            == "def f(x):\n    return x + 1\n\ny = f(1)")


def test_the_learner_cell_gets_stubs_and_knows_it_raises():
    text, raises = notebooks.learner(SOURCE)
    stub = notebooks.STUB
    assert text == ("def f(x):\n    " + stub + "\n\n" + stub)
    assert raises  # the second stub runs at top level


def test_a_stub_inside_a_function_does_not_raise_on_definition():
    text, raises = notebooks.learner(SOURCE.split("\n\n")[0])
    assert not raises and "NotImplementedError" in text


def test_an_explicit_stub_replaces_the_solution():
    source = ("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION\n"
              "### BEGIN STUB\nanswer = None\n### END STUB\nprint(answer)")
    assert notebooks.solved(source) == "answer = 42\nprint(answer)"
    assert notebooks.learner(source) == ("answer = None\nprint(answer)", False)


@pytest.mark.parametrize("broken", [
    "### BEGIN SOLUTION\nx = 1",  # never closed
    "x = 1\n### END SOLUTION",  # no begin
    "### BEGIN SOLUTION\n### BEGIN STUB\n### END STUB\n### END SOLUTION",
])
def test_broken_markers_are_reported(broken):
    with pytest.raises(ValueError):
        notebooks.solved(broken)


def test_build_check_names_a_stale_notebook(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "07_demo.py").write_text(
        "# %%\n" + SOURCE + "\n# %% tags=[\"uses-exercise\"]\nprint(y)\n")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(paths, "SOURCES", tmp_path / "src")
    monkeypatch.setattr(paths, "SOLUTIONS", tmp_path / "solutions")
    assert len(notebooks.build()[0]) == 2  # both written
    assert notebooks.build(check=True) == ([], [])
    learner = nbformat.read(tmp_path / "07_demo.ipynb", as_version=4)
    assert "raises-exception" in learner.cells[-1].metadata["tags"]
    solved = nbformat.read(tmp_path / "solutions" / "07_demo.ipynb", 4)
    assert "tags" not in solved.cells[-1].metadata
    (tmp_path / "src" / "07_demo.py").write_text("# %%\nprint('changed')\n")
    assert notebooks.build(check=True) == ([
        tmp_path / "07_demo.ipynb", tmp_path / "solutions" / "07_demo.ipynb"],
        [])


@pytest.fixture
def built(tmp_path, monkeypatch):
    """A course of one source, built: its source file."""
    (tmp_path / "src").mkdir()
    source = tmp_path / "src" / "07_demo.py"
    source.write_text("# %%\n" + SOURCE + "\n")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(paths, "SOURCES", tmp_path / "src")
    monkeypatch.setattr(paths, "SOLUTIONS", tmp_path / "solutions")
    notebooks.build()
    return source


def test_build_keeps_a_notebook_that_holds_a_learners_answers(
        tmp_path, built):
    # N74: before, build --check said "out of date" and build overwrote it
    source = built
    learner_copy = tmp_path / "07_demo.ipynb"
    notebook = nbformat.read(learner_copy, as_version=4)
    notebook.cells[-1].source = "y = 'my answer'"
    notebook.cells[-1].outputs = [nbformat.v4.new_output(
        "stream", text="ran\n")]
    nbformat.write(notebook, learner_copy)
    answered = learner_copy.read_text()
    source.write_text("# %%\nprint('changed')\n")
    assert notebooks.build(check=True) == (
        [learner_copy, tmp_path / "solutions" / "07_demo.ipynb"],
        [learner_copy])
    notebooks.build()  # writes the solved copy, keeps the answers
    assert learner_copy.read_text() == answered
    assert "changed" in (tmp_path / "solutions" / "07_demo.ipynb").read_text()
    notebooks.build(force=True)
    assert "changed" in learner_copy.read_text()


def test_running_a_notebook_is_not_an_edit(tmp_path, built):
    """Outputs and execution counts are what running writes: not answers."""
    source = built
    learner_copy = tmp_path / "07_demo.ipynb"
    notebook = nbformat.read(learner_copy, as_version=4)
    notebook.cells[-1].execution_count = 3
    notebook.cells[-1].outputs = [nbformat.v4.new_output(
        "stream", text="ran\n")]
    nbformat.write(notebook, learner_copy)
    source.write_text("# %%\nprint('changed')\n")
    assert notebooks.build()[1] == []
    assert "changed" in learner_copy.read_text()


def test_an_open_solution_marker_names_the_file_and_cell(tmp_path,
                                                         monkeypatch, capsys):
    # N75: before, a ValueError that named neither
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "07_demo.py").write_text(
        "# %%\nx = 1\n# %%\n### BEGIN SOLUTION\ny = 2\n")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(paths, "SOURCES", tmp_path / "src")
    monkeypatch.setattr(paths, "SOLUTIONS", tmp_path / "solutions")
    with pytest.raises(ValueError, match=r"^notebooks/src/07_demo.py, cell 2: "):
        notebooks.build()
    from kit import cli
    assert cli.main(["build"]) == 2  # one line, no traceback
    assert capsys.readouterr().err.startswith(
        "notebooks/src/07_demo.py, cell 2: ")


def test_committed_notebooks_match_their_sources():
    result = subprocess.run([sys.executable, "-m", "kit", "build", "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def committed_notebooks():
    return sorted(paths.NOTEBOOKS.glob("*.ipynb")) + sorted(
        paths.SOLUTIONS.glob("*.ipynb"))


@pytest.mark.parametrize("path", committed_notebooks(), ids=lambda p: str(
    p.relative_to(paths.NOTEBOOKS)))
def test_committed_notebooks_are_clean_and_open_on_colab(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert "widgets" not in notebook.metadata
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None
            assert all(len(line) <= 79 for line in cell.source.splitlines()), (
                "lines must fit Colab")
    # the badge opens this very notebook, in its own set, on Colab
    folder = path.parent.relative_to(paths.ROOT).as_posix()
    assert (f"colab.research.google.com/github/{paths.REPOSITORY}/blob/main/"
            f"{folder}/{path.name})") in notebook.cells[0].source
    assert notebook.cells[1].source == notebooks.COLAB_INSTALL
    intro = notebook.cells[2].source
    assert "**You will:**" in intro and "**Time:**" in intro


def test_the_colab_install_cell_says_so_when_pip_fails(monkeypatch, capsys):
    import subprocess as real
    import types
    calls = []

    def failing_run(command, **kwargs):
        calls.append(command)
        return types.SimpleNamespace(returncode=1)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("colab"))
    monkeypatch.setattr(real, "run", failing_run)
    exec(notebooks.COLAB_INSTALL, {})
    (command,) = calls
    assert command[-1] == f"git+https://github.com/{paths.REPOSITORY}"
    assert not any("lab" in part or "torch" in part for part in command)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("❌ Could not install the kit")


def test_the_colab_install_cell_does_nothing_elsewhere(monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(notebooks.COLAB_INSTALL, {})
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("path", sorted(paths.NOTEBOOKS.glob("*.ipynb")),
                         ids=lambda p: p.name)
def test_every_checked_exercise_is_registered_for_its_notebook(path):
    ids = submissions.exercises_in(nbformat.read(path, as_version=4))
    for exercise_id in ids:
        assert EXERCISES[exercise_id].notebook == path.stem


def test_every_exercise_has_hints_and_a_solution():
    for exercise in EXERCISES.values():
        assert exercise.hints and exercise.solution is not None
        assert 1 <= exercise.stars <= 3


def test_setup_notebook_keeps_the_trainers_progress_bar(tmp_path):
    """Quiet logs must not turn the bar into printed log dicts (00)."""
    import logging

    import transformers
    from transformers import PrinterCallback
    logger = logging.getLogger("transformers.training_args")
    verbosity, level = transformers.logging.get_verbosity(), logger.level
    try:
        course.setup_notebook()
        assert transformers.logging.get_verbosity() == logging.ERROR
        args = transformers.TrainingArguments(str(tmp_path),
                                              report_to="none")
        assert args.disable_tqdm is False  # the Trainer adds its bar
        trainer = transformers.Trainer(
            model=torch.nn.Linear(1, 1), args=args)
        assert PrinterCallback not in [
            type(c) for c in trainer.callback_handler.callbacks]
    finally:
        transformers.logging.set_verbosity(verbosity)
        logger.setLevel(level)


# ------------------------------------------- the text a learner reads

def cells(*sources):
    """Notebook cells from ('markdown' | 'code', text) pairs."""
    return [nbformat.v4.new_markdown_cell(text) if kind == "markdown"
            else nbformat.v4.new_code_cell(text) for kind, text in sources]


# 03 as it was: a `# %% [markdown]` missing after the explorer's cell
EXERCISE_IN_CODE = '''from kit.explore import explore_dpo

explore_dpo()
#
# ## ★★★ Exercise 4: DPO's `compute_loss`
#
# 1. one forward pass of `model`;
# 2. the same for `self.ref_model` under `torch.no_grad()`;
# 3. `.chunk(2)` splits chosen from rejected.'''


def test_a_heading_inside_a_code_cell_is_a_problem():
    from kit.builder.prose import problems
    found = problems(cells(("markdown", "## Explore"),
                           ("code", EXERCISE_IN_CODE)))
    assert any("★★★ Exercise 4" in line and "cell 1 (code, under "
               "'Explore')" in line for line in found), found
    assert any("ends in 4 lines of comments" in line for line in found)
    fixed = EXERCISE_IN_CODE.split("\n#\n")[0]
    assert problems(cells(("markdown", "## Explore"), ("code", fixed),
                          ("markdown", EXERCISE_IN_CODE.split("\n#\n", 1)[
                              1].replace("# ", "")))) == []


def test_solution_markers_and_short_comments_are_not_prose():
    from kit.builder.prose import problems
    code = ("def f(x):\n    ### BEGIN SOLUTION\n    return x\n"
            "    ### END SOLUTION\n\n# a note\n# on two lines")
    assert problems(cells(("code", code))) == []


DPO_PLOT = ('trainer = recipes.dpo_trainer("cpu", callbacks=[LivePlotCallback('
            '("rewards/margins", "rewards/accuracies"), title="DPO")])')
GRPO_PLOT = ('trainer = recipes.grpo_trainer("cpu", callbacks=['
             'LivePlotCallback("reward")])')


@pytest.mark.parametrize("prose, code, wrong", [
    ("The middle panel shows the margins.", DPO_PLOT, "middle"),  # 03
    ("The right-hand panel shows the margins.", DPO_PLOT, None),
    ("The middle panel shows the reward.", GRPO_PLOT, None),  # 3 panels
    ("Watch the generation panel.", GRPO_PLOT, None),
    ("Watch the generation panel.", DPO_PLOT, "generation"),
    ("The `kl` panel rises.", GRPO_PLOT, "kl"),
    ("The left panel: one pair's loss.", "explore_dpo()", None),
    ("The left panel: the clip.", "explore_clip()", "left"),
    ("The right-hand panel shows it.", "print(1)", "right-hand"),
    ("A panel for generation joins in notebook 04.", DPO_PLOT, None),
])
def test_prose_names_only_panels_the_figure_has(prose, code, wrong):
    from kit.builder.prose import problems
    found = problems(cells(("markdown", prose), ("code", "x = 1"),
                           ("code", code)))
    if wrong is None:
        assert found == []
    else:
        assert len(found) == 1 and f"{wrong}" in found[0], found


def test_build_fails_on_a_text_problem_and_names_it(tmp_path, monkeypatch,
                                                    capsys):
    from kit import cli
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "07_demo.py").write_text(
        "# %% [markdown]\n# ## Explore\n\n# %%\n" + EXERCISE_IN_CODE + "\n")
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(paths, "SOURCES", tmp_path / "src")
    monkeypatch.setattr(paths, "SOLUTIONS", tmp_path / "solutions")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    assert cli.main(["build"]) == 1  # written, and still a failure
    assert cli.main(["build", "--check"]) == 1
    out = capsys.readouterr().out
    assert "notebooks/src/07_demo.py: cell 1 (code, under 'Explore'): a " \
           "heading or exercise text as a comment" in out


def test_notebooks_carry_the_kernelspec_jupyterlab_writes():
    """JupyterLab rewrites a kernelspec that differs from the kernel's own,
    and the notebook then shows as modified the moment it opens."""
    from ipykernel.kernelspec import KERNEL_NAME, get_kernel_dict
    kernel = get_kernel_dict()
    expected = {"display_name": kernel["display_name"],
                "language": kernel["language"], "name": KERNEL_NAME}
    for path in committed_notebooks():
        notebook = nbformat.read(path, as_version=4)
        assert notebook.metadata["kernelspec"] == expected, path.name


# ------------------------------------------------ what `make lab` serves

LAB = paths.ROOT / "tools" / "lab"


def test_make_lab_turns_jupyterlabs_news_off_with_a_setting_it_has():
    """No 'get notified about official Jupyter news?' pop-up: the override
    names a plugin, setting and value of the installed JupyterLab."""
    pytest.importorskip("jupyterlab")
    import json
    from pathlib import Path

    from jupyterlab.commands import get_app_dir
    overrides = json.loads((LAB / "labconfig" /
                            "default_setting_overrides.json").read_text())
    for plugin, values in overrides.items():
        package, name = plugin.split(":")
        schema = json.loads((Path(get_app_dir()) / "schemas" / package /
                             f"{name}.json").read_text())["properties"]
        for key, value in values.items():
            allowed = [c["const"] for c in schema[key].get("oneOf", [])]
            assert value in allowed or type(value).__name__ == {
                "boolean": "bool"}.get(schema[key]["type"]), (key, value)
    assert overrides["@jupyterlab/apputils-extension:notification"][
        "fetchNews"] == "false"  # "none" asks, with the pop-up
    command = subprocess.run(["make", "-n", "-o", "setup", "lab"],
                             cwd=paths.ROOT, capture_output=True,
                             text=True).stdout
    assert f"JUPYTER_CONFIG_PATH={LAB}" in command


def lab_manager(root):
    import json

    from kit.builder.lab import CourseContentsManager
    config = json.loads((LAB / "jupyter_server_config.json").read_text())
    assert config["ServerApp"]["contents_manager_class"] == (
        "kit.builder.lab.CourseContentsManager")
    return CourseContentsManager(root_dir=str(root),
                                 **config["ContentsManager"])


def test_make_lab_leaves_sources_and_solutions_out_of_the_file_browser(
        tmp_path):
    import asyncio

    from jupyter_server.services.contents.manager import ContentsManager
    for folder in ("src", "solutions", "__pycache__"):
        (tmp_path / folder).mkdir()
    (tmp_path / "solutions" / "01.ipynb").write_text(
        nbformat.writes(nbformat.v4.new_notebook()))
    manager = lab_manager(tmp_path)
    assert set(ContentsManager().hide_globs) <= set(
        manager.hide_globs)  # what Jupyter hides stays hidden
    listing = asyncio.run(manager.get(""))
    assert [item["name"] for item in listing["content"]] == []
    # still reachable for instructors, by its path
    assert asyncio.run(manager.get("solutions/01.ipynb"))["type"] == (
        "notebook")


def test_make_lab_serves_notebooks_as_their_kernel_will_describe_them(
        tmp_path):
    """JupyterLab marks a notebook modified when the kernel's kernelspec or
    language_info (with this Python's version) differs from the file's."""
    import asyncio

    from ipykernel.ipkernel import IPythonKernel
    built = notebooks.build_one(paths.SOURCES / "00_setup.py")
    path = next(p for p in built if p.parent == paths.NOTEBOOKS)
    (tmp_path / "00.ipynb").write_text(built[path])
    model = asyncio.run(lab_manager(tmp_path).get("00.ipynb"))
    metadata = model["content"]["metadata"]
    assert metadata["language_info"] == IPythonKernel.language_info
    assert metadata["kernelspec"] == notebooks.KERNELSPEC
