"""Checker for notebook 03's ★★★: DPO's `compute_loss` override."""

import copy
import tempfile

import torch

from kit import losses, tasks
from kit.checks import nb03_dpo_losses as dpo
from kit.checks.compare import (Mismatch, Raised, attempt, compare,
                                describe_error)
from kit.checks.core import Mistake, exercise, paused
from kit.checks.messages import MESSAGES
from kit.i18n import text
from kit.models import load_policy
from kit.trainers import DPOConfig, DPOTrainer


class MyDPOTrainer(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        completion_mask = inputs["completion_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        logps = sequence_logps(logits, ids, completion_mask)  # (2B,)
        with torch.no_grad():
            ref_logits = self.ref_model(input_ids=ids,
                                        attention_mask=mask).logits
            ref_logps = sequence_logps(ref_logits, ids, completion_mask)
        chosen, rejected = logps.chunk(2)  # (B,) each
        ref_chosen, ref_rejected = ref_logps.chunk(2)
        losses, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.args.beta)
        loss = losses.sum() / (num_items_in_batch or len(losses))
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss


sequence_logps, dpo_loss = dpo.sequence_logps, dpo.dpo_loss  # as in 03


# The mistakes: each changes one thing of the right answer.

class AttentionMaskAsCompletionMask(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        inputs = {**inputs, "completion_mask": inputs["attention_mask"]}
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs,
                                         num_items_in_batch)


class PolicyAsItsOwnReference(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        reference, self.ref_model = self.ref_model, model  # π, detached
        try:
            return MyDPOTrainer.compute_loss(self, model, inputs,
                                             return_outputs,
                                             num_items_in_batch)
        finally:
            self.ref_model = reference


class MeanOverMicroBatch(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        # as if num_items_in_batch were never passed: losses.mean()
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs)


class ChunksSwapped(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        # rejected, chosen = logps.chunk(2): as if the collator had put the
        # rejected answers first
        inputs = {key: torch.cat(value.chunk(2)[::-1])
                  for key, value in inputs.items()}
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs,
                                         num_items_in_batch)


class DetachedLoss(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        with torch.no_grad():  # the policy's forward too: no gradient left
            return MyDPOTrainer.compute_loss(self, model, inputs,
                                             return_outputs,
                                             num_items_in_batch)


class PerPairLosses(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        completion_mask = inputs["completion_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        logps = sequence_logps(logits, ids, completion_mask)
        with torch.no_grad():
            ref_logits = self.ref_model(input_ids=ids,
                                        attention_mask=mask).logits
            ref_logps = sequence_logps(ref_logits, ids, completion_mask)
        chosen, rejected = logps.chunk(2)
        ref_chosen, ref_rejected = ref_logps.chunk(2)
        losses_, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.args.beta)
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (losses_, {"chosen_logps": chosen}) if return_outputs \
            else losses_  # one loss per pair: (B,)


class DividesByGA(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        # num_items_in_batch already counts the pairs of all GA micro-batches
        pairs = len(inputs["input_ids"]) // 2
        items = (num_items_in_batch or pairs) \
            * self.args.gradient_accumulation_steps
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs,
                                         items)


@paused()
def _dpo_setup(trainer_class, pairs=6):
    model, tokenizer = load_policy(preset="cpu")
    reference = copy.deepcopy(model)
    torch.manual_seed(0)
    with torch.no_grad():  # move the policy off the reference: ratios ≠ 0
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    # GA = 2: num_items_in_batch already counts both micro-batches' pairs,
    # so an answer that divides by GA as well is seen to be off
    args = DPOConfig(tempfile.mkdtemp(), beta=0.5, report_to="none",
                     use_cpu=True, per_device_train_batch_size=pairs,
                     gradient_accumulation_steps=2)
    data = tasks.preference_dataset("train", n=pairs)
    trainer = trainer_class(model=model, ref_model=reference, args=args,
                            train_dataset=data, processing_class=tokenizer)
    trainer.model.train()
    batch = next(iter(trainer.get_train_dataloader()))
    return trainer, batch


def _logged(trainer):
    """The metrics compute_loss recorded for the logs: {name: tensor}."""
    sums = trainer._metric_sums()  # {mode: {name: [sum, count]}}
    return {name: torch.tensor([total / count])
            for mode in ("train", "eval")
            for name, (total, count) in sums[mode].items()}


def _first_pairs(batch, n):
    """The micro-batch of the first `n` pairs: [chosen; rejected] again."""
    return {key: torch.cat([half[:n] for half in value.chunk(2)])
            for key, value in batch.items()}


def _gradient(model, loss):
    """d loss / d parameters, flat; None when the loss cannot have one."""
    if not (isinstance(loss, torch.Tensor) and loss.dim() == 0
            and loss.requires_grad):
        return None  # judged as the loss itself: no gradient to take
    parameters = list(model.parameters())
    grads = torch.autograd.grad(loss, parameters, allow_unused=True)
    return torch.cat([torch.zeros(p.numel()) if g is None else g.flatten()
                      for g, p in zip(grads, parameters)])


def _compute(trainer, batch, **options):
    loss = trainer.compute_loss(trainer.model, dict(batch), **options)
    if isinstance(loss, tuple):
        return ("tuple", len(loss)) + tuple(
            x.detach() if isinstance(x, torch.Tensor) else type(x).__name__
            for x in loss[:1])
    return loss


@exercise("dpo_compute_loss", stars=3, notebook=dpo.NOTEBOOK,
          kit_code=("kit.trainers:DPOTrainer.compute_loss",),
          answer=DPOTrainer, solution=MyDPOTrainer, method="compute_loss",
          uses=[("sequence_logps", "sequence_logps", losses.sequence_logps),
                ("dpo_loss", "dpo_loss", losses.dpo_loss)],
          judge=lambda candidate, seen, expected: _judge(seen, expected),
          mistakes=[
              Mistake("attention_mask_as_completion_mask",
                      AttentionMaskAsCompletionMask, rung=1),
              Mistake("policy_as_reference", PolicyAsItsOwnReference, rung=2),
              Mistake("mean_over_micro_batch", MeanOverMicroBatch, rung=5),
              Mistake("chunks_swapped", ChunksSwapped, rung=3),
              Mistake("detached_loss", DetachedLoss, rung=4),
              Mistake("per_pair_losses", PerPairLosses, rung=5),
              Mistake("divides_by_ga", DividesByGA, rung=5),
          ])
def observe_dpo_compute_loss(candidate):
    with torch.random.fork_rng(devices=[]):  # seeded here and by Trainer
        return _observe_compute_loss(candidate)


def _observe_compute_loss(candidate):
    trainer, batch = _dpo_setup(candidate)
    seen = {"loss": attempt(_compute, trainer, batch)}
    seen["logged metrics"] = _logged(trainer)
    seen["loss (num_items_in_batch=12)"] = loss = attempt(
        _compute, trainer, batch, num_items_in_batch=12)
    # an uneven micro-batch: 4 of the step's 10 pairs
    seen["loss (4 pairs, num_items_in_batch=10)"] = attempt(
        _compute, trainer, _first_pairs(batch, 4), num_items_in_batch=10)
    seen["gradient"] = attempt(_gradient, trainer.model, loss)
    seen["return_outputs=True"] = attempt(_compute, trainer, batch,
                                          return_outputs=True)
    # a second β: an answer with the first one written in (notebook 03
    # trains with β = 1) differs here
    trainer.args.beta = 0.1
    seen["loss (beta=0.1)"] = attempt(_compute, trainer, batch)
    return seen


def _judge(seen, expected):
    for name in ("loss", "loss (num_items_in_batch=12)",
                 "loss (4 pairs, num_items_in_batch=10)", "loss (beta=0.1)"):
        loss = seen[name]
        if isinstance(loss, tuple):
            raise Mismatch(text(MESSAGES, "dpo_compute_loss.judge.tuple"))
        if isinstance(loss, torch.Tensor) and loss.dim() > 0:
            raise Mismatch(text(MESSAGES, "dpo_compute_loss.judge.shape",
                                shape=tuple(loss.shape)))
        verdict = compare(name, loss, expected[name])
    if isinstance(seen["gradient"], Raised):
        raise Mismatch(text(MESSAGES, "dpo_compute_loss.judge.gradient",
                            error=describe_error(seen["gradient"].error)))
    if seen["gradient"] is None:
        raise Mismatch(text(MESSAGES, "dpo_compute_loss.judge.no gradient"))
    compare("gradient", seen["gradient"], expected["gradient"])
    both = seen["return_outputs=True"]
    if isinstance(both, Raised) or not (isinstance(both, tuple)
                                        and both[1] == 2):
        raise Mismatch(text(MESSAGES, "dpo_compute_loss.judge.both"))
    logged, wanted = seen["logged metrics"], expected["logged metrics"]
    if not logged:
        raise Mismatch(text(MESSAGES, "dpo_compute_loss.judge.nothing logged"))
    for name, values in wanted.items():
        if name not in logged:
            raise Mismatch(text(MESSAGES, "dpo_compute_loss.judge.missing",
                                name=name))
        compare(f"logged {name}", logged[name], values)
    return text(MESSAGES, "dpo_compute_loss.judge.passed", verdict=verdict)
