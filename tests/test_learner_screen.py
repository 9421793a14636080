"""What a learner's copy shows before their code exists: no empty figure of
a run that fails at its first step, no "expected ... to climb" line about a
run that was never theirs (issue 42: notebook 05)."""

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from kit import course, live
from kit.checks import EXERCISES


@pytest.fixture
def shown(monkeypatch):
    """Pretend to be in a notebook; count what is displayed."""
    calls = []
    monkeypatch.setattr(live, "_display", lambda figure: calls.append(figure))
    monkeypatch.setattr(live, "_in_notebook", lambda: True)
    monkeypatch.setattr(live, "headless", lambda: False)
    return calls


def test_a_step_0_evaluation_alone_draws_no_figure(shown):
    """GRPO and DPO evaluate at step 0, before the step that raises."""
    callback = live.LivePlotCallback(("reward",), min_interval=0.0)
    state = TrainerState(max_steps=400, is_world_process_zero=True)
    args = TrainingArguments("unused", report_to="none")
    callback.on_train_begin(args, state, TrainerControl())
    state.log_history.append({"eval_reward": 0.4, "step": 0})
    callback.on_log(args, state, TrainerControl(), logs={})
    assert shown == []  # ... and the first training step raises
    state.global_step = 1
    state.log_history.append({"loss": 0.1, "reward": 0.5, "step": 1})
    callback.on_log(args, state, TrainerControl(), logs={})
    assert len(shown) == 1  # the first training log draws, with step 0


@pytest.fixture
def notebook_05(monkeypatch):
    monkeypatch.delenv("KIT_STRICT", raising=False)
    monkeypatch.setitem(course.COPY, "notebook", 5)
    for exercise in EXERCISES.values():
        exercise.passed = False
    yield [e for e in EXERCISES.values() if e.notebook.startswith("05")]
    for exercise in EXERCISES.values():
        exercise.passed = False


def test_an_expectation_waits_for_the_learners_code(notebook_05, capsys):
    course.expect("held-out accuracy to climb", False, "0.31 -> 0.30")
    assert capsys.readouterr().out == ""
    notebook_05[0].passed = True  # one of two: still not the learner's run
    course.expect("held-out accuracy to climb", False, "0.31 -> 0.30")
    assert capsys.readouterr().out == ""
    for exercise in notebook_05:
        exercise.passed = True
    course.expect("held-out accuracy to climb", False, "0.31 -> 0.30")
    assert "expected held-out accuracy to climb" in capsys.readouterr().out


def test_the_solutions_run_still_fails_on_a_broken_promise(notebook_05,
                                                           monkeypatch):
    monkeypatch.setenv("KIT_STRICT", "1")
    with pytest.raises(AssertionError, match="accuracy to climb"):
        course.expect("held-out accuracy to climb", False, "0.31 -> 0.30")


def test_an_unfinished_exercise_says_one_line_and_ends_well(capsys):
    """Run All goes on past a stub with its prompts: the cell's reply is
    "ok" (ipykernel replies `result.success`), any other error still an
    error."""
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        course.stubs_stop_politely(shell)
        course.stubs_stop_politely(shell)  # a second setup_notebook()
        stub = shell.run_cell(
            'raise NotImplementedError("exercise: write your code here")')
        assert stub.success
        out = capsys.readouterr().out
        assert out.count("Not done yet") == 1 and "Traceback" not in out
        assert not shell.run_cell("1 / 0").success
        assert "ZeroDivisionError" in capsys.readouterr().out
    finally:
        InteractiveShell.clear_instance()


MAINTAINERS_WORDS = ("make test", "KIT_STRICT", "nbval", "solution's run",
                     "the machine that made")


@pytest.mark.parametrize("folder", ["notebooks", "notebooks/ja"])
def test_no_learner_cell_carries_a_maintainers_comment(folder):
    import json
    from kit.runtime import ROOT
    for path in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            comments = [line for line in "".join(cell["source"]).splitlines()
                        if line.lstrip().startswith("#")]
            for line in comments:
                assert not any(word in line for word in MAINTAINERS_WORDS), (
                    f"{path.name}: {line}")
