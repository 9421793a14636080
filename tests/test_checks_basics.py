"""Every checker accepts the reference and rejects known-wrong answers."""

import pytest
import torch.nn.functional as F
from transformers import Trainer, TrainerCallback

from kit import checks, losses
from kit.checks.callbacks import REQUESTS, StopAtLoss
from kit.trainers import CausalLMTrainer


@pytest.fixture(autouse=True)
def lenient(monkeypatch):
    monkeypatch.delenv("KIT_STRICT", raising=False)


def status(exercise_id, candidate):
    return checks.check(exercise_id, candidate).status


def stub(*args, **kwargs):
    raise NotImplementedError


# ----------------------------------------------------------- causal_lm_loss

def unshifted(logits, labels):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           labels.reshape(-1))


def minus_100_not_ignored(logits, labels):
    logprobs = logits[:, :-1].log_softmax(-1)
    targets = labels[:, 1:].clamp(min=0)  # masked positions become token 0
    return -logprobs.gather(-1, targets.unsqueeze(-1)).mean()


def summed(logits, labels):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                           labels[:, 1:].reshape(-1), reduction="sum")


def per_sequence(logits, labels):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, 1:],
                           reduction="none").mean(-1)


def test_causal_lm_loss_accepts_the_reference():
    assert status("causal_lm_loss", losses.causal_lm_loss) == "passed"


@pytest.mark.parametrize("wrong", [unshifted, minus_100_not_ignored, summed,
                                   per_sequence])
def test_causal_lm_loss_rejects_known_mistakes(wrong, capsys):
    assert status("causal_lm_loss", wrong) == "failed"
    assert "hint" in capsys.readouterr().out


def test_an_untouched_stub_is_not_attempted(capsys):
    result = checks.check("causal_lm_loss", stub)
    assert result.status == "not attempted" and not result
    assert "not attempted" in capsys.readouterr().out


def test_a_wrong_type_or_shape_gets_a_hint_not_a_traceback(capsys):
    assert status("causal_lm_loss", lambda logits, labels: 0.5) == "failed"
    out = capsys.readouterr().out
    assert "should be a torch.Tensor" in out and "Traceback" not in out
    assert status("causal_lm_loss",
                  lambda logits, labels: logits[:, :, 0]) == "failed"
    assert "one number" in capsys.readouterr().out


def test_a_wrong_dtype_gets_a_hint_not_a_traceback(capsys):
    def integer_loss(logits, labels):
        return losses.causal_lm_loss(logits, labels).round().long()
    assert status("causal_lm_loss", integer_loss) == "failed"
    out = capsys.readouterr().out
    assert "has dtype torch.int64, expected torch.float32" in out
    assert "hint" in out and "Traceback" not in out


def test_an_exception_in_the_learners_code_is_reported_briefly(capsys):
    def broken(logits, labels):
        return logits @ labels  # wrong dtypes and shapes
    assert status("causal_lm_loss", broken) == "failed"
    assert "your code raised RuntimeError" in capsys.readouterr().out


def doubled(logits, labels):  # no known mistake: numbers and hints in turn
    return 2 * losses.causal_lm_loss(logits, labels)


def test_an_unknown_mistake_gets_numbers_and_the_hints_in_turn(capsys):
    checks.core._failures.pop("causal_lm_loss", None)
    result = checks.check("causal_lm_loss", doubled)
    assert result.mistake is None and "max difference" in result.message
    checks.check("causal_lm_loss", doubled)
    out = capsys.readouterr().out
    assert "hint 1/3" in out and "hint 2/3" in out


def test_strict_mode_raises_on_a_failure(monkeypatch):
    monkeypatch.setenv("KIT_STRICT", "1")
    with pytest.raises(AssertionError, match="causal_lm_loss"):
        checks.check("causal_lm_loss", summed)
    assert checks.check("causal_lm_loss", losses.causal_lm_loss)


def test_hint_and_solution_print(capsys):
    checks.hint("causal_lm_loss", 2)
    checks.solution("causal_lm_loss")
    out = capsys.readouterr().out
    assert "hint 2/3" in out and "def causal_lm_loss" in out


def test_an_unknown_exercise_lists_the_known_ones():
    with pytest.raises(KeyError, match="causal_lm_loss"):
        checks.check("no_such_exercise", None)


def test_grade_records_go_to_the_grade_file(monkeypatch, tmp_path):
    monkeypatch.setenv("KIT_GRADE_FILE", str(tmp_path / "grades.jsonl"))
    checks.check("causal_lm_loss", stub)
    checks.check("causal_lm_loss", losses.causal_lm_loss)
    lines = (tmp_path / "grades.jsonl").read_text().splitlines()
    assert [line.count('"status"') for line in lines] == [1, 1]
    assert '"not attempted"' in lines[0] and '"passed"' in lines[1]


# ------------------------------------------------------------- compute_loss

class Unshifted(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = unshifted(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


class AlwaysTuple(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        outputs = model(**inputs)
        return outputs.loss, outputs


class LossOnly(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        return model(**inputs).loss


class PerSequence(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = per_sequence(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


class Stub(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        raise NotImplementedError


def test_compute_loss_accepts_the_reference_and_the_stock_trainer():
    assert status("compute_loss", CausalLMTrainer) == "passed"
    assert status("compute_loss", Trainer) == "passed"


@pytest.mark.parametrize("wrong", [Unshifted, AlwaysTuple, LossOnly,
                                   PerSequence])
def test_compute_loss_rejects_known_mistakes(wrong):
    assert status("compute_loss", wrong) == "failed"


def test_compute_loss_stub_is_not_attempted():
    assert status("compute_loss", Stub) == "not attempted"


NOTEBOOK_CELLS = """
import torch.nn.functional as F
from transformers import Trainer

def causal_lm_loss(logits, labels):
    {loss}

class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = causal_lm_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss
"""


@pytest.mark.parametrize("loss", [
    "raise NotImplementedError",  # exercise 1 skipped
    "return F.cross_entropy(logits.flatten(0, 1), labels.flatten())"])
def test_compute_loss_stands_alone_when_exercise_1_is_not_done(loss, capsys):
    scope = {}
    exec(NOTEBOOK_CELLS.format(loss=loss), scope)
    learners = scope["causal_lm_loss"]
    result = checks.check("compute_loss", scope["MyTrainer"])
    out = capsys.readouterr().out
    assert result.status == "passed", out
    assert ("exercise 1 is not done yet: using the kit's `causal_lm_loss` "
            "to check this one") in out
    assert scope["causal_lm_loss"] is learners  # put back afterwards


def test_compute_loss_uses_the_learners_loss_once_it_passes(capsys):
    scope = {}
    exec(NOTEBOOK_CELLS.format(
        loss="return F.cross_entropy(logits[:, :-1].flatten(0, 1), "
             "labels[:, 1:].flatten())"), scope)
    assert status("compute_loss", scope["MyTrainer"]) == "passed"
    assert "not done yet" not in capsys.readouterr().out


# ------------------------------------------------------------ stop_callback

class NeverStops(TrainerCallback):
    def __init__(self, target):
        self.target = target


class StopsAtOnce(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        control.should_training_stop = True


class CrashesOnEvalLogs(StopAtLoss):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs["loss"] < self.target:
            control.should_training_stop = True


class StopsAboveTarget(StopAtLoss):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs.get("loss", 0) > self.target:
            control.should_training_stop = True


def test_stop_callback_accepts_the_reference(capsys):
    assert status("stop_callback", StopAtLoss) == "passed"
    assert "stops a real run at step" in capsys.readouterr().out


@pytest.mark.parametrize("wrong", [NeverStops, StopsAtOnce, CrashesOnEvalLogs,
                                   StopsAboveTarget])
def test_stop_callback_rejects_known_mistakes(wrong):
    assert status("stop_callback", wrong) == "failed"


# ----------------------------------------------------- callback_or_subclass

def test_callback_or_subclass_accepts_the_answers():
    assert status("callback_or_subclass", dict(REQUESTS)) == "passed"


def test_callback_or_subclass_rejects_wrong_and_partial_answers(capsys):
    everything_a_callback = {r: "callback" for r in REQUESTS}
    assert status("callback_or_subclass", everything_a_callback) == "failed"
    assert "wrong" in capsys.readouterr().out
    swapped = {r: ("subclass" if a == "callback" else "callback")
               for r, a in REQUESTS.items()}
    assert status("callback_or_subclass", swapped) == "failed"
    half = {r: a for i, (r, a) in enumerate(REQUESTS.items()) if i % 2}
    assert status("callback_or_subclass", half) == "failed"
    assert "undecided" in capsys.readouterr().out


def test_callback_or_subclass_untouched_is_not_attempted():
    untouched = {r: "callback or subclass?" for r in REQUESTS}
    assert status("callback_or_subclass", untouched) == "not attempted"
