"""The machinery of check(): named mistakes, copies, time limit, records."""

import json
import threading

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from kit import checks, losses
from kit.checks import EXERCISES
from kit.checks.messages import MESSAGES

CATALOGUE = [(exercise.id, mistake) for exercise in EXERCISES.values()
             for mistake in exercise.mistakes]

# the minimum each catalogue must hold (issue 9, item 1)
REQUIRED = {
    "causal_lm_loss": {"not_shifted", "shifted_wrong_way", "minus_100_counted",
                       "per_sequence_mean", "sum_not_divided",
                       "minus_100_as_token_0", "detached"},
    "compute_loss": {"always_tuple", "ignores_return_outputs",
                     "divides_by_none", "divides_by_ga_too", "detached"},
    "stop_callback": {"loss_on_eval_log", "should_epoch_stop",
                      "missing_loss_as_zero"},
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

pytestmark = pytest.mark.usefixtures("lenient")


def test_every_catalogue_holds_the_required_mistakes():
    for exercise_id, required in REQUIRED.items():
        have = {m.id for m in EXERCISES[exercise_id].mistakes}
        assert required <= have, (exercise_id, required - have)
    for exercise in EXERCISES.values():
        for mistake in exercise.mistakes:
            assert mistake.why and mistake.hint and callable(mistake.code)


@pytest.mark.parametrize("exercise_id, mistake", CATALOGUE,
                         ids=[f"{e}-{m.id}" for e, m in CATALOGUE])
def test_each_known_mistake_is_named_and_hint_1_is_its_rung(exercise_id,
                                                            mistake, capsys):
    # one check a mistake (some train and resume): the verdict, then the
    # ladder's first rung right after it
    exercise = EXERCISES[exercise_id]
    result = checks.check(exercise_id, mistake.code)
    assert result.status == "failed" and not result
    assert result.mistake == mistake.id
    out = capsys.readouterr().out
    stars = "★" * exercise.stars
    assert (f"❌ failed · {exercise_id} {stars}: {mistake.title} — "
            f"{mistake.why}\n"
            f"   hint: {mistake.hint}\n") in out
    checks.hint(exercise_id, 1)
    assert capsys.readouterr().out == (
        f"hint 1/{len(exercise.hints)}: "
        f"{exercise.hints[mistake.rung - 1]}\n")
    checks.hint(exercise_id, len(exercise.hints))  # the ladder is all there
    assert "hint" in capsys.readouterr().out


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_every_mistake_has_a_rung(exercise_id):
    exercise = EXERCISES[exercise_id]
    for mistake in exercise.mistakes:
        assert (isinstance(mistake.rung, int)
                and 1 <= mistake.rung <= len(exercise.hints)), mistake.id
    for symptom, rung in exercise.symptoms.items():
        assert symptom in checks.advice.SYMPTOMS
        assert 1 <= rung <= len(exercise.hints)


def test_a_named_mistake_gives_its_own_hint_not_the_next_in_line(capsys):
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
    assert ("❌ failed · causal_lm_loss ★: your code ran for more than 1 s (an "
            "endless loop?)") in capsys.readouterr().out
    # the timer is gone: a slow answer after it is not cut short
    assert checks.check("causal_lm_loss", losses.causal_lm_loss, timeout=1)


def test_an_endless_loop_gets_a_hint_about_loops_not_the_ladder(capsys):
    checks.check("causal_lm_loss", loops_for_ever, timeout=1)
    out = capsys.readouterr().out
    assert "hint: a loop whose condition never changes" in out
    assert "reshape" not in out  # not the ladder's next rung


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
    assert capsys.readouterr().out.startswith("hint 3/4: Leave -100")


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


# ----------------------------------------------- one line, no traceback

@pytest.mark.parametrize("show", [checks.check, checks.hint, checks.solution])
def test_an_unknown_id_gets_one_line_not_a_traceback(show, capsys):
    arguments = ("no_such_exercise", None)[:2 if show is checks.check else 1]
    result = show(*arguments)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no_such_exercise" in out
    assert "causal_lm_loss" in out  # the ids there are
    if show is checks.check:
        assert result.status == "failed" and not result


def test_an_unknown_id_fails_in_strict_mode(monkeypatch):
    monkeypatch.setenv("KIT_STRICT", "1")
    with pytest.raises(AssertionError, match="no_such_exercise"):
        checks.check("no_such_exercise", None)


class SomeTrainer(torch.nn.Module):
    pass


@pytest.mark.parametrize("exercise_id, candidate, expected", [
    ("prepare_inputs", None, "expects a class, a subclass of GRPOTrainer "
                             "with your _prepare_inputs, got None"),
    ("causal_lm_loss", checks.nb01_stock_loss.MyTrainer,
     "expects a function like causal_lm_loss("),
    ("compute_loss", losses.causal_lm_loss, "expects a class, a subclass of "
                                            "Trainer with your compute_loss, "
                                            "got the function causal_lm_loss"),
    ("compute_loss", SomeTrainer, "got the class SomeTrainer, which does "
                                  "not subclass Trainer"),
    ("stop_callback", checks.nb02_callbacks.StopAtLoss(1.0),
     "got an instance: pass the class itself"),
    ("callback_or_subclass", ["callback"], "expects a dict"),
])
def test_the_wrong_kind_of_answer_is_told_what_check_expects(
        exercise_id, candidate, expected, capsys):
    result = checks.check(exercise_id, candidate)
    out = capsys.readouterr().out
    assert result.status == "failed" and expected in result.message
    assert out.count("\n") == 1 and "Traceback" not in out
    assert "raised" not in out


@pytest.mark.parametrize("timeout", [0, -1, "10", None, True, float("nan")])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout, capsys):
    result = checks.check("causal_lm_loss", losses.causal_lm_loss,
                          timeout=timeout)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "timeout" in out and "> 0" in out
    assert not result and "itimer" not in out


@pytest.mark.parametrize("keyword", ["timout", "time_limit", "strict"])
def test_a_misspelt_keyword_is_named_not_swallowed(keyword):
    # before, check(..., **options) took any keyword: timout=60 left the
    # 20 s limit in place without a word
    with pytest.raises(TypeError, match=keyword):
        checks.check("causal_lm_loss", losses.causal_lm_loss,
                     **{keyword: 60})


@pytest.mark.parametrize("timeout", [float("inf"), 1e12])
def test_a_timeout_too_long_for_the_timer_means_no_limit(timeout):
    assert checks.check("causal_lm_loss", losses.causal_lm_loss,
                        timeout=timeout)


def test_the_checkers_own_error_is_not_blamed_on_the_learner(monkeypatch,
                                                             capsys):
    # a judge that breaks inside kit code, whatever the answer
    monkeypatch.setattr(EXERCISES["causal_lm_loss"], "judge",
                        losses.causal_lm_loss)
    result = checks.check("causal_lm_loss", losses.causal_lm_loss)
    out = capsys.readouterr().out
    assert result.status == "failed" and "your code raised" not in out
    assert "the checker itself failed" in out and "report it" in out


def test_the_learners_own_error_is_still_the_learners(capsys):
    def broken(logits, labels):
        raise ValueError("mine")
    result = checks.check("causal_lm_loss", broken)
    assert "your code raised ValueError: mine" in result.message


def dpo_per_pair_losses():
    from kit.checks.nb03_dpo_trainer import MyDPOTrainer

    class PerPair(MyDPOTrainer):
        def compute_loss(self, model, inputs, return_outputs=False,
                         num_items_in_batch=None):
            ids, mask = inputs["input_ids"], inputs["attention_mask"]
            logits = model(input_ids=ids, attention_mask=mask).logits
            logps = losses.sequence_logps(logits, ids,
                                          inputs["completion_mask"])
            with torch.no_grad():
                ref = losses.sequence_logps(self.ref_model(
                    input_ids=ids, attention_mask=mask).logits, ids,
                    inputs["completion_mask"])
            out = losses.dpo_loss(*logps.chunk(2), *ref.chunk(2),
                                  beta=self.args.beta)
            return out[0]  # (B,): one loss per pair
    return PerPair


def test_a_per_pair_dpo_loss_is_not_told_its_code_raised(capsys):
    result = checks.check("dpo_compute_loss", dpo_per_pair_losses())
    assert result.status == "failed"
    assert "your code raised" not in result.message
    assert "grad can be implicitly created" not in capsys.readouterr().out \
        or "the checker itself failed" in result.message


# -------------------------------------------- not the learner's exception

class OuterAlarm(Exception):
    """What a harness's SIGALRM handler raises (pytest-timeout, a grader)."""


@pytest.fixture
def outer_alarm():
    """An alarm timer held by something outside, as a harness holds it."""
    import signal

    def ring(signum, frame):
        raise OuterAlarm
    previous = signal.signal(signal.SIGALRM, ring)
    yield ring
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def test_the_time_limit_holds_inside_an_outer_alarm(outer_alarm, capsys):
    import signal
    signal.setitimer(signal.ITIMER_REAL, 60)
    result = checks.check("causal_lm_loss", loops_for_ever, timeout=1)
    assert "ran for more than 1 s" in result.message
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    assert 50 < left < 60  # the outer alarm goes on, less the time spent
    assert signal.getsignal(signal.SIGALRM) is outer_alarm
    # and the next call is limited too
    result = checks.check("causal_lm_loss", loops_for_ever, timeout=1)
    assert "ran for more than 1 s" in result.message


def test_an_outer_alarm_is_not_the_learners_exception(outer_alarm,
                                                      monkeypatch, tmp_path):
    import signal
    monkeypatch.setenv("KIT_GRADE_FILE", str(tmp_path / "grades.jsonl"))
    signal.setitimer(signal.ITIMER_REAL, 1)
    with pytest.raises(OuterAlarm):
        checks.check("causal_lm_loss", loops_for_ever, timeout=20)
    assert not (tmp_path / "grades.jsonl").exists()  # no verdict recorded
    assert signal.getsignal(signal.SIGALRM) is outer_alarm
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # it has rung


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_goes_on_up(error):
    def interrupted(logits, labels):
        raise error
    with pytest.raises(error):
        checks.check("causal_lm_loss", interrupted)


def test_verdict_lines_carry_a_word_beside_the_glyph(capsys):
    checks.check("causal_lm_loss", losses.causal_lm_loss)
    checks.check("causal_lm_loss", loops_for_ever, timeout=0.5)
    checks.check("causal_lm_loss", lambda logits, labels: 1 / 0)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✅ passed · causal_lm_loss ★: ")
    assert out[1].startswith("❌ failed · causal_lm_loss ★: ")
    for status in ("passed", "failed", "not attempted"):
        assert MESSAGES["en"][f"verdict.{status}"].endswith(status)


def test_an_outer_alarm_while_mistakes_are_compared_goes_on_up(
        outer_alarm, monkeypatch):
    import signal
    import time

    def slow_mistake(logits, labels):  # the kit's own code, after the limit
        time.sleep(5)
    mistake = checks.Mistake("slow", slow_mistake)
    monkeypatch.setattr(EXERCISES["causal_lm_loss"], "mistakes", [mistake])
    signal.setitimer(signal.ITIMER_REAL, 1)
    with pytest.raises(OuterAlarm):
        checks.check("causal_lm_loss", off_by_a_little)


def off_by_a_little(logits, labels):
    return losses.causal_lm_loss(logits, labels) + 0.1
