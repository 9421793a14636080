"""Notebooks 04-05's checkers accept the reference and reject known mistakes."""

import re

import pytest
import torch
from transformers import Trainer

from conftest import status
from kit import checks, losses
from kit.builder import paths
from kit.trainers import GRPOTrainer

pytestmark = pytest.mark.usefixtures("lenient")


# ----------------------------------------------------- get_train_dataloader

class StockDataloader(GRPOTrainer):
    def get_train_dataloader(self):  # forgets to multiply the batch size
        return Trainer.get_train_dataloader(self)


class NoSampler(GRPOTrainer):
    def get_train_dataloader(self):  # right size, but a plain random sampler
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=Trainer._get_train_sampler.__get__(self),
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)


class TimesG(GRPOTrainer):
    def get_train_dataloader(self):  # multiplies by G instead of k
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.num_generations,
            is_training=True)


class DataloaderStub(GRPOTrainer):
    def get_train_dataloader(self):
        raise NotImplementedError


def test_get_train_dataloader_accepts_the_reference():
    assert status("get_train_dataloader", GRPOTrainer) == "passed"


@pytest.mark.parametrize("wrong", [StockDataloader, NoSampler, TimesG])
def test_get_train_dataloader_rejects_known_mistakes(wrong):
    assert status("get_train_dataloader", wrong) == "failed"


def test_get_train_dataloader_stub_is_not_attempted():
    assert status("get_train_dataloader", DataloaderStub) == "not attempted"


# ----------------------------------------------------------- prepare_inputs

class GeneratesEveryStep(GRPOTrainer):
    def _prepare_inputs(self, batch):
        generated = self._generate_and_score(batch, greedy=not self.model.training)
        size = self.args.per_device_train_batch_size
        return {k: None if v is None else v[:size] for k, v in generated.items()}


class ServesEverything(GRPOTrainer):
    def _prepare_inputs(self, batch):
        k = self.args.steps_per_generation
        if self._step % k == 0:
            self._buffer = self._generate_and_score(batch)
        self._step += 1
        return self._buffer


class SameSliceEachStep(GRPOTrainer):
    def _prepare_inputs(self, batch):
        if not self.model.training:
            return self._generate_and_score(batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0:
            generated = self._generate_and_score(batch)
            self._buffer = [{key: None if v is None else v.chunk(k)[0]
                             for key, v in generated.items()}] * k
        self._step += 1
        return self._buffer[0]


class SamplesInEval(GRPOTrainer):
    def _prepare_inputs(self, batch):
        if not self.model.training:
            return self._generate_and_score(batch)  # forgot greedy=True
        return super()._prepare_inputs(batch)


def test_prepare_inputs_accepts_the_reference():
    assert status("prepare_inputs", GRPOTrainer) == "passed"


@pytest.mark.parametrize("wrong", [GeneratesEveryStep, ServesEverything,
                                   SameSliceEachStep, SamplesInEval])
def test_prepare_inputs_rejects_known_mistakes(wrong):
    assert status("prepare_inputs", wrong) == "failed"


# --------------------------------------------------------- group_advantages

def over_the_whole_batch(rewards, num_generations):
    return (rewards - rewards.mean()) / (rewards.std() + 1e-4)


def strided_groups(rewards, num_generations):
    grouped = rewards.view(num_generations, -1)  # groups taken the wrong way
    return ((grouped - grouped.mean(0)) / (grouped.std(0) + 1e-4)).view(-1)


def mean_only(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)
    return (grouped - grouped.mean(1, keepdim=True)).view(-1)


def test_group_advantages_accepts_the_reference():
    assert status("group_advantages", losses.group_advantages) == "passed"


@pytest.mark.parametrize("wrong", [over_the_whole_batch, strided_groups,
                                   mean_only])
def test_group_advantages_rejects_known_mistakes(wrong):
    assert status("group_advantages", wrong) == "failed"


# ---------------------------------------------------------------- grpo_loss

def unclipped(logps, old, advantages, mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None):
    return losses.grpo_loss(logps, old, advantages, mask, epsilon=1e9,
                            beta=beta, ref_per_token_logps=ref_per_token_logps)


def clip_without_min(logps, old, advantages, mask, epsilon=0.2, beta=0.0,
                     ref_per_token_logps=None):
    ratio = torch.exp(logps - old).clamp(1 - epsilon, 1 + epsilon)
    per_token = -ratio * advantages.unsqueeze(1)
    if beta > 0:
        per_token = per_token + beta * losses.per_token_kl(logps,
                                                           ref_per_token_logps)
    return ((per_token * mask).sum(1) / mask.sum(1)).mean()


def token_level_mean(logps, old, advantages, mask, epsilon=0.2, beta=0.0,
                     ref_per_token_logps=None):
    ratio = torch.exp(logps - old)
    a = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * a, ratio.clamp(1 - epsilon, 1 + epsilon) * a)
    if beta > 0:
        per_token = per_token + beta * losses.per_token_kl(logps,
                                                           ref_per_token_logps)
    return (per_token * mask).sum() / mask.sum()


def no_kl(logps, old, advantages, mask, epsilon=0.2, beta=0.0,
          ref_per_token_logps=None):
    return losses.grpo_loss(logps, old, advantages, mask, epsilon)


def unmasked(logps, old, advantages, mask, epsilon=0.2, beta=0.0,
             ref_per_token_logps=None):
    return losses.grpo_loss(logps, old, advantages, torch.ones_like(mask),
                            epsilon, beta, ref_per_token_logps)


def test_grpo_loss_accepts_the_reference():
    assert status("grpo_loss", losses.grpo_loss) == "passed"


@pytest.mark.parametrize("wrong", [unclipped, clip_without_min,
                                   token_level_mean, no_kl, unmasked])
def test_grpo_loss_rejects_known_mistakes(wrong):
    assert status("grpo_loss", wrong) == "failed"


# ------------------------------------- the false pass, and standing alone

class DropsNoneKeys(GRPOTrainer):
    """Issue 9's false pass: the buffer keeps only the tensors."""

    def _prepare_inputs(self, batch):
        if not self.model.training:
            return self._generate_and_score(batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0:
            generated = self._generate_and_score(batch)
            self._buffer = [
                {key: value.chunk(k)[i] for key, value in generated.items()
                 if value is not None} for i in range(k)]
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


def test_a_buffer_that_drops_none_values_no_longer_passes(capsys):
    result = checks.check("prepare_inputs", DropsNoneKeys)
    assert result.status == "failed"
    assert result.mistake == "none_values_dropped"
    assert "KeyError two cells later" in capsys.readouterr().out


class BufferOnStubDataloader(DataloaderStub):
    _prepare_inputs = GRPOTrainer._prepare_inputs


class BufferOnNoSampler(NoSampler):
    _prepare_inputs = GRPOTrainer._prepare_inputs


@pytest.mark.parametrize("learners, state", [
    (BufferOnStubDataloader, "is not done yet"),
    (BufferOnNoSampler, "does not pass its check")])  # a wrong exercise 1
def test_prepare_inputs_stands_alone_when_exercise_1_is_not_done(
        learners, state, capsys):
    assert status("prepare_inputs", learners) == "passed"
    assert (f"exercise 1 {state}: using the kit's "
            "`get_train_dataloader` to check this one"
            in capsys.readouterr().out)


def test_a_silent_exception_still_says_what_it_was(capsys):
    class Empty(GRPOTrainer):
        def _prepare_inputs(self, batch):
            raise StopIteration
    assert status("prepare_inputs", Empty) == "failed"
    out = capsys.readouterr().out
    assert "raised StopIteration" in out and "StopIteration:" not in out


# ------------------------- issue 17: wrong answers that are now named

def named(exercise_id, candidate):
    result = checks.check(exercise_id, candidate)
    assert result.status == "failed"
    return result.mistake


class OneMore(GRPOTrainer):
    def get_train_dataloader(self):  # k + 1: "one for the buffer"
        size = self._train_batch_size * (self.args.steps_per_generation + 1)
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=size, is_training=True)


class TimesAccumulation(GRPOTrainer):
    def get_train_dataloader(self):
        size = self._train_batch_size * self.args.gradient_accumulation_steps
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=size, is_training=True)


@pytest.mark.parametrize("wrong, mistake", [
    (OneMore, "times_k_plus_1"), (TimesG, "times_G"),
    (TimesAccumulation, "times_GA"), (StockDataloader, "no_times_k")])
def test_each_wrong_factor_is_named_for_what_it_is(wrong, mistake):
    assert named("get_train_dataloader", wrong) == mistake


def buffered(slicer, counts_first=False):
    """A learner's buffer; `slicer(batch, k)` cuts the generated batch."""
    class Learners(GRPOTrainer):
        def _prepare_inputs(self, batch):
            if not self.model.training:
                return self._generate_and_score(batch, greedy=True)
            k = self.args.steps_per_generation
            if counts_first:
                self._step += 1
            if self._step % k == 0 or self._buffer is None:
                self._buffer = slicer(self._generate_and_score(batch), k)
            inputs = self._buffer[self._step % k]
            if not counts_first:
                self._step += 1
            return inputs
    return Learners


def each_key_its_own_order(generated, k):
    shuffled = {}
    for key, value in generated.items():
        shuffled[key] = None if value is None else value[
            torch.randperm(value.shape[0])]
    return [{key: None if v is None else v.chunk(k)[i]
             for key, v in shuffled.items()} for i in range(k)]


def in_order(generated, k):
    return [{key: None if v is None else v.chunk(k)[i]
             for key, v in generated.items()} for i in range(k)]


def one_order(generated, k):
    order = torch.randperm(len(generated["completion_ids"]))
    return [{key: None if v is None else v[order[i::k]]
             for key, v in generated.items()} for i in range(k)]


def test_keys_shuffled_apart_no_longer_pass(capsys):
    # issue 17's false pass: rows no longer line up across keys
    wrong = buffered(each_key_its_own_order)
    assert named("prepare_inputs", wrong) == "keys_shuffled_apart"
    assert "its own order" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, mistake", [
    (buffered(one_order, counts_first=True), "refilled_on_wrong_step"),
    (buffered(in_order), "not_shuffled")])
def test_prepare_inputs_names_these_mistakes(wrong, mistake):
    assert named("prepare_inputs", wrong) == mistake


def test_any_shuffle_with_one_order_for_every_key_passes():
    # a strided cut of one permutation, not order.chunk(k): still right
    assert status("prepare_inputs", buffered(one_order)) == "passed"


@pytest.mark.parametrize("exercise_id", ["get_train_dataloader",
                                         "prepare_inputs"])
def test_the_checker_leaves_the_notebooks_random_state_alone(exercise_id):
    # the Trainer it builds calls set_seed(42); the buffer shuffles
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    checks.check(exercise_id, GRPOTrainer)
    assert torch.equal(torch.rand(3), expected)


def advantages_without_std(rewards, num_generations):
    grouped = rewards.reshape(-1, num_generations)
    return (grouped - grouped.mean(-1, keepdim=True)).flatten()


def test_advantages_without_std_are_named():
    assert named("group_advantages", mean_only) == "no_std"
    assert named("group_advantages", advantages_without_std) == "no_std"


def kl_always(logps, old, advantages, mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None):
    ratio = torch.exp(logps - old)
    a = advantages[:, None]
    per_token = -torch.min(ratio * a, ratio.clamp(1 - epsilon, 1 + epsilon)
                           * a)
    per_token = per_token + beta * losses.per_token_kl(logps,
                                                       ref_per_token_logps)
    return ((per_token * mask).sum(1) / mask.sum(1)).mean()


def clip_at_0_8_and_1_2(logps, old, advantages, mask, epsilon=0.2, beta=0.0,
                        ref_per_token_logps=None):
    ratio = torch.exp(logps - old)
    a = advantages[:, None]
    per_token = -torch.min(ratio * a, ratio.clamp(0.8, 1.2) * a)
    if beta > 0:
        per_token = per_token + beta * losses.per_token_kl(
            logps, ref_per_token_logps)
    return ((per_token * mask).sum(1) / mask.sum(1)).mean()


def variant(ratio_of=None, sign=-1, kl_sign=1, kl_swapped=False,
            detach=False):
    """The reference with one thing changed, written as a learner would."""
    def loss(logps, old, advantages, mask, epsilon=0.2, beta=0.0,
             ref_per_token_logps=None):
        if detach:
            logps = logps.detach()
        ratio = torch.exp(old - logps) if ratio_of == "old-new" else \
            torch.exp(logps - old)
        a = advantages.unsqueeze(-1)
        clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
        per_token = sign * torch.minimum(ratio * a, clipped * a)
        if beta > 0:
            pair = ((ref_per_token_logps, logps) if kl_swapped
                    else (logps, ref_per_token_logps))
            per_token = per_token + kl_sign * beta * losses.per_token_kl(
                *pair)
        mask = mask.float()
        return ((per_token * mask).sum(-1) / mask.sum(-1)).mean()
    return loss


@pytest.mark.parametrize("wrong, mistake", [
    (kl_always, "kl_when_beta_0"), (clip_at_0_8_and_1_2, "clip_hard_coded"),
    (variant(kl_sign=-1), "kl_sign_reversed"),
    (variant(kl_swapped=True), "kl_arguments_swapped"),
    (variant(ratio_of="old-new"), "ratio_inverted"),
    (variant(sign=1), "no_minus"), (variant(detach=True), "detached_logps")])
def test_grpo_loss_names_these_mistakes(wrong, mistake):
    assert named("grpo_loss", wrong) == mistake


def test_a_detached_grpo_loss_fails_and_is_told(capsys):
    def detached(*args, **kwargs):
        return losses.grpo_loss(*args, **kwargs).detach()
    assert named("grpo_loss", detached) == "detached_logps"
    assert "the loss has no gradient" in capsys.readouterr().out


def test_the_learners_variant_with_nothing_changed_passes():
    assert status("grpo_loss", variant()) == "passed"


@pytest.mark.parametrize("exercise_id", [
    "get_train_dataloader", "prepare_inputs", "group_advantages",
    "grpo_loss"])
def test_each_mistake_has_its_rung_on_the_hint_ladder(exercise_id):
    exercise = checks.EXERCISES[exercise_id]
    for mistake in exercise.mistakes:
        assert mistake.rung in range(1, len(exercise.hints) + 1), mistake.id


# "hint("grpo_loss", 1)` (levels 1 to 6)", the words maybe across a line
LEVELS = re.compile(r"""hint\(["'](\w+)["'], 1\)`? \(levels\s+#?\s*"""
                    r"""1 to (\d+)\)""")


@pytest.mark.parametrize("name", ["03_dpo_compute_loss", "04_grpo_dataloader",
                                  "05_grpo_end_to_end"])
def test_the_notebook_says_how_many_hints_there_are(name):
    text = (paths.SOURCES / f"{name}.py").read_text()
    found = LEVELS.findall(text)
    assert found
    for exercise_id, levels in found:
        assert int(levels) == len(checks.EXERCISES[exercise_id].hints), \
            exercise_id
