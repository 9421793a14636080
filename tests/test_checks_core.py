"""The machinery of check(): named mistakes, copies, time limit, records."""

import json
import threading

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from kit import checks, losses
from kit.checks import EXERCISES

CATALOGUE = [(exercise.id, mistake) for exercise in EXERCISES.values()
             for mistake in exercise.mistakes]

# the minimum each catalogue must hold (issue 9, item 1)
REQUIRED = {
    "causal_lm_loss": {"not_shifted", "shifted_wrong_way", "minus_100_counted",
                       "per_sequence_mean", "sum_not_divided"},
    "compute_loss": {"always_tuple", "ignores_return_outputs",
                     "divides_by_none"},
    "stop_callback": {"loss_on_eval_log", "should_epoch_stop"},
    "sequence_logps": {"not_shifted", "prompt_included", "mean_not_sum",
                       "mask_not_shifted"},
    "dpo_loss": {"published_snippet", "mean_not_per_pair",
                 "rewards_not_detached", "no_reference"},
    "dpo_compute_loss": {"attention_mask_as_completion_mask",
                         "policy_as_reference", "mean_over_micro_batch"},
    "get_train_dataloader": {"no_times_k", "times_G", "no_sampler",
                             "plain_dataloader"},
    "prepare_inputs": {"generates_every_step", "no_eval_branch",
                       "step_never_counted", "none_values_dropped"},
    "group_advantages": {"whole_batch", "population_std", "view_G_minus_1"},
    "grpo_loss": {"no_min", "max_not_min", "token_level_mean", "no_mask",
                  "detached_logps"},
}


@pytest.fixture(autouse=True)
def lenient(monkeypatch):
    monkeypatch.delenv("KIT_STRICT", raising=False)


def test_every_catalogue_holds_the_required_mistakes():
    for exercise_id, required in REQUIRED.items():
        have = {m.id for m in EXERCISES[exercise_id].mistakes}
        assert required <= have, (exercise_id, required - have)
    for exercise in EXERCISES.values():
        for mistake in exercise.mistakes:
            assert mistake.why and mistake.hint and callable(mistake.code)


@pytest.mark.parametrize("exercise_id, mistake", CATALOGUE,
                         ids=[f"{e}-{m.id}" for e, m in CATALOGUE])
def test_each_known_mistake_is_rejected_and_named(exercise_id, mistake,
                                                  capsys):
    result = checks.check(exercise_id, mistake.code)
    assert result.status == "failed" and not result
    assert result.mistake == mistake.id
    out = capsys.readouterr().out
    stars = "★" * EXERCISES[exercise_id].stars
    assert (f"❌ {exercise_id} {stars}: {mistake.title} — {mistake.why}\n"
            f"   hint: {mistake.hint}\n") in out


def test_a_named_mistake_gives_its_own_hint_not_the_next_in_line(capsys):
    checks.core._failures.pop("causal_lm_loss", None)
    for _ in range(4):  # the 4th unshifted loss still gets the shift hint
        checks.check("causal_lm_loss", EXERCISES["causal_lm_loss"]
                     .mistakes[0].code)
    out = capsys.readouterr().out
    assert out.count("hint: compare logits[:, :-1] with labels[:, 1:]") == 4
    assert "ignore_index" not in out


def test_the_reference_passes_with_no_mistake():
    result = checks.check("causal_lm_loss", losses.causal_lm_loss)
    assert result and result.status == "passed" and result.mistake is None


# ---------------------------------------------------- inputs are copies

def zeroes_the_mask(logits, input_ids, completion_mask):
    completion_mask.zero_()
    return torch.zeros(len(input_ids))


def zeroes_the_mask_for_grpo(per_token_logps, old_per_token_logps,
                             advantages, completion_mask, epsilon=0.2,
                             beta=0.0, ref_per_token_logps=None):
    completion_mask.zero_()
    return (per_token_logps * 0).sum()


@pytest.mark.parametrize("exercise_id, wrong", [
    ("sequence_logps", zeroes_the_mask),
    ("grpo_loss", zeroes_the_mask_for_grpo)])
def test_an_answer_that_changes_its_inputs_is_rejected_and_told(
        exercise_id, wrong, capsys):
    result = checks.check(exercise_id, wrong)
    assert result.status == "failed"
    assert ("your function changed its input `completion_mask` in place"
            in capsys.readouterr().out)


# ------------------------------------------------------------ time limit

def loops_for_ever(logits, labels):
    while True:
        pass


def test_an_endless_loop_fails_after_the_time_limit(capsys):
    result = checks.check("causal_lm_loss", loops_for_ever, timeout=1)
    assert result.status == "failed"
    assert ("❌ causal_lm_loss ★: your code ran for more than 1 s (an "
            "endless loop?)") in capsys.readouterr().out
    # the timer is gone: a slow answer after it is not cut short
    assert checks.check("causal_lm_loss", losses.causal_lm_loss, timeout=1)


def test_outside_the_main_thread_check_still_grades():
    results = []
    thread = threading.Thread(target=lambda: results.append(
        checks.check("causal_lm_loss", losses.causal_lm_loss)))
    thread.start()
    thread.join()
    assert results and results[0].status == "passed"


def test_an_endless_loop_in_a_notebook_cell_lets_the_notebook_go_on():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in (
        "from kit.checks import check\n"
        "def causal_lm_loss(logits, labels):\n"
        "    while True:\n"
        "        pass\n"
        "result = check('causal_lm_loss', causal_lm_loss, timeout=2)",
        "print('went on:', result.status)")]
    NotebookClient(notebook, timeout=60, kernel_name="python3").execute()
    first, second = (cell.outputs[0]["text"] for cell in notebook.cells)
    assert "your code ran for more than 2 s (an endless loop?)" in first
    assert second == "went on: failed\n"


# -------------------------------------------------------- hint, records

@pytest.mark.parametrize("level", ["2", 0, 99, True, 1.5])
def test_hint_refuses_a_bad_level_in_one_line(level, capsys):
    checks.hint("causal_lm_loss", level)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "hint(" in out and "1, 2, 3" in out


def test_hint_prints_the_level_asked(capsys):
    checks.hint("causal_lm_loss", 3)
    assert capsys.readouterr().out.startswith("hint 3/3: ignore_index")


def test_records_carry_status_mistake_and_message(monkeypatch, tmp_path):
    path = tmp_path / "grades.jsonl"
    monkeypatch.setenv("KIT_GRADE_FILE", str(path))
    unshifted = EXERCISES["causal_lm_loss"].mistakes[0].code
    checks.check("causal_lm_loss", unshifted)
    checks.check("causal_lm_loss", losses.causal_lm_loss)
    first, second = [json.loads(line) for line in
                     path.read_text().splitlines()]
    assert first == {"id": "causal_lm_loss", "status": "failed",
                     "mistake": "not_shifted", "message":
                     "not shifted — position t must predict token t+1, so "
                     "drop the last logit and the first label"}
    assert second["status"] == "passed" and second["mistake"] is None


def test_the_clock_stops_while_the_kit_builds_its_trainers():
    import time
    from kit.checks.core import TimeLimit, paused, time_limit
    with time_limit(0.5):
        with paused():  # e.g. loading the policy on a busy machine
            time.sleep(0.8)
    with pytest.raises(TimeLimit):
        with time_limit(0.5):
            while True:
                pass
