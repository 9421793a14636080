"""Wrong and right answers to the exercises that are one function."""

import torch
import torch.nn.functional as F

from tools.wrong_answers import right, wrong

# ------------------------------------------------------ causal_lm_loss


@wrong("causal_lm_loss", rung=1)
def count_of_unshifted_labels(logits, labels):
    V = logits.shape[-1]
    total = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                            labels[:, 1:].reshape(-1), reduction="sum")
    return total / (labels != -100).sum()


@wrong("causal_lm_loss", rung=3)
def count_from_the_first_row(logits, labels):
    V = logits.shape[-1]
    total = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                            labels[:, 1:].reshape(-1), reduction="sum")
    mask = labels[:, 1:] != -100
    return total / (mask[0].sum() * len(mask))


@wrong("causal_lm_loss", rung=1)
def logits_rolled_forward(logits, labels):
    logits = torch.roll(logits, 1, dims=1)  # position t now holds t-1's
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1))


@wrong("causal_lm_loss", rung=3)
def sum_over_rows(logits, labels):
    V = logits.shape[-1]
    total = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                            labels[:, 1:].reshape(-1), reduction="sum")
    return total / logits.shape[0]


@wrong("causal_lm_loss", rung=2)
def viewed_not_reshaped(logits, labels):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].view(-1, V), labels[:, 1:].view(-1))


@right("causal_lm_loss")
def masked_mean_by_hand(logits, labels):
    log_probs = logits[:, :-1].log_softmax(-1)
    targets = labels[:, 1:]
    mask = targets != -100
    picked = log_probs.gather(-1, targets.clamp(min=0).unsqueeze(-1))
    return -(picked.squeeze(-1) * mask).sum() / mask.sum()


# ------------------------------------------------------ sequence_logps


@wrong("sequence_logps", rung=1)
def rolled_targets(logits, input_ids, completion_mask):
    log_probs = logits.log_softmax(-1)
    targets = torch.roll(input_ids, -1, dims=1)
    mask = torch.roll(completion_mask, -1, dims=1)
    picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (picked * mask).sum(-1)


@wrong("sequence_logps", rung=2)
def product_then_log(logits, input_ids, completion_mask):
    probs = logits[:, :-1].softmax(-1)
    picked = probs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    kept = torch.where(completion_mask[:, 1:] == 1, picked, 1.0)
    return kept.prod(-1).log()


@wrong("sequence_logps", rung=1)
def mask_taken_from_position_0(logits, input_ids, completion_mask):
    log_probs = logits[:, :-1].log_softmax(-1)
    picked = log_probs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = completion_mask.clone()
    mask[:, 0] = 0  # "position 0 is never a completion"
    return (picked * mask[:, :-1]).sum(-1)


@wrong("sequence_logps", rung=4)
def logits_detached(logits, input_ids, completion_mask):
    log_probs = logits.detach()[:, :-1].log_softmax(-1)
    picked = log_probs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (picked * completion_mask[:, 1:]).sum(-1)


@right("sequence_logps")
def by_cross_entropy(logits, input_ids, completion_mask):
    per_token = -F.cross_entropy(logits[:, :-1].transpose(1, 2),
                                 input_ids[:, 1:], reduction="none")
    return (per_token * completion_mask[:, 1:]).sum(-1)


# ------------------------------------------------------------ dpo_loss

def _logratios(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
               ref_rejected_logps):
    return (policy_chosen_logps - ref_chosen_logps,
            policy_rejected_logps - ref_rejected_logps)


@wrong("dpo_loss", rung=6)
def rewards_without_beta(policy_chosen_logps, policy_rejected_logps,
                         ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen, rejected = _logratios(policy_chosen_logps, policy_rejected_logps,
                                  ref_chosen_logps, ref_rejected_logps)
    losses = -F.logsigmoid(beta * (chosen - rejected))
    return losses, chosen.detach(), rejected.detach()


@wrong("dpo_loss", rung=3)
def beta_of_the_rewards_only(policy_chosen_logps, policy_rejected_logps,
                             ref_chosen_logps, ref_rejected_logps,
                             beta=0.1):
    chosen, rejected = _logratios(policy_chosen_logps, policy_rejected_logps,
                                  ref_chosen_logps, ref_rejected_logps)
    losses = -F.logsigmoid(0.5 * (chosen - rejected))  # "a middling β"
    return losses, beta * chosen.detach(), beta * rejected.detach()


@wrong("dpo_loss", rung=6)
def rewards_swapped(policy_chosen_logps, policy_rejected_logps,
                    ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen, rejected = _logratios(policy_chosen_logps, policy_rejected_logps,
                                  ref_chosen_logps, ref_rejected_logps)
    losses = -F.logsigmoid(beta * (chosen - rejected))
    return losses, beta * rejected.detach(), beta * chosen.detach()


@wrong("dpo_loss", rung=1)
def reference_subtracted_twice(policy_chosen_logps, policy_rejected_logps,
                               ref_chosen_logps, ref_rejected_logps,
                               beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = ref_rejected_logps - policy_rejected_logps
    losses = -F.logsigmoid(beta * (chosen - rejected))
    return losses, beta * chosen.detach(), beta * rejected.detach()


@wrong("dpo_loss", rung=4)
def beta_outside_the_logsigmoid(policy_chosen_logps, policy_rejected_logps,
                                ref_chosen_logps, ref_rejected_logps,
                                beta=0.1):
    chosen, rejected = _logratios(policy_chosen_logps, policy_rejected_logps,
                                  ref_chosen_logps, ref_rejected_logps)
    losses = -beta * F.logsigmoid(chosen - rejected)
    return losses, beta * chosen.detach(), beta * rejected.detach()


@wrong("dpo_loss", rung=2)
def reference_subtracted_again(policy_chosen_logps, policy_rejected_logps,
                               ref_chosen_logps, ref_rejected_logps,
                               beta=0.1):
    chosen, rejected = _logratios(policy_chosen_logps, policy_rejected_logps,
                                  ref_chosen_logps, ref_rejected_logps)
    # the paper's code, pi_logratios - ref_logratios, on log-ratios already
    logits = (chosen - rejected) - (ref_chosen_logps - ref_rejected_logps)
    losses = -F.logsigmoid(beta * logits)
    return losses, beta * chosen.detach(), beta * rejected.detach()


@right("dpo_loss")
def by_softplus(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
                ref_rejected_logps, beta=0.1):
    chosen, rejected = _logratios(policy_chosen_logps, policy_rejected_logps,
                                  ref_chosen_logps, ref_rejected_logps)
    losses = F.softplus(-beta * (chosen - rejected))
    return losses, (beta * chosen).detach(), (beta * rejected).detach()


# --------------------------------------------------------- dpo_snippet


@wrong("dpo_snippet", rung=2)
def beta_forgotten(chosen_scores, rejected_scores, beta):
    return -F.logsigmoid(chosen_scores - rejected_scores)


@wrong("dpo_snippet", rung=2)
def two_logsigmoids(chosen_scores, rejected_scores, beta):
    return -F.logsigmoid(beta * chosen_scores) + F.logsigmoid(
        beta * rejected_scores)


@right("dpo_snippet")
def beta_on_each_side(chosen_scores, rejected_scores, beta):
    return -F.logsigmoid(beta * chosen_scores - beta * rejected_scores)


# ---------------------------------------------------- group_advantages


@wrong("group_advantages", rung=2)
def no_small_constant(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)
    centred = grouped - grouped.mean(1, keepdim=True)
    return (centred / grouped.std(1, keepdim=True)).view(-1)


@wrong("group_advantages", rung=1)
def four_completions_written_in(rewards, num_generations):
    grouped = rewards.view(-1, 4)
    centred = grouped - grouped.mean(1, keepdim=True)
    return (centred / (grouped.std(1, keepdim=True) + 1e-4)).view(-1)


@wrong("group_advantages", rung=1)
def columns_of_view_G(rewards, num_generations):
    grouped = rewards.view(num_generations, -1)
    centred = grouped - grouped.mean(0, keepdim=True)
    return (centred / (grouped.std(0, keepdim=True) + 1e-4)).view(-1)


@wrong("group_advantages", rung=2)
def constant_outside_the_division(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)
    centred = grouped - grouped.mean(1, keepdim=True)
    return (centred / grouped.std(1, keepdim=True) + 1e-4).view(-1)


@right("group_advantages")
def one_group_at_a_time(rewards, num_generations):
    out = []
    for group in rewards.split(num_generations):
        out.append((group - group.mean()) / (group.std() + 1e-4))
    return torch.cat(out)


# ---------------------------------------------------------- grpo_loss

def _kl(logps, ref):
    return torch.exp(ref - logps) - (ref - logps) - 1


def _surrogate(per_token_logps, old_per_token_logps, advantages, low, high):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = torch.clamp(ratio, low, high)
    a = advantages.unsqueeze(1)
    return -torch.min(ratio * a, clipped * a)


def _mean_per_sequence(per_token, completion_mask):
    mask = completion_mask.float()
    return ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()


@wrong("grpo_loss", rung=3)
def clip_of_a_quarter(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon=0.2, beta=0.0,
                      ref_per_token_logps=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           0.75, 1.25)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


@wrong("grpo_loss", rung=5)
def kl_left_out(per_token_logps, old_per_token_logps, advantages,
                completion_mask, epsilon=0.2, beta=0.0,
                ref_per_token_logps=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    return _mean_per_sequence(per_token, completion_mask)


@wrong("grpo_loss", rung=5)
def kl_weight_of_a_tenth(per_token_logps, old_per_token_logps, advantages,
                         completion_mask, epsilon=0.2, beta=0.0,
                         ref_per_token_logps=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    if ref_per_token_logps is not None:
        per_token = per_token + 0.1 * _kl(per_token_logps,
                                          ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


@wrong("grpo_loss", rung=4)
def divided_by_the_width(per_token_logps, old_per_token_logps, advantages,
                         completion_mask, epsilon=0.2, beta=0.0,
                         ref_per_token_logps=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return ((per_token * completion_mask).sum(1)
            / completion_mask.shape[1]).mean()


@wrong("grpo_loss", rung=2)
def min_of_the_ratios(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon=0.2, beta=0.0,
                      ref_per_token_logps=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    per_token = -torch.min(ratio, clipped) * advantages.unsqueeze(1)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


@wrong("grpo_loss", rung=1)
def ratio_of_log_probs(per_token_logps, old_per_token_logps, advantages,
                       completion_mask, epsilon=0.2, beta=0.0,
                       ref_per_token_logps=None):
    ratio = per_token_logps / old_per_token_logps
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    a = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * a, clipped * a)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


@right("grpo_loss")
def old_detached_and_where(per_token_logps, old_per_token_logps, advantages,
                           completion_mask, epsilon=0.2, beta=0.0,
                           ref_per_token_logps=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps.detach(),
                           advantages, 1 - epsilon, 1 + epsilon)
    if beta:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    per_token = torch.where(completion_mask.bool(), per_token, 0.0)
    lengths = completion_mask.sum(1).clamp(min=1)
    return (per_token.sum(1) / lengths).mean()


# ------------------------------------------- dapo_loss, dr_grpo_loss


@wrong("dapo_loss", rung=3)
def dapo_without_kl(per_token_logps, old_per_token_logps, advantages,
                    completion_mask, epsilon=0.2, beta=0.0,
                    ref_per_token_logps=None, num_items_in_batch=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    return (per_token * completion_mask).sum() / num_items_in_batch


@wrong("dapo_loss", rung=1)
def dapo_clipped_at_default(per_token_logps, old_per_token_logps,
                            advantages, completion_mask, epsilon=0.2,
                            beta=0.0, ref_per_token_logps=None,
                            num_items_in_batch=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           0.8, 1.2)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return (per_token * completion_mask).sum() / num_items_in_batch


@wrong("dapo_loss", rung=1)
def dapo_divided_per_completion(per_token_logps, old_per_token_logps,
                                advantages, completion_mask, epsilon=0.2,
                                beta=0.0, ref_per_token_logps=None,
                                num_items_in_batch=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    total = (per_token * completion_mask).sum()
    return total / (num_items_in_batch * len(completion_mask))


@wrong("dr_grpo_loss", rung=2)
def dr_grpo_length_written_in(per_token_logps, old_per_token_logps,
                              advantages, completion_mask, epsilon=0.2,
                              beta=0.0, ref_per_token_logps=None,
                              max_completion_length=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return (per_token * completion_mask).sum() / (len(per_token) * 12)


@wrong("dr_grpo_loss", rung=3)
def dr_grpo_without_kl(per_token_logps, old_per_token_logps, advantages,
                       completion_mask, epsilon=0.2, beta=0.0,
                       ref_per_token_logps=None, max_completion_length=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    total = (per_token * completion_mask).sum()
    return total / (len(per_token) * max_completion_length)


@wrong("dr_grpo_loss", rung=1)
def dr_grpo_length_alone(per_token_logps, old_per_token_logps, advantages,
                         completion_mask, epsilon=0.2, beta=0.0,
                         ref_per_token_logps=None,
                         max_completion_length=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return (per_token * completion_mask).sum() / max_completion_length


@right("dr_grpo_loss")
def dr_grpo_by_einsum(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon=0.2, beta=0.0,
                      ref_per_token_logps=None, max_completion_length=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1 + epsilon)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    total = torch.einsum("bt,bt->", per_token, completion_mask.float())
    return total / (per_token.shape[0] * max_completion_length)


# ------------------------------------------- a few more, one per idea


@wrong("causal_lm_loss", rung=3)
def positive_labels_as_the_mask(logits, labels):
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2),
                                labels[:, 1:].clamp(min=0), reduction="none")
    mask = labels[:, 1:] > 0  # "-100 and padding are not positive"
    return (per_token * mask).sum() / mask.sum()


@wrong("sequence_logps", rung=3)
def mean_times_the_longest(logits, input_ids, completion_mask):
    log_probs = logits[:, :-1].log_softmax(-1)
    picked = log_probs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = completion_mask[:, 1:]
    mean = (picked * mask).sum(-1) / mask.sum(-1)
    return mean * mask.sum(-1).max()  # "scaled back to a sum"


@wrong("dpo_snippet", rung=2)
def beta_outside_the_log(chosen_scores, rejected_scores, beta):
    return -beta * F.logsigmoid(chosen_scores - rejected_scores)


@wrong("group_advantages", rung=2)
def std_without_keepdim(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)
    centred = grouped - grouped.mean(1, keepdim=True)
    return (centred / (grouped.std(1) + 1e-4)).view(-1)


@wrong("grpo_loss", rung=3)
def clipped_from_below_only(per_token_logps, old_per_token_logps, advantages,
                            completion_mask, epsilon=0.2, beta=0.0,
                            ref_per_token_logps=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = torch.clamp(ratio, min=1 - epsilon)
    a = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * a, clipped * a)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


# ------------------------------------------------------------ gspo_loss


def _gspo(ratio, advantages, low, high):
    clipped = torch.clamp(ratio, low, high)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


@wrong("gspo_loss", rung=2)
def gspo_divided_by_the_width(per_token_logps, old_per_token_logps,
                              advantages, completion_mask, epsilon=0.2):
    log_ratio = (per_token_logps - old_per_token_logps) * completion_mask
    ratio = torch.exp(log_ratio.sum(1) / completion_mask.shape[1])
    return _gspo(ratio, advantages, 1 - epsilon, 1 + epsilon)


@wrong("gspo_loss", rung=1)
def gspo_one_ratio_for_the_batch(per_token_logps, old_per_token_logps,
                                 advantages, completion_mask, epsilon=0.2):
    log_ratio = (per_token_logps - old_per_token_logps) * completion_mask
    ratio = torch.exp(log_ratio.sum() / completion_mask.sum())
    return _gspo(ratio, advantages, 1 - epsilon, 1 + epsilon)


@wrong("gspo_loss", rung=3)
def gspo_clipped_at_default(per_token_logps, old_per_token_logps,
                            advantages, completion_mask, epsilon=0.2):
    log_ratio = (per_token_logps - old_per_token_logps) * completion_mask
    ratio = torch.exp(log_ratio.sum(1) / completion_mask.sum(1))
    return _gspo(ratio, advantages, 0.8, 1.2)


@wrong("gspo_loss", rung=3)
def gspo_summed_over_completions(per_token_logps, old_per_token_logps,
                                 advantages, completion_mask, epsilon=0.2):
    log_ratio = (per_token_logps - old_per_token_logps) * completion_mask
    ratio = torch.exp(log_ratio.sum(1) / completion_mask.sum(1))
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return -torch.min(ratio * advantages, clipped * advantages).sum()


@wrong("gspo_loss", rung=1)
def gspo_ratio_of_the_mean_probabilities(per_token_logps,
                                         old_per_token_logps, advantages,
                                         completion_mask, epsilon=0.2):
    mask = completion_mask.float()
    new = (per_token_logps.exp() * mask).sum(1) / mask.sum(1)
    old = (old_per_token_logps.exp() * mask).sum(1) / mask.sum(1)
    return _gspo(new / old, advantages, 1 - epsilon, 1 + epsilon)


@right("gspo_loss")
def gspo_by_the_product_root(per_token_logps, old_per_token_logps,
                             advantages, completion_mask, epsilon=0.2):
    mask = completion_mask.bool()
    token_ratio = torch.exp(per_token_logps - old_per_token_logps)
    product = torch.where(mask, token_ratio, 1.0).prod(1)
    ratio = product ** (1 / mask.sum(1))  # the geometric mean
    return _gspo(ratio, advantages, 1 - epsilon, 1 + epsilon)


@right("gspo_loss")
def gspo_by_nanmean(per_token_logps, old_per_token_logps, advantages,
                    completion_mask, epsilon=0.2):
    log_ratio = torch.where(completion_mask.bool(),
                            per_token_logps - old_per_token_logps,
                            float("nan"))
    ratio = torch.exp(torch.nanmean(log_ratio, 1))
    return _gspo(ratio, advantages, 1 - epsilon, 1 + epsilon)


# ------------------------- issue 62: named from what the numbers say


@wrong("group_advantages", rung=1)
def mean_over_the_groups(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)
    centred = grouped - grouped.mean(0, keepdim=True)  # "dim 0: the groups"
    return (centred / (grouped.std(1, keepdim=True) + 1e-4)).view(-1)


@wrong("group_advantages", rung=2)
def std_of_every_reward(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)
    centred = grouped - grouped.mean(1, keepdim=True)
    return (centred / (rewards.std() + 1e-4)).view(-1)


@wrong("group_advantages", rung=2)
def divided_by_the_variance(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)
    centred = grouped - grouped.mean(1, keepdim=True)
    return (centred / (grouped.var(1, keepdim=True) + 1e-4)).view(-1)


@wrong("grpo_loss", rung=1)
def probability_as_the_ratio(per_token_logps, old_per_token_logps,
                             advantages, completion_mask, epsilon=0.2,
                             beta=0.0, ref_per_token_logps=None):
    ratio = per_token_logps.exp()  # "the new policy's probability"
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    a = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * a, clipped * a)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


@wrong("grpo_loss", rung=3)
def clamp_bounds_swapped(per_token_logps, old_per_token_logps, advantages,
                         completion_mask, epsilon=0.2, beta=0.0,
                         ref_per_token_logps=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 + epsilon, 1 - epsilon)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


@wrong("grpo_loss", rung=3)
def clipped_at_one(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2, beta=0.0,
                   ref_per_token_logps=None):
    # "the clip keeps the ratio near 1": from 1 - epsilon up to 1
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 - epsilon, 1.0)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


@wrong("grpo_loss", rung=2)
def advantage_left_off_the_clip(per_token_logps, old_per_token_logps,
                                advantages, completion_mask, epsilon=0.2,
                                beta=0.0, ref_per_token_logps=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    per_token = -torch.min(ratio * advantages.unsqueeze(1), clipped)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return _mean_per_sequence(per_token, completion_mask)


@wrong("dapo_loss", rung=1)
def dapo_optimistic(per_token_logps, old_per_token_logps, advantages,
                    completion_mask, epsilon=0.2, beta=0.0,
                    ref_per_token_logps=None, num_items_in_batch=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    a = advantages.unsqueeze(1)
    per_token = -torch.max(ratio * a, clipped * a)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return (per_token * completion_mask).sum() / num_items_in_batch


@wrong("dapo_loss", rung=1)
def dapo_ratio_of_log_probs(per_token_logps, old_per_token_logps,
                            advantages, completion_mask, epsilon=0.2,
                            beta=0.0, ref_per_token_logps=None,
                            num_items_in_batch=None):
    ratio = per_token_logps / old_per_token_logps
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    a = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * a, clipped * a)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    return (per_token * completion_mask).sum() / num_items_in_batch


@wrong("dr_grpo_loss", rung=1)
def dr_grpo_bounds_swapped(per_token_logps, old_per_token_logps, advantages,
                           completion_mask, epsilon=0.2, beta=0.0,
                           ref_per_token_logps=None,
                           max_completion_length=None):
    per_token = _surrogate(per_token_logps, old_per_token_logps, advantages,
                           1 + epsilon, 1 - epsilon)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    total = (per_token * completion_mask).sum()
    return total / (len(per_token) * max_completion_length)


@wrong("dr_grpo_loss", rung=1)
def dr_grpo_objective_not_loss(per_token_logps, old_per_token_logps,
                               advantages, completion_mask, epsilon=0.2,
                               beta=0.0, ref_per_token_logps=None,
                               max_completion_length=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    a = advantages.unsqueeze(1)
    per_token = torch.min(ratio * a, clipped * a)  # the objective, maximised
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    total = (per_token * completion_mask).sum()
    return total / (len(per_token) * max_completion_length)
