"""Checker for notebook 03's ★★★: DPO's `compute_loss` override."""

import copy
import tempfile

import torch

from kit import losses, tasks
from kit.checks import dpo
from kit.checks.compare import Mismatch, Raised, attempt, compare
from kit.checks.core import Mistake, exercise, paused
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
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        logps = losses.sequence_logps(logits, ids, inputs["completion_mask"])
        chosen, rejected = logps.chunk(2)
        out = losses.dpo_loss(chosen, rejected, chosen.detach(),
                              rejected.detach(), beta=self.args.beta)
        loss = out[0].sum() / (num_items_in_batch or len(out[0]))
        self._remember(out[1], out[2], chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss


class MeanOverMicroBatch(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        # as if num_items_in_batch were never passed: losses.mean()
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs)


@paused()
def _dpo_setup(trainer_class, pairs=6):
    model, tokenizer = load_policy(preset="cpu")
    reference = copy.deepcopy(model)
    torch.manual_seed(0)
    with torch.no_grad():  # move the policy off the reference: ratios ≠ 0
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    args = DPOConfig(tempfile.mkdtemp(), beta=0.5, report_to="none",
                     use_cpu=True, per_device_train_batch_size=pairs)
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


def _compute(trainer, batch, **options):
    loss = trainer.compute_loss(trainer.model, dict(batch), **options)
    if isinstance(loss, tuple):
        return ("tuple", len(loss)) + tuple(
            x.detach() if isinstance(x, torch.Tensor) else type(x).__name__
            for x in loss[:1])
    return loss


@exercise("dpo_compute_loss", stars=3, notebook=dpo.NOTEBOOK,
          answer=DPOTrainer, solution=MyDPOTrainer, method="compute_loss",
          uses=[("sequence_logps", "sequence_logps", losses.sequence_logps),
                ("dpo_loss", "dpo_loss", losses.dpo_loss)],
          judge=lambda candidate, seen, expected: _judge(seen, expected),
          hints=[
              "One forward pass of the policy over inputs['input_ids'] (with "
              "its attention_mask); sequence_logps with completion_mask gives "
              "(2B,) log-probs: chosen rows first, then rejected.",
              "The reference runs under torch.no_grad(): self.ref_model(...). "
              "Then .chunk(2) splits chosen from rejected.",
              "Call dpo_loss(...) and return losses.sum() / "
              "(num_items_in_batch or len(losses)) — exact under gradient "
              "accumulation, as in notebook 01.",
          ], mistakes=[
              Mistake("attention_mask_as_completion_mask", "attention mask "
                      "as completion mask", "the prompt's log-probs cancel "
                      "in the loss, but the logged log-probs and rewards "
                      "count the prompt too", "pass "
                      "inputs['completion_mask'] to sequence_logps",
                      AttentionMaskAsCompletionMask),
              Mistake("policy_as_reference", "policy as its own reference",
                      "with ref = π (detached) every log-ratio is 0: the loss "
                      "is log 2 whatever the policy does", "run "
                      "self.ref_model under torch.no_grad() for the "
                      "reference log-probs", PolicyAsItsOwnReference),
              Mistake("mean_over_micro_batch", "mean over a micro-batch",
                      "under gradient accumulation each micro-batch's mean "
                      "gets the same weight, whatever its size", "return "
                      "losses.sum() / (num_items_in_batch or len(losses))",
                      MeanOverMicroBatch),
          ])
def observe_dpo_compute_loss(candidate):
    trainer, batch = _dpo_setup(candidate)
    seen = {"loss": attempt(_compute, trainer, batch)}
    seen["logged metrics"] = _logged(trainer)
    seen["loss (num_items_in_batch=12)"] = loss = attempt(
        _compute, trainer, batch, num_items_in_batch=12)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        grads = torch.autograd.grad(loss, list(trainer.model.parameters()),
                                    allow_unused=True)
        seen["gradient"] = torch.cat([
            torch.zeros(p.numel()) if g is None else g.flatten()
            for g, p in zip(grads, trainer.model.parameters())])
    else:
        seen["gradient"] = None
    seen["return_outputs=True"] = attempt(_compute, trainer, batch,
                                          return_outputs=True)
    return seen


def _judge(seen, expected):
    for name in ("loss", "loss (num_items_in_batch=12)"):
        if isinstance(seen[name], tuple):
            raise Mismatch("with return_outputs=False, return the loss alone")
        verdict = compare(name, seen[name], expected[name])
    if seen["gradient"] is None:
        raise Mismatch("the loss has no gradient: do not detach the "
                       "policy's log-probs (only the reference's are "
                       "computed under no_grad)")
    compare("gradient", seen["gradient"], expected["gradient"])
    both = seen["return_outputs=True"]
    if isinstance(both, Raised) or not (isinstance(both, tuple)
                                        and both[1] == 2):
        raise Mismatch("with return_outputs=True, return (loss, outputs)")
    logged, wanted = seen["logged metrics"], expected["logged metrics"]
    if not logged:
        raise Mismatch("nothing logged: call self._remember(chosen_rewards, "
                       "rejected_rewards, chosen, rejected) — the live plot "
                       "and evaluate() read rewards/margins from it")
    for name, values in wanted.items():
        if name not in logged:
            raise Mismatch(f"the logs have no {name!r}: pass all four to "
                           "self._remember(...)")
        compare(f"logged {name}", logged[name], values)
    return f"loss, gradient and logs {verdict} against kit's DPOTrainer"
