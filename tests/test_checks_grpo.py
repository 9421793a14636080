"""Notebooks 04-05's checkers accept the reference and reject known mistakes."""

import pytest
import torch
from transformers import Trainer

from kit import checks, losses
from kit.trainers import GRPOTrainer


@pytest.fixture(autouse=True)
def lenient(monkeypatch):
    monkeypatch.delenv("KIT_STRICT", raising=False)


def status(exercise_id, candidate):
    return checks.check(exercise_id, candidate).status


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


@pytest.mark.parametrize("learners", [BufferOnStubDataloader,
                                      BufferOnNoSampler])
def test_prepare_inputs_stands_alone_when_exercise_1_is_not_done(learners,
                                                                 capsys):
    assert status("prepare_inputs", learners) == "passed"
    assert ("exercise 1 is not done yet: using the kit's "
            "`get_train_dataloader` to check this one"
            in capsys.readouterr().out)


def test_a_silent_exception_still_says_what_it_was(capsys):
    class Empty(GRPOTrainer):
        def _prepare_inputs(self, batch):
            raise StopIteration
    assert status("prepare_inputs", Empty) == "failed"
    out = capsys.readouterr().out
    assert "raised StopIteration" in out and "StopIteration:" not in out
