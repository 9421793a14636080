"""Four wrong answers outside learners wrote that the checkers passed
(issue 62): each now fails, named. The answers are those of
tools/wrong_answers/trainers.py, which tools/naming.py replays too.
"""

import tempfile

import pytest
import torch
from transformers import TrainingArguments

from kit import checks
from kit.checks import nb01_stock_loss, nb08_private
from kit.models import tiny_model
from kit.trainers import GRPOTrainer
from tools.wrong_answers.trainers import (FreshShuffleEachRun,
                                          GAWhenNotCounted, LoadsAnyPickle,
                                          RefilledWhenEmpty)

pytestmark = pytest.mark.usefixtures("lenient")


def named(exercise_id, answer):
    result = checks.check(exercise_id, answer)
    return result.status, result.mistake


# ------------------------------------------------ notebook 01: compute_loss

def test_dividing_by_GA_when_num_items_in_batch_is_None_is_named():
    # the check tried None only at GA = 1, where dividing by GA is harmless
    assert named("compute_loss", GAWhenNotCounted) == (
        "failed", "divides_by_ga_when_none")


def test_the_words_say_what_evaluation_passes_as_num_items_in_batch():
    """Evaluation passes the count of its own batch's labelled tokens (read
    in Trainer.prediction_step, transformers 5.x), not None."""
    tokenizer, batch = nb01_stock_loss._batch()
    seen = []

    class Records(nb01_stock_loss.MyTrainer):
        def compute_loss(self, model, inputs, return_outputs=False,
                         num_items_in_batch=None):
            seen.append(num_items_in_batch)
            return super().compute_loss(model, inputs, return_outputs,
                                        num_items_in_batch)

    trainer = Records(model=tiny_model("cpu", seed=0, tokenizer=tokenizer),
                      args=TrainingArguments(tempfile.mkdtemp(),
                                             report_to="none", use_cpu=True),
                      processing_class=tokenizer)
    trainer.prediction_step(trainer.model, dict(batch), True)
    assert int(seen[0]) == int((batch["labels"][:, 1:] != -100).sum())
    words = nb01_stock_loss.COMPUTE_LOSS_WORDS
    assert "of the one batch in evaluation" in words["hints"]["en"][2]
    assert "評価ではその 1 つのバッチ" in words["hints"]["ja"][2]
    said = str({key: entry for key, entry in words.items()})
    assert "None (evaluation" not in said and "評価時" not in said


# ----------------------------------------- notebook 04: get_train_dataloader

class SeededWithZero(GRPOTrainer):
    def get_train_dataloader(self):
        sampler = self._get_train_sampler()
        sampler.seed = 0  # one order, whatever args.seed says
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=lambda _: sampler,
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)


@pytest.mark.parametrize("wrong", [FreshShuffleEachRun, SeededWithZero])
def test_a_sampler_not_seeded_by_args_seed_is_named(wrong):
    assert named("get_train_dataloader", wrong) == (
        "failed", "seeded_by_the_clock")


# ----------------------------------------------- notebook 04: the buffer

def test_a_buffer_that_shrinks_as_it_serves_is_named():
    assert named("prepare_inputs", RefilledWhenEmpty) == (
        "failed", "pops_served_slices")


def test_the_resume_refusal_names_the_override_that_kept_the_buffer(
        tmp_path):
    nb08_private.toy_trainer(RefilledWhenEmpty, str(tmp_path),
                             max_steps=1).train()
    resumed = nb08_private.toy_trainer(RefilledWhenEmpty, str(tmp_path))
    with pytest.raises(ValueError) as refused:
        resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-1"))
    said = str(refused.value)
    assert "holds a buffer of 1 slices, not the 2 slices" in said
    assert "as RefilledWhenEmpty._prepare_inputs left it" in said
    assert "not saved with this checkpoint" not in said


# ------------------------------------------ notebook 08: buffer_checkpoint

def test_loading_with_weights_only_false_is_named_unsafe():
    assert named("buffer_checkpoint", LoadsAnyPickle) == (
        "failed", "unpickles_anything")
    assert "weights_only=True" in checks.EXERCISES[
        "buffer_checkpoint"].words["unpickles_anything"]["en"][2]


def test_the_planted_code_runs_only_when_unpickled(tmp_path):
    path = tmp_path / "state.pt"
    torch.save({"note": nb08_private._RunsCode()}, path)
    nb08_private.RAN.clear()
    with pytest.raises(Exception):
        torch.load(path, weights_only=True)
    assert nb08_private.RAN == []
    torch.load(path, weights_only=False)
    assert nb08_private.RAN == [True]
