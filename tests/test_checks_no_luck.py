"""Wrong answers that used to pass because the checkers' inputs never
exercised what they get wrong (issue 43), and right answers that used to
fail. Each is written as a learner wrote it."""

import os

import pytest
import torch
import torch.nn.functional as F

from conftest import status
from kit import losses

pytestmark = pytest.mark.usefixtures("lenient")


# --------------------------------------------- a labelled first position

def causal_lm_loss_rolled(logits, labels):
    """The shift by torch.roll: the first label wraps around to the end."""
    targets = torch.roll(labels, -1, dims=1)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(),
                           ignore_index=-100)


def causal_lm_loss_unshifted_count(logits, labels):
    """A sum over the shifted tokens divided by the unshifted count."""
    total = F.cross_entropy(logits[:, :-1].flatten(0, 1),
                            labels[:, 1:].flatten(), ignore_index=-100,
                            reduction="sum")
    return total / (labels != -100).sum()


def sequence_logps_rolled(logits, input_ids, completion_mask):
    targets = torch.roll(input_ids, -1, dims=1)
    mask = torch.roll(completion_mask, -1, dims=1)
    per_token = logits.log_softmax(-1).gather(
        -1, targets.unsqueeze(-1)).squeeze(-1)
    return (per_token * mask).sum(-1)


@pytest.mark.parametrize("exercise_id, wrong", [
    ("causal_lm_loss", causal_lm_loss_rolled),
    ("causal_lm_loss", causal_lm_loss_unshifted_count),
    ("sequence_logps", sequence_logps_rolled)])
def test_a_shift_right_only_without_a_labelled_first_position_fails(
        exercise_id, wrong):
    assert status(exercise_id, wrong) == "failed"


@pytest.mark.parametrize("exercise_id, right", [
    ("causal_lm_loss", losses.causal_lm_loss),
    ("sequence_logps", losses.sequence_logps)])
def test_the_kits_answers_still_pass(exercise_id, right):
    assert status(exercise_id, right) == "passed"


# ------------------------------------------ constants the checker used

def dr_grpo_loss_by_8(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon=0.2, beta=0.0,
                      ref_per_token_logps=None, max_completion_length=None):
    """8: GRPOConfig's default max_completion_length, and the checker's."""
    return losses.dr_grpo_loss(per_token_logps, old_per_token_logps,
                               advantages, completion_mask, epsilon, beta,
                               ref_per_token_logps, max_completion_length=8)


def fixed_kl_weight(answer):
    def kl_weight_0_04(per_token_logps, old_per_token_logps, advantages,
                       completion_mask, epsilon=0.2, beta=0.0,
                       ref_per_token_logps=None, **normaliser):
        return answer(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon, 0.04 if beta else 0.0,
                      ref_per_token_logps, **normaliser)
    return kl_weight_0_04


@pytest.mark.parametrize("exercise_id, wrong", [
    ("dr_grpo_loss", dr_grpo_loss_by_8),
    ("dr_grpo_loss", fixed_kl_weight(losses.dr_grpo_loss)),
    ("dapo_loss", fixed_kl_weight(losses.dapo_loss))])
def test_a_constant_equal_to_the_checkers_one_value_fails(exercise_id,
                                                          wrong):
    assert status(exercise_id, wrong) == "failed"


@pytest.mark.parametrize("exercise_id, right", [
    ("dr_grpo_loss", losses.dr_grpo_loss), ("dapo_loss", losses.dapo_loss)])
def test_the_kits_normalisers_still_pass(exercise_id, right):
    assert status(exercise_id, right) == "passed"


def test_dpo_with_beta_written_in_fails():
    """Notebook 03 trains with β = 1: a β of 0.5 written into the answer
    trained silently (held-out margin 1.21 against 1.54)."""
    from kit.checks.nb03_dpo_trainer import MyDPOTrainer

    class BetaWrittenIn(MyDPOTrainer):
        def compute_loss(self, model, inputs, return_outputs=False,
                         num_items_in_batch=None):
            beta, self.args.beta = self.args.beta, 0.5  # the checker's
            try:
                return super().compute_loss(model, inputs, return_outputs,
                                            num_items_in_batch)
            finally:
                self.args.beta = beta

    # (the solution passing is test_checks_solutions.py's)
    assert status("dpo_compute_loss", BetaWrittenIn) == "failed"


# ------------------------------------------- the stopping callback (02)

class StopsOnTheLastLoggedLoss(__import__("transformers").TrainerCallback):
    """Right: the Trainer appends each log to state.log_history before
    on_log, so its last row is what `logs` holds."""

    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = state.log_history[-1].get("loss")
        if loss is not None and loss < self.target:
            control.should_training_stop = True


class LoopsOnceTrainingStarts(__import__("transformers").TrainerCallback):
    """Endless, but only inside the check's real training run."""

    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        while state.global_step > 0:  # the checker's own logs have step 0
            pass
        loss = (logs or {}).get("loss")
        if loss is not None and loss < self.target:
            control.should_training_stop = True


def test_a_callback_reading_the_log_history_passes():
    assert status("stop_callback", StopsOnTheLastLoggedLoss) == "passed"


def test_the_checkers_own_setup_is_not_the_learners_time(monkeypatch):
    # a busy machine: each TrainingArguments the checker builds around the
    # learner's on_log takes 0.4 s, five of them 2 s, past a 1 s limit
    import time

    from kit import checks
    from kit.checks import EXERCISES, nb02_callbacks
    real = nb02_callbacks.TrainingArguments

    def slow(*args, **kwargs):
        time.sleep(0.4)
        return real(*args, **kwargs)
    monkeypatch.setattr(nb02_callbacks, "TrainingArguments", slow)
    answer = EXERCISES["stop_callback"].answer
    assert checks.check("stop_callback", answer, timeout=1).status == (
        "passed")


def test_a_callback_endless_inside_the_real_run_ends_named(capsys):
    import time

    from kit import checks
    started = time.monotonic()
    result = checks.check("stop_callback", LoopsOnceTrainingStarts,
                          timeout=3)
    assert result.status == "failed"
    assert "LoopsOnceTrainingStarts.on_log did not return within 3 s" in (
        result.message)
    assert time.monotonic() - started < 60  # the training's own time aside


# ------------------------------------- the step's token count (07 ★★★)

def _prepared(trainer, epoch_iterator, num_batches, device):
    from kit.trainers import GRPOTrainer
    batches, _ = GRPOTrainer.get_batch_samples(trainer, epoch_iterator,
                                               num_batches, device)
    return [trainer._prepare_inputs(batch) for batch in batches]


def _batch_samples_trainers():
    from kit.trainers import GRPOTrainer

    class GathersEachMicroBatch(GRPOTrainer):  # right: exact on 2 processes
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = _prepared(self, epoch_iterator, num_batches, device)
            counts = [self.accelerator.gather(b["completion_mask"].sum())
                      for b in batches]
            return batches, sum(count.sum() for count in counts)

    class GathersOnTheMainProcessOnly(GRPOTrainer):  # deadlocks on two
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = _prepared(self, epoch_iterator, num_batches, device)
            tokens = sum(b["completion_mask"].sum() for b in batches)
            if self.accelerator.is_main_process:
                tokens = self.accelerator.gather(tokens).sum()
            return batches, tokens

    class DividesByProcesses(GRPOTrainer):  # a 2x gradient on two
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = _prepared(self, epoch_iterator, num_batches, device)
            tokens = sum(b["completion_mask"].sum() for b in batches)
            gathered = self.accelerator.gather(tokens).sum()
            return batches, gathered / self.accelerator.num_processes

    class TimesProcesses(GRPOTrainer):  # the gather guessed, not made
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = _prepared(self, epoch_iterator, num_batches, device)
            tokens = sum(b["completion_mask"].sum() for b in batches)
            return batches, tokens * self.accelerator.num_processes

    return (GathersEachMicroBatch, GathersOnTheMainProcessOnly,
            DividesByProcesses, TimesProcesses)


def test_the_token_count_is_checked_as_two_processes_see_it():
    right, *wrong = _batch_samples_trainers()
    assert status("get_batch_samples", right) == "passed"
    for answer in wrong:
        assert status("get_batch_samples", answer) == "failed", answer


# ------------------------------------------ the generation buffer (04 ★★★)

def test_a_buffer_keyed_on_the_optimizer_step_or_counting_evaluations_fails():
    from kit.checks.nb04_grpo_buffer import MyBufferedTrainer

    class RefillsOnGlobalStepToo(MyBufferedTrainer):
        """Refills on `global_step % k == 0 and self._step % k == 0`:
        where the two are out of phase it serves the old buffer again."""

        def _prepare_inputs(self, generation_batch):
            k = self.args.steps_per_generation
            if (self.model.training and self._buffer is not None
                    and self._step % k == 0 and self.state.global_step % k):
                inputs = self._buffer[self._step % k]  # no refill
                self._step += 1
                return inputs
            return super()._prepare_inputs(generation_batch)

    class CountsEvaluations(MyBufferedTrainer):
        def _prepare_inputs(self, generation_batch):
            if not self.model.training:
                self._step += 1  # an evaluation is no step
            return super()._prepare_inputs(generation_batch)

    assert status("prepare_inputs", RefillsOnGlobalStepToo) == "failed"
    assert status("prepare_inputs", CountsEvaluations) == "failed"


# ------------------------------------------------ the buffer's save (08)

def test_saving_before_super_is_named_whether_or_not_the_folder_exists():
    from kit import checks
    from kit.checks.nb08_private import MakesTheFolderFirst, SavedBeforeSuper
    for wrong in (SavedBeforeSuper, MakesTheFolderFirst):
        result = checks.check("buffer_checkpoint", wrong)
        assert (result.status, result.mistake) == (
            "failed", "saved_before_super"), wrong


def test_a_typo_after_super_is_not_called_saving_before_super():
    from kit import checks
    from kit.checks.nb08_private import MyCheckpointedTrainer

    class TypoInTheFolder(MyCheckpointedTrainer):
        def _save_checkpoint(self, model, trial, **kwargs):
            super()._save_checkpoint(model, trial, **kwargs)
            folder = os.path.join(self._get_output_dir(trial),
                                  f"checkpoint_{self.state.global_step}")
            torch.save({"step": self._step, "buffer": self._buffer,
                        "generation": self._generation},
                       os.path.join(folder, self.buffer_file()))

    result = checks.check("buffer_checkpoint", TypoInTheFolder)
    assert (result.status, result.mistake) == (
        "failed", "property:saving_fails")
    assert "after super() had saved" in result.message
    assert "RuntimeError: Parent directory" in result.message  # its words
    assert "call super() first" not in result.message


# ------------------------------------ names that fit (07 ★★★ counts)

def test_a_count_is_named_only_when_every_split_agrees():
    from kit import checks
    from kit.trainers import GRPOTrainer

    class ShiftedMask(GRPOTrainer):  # not "one micro-batch counted"
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = _prepared(self, epoch_iterator, num_batches, device)
            tokens = sum(b["completion_mask"][:, 1:].sum() for b in batches)
            return batches, self.accelerator.gather(tokens).sum()

    class LastTimesGA(GRPOTrainer):  # not "the generation's count rescaled"
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = _prepared(self, epoch_iterator, num_batches, device)
            tokens = batches[-1]["completion_mask"].sum() * num_batches
            return batches, self.accelerator.gather(tokens).sum()

    class NonPadCount(GRPOTrainer):  # right: <pad> is not <eos> here
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = _prepared(self, epoch_iterator, num_batches, device)
            pad = self.processing_class.pad_token_id
            tokens = sum((b["completion_ids"] != pad).sum() for b in batches)
            return batches, self.accelerator.gather(tokens).sum()

    # no catalogued mistake: the one wrong in every split is not named, the
    # one right where a step is one micro-batch is named by that property
    for wrong, named in ((ShiftedMask, None), (
            LastTimesGA, "property:several_micro_batches")):
        result = checks.check("get_batch_samples", wrong)
        assert (result.status, result.mistake) == ("failed", named), wrong
    assert status("get_batch_samples", NonPadCount) == "passed"


def test_a_mistake_is_named_after_the_kernel_changes_language():
    """Fact-based checkers keep a sentence in their observations: a
    catalogue seen in English must still name a mistake in Japanese."""
    from kit import checks, i18n
    from kit.checks.nb04_grpo_dataloader import NoTimesK
    before = i18n.language()
    try:
        i18n.set_language("en")
        assert checks.check("get_train_dataloader", NoTimesK).mistake == (
            "no_times_k")
        i18n.set_language("ja")
        assert checks.check("get_train_dataloader", NoTimesK).mistake == (
            "no_times_k")
    finally:
        i18n.set_language(before)


def test_a_pair_in_the_wrong_order_is_told_so_not_that_it_raised():
    from kit import checks
    from kit.trainers import GRPOTrainer

    class CountFirst(GRPOTrainer):
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = _prepared(self, epoch_iterator, num_batches, device)
            tokens = sum(b["completion_mask"].sum() for b in batches)
            return self.accelerator.gather(tokens).sum(), batches

    result = checks.check("get_batch_samples", CountFirst)
    assert result.status == "failed"
    assert "raised" not in result.message
    assert "(Tensor, list)" in result.message


def test_a_tuple_in_another_order_is_told_so():
    def rewards_first(policy_chosen_logps, policy_rejected_logps,
                      ref_chosen_logps, ref_rejected_logps, beta=0.1):
        losses_, chosen, rejected = losses.dpo_loss(
            policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
            ref_rejected_logps, beta)
        return chosen, rejected, losses_

    from kit import checks
    result = checks.check("dpo_loss", rewards_first)
    assert result.status == "failed"
    assert "in another order" in result.message
    assert "gradient" not in result.message


# ------------- an override endless inside a real Trainer.train() (04, 08)

def _endless_overrides():
    from kit.checks.nb04_grpo_buffer import MyBufferedTrainer
    from kit.checks.nb08_private import MyCheckpointedTrainer

    class SavesForEver(MyCheckpointedTrainer):
        def _save_checkpoint(self, model, trial, **kwargs):
            super()._save_checkpoint(model, trial, **kwargs)
            while True:  # only once the real run saves
                pass

    class LoadsForEver(MyCheckpointedTrainer):
        def _load_from_checkpoint(self, *args, **kwargs):
            while True:  # only when the real run resumes
                pass

    class ServesForEver(MyBufferedTrainer):
        def _prepare_inputs(self, generation_batch):
            while self._step > 0:  # from the second step on
                pass
            return super()._prepare_inputs(generation_batch)

    return [("buffer_checkpoint", SavesForEver, "_save_checkpoint"),
            ("buffer_checkpoint", LoadsForEver, "_load_from_checkpoint"),
            ("prepare_inputs", ServesForEver, "_prepare_inputs")]


@pytest.mark.parametrize("case", range(3))
def test_an_override_endless_inside_the_real_run_ends_named(case):
    import time

    from kit import checks
    exercise_id, endless, method = _endless_overrides()[case]
    started = time.monotonic()
    result = checks.check(exercise_id, endless, timeout=3)
    assert result.status == "failed"
    assert (f"your {endless.__name__}.{method} did not return within 3 s"
            in result.message)
    assert time.monotonic() - started < 60  # the kit's own training aside


def test_a_broken_init_is_not_blamed_on_the_earlier_exercise():
    """The class that wrote get_train_dataloader passes exercise 1: only
    this class's own __init__ is wrong, and the check says that alone."""
    from kit import checks
    from kit.checks.nb04_grpo_buffer import MyBufferedTrainer

    class InitTypo(MyBufferedTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._step = self._steps  # a typo

    result = checks.check("prepare_inputs", InitTypo)
    assert result.status == "failed"
    assert "'InitTypo' object has no attribute '_steps'" in result.message
    assert "exercise 1" not in result.message
