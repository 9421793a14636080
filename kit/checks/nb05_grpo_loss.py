"""Checkers for notebook 05: group advantages and GRPO's clipped loss."""

import torch

from kit import losses
from kit.checks.compare import (Mismatch, Raised, attempt, call, compare,
                                describe_error, graph_leaves)
from kit.checks.core import Mistake, exercise
from kit.checks.messages import MESSAGES
from kit.i18n import text

NOTEBOOK = "05_grpo_end_to_end"


# ------------------------------------------------------- group_advantages

def whole_batch(rewards, num_generations):
    return (rewards - rewards.mean()) / (rewards.std() + 1e-4)


def population_std(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)  # (B, G)
    mean = grouped.mean(dim=1, keepdim=True)
    std = grouped.std(dim=1, keepdim=True, unbiased=False)
    return ((grouped - mean) / (std + 1e-4)).view(-1)


def view_G_rows(rewards, num_generations):
    grouped = rewards.view(num_generations, -1)  # (G, B): not the groups
    mean = grouped.mean(dim=1, keepdim=True)
    std = grouped.std(dim=1, keepdim=True)
    return ((grouped - mean) / (std + 1e-4)).view(-1)


def mean_only(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)  # (B, G)
    return (grouped - grouped.mean(dim=1, keepdim=True)).view(-1)


@exercise("group_advantages", stars=2, notebook=NOTEBOOK,
          kit_code=("kit.losses:group_advantages",),
          answer=losses.group_advantages, mistakes=[
              Mistake("whole_batch", whole_batch, rung=1),
              Mistake("population_std", population_std, rung=3),
              Mistake("view_G_minus_1", view_G_rows, rung=1),
              Mistake("no_std", mean_only, rung=2),
          ])
def observe_group_advantages(candidate):
    g = torch.Generator().manual_seed(0)
    cases = [(torch.rand(12, generator=g), 4),
             (torch.randint(0, 2, (16,), generator=g).float(), 8),
             (torch.tensor([1.0, 1.0, 0.0, 2.0]), 2)]
    return {f"advantages (G={G})": attempt(call, candidate, dict(
        rewards=rewards), num_generations=G) for rewards, G in cases}


# --------------------------------------------------------------- grpo_loss

def _surrogate(logps, old, advantages, epsilon):
    ratio = torch.exp(logps - old)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return ratio * advantages.unsqueeze(1), clipped * advantages.unsqueeze(1)


def _finish(per_token, logps, mask, beta, ref, kl_sign=1):
    """The reference's tail: + β·KL when β > 0, then the mean per sequence
    and over sequences. Its arguments are where a mistake differs."""
    if beta > 0:
        per_token = per_token + kl_sign * beta * losses.per_token_kl(
            logps, ref)
    mask = mask.float()
    return ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()


def no_min(per_token_logps, old_per_token_logps, advantages,
           completion_mask, epsilon=0.2, beta=0.0, ref_per_token_logps=None):
    _, clipped = _surrogate(per_token_logps, old_per_token_logps, advantages,
                            epsilon)
    return _finish(-clipped, per_token_logps, completion_mask, beta,
                   ref_per_token_logps)


def max_not_min(per_token_logps, old_per_token_logps, advantages,
                completion_mask, epsilon=0.2, beta=0.0,
                ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    return _finish(-torch.max(plain, clipped), per_token_logps,
                   completion_mask, beta, ref_per_token_logps)


def token_level_mean(per_token_logps, old_per_token_logps, advantages,
                     completion_mask, epsilon=0.2, beta=0.0,
                     ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    per_token = -torch.min(plain, clipped)
    if beta > 0:
        per_token = per_token + beta * losses.per_token_kl(
            per_token_logps, ref_per_token_logps)
    mask = completion_mask.float()
    return (per_token * mask).sum() / mask.sum()


def no_mask(per_token_logps, old_per_token_logps, advantages,
            completion_mask, epsilon=0.2, beta=0.0, ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    return _finish(-torch.min(plain, clipped), per_token_logps,
                   torch.ones_like(completion_mask), beta,
                   ref_per_token_logps)


def detached_logps(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2, beta=0.0,
                   ref_per_token_logps=None):
    return losses.grpo_loss(per_token_logps.detach(), old_per_token_logps,
                            advantages, completion_mask, epsilon, beta,
                            ref_per_token_logps)


def _clip_plain(per_token_logps, old_per_token_logps, advantages):
    """-min(ratio·A, clip(ratio, 0.8, 1.2)·A): ε fixed at 0.2."""
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    a = advantages.unsqueeze(1)
    return -torch.min(ratio * a, torch.clamp(ratio, 0.8, 1.2) * a)


def kl_when_beta_0(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2, beta=0.0,
                   ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    per_token = -torch.min(plain, clipped) + beta * losses.per_token_kl(
        per_token_logps, ref_per_token_logps)  # no `if beta > 0`
    return _finish(per_token, per_token_logps, completion_mask, 0.0, None)


def clip_hard_coded(per_token_logps, old_per_token_logps, advantages,
                    completion_mask, epsilon=0.2, beta=0.0,
                    ref_per_token_logps=None):
    return _finish(_clip_plain(per_token_logps, old_per_token_logps,
                               advantages), per_token_logps, completion_mask,
                   beta, ref_per_token_logps)


def kl_sign_reversed(per_token_logps, old_per_token_logps, advantages,
                     completion_mask, epsilon=0.2, beta=0.0,
                     ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    # a reward for moving away from the reference
    return _finish(-torch.min(plain, clipped), per_token_logps,
                   completion_mask, beta, ref_per_token_logps, kl_sign=-1)


def kl_arguments_swapped(per_token_logps, old_per_token_logps, advantages,
                         completion_mask, epsilon=0.2, beta=0.0,
                         ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    # KL(ref‖π) for KL(π‖ref): the reference first
    return _finish(-torch.min(plain, clipped), ref_per_token_logps,
                   completion_mask, beta, per_token_logps)


def ratio_inverted(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2, beta=0.0,
                   ref_per_token_logps=None):
    plain, clipped = _surrogate(old_per_token_logps, per_token_logps,
                                advantages, epsilon)  # exp(old − new)
    return _finish(-torch.min(plain, clipped), per_token_logps,
                   completion_mask, beta, ref_per_token_logps)


def no_minus(per_token_logps, old_per_token_logps, advantages,
             completion_mask, epsilon=0.2, beta=0.0,
             ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    return _finish(torch.min(plain, clipped), per_token_logps,
                   completion_mask, beta, ref_per_token_logps)


def _loss_case(seed, B=4, T=5):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g) * 3
    # some ratios fall beyond the clip
    logps = old + torch.randn(B, T, generator=g) * 0.4
    mask = torch.ones(B, T, dtype=torch.long)
    mask[0, 3:] = 0
    mask[2, 1:] = 0
    advantages = torch.tensor([1.0, -1.5, 0.5, -0.2])[:B]
    ref = old - 0.3 * torch.rand(B, T, generator=g)
    return logps, old, advantages, mask, ref


# (seed, epsilon, beta): several clips, and beta = 0 with no reference at
# all (ref_per_token_logps=None), as notebook 05's trainer passes it
LOSS_CASES = ((0, 0.2, 0.0), (1, 0.1, 0.0), (2, 0.3, 0.1), (3, 0.25, 0.04))


def _loss_and_gradient(candidate, seed, epsilon, beta):
    logps, old, advantages, mask, ref = _loss_case(seed)
    logps = logps.clone().requires_grad_()
    loss = call(candidate, dict(
        per_token_logps=logps, old_per_token_logps=old,
        advantages=advantages, completion_mask=mask), epsilon=epsilon,
        beta=beta, ref_per_token_logps=ref if beta > 0 else None)
    if not (isinstance(loss, torch.Tensor) and loss.requires_grad
            and loss.dim() == 0):
        return loss, None
    # call() handed the learner a copy: the gradient flows to that copy,
    # so differentiate through the output's own graph
    leaves = graph_leaves(loss)
    gradient = torch.autograd.grad(loss, leaves)[0] if leaves else None
    return loss.detach(), gradient


@exercise("grpo_loss", stars=3, notebook=NOTEBOOK, answer=losses.grpo_loss,
          kit_code=("kit.losses:grpo_loss",
                    "kit.losses:clipped_token_losses"),
          judge=lambda candidate, seen, expected: judge_loss(seen, expected),
          mistakes=[
              Mistake("no_min", no_min, rung=2),
              Mistake("max_not_min", max_not_min, rung=2),
              Mistake("token_level_mean", token_level_mean, rung=4),
              Mistake("no_mask", no_mask, rung=4),
              Mistake("detached_logps", detached_logps, rung=6),
              Mistake("kl_when_beta_0", kl_when_beta_0, rung=5),
              Mistake("clip_hard_coded", clip_hard_coded, rung=3),
              Mistake("kl_sign_reversed", kl_sign_reversed, rung=5),
              Mistake("kl_arguments_swapped", kl_arguments_swapped, rung=5),
              Mistake("ratio_inverted", ratio_inverted, rung=1),
              Mistake("no_minus", no_minus, rung=2),
          ])
def observe_grpo_loss(candidate):
    seen = {}
    for seed, epsilon, beta in LOSS_CASES:
        out = attempt(_loss_and_gradient, candidate, seed, epsilon, beta)
        loss, gradient = (out, None) if isinstance(out, Raised) else out
        case = f"epsilon={epsilon}, beta={beta}, case {seed}"
        seen[f"loss ({case})"] = loss
        seen[f"gradient ({case})"] = gradient
    return seen


def judge_loss(seen, expected, passed="grpo_loss.judge.passed"):
    """Each "loss ..." a scalar that matches, each "gradient ..." there and
    matching (notebook 07's losses too): `passed` is the verdict's key."""
    verdict = "exact"
    for name, wanted in expected.items():
        actual = seen[name]
        if name.startswith("loss"):
            if isinstance(actual, Raised):
                raise Mismatch(text(MESSAGES, "raised",
                                    error=describe_error(actual.error)))
            if isinstance(actual, torch.Tensor) and actual.dim() > 0:
                raise Mismatch(text(MESSAGES, "grpo_loss.judge.shape",
                                    shape=tuple(actual.shape)))
            verdict = compare(name, actual, wanted)
        elif actual is None:
            raise Mismatch(text(MESSAGES, "grpo_loss.judge.no gradient"))
        else:
            compare(name, actual, wanted)
    return text(MESSAGES, passed, verdict=verdict)
