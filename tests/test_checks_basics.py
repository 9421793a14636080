"""Every checker accepts the reference and rejects known-wrong answers."""

import pytest
import torch
import torch.nn.functional as F
from transformers import Trainer, TrainerCallback

from conftest import status
from kit import checks, losses
from kit.checks.nb02_callbacks import REQUESTS, StopAtLoss
from kit.trainers import CausalLMTrainer

pytestmark = pytest.mark.usefixtures("lenient")


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


def detached(logits, labels):
    return losses.causal_lm_loss(logits, labels).detach()


def under_no_grad(logits, labels):
    with torch.no_grad():
        return F.cross_entropy(logits[:, :-1].flatten(0, 1),
                               labels[:, 1:].flatten())


def minus_100_filled_with_0(logits, labels):
    labels = labels.masked_fill(labels == -100, 0)
    return F.cross_entropy(logits[:, :-1].flatten(0, 1),
                           labels[:, 1:].flatten())


@pytest.mark.parametrize("wrong, mistake", [
    (detached, "detached"), (under_no_grad, "detached"),
    (minus_100_not_ignored, "minus_100_as_token_0"),
    (minus_100_filled_with_0, "minus_100_as_token_0"),
    (summed, "sum_not_divided")])
def test_causal_lm_loss_names_the_learners_own_versions(wrong, mistake):
    assert checks.check("causal_lm_loss", wrong).mistake == mistake


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


def off_by_a_little(logits, labels):  # no known mistake, no symptom
    return losses.causal_lm_loss(logits, labels) + 0.1


def squared_a_little(logits, labels):  # nor a relation of the numbers
    loss = losses.causal_lm_loss(logits, labels)
    return loss + 0.1 * loss ** 2


def test_an_unknown_mistake_gets_what_its_numbers_say(capsys):
    # the gradient is right, the value is not: a term with no gradient
    result = checks.check("causal_lm_loss", off_by_a_little)
    assert result.mistake == "property:value_only"
    assert result.message.startswith("your gradient is right but not the "
                                      "value")
    assert "max difference 0.1" in result.message


def test_an_unknown_mistake_gets_numbers_and_the_hints_in_turn(capsys):
    result = checks.check("causal_lm_loss", squared_a_little)
    assert result.mistake is None and "max difference" in result.message
    checks.check("causal_lm_loss", squared_a_little)
    out = capsys.readouterr().out
    assert "hint 1/4" in out and "hint 2/4" in out


# ------------------------------------------ help that fits what was seen

def scaled(logits, labels):  # shifted and masked right, ×1.5
    return 1.5 * losses.causal_lm_loss(logits, labels)


def test_a_constant_factor_gets_its_own_hint_not_the_shift(capsys):
    result = checks.check("causal_lm_loss", scaled)
    assert result.symptom == "scaled" and abs(result.factor - 1.5) < 1e-4
    checks.hint("causal_lm_loss", 1)
    out = capsys.readouterr().out
    assert out.count("yours is 1.5× the reference") == 2  # check, hint 1
    assert "drop the last position" not in out


def edits_the_labels(logits, labels):
    labels[labels == -100] = 0  # in place: the caller's labels change
    return losses.causal_lm_loss(logits, labels)


def test_an_in_place_edit_is_not_told_about_ignore_index(capsys):
    result = checks.check("causal_lm_loss", edits_the_labels)
    assert result.symptom == "in_place"
    for level in (1, 2):
        checks.hint("causal_lm_loss", level)
    out = capsys.readouterr().out
    assert "changed its input `labels` in place" in out
    assert "ignore_index" not in out and "leave the inputs" in out


def loss_item(logits, labels):
    return torch.tensor(losses.causal_lm_loss(logits, labels).item())


def test_a_detached_result_is_told_so_even_unnamed(capsys):
    result = checks.check("causal_lm_loss", loss_item)
    assert result.mistake == "detached"  # the same numbers, no gradient
    checks.hint("causal_lm_loss", 1)
    assert "keep it attached" in capsys.readouterr().out


def test_a_crash_starts_from_its_rung(capsys):
    def flat_targets(logits, labels):
        return F.cross_entropy(logits[:, :-1], labels[:, 1:].reshape(-1))
    result = checks.check("causal_lm_loss", flat_targets)
    assert result.symptom == "crash"
    checks.hint("causal_lm_loss", 1)
    out = capsys.readouterr().out
    assert out.count("F.cross_entropy wants (N, V) scores") == 2


def test_a_pass_starts_the_ladder_afresh(capsys):
    checks.check("causal_lm_loss", scaled)
    checks.check("causal_lm_loss", losses.causal_lm_loss)
    capsys.readouterr()
    checks.hint("causal_lm_loss", 1)
    assert capsys.readouterr().out.startswith("hint 1/4: Position t")


def test_strict_mode_raises_on_a_failure(monkeypatch):
    monkeypatch.setenv("KIT_STRICT", "1")
    with pytest.raises(AssertionError, match="causal_lm_loss"):
        checks.check("causal_lm_loss", summed)
    assert checks.check("causal_lm_loss", losses.causal_lm_loss)


def test_hint_and_solution_print(capsys):
    checks.hint("causal_lm_loss", 2)
    checks.solution("causal_lm_loss")
    out = capsys.readouterr().out
    assert "hint 2/4" in out and "def causal_lm_loss" in out


def test_an_unknown_exercise_lists_the_known_ones(capsys):
    assert not checks.check("no_such_exercise", None)
    assert "causal_lm_loss" in capsys.readouterr().out


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


class DetachesAtTheEnd(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = losses.causal_lm_loss(outputs.logits, labels).detach()
        return (loss, outputs) if return_outputs else loss


class ForwardUnderNoGrad(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        with torch.no_grad():
            outputs = model(**inputs)
        return (outputs.loss, outputs) if return_outputs else outputs.loss


class DividesByItemsTimesGA(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits[:, :-1]
        V = logits.shape[-1]
        if num_items_in_batch is None:
            loss = F.cross_entropy(logits.reshape(-1, V),
                                   labels[:, 1:].reshape(-1))
        else:
            loss = F.cross_entropy(logits.reshape(-1, V),
                                   labels[:, 1:].reshape(-1),
                                   reduction="sum")
            loss = loss / (num_items_in_batch
                           * self.args.gradient_accumulation_steps)
        return (loss, outputs) if return_outputs else loss


@pytest.mark.parametrize("wrong, mistake", [
    (DetachesAtTheEnd, "detached"), (ForwardUnderNoGrad, "detached"),
    (DividesByItemsTimesGA, "divides_by_ga_too")])
def test_compute_loss_names_the_learners_own_versions(wrong, mistake):
    assert checks.check("compute_loss", wrong).mistake == mistake


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


@pytest.mark.parametrize("loss, state", [
    ("raise NotImplementedError", "is not done yet"),  # exercise 1 skipped
    ("return F.cross_entropy(logits.flatten(0, 1), labels.flatten())",
     "does not pass its check")])  # exercise 1 wrong
def test_compute_loss_stands_alone_when_exercise_1_is_not_done(loss, state,
                                                               capsys):
    scope = {}
    exec(NOTEBOOK_CELLS.format(loss=loss), scope)
    learners = scope["causal_lm_loss"]
    result = checks.check("compute_loss", scope["MyTrainer"])
    out = capsys.readouterr().out
    assert result.status == "passed", out
    assert (f"exercise 1 {state}: using the kit's `causal_lm_loss` "
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


def test_callback_or_subclass_untouched_is_not_attempted(capsys):
    for stub in ("callback or subclass?", "?"):
        untouched = {r: stub for r in REQUESTS}
        assert status("callback_or_subclass", untouched) == "not attempted"
    out = capsys.readouterr().out
    assert "NotImplementedError" not in out and "'?'" in out


def test_callback_or_subclass_reads_capitals_and_spaces():
    shouted = {r: f" {a.capitalize()} " for r, a in REQUESTS.items()}
    assert status("callback_or_subclass", shouted) == "passed"
