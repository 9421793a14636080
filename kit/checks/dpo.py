"""Checkers for notebook 03: DPO by overriding `compute_loss`."""

import copy
import tempfile

import torch
import torch.nn.functional as F

from kit import losses, tasks
from kit.checks.core import Mismatch, compare, exercise
from kit.models import load_policy
from kit.trainers import DPOConfig, DPOTrainer

NOTEBOOK = "03_dpo_compute_loss"


def _logps_case(seed, batch=4, length=9, vocab=13):
    """Random logits over a prompt of 4 tokens, completions of 2-5, padding."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, length, vocab, generator=g)
    input_ids = torch.randint(0, vocab, (batch, length), generator=g)
    completion_mask = torch.zeros(batch, length, dtype=torch.long)
    for row, size in enumerate([2, 5, 3, 4][:batch]):
        completion_mask[row, 4:4 + size] = 1
    return logits, input_ids, completion_mask


@exercise("sequence_logps", stars=1, notebook=NOTEBOOK,
          reference=losses.sequence_logps, hints=[
              "Same shift as the LM loss: logits[:, :-1] score the tokens "
              "input_ids[:, 1:], and the mask follows: "
              "completion_mask[:, 1:].",
              "log_softmax over the vocabulary, then .gather(-1, "
              "targets.unsqueeze(-1)).squeeze(-1) picks each token's "
              "log-prob.",
              "Multiply by the mask and .sum(-1): a sum, not a mean — DPO "
              "compares log-probabilities of whole sequences.",
          ])
def grade_sequence_logps(candidate):
    for seed in (0, 1):
        case = _logps_case(seed)
        verdict = compare("sequence log-probs", candidate(*case),
                          losses.sequence_logps(*case))
    return f"{verdict}, prompt and padding masked"


def _pairs(seed, batch=5):
    g = torch.Generator().manual_seed(seed)
    return [-torch.rand(batch, generator=g) * 8 for _ in range(4)]


def _check_pair_loss(candidate, beta):
    logps = [t.clone().requires_grad_() for t in _pairs(int(beta * 10))]
    expected = losses.dpo_loss(*logps, beta=beta)
    out = candidate(*logps, beta=beta)
    if not (isinstance(out, tuple) and len(out) == 3):
        raise Mismatch("return three tensors: (losses, chosen_rewards, "
                       "rejected_rewards)")
    names = ("losses", "chosen_rewards", "rejected_rewards")
    for name, actual, wanted in zip(names, out, expected):
        verdict = compare(name, actual, wanted.detach())
    if out[1].requires_grad or out[2].requires_grad:
        raise Mismatch("the rewards are for logging: .detach() them")
    return verdict


@exercise("dpo_loss", stars=2, notebook=NOTEBOOK, reference=losses.dpo_loss,
          hints=[
              "First the log-ratios: π_c − ref_c for chosen, π_r − ref_r for "
              "rejected. The loss is −log σ(β · (their difference)).",
              "β multiplies the whole difference of log-ratios — the "
              "published snippet puts it on the chosen side only.",
              "F.logsigmoid is the stable −log(1 + e^−x); keep one loss per "
              "pair (no .mean()) and rewards = β · log-ratio, detached.",
          ])
def grade_dpo_loss(candidate):
    for beta in (0.1, 0.5):
        verdict = _check_pair_loss(candidate, beta)
    return f"{verdict} for beta 0.1 and 0.5"


def published_snippet(chosen_scores, rejected_scores, beta):
    """As published: β multiplies only the chosen side. Do not use."""
    return -F.logsigmoid(beta * chosen_scores - rejected_scores)


def fixed_snippet(chosen_scores, rejected_scores, beta):
    """The published snippet, corrected: β scales the whole difference."""
    return -F.logsigmoid(beta * (chosen_scores - rejected_scores))


@exercise("dpo_snippet", stars=2, notebook=NOTEBOOK, reference=fixed_snippet,
          hints=[
              "Operator precedence: in β·a − b, β multiplies a alone.",
              "Write the paper's β·(a − b) with the brackets.",
          ])
def grade_dpo_snippet(candidate):
    chosen, rejected = _pairs(3)[:2]
    for beta in (0.1, 1.0, 2.5):
        verdict = compare("losses", candidate(chosen, rejected, beta),
                          fixed_snippet(chosen, rejected, beta))
    return f"{verdict}: beta scales the whole difference"


# ------------------------------------------------- the compute_loss override

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
    batch = next(iter(trainer.get_train_dataloader()))
    return trainer, batch


@exercise("dpo_compute_loss", stars=3, notebook=NOTEBOOK,
          reference=DPOTrainer.compute_loss, hints=[
              "One forward pass of the policy over inputs['input_ids'] (with "
              "its attention_mask); sequence_logps with completion_mask gives "
              "(2B,) log-probs: chosen rows first, then rejected.",
              "The reference runs under torch.no_grad(): self.ref_model(...). "
              "Then .chunk(2) splits chosen from rejected.",
              "Call dpo_loss(...) and return losses.sum() / "
              "(num_items_in_batch or len(losses)) — exact under gradient "
              "accumulation, as in notebook 01.",
          ])
def grade_dpo_compute_loss(candidate):
    trainer, batch = _dpo_setup(candidate)
    reference, _ = _dpo_setup(DPOTrainer)
    model = trainer.model
    for num_items in (None, 12):
        loss = trainer.compute_loss(model, dict(batch),
                                    num_items_in_batch=num_items)
        if isinstance(loss, tuple):
            raise Mismatch("with return_outputs=False, return the loss alone")
        expected = reference.compute_loss(reference.model, dict(batch),
                                          num_items_in_batch=num_items)
        verdict = compare(f"loss (num_items_in_batch={num_items})", loss,
                          expected.detach())
    mine = torch.autograd.grad(loss, list(model.parameters()))
    theirs = torch.autograd.grad(expected, list(reference.model.parameters()))
    compare("gradient", torch.cat([g.flatten() for g in mine]),
            torch.cat([g.flatten() for g in theirs]))
    both = trainer.compute_loss(model, dict(batch), return_outputs=True)
    if not (isinstance(both, tuple) and len(both) == 2):
        raise Mismatch("with return_outputs=True, return (loss, outputs)")
    return f"loss and gradient {verdict} against kit's DPOTrainer"
