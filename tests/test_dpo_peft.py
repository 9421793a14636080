"""DPO with a LoRA policy (issue 54): the reference for free.

A peft model's base weights are frozen, so with its adapter off it is the
policy as it started: DPOTrainer(ref_model=None) runs the reference that
way instead of keeping a second copy. The update must equal DPO against an
explicit frozen copy of the base model; with the adapter left on, the
reference moves with the policy and the loss cannot leave log 2.
"""

import contextlib
import copy
import math

import pytest
import torch

from kit import tasks
from kit.models import load_policy
from kit.trainers import DPOConfig, DPOTrainer

peft = pytest.importorskip("peft", reason="pip install -e '.[peft]'")


def lora_policy():
    """(LoRA on the toy model's attention projections, its base as it
    was, tokenizer). The adapter's B starts at 0 (the policy is its base):
    moved, so the policy and the reference differ."""
    model, tokenizer = load_policy(preset="cpu")
    base = copy.deepcopy(model)
    policy = peft.get_peft_model(model, peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
        lora_dropout=0.0))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in policy.named_parameters():
            if "lora_B" in name:
                p.add_(0.05 * torch.randn_like(p))
    return policy, base, tokenizer


def trainer(tmp_path, policy, reference, tokenizer, beta=0.5):
    args = DPOConfig(str(tmp_path), beta=beta, report_to="none",
                     use_cpu=True, disable_tqdm=True,
                     per_device_train_batch_size=8, save_strategy="no")
    return DPOTrainer(model=policy, ref_model=reference, args=args,
                      train_dataset=tasks.preference_dataset("train", n=8),
                      processing_class=tokenizer)


def loss_and_grads(trainer):
    """One batch's loss and the gradient of every trained (LoRA) weight."""
    model = trainer.model
    model.zero_grad()
    batch = next(iter(trainer.get_train_dataloader()))
    loss = trainer.compute_loss(model, batch)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()
             if p.requires_grad}
    model.zero_grad()
    return loss.detach(), grads


def test_the_adapter_off_is_the_reference_a_frozen_copy_would_be(tmp_path):
    policy, base, tokenizer = lora_policy()
    free = trainer(tmp_path / "free", policy, None, tokenizer)
    assert free.ref_model is None  # no second model kept
    copied = trainer(tmp_path / "copy", policy, base, tokenizer)
    loss, grads = loss_and_grads(free)
    expected_loss, expected = loss_and_grads(copied)
    assert grads and set(grads) == set(expected)
    assert all("lora_" in name for name in grads)  # only the adapter trains
    assert abs(loss - expected_loss) <= 1e-6
    for name in grads:
        assert torch.allclose(grads[name], expected[name], rtol=0,
                              atol=1e-6), name
    # the adapter is back on after the reference ran
    assert not loss_and_grads(free)[0].isnan()
    assert abs(loss_and_grads(free)[0] - loss) <= 1e-6


class AdapterLeftOn(DPOTrainer):
    """The classic mistake: the reference run with the adapter on."""

    def reference(self, model):
        return contextlib.nullcontext(model)


def test_a_reference_with_the_adapter_on_stays_at_log_2(tmp_path):
    """Named: 'reference with the adapter on'. The reference is the policy
    itself, so every log-ratio is 0 and the sigmoid loss is log 2 at each
    step, however the policy moves (its gradient is ±β/2 a pair, pushing
    nowhere the loss can see)."""
    policy, base, tokenizer = lora_policy()
    wrong = AdapterLeftOn(model=policy, ref_model=None,
                          args=DPOConfig(str(tmp_path), beta=0.5,
                                         report_to="none", use_cpu=True,
                                         disable_tqdm=True, max_steps=3,
                                         per_device_train_batch_size=8,
                                         learning_rate=1e-2,
                                         logging_steps=1,
                                         save_strategy="no"),
                          train_dataset=tasks.preference_dataset("train",
                                                                 n=24),
                          processing_class=tokenizer)
    wrong.train()
    logged = [row["loss"] for row in wrong.state.log_history
              if "loss" in row]
    margins = [row["rewards/margins"] for row in wrong.state.log_history
               if "rewards/margins" in row]
    assert len(logged) == 3
    assert all(abs(loss - math.log(2)) <= 1e-6 for loss in logged), logged
    assert all(abs(margin) <= 1e-6 for margin in margins), margins
    # the right reference moves off log 2 from the first step
    right = trainer(tmp_path / "right", lora_policy()[0], None, tokenizer)
    assert abs(loss_and_grads(right)[0] - math.log(2)) > 1e-3
