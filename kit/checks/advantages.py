"""Checkers for notebook 05: group advantages and GRPO's clipped loss."""

import torch

from kit import losses
from kit.checks.compare import (Mismatch, Raised, attempt, call, compare,
                                describe_error)
from kit.checks.core import Mistake, exercise

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


@exercise("group_advantages", stars=2, notebook=NOTEBOOK,
          answer=losses.group_advantages, hints=[
              "rewards.view(-1, num_generations) puts each prompt's G "
              "completions on one row: (B, G).",
              "Subtract each row's mean and divide by its std (torch's "
              "default, unbiased) + 1e-4, with keepdim=True to broadcast.",
              "Return the same layout as the input: .view(-1).",
          ], mistakes=[
              Mistake("whole_batch", "whole-batch normalisation", "the "
                      "baseline is each prompt's own group: an easy prompt's "
                      "completions should not all look good", "view(-1, G) "
                      "and normalise each row", whole_batch),
              Mistake("population_std", "population std", "torch's default "
                      "std is unbiased (divides by G − 1), as TRL's",
                      "drop unbiased=False / correction=0", population_std),
              Mistake("view_G_minus_1", "view(G, -1)", "that makes G rows of "
                      "consecutive rewards; a prompt's G completions sit "
                      "next to each other, so a group is a row of "
                      "view(-1, G)", "rewards.view(-1, num_generations)",
                      view_G_rows),
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


def _finish(per_token, logps, mask, beta, ref):
    if beta > 0:
        per_token = per_token + beta * losses.per_token_kl(logps, ref)
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


def _loss_and_gradient(candidate, seed, beta):
    logps, old, advantages, mask, ref = _loss_case(seed)
    logps = logps.clone().requires_grad_()
    loss = call(candidate, dict(
        per_token_logps=logps, old_per_token_logps=old,
        advantages=advantages, completion_mask=mask), epsilon=0.2, beta=beta,
        ref_per_token_logps=ref)
    if not (isinstance(loss, torch.Tensor) and loss.requires_grad
            and loss.dim() == 0):
        return loss, None
    # call() handed the learner a copy: the gradient flows to that copy,
    # so differentiate through the output's own graph
    leaves = [t for t in _leaves(loss)]
    gradient = torch.autograd.grad(loss, leaves)[0] if leaves else None
    return loss.detach(), gradient


def _leaves(tensor):
    """The leaf tensors that `tensor` was computed from (here: one)."""
    found, stack, seen = [], [tensor.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            found.append(node.variable)
        stack += [next_node for next_node, _ in node.next_functions]
    return found


@exercise("grpo_loss", stars=3, notebook=NOTEBOOK, answer=losses.grpo_loss,
          judge=lambda candidate, seen, expected: _judge_loss(seen, expected),
          hints=[
              "ratio = exp(per_token_logps − old_per_token_logps): 1 "
              "on-policy.",
              "Per token: −min(ratio·A, clamp(ratio, 1−ε, 1+ε)·A), with A "
              "unsqueezed to (B, 1). The min is what makes the clip a "
              "pessimistic bound.",
              "Mean over each completion's own tokens (mask!), then mean over "
              "completions; add beta·per_token_kl only when beta > 0.",
          ], mistakes=[
              Mistake("no_min", "no min", "the clipped term alone gives no "
                      "gradient where the ratio is clipped, even when moving "
                      "back would help", "−min(ratio·A, clipped·A): the min "
                      "keeps the pessimistic one", no_min),
              Mistake("max_not_min", "max instead of min", "the loss is "
                      "minus the objective: −min(...) is the pessimistic "
                      "bound, −max(...) the optimistic one",
                      "torch.min(ratio * A, clipped * A)", max_not_min),
              Mistake("token_level_mean", "token-level mean", "one mean "
                      "over all tokens weighs long completions more; GRPO's "
                      "eq. 3 averages each completion's tokens first",
                      "(per_token * mask).sum(1) / mask.sum(1), then "
                      ".mean()", token_level_mean),
              Mistake("no_mask", "no mask", "tokens after <eos> (padding) "
                      "count in each completion's mean", "multiply by "
                      "completion_mask and divide by its sum per row",
                      no_mask),
              Mistake("detached_logps", "detached log-probs", "the loss "
                      "must stay differentiable in per_token_logps: that is "
                      "the policy being trained", "do not .detach() "
                      "per_token_logps (old_per_token_logps is already)",
                      detached_logps),
          ])
def observe_grpo_loss(candidate):
    seen = {}
    for seed, beta in ((0, 0.0), (1, 0.0), (2, 0.1)):
        out = attempt(_loss_and_gradient, candidate, seed, beta)
        loss, gradient = (out, None) if isinstance(out, Raised) else out
        seen[f"loss (beta={beta}, case {seed})"] = loss
        seen[f"gradient (beta={beta}, case {seed})"] = gradient
    return seen


def _judge_loss(seen, expected):
    verdict = "exact"
    for name, wanted in expected.items():
        actual = seen[name]
        if name.startswith("loss"):
            if isinstance(actual, Raised):
                raise Mismatch(f"your code raised "
                               f"{describe_error(actual.error)}")
            if isinstance(actual, torch.Tensor) and actual.dim() > 0:
                raise Mismatch(f"the loss should be one number, got shape "
                               f"{tuple(actual.shape)}")
            verdict = compare(name, actual, wanted)
        elif actual is None:
            raise Mismatch("the loss has no gradient: keep per_token_logps "
                           "in the computation (do not detach it)")
        else:
            compare(name, actual, wanted)
    return f"loss and gradient {verdict}, clipped and with KL"
