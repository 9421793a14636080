"""Every kit trainer stops on a nan or inf, looking before the clip.

transformers logs a non-finite loss as the average of the ones before it,
and clipping an infinite gradient norm zeroes the step: both runs would
"succeed" with nothing learnt, or with NaN weights.
"""

import math

import pytest
import torch
from transformers import Trainer

from kit import recipes, tasks
from kit.trainers import CausalLMTrainer

QUIET = dict(disable_tqdm=True, eval_strategy="no", eval_on_start=False)


@pytest.fixture
def few_pairs(monkeypatch):
    """The DPO recipe on 32 sums' near misses, not on all 72k pairs (most
    of each test's time was tokenising them): these runs stop at step 1,
    whatever the pairs, since the policy still equals its reference."""
    every_pair = tasks.preference_dataset
    monkeypatch.setattr(tasks, "preference_dataset",
                        lambda split, n=None, **kwargs: every_pair(
                            split, n=32 if n is None else n, **kwargs))


def weights(model):
    return [p.detach().clone() for p in model.parameters()]


def unchanged(before, model):
    return all(torch.equal(b, p) for b, p in zip(before, model.parameters()))


class NaNLoss(CausalLMTrainer):
    def compute_loss(self, model, inputs, **kwargs):
        return super().compute_loss(model, inputs, **kwargs) * math.nan


class InfiniteLoss(CausalLMTrainer):
    """inf added, not multiplied: the gradients stay finite."""

    def compute_loss(self, model, inputs, **kwargs):
        return super().compute_loss(model, inputs, **kwargs) + math.inf


@pytest.mark.parametrize("trainer_class", [NaNLoss, InfiniteLoss])
def test_a_causal_lm_trainer_with_a_non_finite_loss_stops(trainer_class,
                                                          tmp_path):
    trainer = recipes.sft_trainer("cpu", output_dir=tmp_path, max_steps=3,
                                  trainer_class=trainer_class,
                                  disable_tqdm=True)
    before = weights(trainer.model)
    with pytest.raises(FloatingPointError, match="stopped at step 1: the "
                                                 "loss or a gradient is nan"):
        trainer.train()
    assert unchanged(before, trainer.model)


def test_the_sft_recipe_trains_with_causal_lm_trainer(tmp_path):
    # ...so that its checks run; and its weights stay the stock Trainer's
    # bit for bit, as the starting policy's recipe promises
    trained = []
    for trainer_class in (None, Trainer):
        trainer = recipes.sft_trainer("cpu", output_dir=tmp_path,
                                      max_steps=5, disable_tqdm=True,
                                      trainer_class=trainer_class)
        trainer.train()
        trained.append(trainer)
    assert type(trained[0]) is CausalLMTrainer
    assert all(torch.equal(a, b) for a, b in zip(
        trained[0].model.parameters(), trained[1].model.parameters()))


@pytest.mark.parametrize("settings", [dict(beta=1e30),
                                      dict(loss_type="ipo", beta=1e-30)])
def test_a_gradient_norm_that_overflows_stops_before_the_clip(settings,
                                                              tmp_path,
                                                              few_pairs):
    # Clipping would scale every gradient by max_grad_norm / inf = 0: the
    # step would move nothing and the run would "succeed".
    trainer = recipes.dpo_trainer("cpu", output_dir=tmp_path, max_steps=2,
                                  **QUIET, **settings)
    before = weights(trainer.model)
    with pytest.raises(FloatingPointError, match="stopped at step 1: the "
                                                 "loss or a gradient is nan "
                                                 "or inf"):
        trainer.train()
    assert unchanged(before, trainer.model)


def test_without_clipping_the_norm_is_checked_too(tmp_path, few_pairs):
    trainer = recipes.dpo_trainer("cpu", output_dir=tmp_path, max_steps=2,
                                  max_grad_norm=0.0, beta=1e30, **QUIET)
    with pytest.raises(FloatingPointError, match="gradient norm before "
                                                 "clipping: inf"):
        trainer.train()

