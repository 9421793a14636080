"""When no catalogued mistake matches, check() names the property of the
inputs the answer breaks (issue 48): the observations made on inputs with
it are the only ones that differ. Wrong answers here are not in any
catalogue; each breaks one property."""

import pytest
import torch
import torch.nn.functional as F
from transformers import Trainer

from kit import checks, losses
from kit.checks import EXERCISES
from kit.checks.core import Exercise, Property, name_property
from kit.grading import gradebook, verdicts

pytestmark = pytest.mark.usefixtures("lenient")


def toy(properties, answer=lambda: {}):
    """An exercise whose reference observes five settings of ε and a GA."""
    exercise = Exercise("toy", 1, "00_toy", 1, None, None, answer, answer,
                        properties=properties)
    exercise._cache[id(answer)] = {f"loss (epsilon={e}, GA={ga})": e * ga
                                   for e, ga in [(0.2, 1), (0.1, 1),
                                                 (0.3, 2), (0.2, 2)]}
    return exercise


def seen_with(exercise, **wrong):
    seen = dict(exercise.seen(exercise.answer))
    seen.update({name: -1 for name in wrong["at"]})
    return seen


GA = Property("ga", "GA=2", rung=2)
EPSILON = Property("epsilon", varies=r"epsilon=([\d.]+)", rung=3)


def test_a_property_is_named_when_only_its_observations_differ():
    exercise = toy([GA, EPSILON])
    wrong = ["loss (epsilon=0.3, GA=2)"]  # both fit: the first declared
    assert name_property(exercise, seen_with(exercise, at=wrong)) is GA
    # right only at ε = 0.2: ε written in, whatever the GA
    wrong = ["loss (epsilon=0.1, GA=1)", "loss (epsilon=0.3, GA=2)"]
    assert name_property(exercise, seen_with(exercise, at=wrong)) is EPSILON
    # wrong outside every property, wrong everywhere, right everywhere
    for wrong in (["loss (epsilon=0.2, GA=1)", "loss (epsilon=0.2, GA=2)"],
                  list(exercise.seen(exercise.answer)), []):
        assert name_property(exercise, seen_with(exercise, at=wrong)) is None


def test_a_setting_is_written_in_at_the_one_value_it_is_right_at():
    exercise = toy([EPSILON])
    right_at_0_1 = ["loss (epsilon=0.2, GA=1)", "loss (epsilon=0.3, GA=2)",
                    "loss (epsilon=0.2, GA=2)"]
    seen = seen_with(exercise, at=right_at_0_1)
    assert name_property(exercise, seen) is EPSILON
    # right at no value of it: nothing written in
    seen = seen_with(exercise, at=list(exercise.seen(exercise.answer)))
    assert name_property(exercise, seen) is None


def test_an_answer_off_by_a_setting_is_named_by_it():
    batch = Property("batch", off_by=r"B=(\d+)", rung=1)
    reference = {f"loss (B={B}, case {case})": torch.tensor(0.5 + case)
                 for case, B in enumerate((4, 6, 4))}
    exercise = Exercise("toy", 1, "00_toy", 1, None, None, len, len,
                        properties=[batch])
    exercise._cache[id(len)] = reference
    for power in (1, -1):  # B times too large, or too small
        seen = {name: value * int(name[8]) ** power
                for name, value in reference.items()}
        assert name_property(exercise, seen) is batch
    seen = {name: value * 2 for name, value in reference.items()}
    assert name_property(exercise, seen) is None  # one constant: not B


def count_of_unshifted_labels(logits, labels):
    V = logits.shape[-1]
    total = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                            labels[:, 1:].reshape(-1), reduction="sum")
    return total / (labels != -100).sum()  # counts the first label too


def count_from_the_first_row(logits, labels):
    V = logits.shape[-1]
    total = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                            labels[:, 1:].reshape(-1), reduction="sum")
    mask = labels[:, 1:] != -100
    return total / (mask[0].sum() * len(mask))  # as if every row were row 0


class SumOverOwnCountWhenTraining(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        V = outputs.logits.shape[-1]
        loss = F.cross_entropy(outputs.logits[:, :-1].reshape(-1, V),
                               labels[:, 1:].reshape(-1), reduction="sum")
        if num_items_in_batch is not None:  # the micro-batch's own count
            loss = loss / (labels[:, 1:] != -100).sum()
        return (loss, outputs) if return_outputs else loss


class OutputsDropped(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        loss = losses.causal_lm_loss(model(**inputs).logits, labels)
        return (loss, None) if return_outputs else loss


@pytest.mark.parametrize("exercise_id, wrong, property, rung", [
    ("causal_lm_loss", count_of_unshifted_labels,
     "labelled_first_position", 1),
    ("causal_lm_loss", count_from_the_first_row,
     "rows_of_different_lengths", 3),
    ("compute_loss", SumOverOwnCountWhenTraining, "no_num_items_in_batch",
     3),
    ("compute_loss", OutputsDropped, "return_outputs", 2),
])
def test_an_uncatalogued_answer_is_named_by_the_property_it_breaks(
        exercise_id, wrong, property, rung, capsys):
    result = checks.check(exercise_id, wrong)
    assert result.status == "failed"
    assert result.mistake == "property:" + property
    exercise = EXERCISES[exercise_id]
    said = capsys.readouterr().out
    title = next(p for p in exercise.properties if p.id == property).title
    assert title in said and f"hint {rung}/" in said
    checks.hint(exercise_id)  # hint 1 now is the rung that fits
    assert exercise.hints[rung - 1] in capsys.readouterr().out


def test_torch_roll_for_the_shift_is_catalogued():
    result = checks.check("causal_lm_loss", EXERCISES["causal_lm_loss"]
                          .mistakes[2].code)
    assert result.mistake == "rolled"


def test_grade_and_gradebook_count_a_property_like_a_mistake():
    line = ('{"id": "causal_lm_loss", "status": "failed", "mistake": '
            '"property:labelled_first_position", "message": "m"}')
    kept = verdicts.records([line], ["causal_lm_loss"])
    assert kept[0]["mistake"] == "property:labelled_first_position"
    forged = line.replace("labelled_first_position", "no_such_property")
    assert verdicts.records([forged], ["causal_lm_loss"])[0]["mistake"] is None
    words = gradebook._catalogue("causal_lm_loss",
                                 "property:labelled_first_position")
    assert words.startswith("a labelled first position — ")


# the exercises that are one function: their wrong answers in
# tools/wrong_answers/losses.py take seconds, not a training run each
FUNCTIONS = ("causal_lm_loss", "sequence_logps", "dpo_loss", "dpo_snippet",
             "group_advantages", "grpo_loss", "dapo_loss", "dr_grpo_loss",
             "gspo_loss")


def test_the_course_names_most_wrong_answers_it_has_not_seen():
    naming = _tool("naming")
    rows, rejected = naming.replay(FUNCTIONS)
    assert rejected == []  # no right answer rejected, no wrong one passed
    new = [row for row in rows if row[0] == "new"]
    total, named, fits, numbers = naming.shares(new)
    assert total >= 30 and named / total >= 0.75, naming.shares(new)
    # hint 1 is the rung the answer needs, where the exercise's own
    # catalogue or property named it
    assert fits / (named - numbers) >= 0.9
    catalogue = naming.shares([row for row in rows if row[0] != "new"])
    assert catalogue[0] == catalogue[1] == catalogue[2]


@pytest.mark.parametrize("exercise_id, answer, named, rung", [
    ("stop_callback", "EvalLossCounts", "property:logs_without_loss", 2),
    ("stop_callback", "AsksToSaveNotStop", "property:log_below_the_target",
     3),
    ("compute_loss", "SummedOverMicroBatches",
     "property:num_items_in_batch_given", 3),
    ("dpo_compute_loss", "BetaOfTheNotebook", "property:beta_written_in", 6),
    ("dpo_compute_loss", "TwiceTheCount", "property:num_items_in_batch", 5),
    ("get_train_dataloader", "KWrittenIn", "property:rows_in_a_batch", 2),
    ("prepare_inputs", "GeneratesOnce", "property:when_to_generate", 1),
    ("get_batch_samples", "OnlyTheMainProcessCounts",
     "property:second_process", 4),
    ("get_batch_samples", "LastBatchTimesGA",
     "property:several_micro_batches", 1),
])
def test_a_class_is_named_by_what_broke_first(exercise_id, answer, named,
                                              rung):
    naming = _tool("naming")
    trainers = _tool("wrong_answers.trainers")
    result, started_at = naming.graded(exercise_id, getattr(trainers, answer))
    assert (result.status, result.mistake) == ("failed", named)
    assert started_at == rung


def test_a_count_gathered_on_the_main_process_only_is_catalogued():
    from kit.checks.nb07_step_tokens import GatheredOnTheMainProcess
    result = checks.check("get_batch_samples", GatheredOnTheMainProcess)
    assert result.mistake == "gathered_on_the_main_process"


def _tool(name):
    """A module of tools/, imported as tools/naming.py imports its own."""
    import importlib
    import sys
    from pathlib import Path
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(f"tools.{name}")
