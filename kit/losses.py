"""The math of each lesson as pure tensor functions: no Trainer in sight.

Shapes: B batch, G generations per prompt, T tokens, V vocabulary.
"""

from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F


def causal_lm_loss(logits, labels, num_items_in_batch=None):
    """The stock language-model loss: next-token cross-entropy.

    Position t predicts token t+1, so logits drop their last position and
    labels their first. Labels of -100 (prompt, padding) are ignored.

    Args:
        logits: (B, T, V) scores from the model.
        labels: (B, T) token ids, -100 where nothing is to be learned.
        num_items_in_batch: under gradient accumulation, the number of
            labelled tokens in the *whole* accumulated batch. When given,
            the loss is a sum divided by it, so that micro-batches with
            different token counts add up to the big-batch mean.

    Returns:
        A scalar: the mean loss over labelled tokens.
    """
    logits = logits[:, :-1, :].float()  # (B, T-1, V) predictions for 1..T-1
    labels = labels[:, 1:]  # (B, T-1) what each position should predict
    flat_logits = logits.reshape(-1, logits.shape[-1])
    if num_items_in_batch is None:
        return F.cross_entropy(flat_logits, labels.reshape(-1),
                               ignore_index=-100)
    total = F.cross_entropy(flat_logits, labels.reshape(-1),
                            ignore_index=-100, reduction="sum")
    return total / num_items_in_batch


# ---------------------------------------------------------------------- DPO

def sequence_logps(logits, input_ids, completion_mask):
    """Log-probability of each sequence's completion under the model.

    The same shift as the LM loss: logits at t score token t+1. Prompt and
    padding tokens (completion_mask == 0) add nothing.

    Args:
        logits: (B, T, V) scores from the model for `input_ids`.
        input_ids: (B, T) the prompt followed by the completion.
        completion_mask: (B, T) 1 on completion tokens, 0 elsewhere.

    Returns:
        Shape: (B,), the summed log-probs of the completion tokens.
    """
    token_logps = per_token_logps(logits, input_ids)  # (B, T-1)
    return (token_logps * completion_mask[:, 1:]).sum(-1)  # (B,)


def sequence_mean_logps(logits, input_ids, completion_mask):
    """Per-token mean log-prob of each completion: `sequence_logps` ÷ its
    length, completion_mask.sum(), as TRL 1.16 divides for "ipo" and
    "sigmoid_norm". A completion at position 0 (an empty prompt and no
    <bos>) has a first token no logit scores: the sum leaves it out, the
    count keeps it, in TRL and here alike.

    Shape: (B,), from logits (B, T, V), input_ids and completion_mask (B, T).
    """
    counted = completion_mask.float().sum(-1).clamp(min=1)  # (B,)
    return sequence_logps(logits, input_ids, completion_mask) / counted


def per_token_logps(logits, input_ids):
    """Log-prob of each next token: position t scores token t+1.

    Shape: (B, T-1), from logits (B, T, V) and input_ids (B, T).
    """
    logprobs = logits[:, :-1, :].float().log_softmax(-1)  # (B, T-1, V)
    targets = input_ids[:, 1:]  # (B, T-1) the token each position predicts
    return logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def _logratios(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
               ref_rejected_logps):
    """How much more the policy prefers chosen over rejected than the
    reference does: (π_c − ref_c) − (π_r − ref_r). Shape: (B,)."""
    return ((policy_chosen_logps - ref_chosen_logps)
            - (policy_rejected_logps - ref_rejected_logps))


def _rewards(beta, policy_chosen_logps, policy_rejected_logps,
             ref_chosen_logps, ref_rejected_logps, detach=True):
    """DPO's implicit rewards β·(π − ref): detached, for logging; or not,
    for the losses built on each answer's own reward."""
    chosen = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected = beta * (policy_rejected_logps - ref_rejected_logps)
    if detach:
        chosen, rejected = chosen.detach(), rejected.detach()
    return chosen, rejected


def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
             ref_rejected_logps, beta=0.1):
    """The DPO loss, eq. 7 of Rafailov et al. (2023).

    loss = −log σ(β·((π_c − ref_c) − (π_r − ref_r))), where π and ref are
    the summed completion log-probs of the policy and the frozen reference.

    Args:
        policy_chosen_logps, policy_rejected_logps: (B,) from the policy.
        ref_chosen_logps, ref_rejected_logps: (B,) from the reference.
        beta: how far the policy may move from the reference (> 0).

    Returns:
        (losses, chosen_rewards, rejected_rewards), each of shape (B,); the
        rewards are β·(π − ref), detached.
    """
    logits = _logratios(policy_chosen_logps, policy_rejected_logps,
                        ref_chosen_logps, ref_rejected_logps)
    losses = -F.logsigmoid(beta * logits)
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def published_snippet(chosen_scores, rejected_scores, beta):
    """As published: β multiplies only the chosen side. Do not use.

    Notebook 03 and its explorer set it beside `dpo_loss` to show the slip.
    """
    return -F.logsigmoid(beta * chosen_scores - rejected_scores)


def ipo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
             ref_rejected_logps, beta=0.1):
    """IPO, eq. 17 of Azar et al. (2023): (logratios − 1/(2β))².

    A squared loss pulls the margin to a target instead of pushing it to
    infinity, so IPO does not overfit deterministic preferences. Give it
    per-token mean log-probs (its `logps_fn`, PREFERENCE_LOSSES), as TRL 1.16
    and the IPO authors do: with sums the target 1/(2β) would depend on
    completion length. Same arguments and returns as `dpo_loss`.
    """
    logits = _logratios(policy_chosen_logps, policy_rejected_logps,
                        ref_chosen_logps, ref_rejected_logps)
    losses = (logits - 1 / (2 * beta)) ** 2
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def hinge_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
               ref_rejected_logps, beta=0.1):
    """The hinge loss of SLiC (Zhao et al., 2023): max(0, 1 − β·logratios).

    Same arguments and returns as `dpo_loss`.
    """
    logits = _logratios(policy_chosen_logps, policy_rejected_logps,
                        ref_chosen_logps, ref_rejected_logps)
    losses = torch.relu(1 - beta * logits)
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def sigmoid_norm_loss(policy_chosen_logps, policy_rejected_logps,
                      ref_chosen_logps, ref_rejected_logps, beta=0.1):
    """Length-normalised DPO, TRL 1.16's "sigmoid_norm".

    loss = −log σ(β·((π̄_c − ref̄_c) − (π̄_r − ref̄_r))), eq. 7 of Rafailov et
    al. (2023) on per-token mean log-probs (the bar): SimPO's
    length normalisation (Meng et al., 2024, eq. 4) with the reference kept.
    A long chosen answer no longer wins by its length alone.
    Same arguments and returns as `dpo_loss`, on per-token means.
    """
    logits = _logratios(policy_chosen_logps, policy_rejected_logps,
                        ref_chosen_logps, ref_rejected_logps)  # (B,)
    losses = -F.logsigmoid(beta * logits)
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def robust_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
                ref_rejected_logps, beta=0.1, label_smoothing=0.0):
    """Robust DPO (Chowdhury et al., 2024, arXiv 2403.00409, eq. 8).

    With h = β·logratios and ε = label_smoothing, the chance that a pair's
    labels were flipped: loss = (−(1 − ε)·log σ(h) + ε·log σ(−h)) / (1 − 2ε),
    an unbiased estimate of the DPO loss on the true labels. ε = 0 is DPO.
    Same arguments and returns as `dpo_loss`; label_smoothing in [0, 0.5).
    """
    logits = _logratios(policy_chosen_logps, policy_rejected_logps,
                        ref_chosen_logps, ref_rejected_logps)  # (B,)
    eps = label_smoothing
    losses = ((-(1 - eps) * F.logsigmoid(beta * logits)
               + eps * F.logsigmoid(-beta * logits)) / (1 - 2 * eps))
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


# TRL 1.16's other pairwise loss types, each a function of the same four
# log-probs (same arguments and returns as `dpo_loss`). h = β·logratios;
# rc, rr = β·(π − ref) of chosen and of rejected.

def exo_pair_loss(policy_chosen_logps, policy_rejected_logps,
                  ref_chosen_logps, ref_rejected_logps, beta=0.1,
                  label_smoothing=1e-3):
    """EXO-pref (Ji et al., 2024, arXiv 2402.00856, eq. 16): the KL from
    the policy's preference for the pair, σ(h), to the label smoothed by
    ε = label_smoothing: σ(h)·(log σ(h) − log(1−ε)) + σ(−h)·(log σ(−h) −
    log ε). It needs ε > 0 (the paper: 1e-3)."""
    h = beta * _logratios(policy_chosen_logps, policy_rejected_logps,
                          ref_chosen_logps, ref_rejected_logps)
    eps = torch.tensor(label_smoothing, device=h.device)
    losses = (torch.sigmoid(h) * (F.logsigmoid(h) - torch.log1p(-eps))
              + torch.sigmoid(-h) * (F.logsigmoid(-h) - torch.log(eps)))
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def nca_pair_loss(policy_chosen_logps, policy_rejected_logps,
                  ref_chosen_logps, ref_rejected_logps, beta=0.1):
    """NCA (Chen et al., 2024, arXiv 2402.05369): −log σ(rc) − ½ log σ(−rc)
    − ½ log σ(−rr). Each answer's own reward, not only their difference:
    chosen's likelihood is pushed up, not only above rejected's."""
    rc, rr = _rewards(beta, policy_chosen_logps, policy_rejected_logps,
                      ref_chosen_logps, ref_rejected_logps, detach=False)
    losses = (-F.logsigmoid(rc) - 0.5 * F.logsigmoid(-rc)
              - 0.5 * F.logsigmoid(-rr))
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def bco_pair_loss(policy_chosen_logps, policy_rejected_logps,
                  ref_chosen_logps, ref_rejected_logps, beta=0.1):
    """BCO on pairs (Jung et al., 2024, arXiv 2404.04656), as TRL 1.16
    computes it, without a running reward mean: −log σ(rc) − log σ(−rr),
    chosen classed good and rejected bad, each on its own."""
    rc, rr = _rewards(beta, policy_chosen_logps, policy_rejected_logps,
                      ref_chosen_logps, ref_rejected_logps, detach=False)
    losses = -F.logsigmoid(rc) - F.logsigmoid(-rr)
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def sppo_hard_loss(policy_chosen_logps, policy_rejected_logps,
                   ref_chosen_logps, ref_rejected_logps, beta=0.1):
    """SPPO with hard labels (Wu et al., 2024, arXiv 2405.00675, eq. 4.7 with
    P = 1 for the winner, 0 for the loser): (π_c − ref_c − 1/(2β))² +
    (π_r − ref_r + 1/(2β))², each log-ratio pulled to its own target."""
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    losses = (chosen - 0.5 / beta) ** 2 + (rejected + 0.5 / beta) ** 2
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def apo_zero_loss(policy_chosen_logps, policy_rejected_logps,
                  ref_chosen_logps, ref_rejected_logps, beta=0.1):
    """APO-zero (D'Oosterlinck et al., 2024, arXiv 2408.06266, eq. 7), for
    chosen answers better than the model's own: 1 − σ(rc) + σ(rr), chosen
    up and rejected down."""
    rc, rr = _rewards(beta, policy_chosen_logps, policy_rejected_logps,
                      ref_chosen_logps, ref_rejected_logps, detach=False)
    losses = 1 - torch.sigmoid(rc) + torch.sigmoid(rr)
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def apo_down_loss(policy_chosen_logps, policy_rejected_logps,
                  ref_chosen_logps, ref_rejected_logps, beta=0.1):
    """APO-down (the same paper, eq. 8), for chosen answers worse than the
    model's own: σ(rc) + 1 − σ(rc − rr), both down, rejected more."""
    rc, rr = _rewards(beta, policy_chosen_logps, policy_rejected_logps,
                      ref_chosen_logps, ref_rejected_logps, detach=False)
    losses = torch.sigmoid(rc) + 1 - torch.sigmoid(rc - rr)
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))


def discopop_loss(policy_chosen_logps, policy_rejected_logps,
                  ref_chosen_logps, ref_rejected_logps, beta=0.1,
                  discopop_tau=0.05):
    """DiscoPOP (Chris Lu et al., 2024, arXiv 2406.08414, eq. 5): DPO's
    logistic loss and an exponential one, mixed by m = σ(h/τ):
    −log σ(h)·(1 − m) + exp(−h)·m, τ = discopop_tau (the paper: 0.05)."""
    h = beta * _logratios(policy_chosen_logps, policy_rejected_logps,
                          ref_chosen_logps, ref_rejected_logps)
    mix = torch.sigmoid(h / discopop_tau)
    losses = -F.logsigmoid(h) * (1 - mix) + torch.exp(-h) * mix
    return (losses, *_rewards(beta, policy_chosen_logps, policy_rejected_logps,
                              ref_chosen_logps, ref_rejected_logps))

# ---------------------------------------- DPOConfig.loss_type, one record each
# A loss type is declared once, here: the function, the log-probs it
# compares and the DPOConfig fields it reads besides beta. The trainer reads
# these fields and never branches on a name. (Not a decorator on each def:
# notebooks print these functions' source as solutions.)


class PreferenceLoss(NamedTuple):
    fn: Callable  # (policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    logps_fn: Callable = sequence_logps  # or per-token means
    config_fields: tuple = ()  # DPOConfig fields passed by name


PREFERENCE_LOSSES = {
    "sigmoid": PreferenceLoss(dpo_loss),
    "ipo": PreferenceLoss(ipo_loss, logps_fn=sequence_mean_logps),
    "hinge": PreferenceLoss(hinge_loss),
    "sigmoid_norm": PreferenceLoss(sigmoid_norm_loss,
                                   logps_fn=sequence_mean_logps),
    "robust": PreferenceLoss(robust_loss, config_fields=("label_smoothing",)),
    "exo_pair": PreferenceLoss(exo_pair_loss,
                               config_fields=("label_smoothing",)),
    "nca_pair": PreferenceLoss(nca_pair_loss),
    "bco_pair": PreferenceLoss(bco_pair_loss),
    "sppo_hard": PreferenceLoss(sppo_hard_loss),
    "apo_zero": PreferenceLoss(apo_zero_loss),
    "apo_down": PreferenceLoss(apo_down_loss),
    "discopop": PreferenceLoss(discopop_loss, config_fields=("discopop_tau",)),
}


# --------------------------------------------------------------------- GRPO
# Shao et al. (2024), DeepSeekMath, eq. 3. Departures, numbered:
#  1. one optimisation pass per generation (TRL's num_iterations=1), so the
#     ratio is 1 unless a generation is served over several optimizer steps;
#  2. like the paper, each completion's loss is the mean over its own tokens
#     and the batch loss the mean over completions (TRL now defaults to a
#     token-level mean instead, "dapo").


def group_advantages(rewards, num_generations):
    """How much better each completion did than its siblings.

    Args:
        rewards: (B·G,) one reward per completion, each prompt's G
            completions next to each other (as TRL lays them out).
        num_generations: G, completions per prompt.

    Returns:
        Shape: (B·G,), (reward − group mean) / (group std + 1e-4), with
        torch's default (unbiased) std, as TRL.
    """
    grouped = rewards.view(-1, num_generations)  # (B, G)
    mean = grouped.mean(dim=1, keepdim=True)  # (B, 1)
    std = grouped.std(dim=1, keepdim=True)  # (B, 1)
    return ((grouped - mean) / (std + 1e-4)).view(-1)  # (B·G,)


def per_token_kl(per_token_logps, ref_per_token_logps):
    """KL(π‖ref) per token, the unbiased k3 estimator of GRPO's eq. 4:
    exp(ref − π) − (ref − π) − 1 ≥ 0. Shape: like the inputs, (B, T)."""
    delta = ref_per_token_logps - per_token_logps
    return torch.exp(delta) - delta - 1


def importance_ratio(per_token_logps, old_per_token_logps, completion_mask,
                     level="token"):
    """ρ = π / π_old. Per token: exp(π − π_old), shape (B, T). Per sequence
    (GSPO, Zheng et al. 2025; TRL's importance_sampling_level="sequence"):
    the geometric mean of a completion's token ratios, exp of the mean
    log-ratio over its tokens, shape (B, 1): one ratio, clipped once."""
    log_ratio = per_token_logps - old_per_token_logps  # (B, T)
    if level == "sequence":
        mask = completion_mask.float()
        log_ratio = ((log_ratio * mask).sum(1)
                     / mask.sum(1).clamp(min=1)).unsqueeze(1)  # (B, 1)
    return torch.exp(log_ratio)


def grpo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None, use_bias_correction_kl=False,
              importance_sampling_level="token"):
    """The clipped surrogate of GRPO (+ β·KL to a reference when β > 0).

    Args:
        per_token_logps: (B, T) log-probs of the completion tokens, now.
        old_per_token_logps: (B, T) the same when they were generated
            (detached). Equal to per_token_logps while on-policy.
        advantages: (B,) one per completion, from `group_advantages`.
        completion_mask: (B, T) 1 on completion tokens up to <eos>.
        epsilon: the clip: the ratio may move within [1 − ε, 1 + ε].
        beta: weight of the KL penalty; 0 switches it off.
        ref_per_token_logps: (B, T) under the frozen reference, if beta > 0.
        use_bias_correction_kl: multiply the KL by the ratio (TRL 1.16's
            default; the paper's KL, False, is the exercise's).
        importance_sampling_level: "token" (the paper's), or "sequence"
            (GSPO: one ratio a completion, the exp of its mean log-ratio).

    Returns:
        A scalar: the mean over completions of their mean per-token loss.
    """
    mask = completion_mask.float()
    log_ratio = per_token_logps - old_per_token_logps  # (B, T)
    if importance_sampling_level == "sequence":  # one ratio a completion
        log_ratio = ((log_ratio * mask).sum(1)
                     / mask.sum(1).clamp(min=1)).unsqueeze(1)  # (B, 1)
    ratio = torch.exp(log_ratio)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)  # (B, T)
    advantages = advantages.unsqueeze(1)  # (B, 1) the same for every token
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta > 0:
        kl = per_token_kl(per_token_logps, ref_per_token_logps)  # (B, T)
        if use_bias_correction_kl:  # the ratio's gradient reaches it too
            kl = kl * ratio
        per_token = per_token + beta * kl
    per_sequence = (per_token * mask).sum(1) / mask.sum(1).clamp(min=1)  # (B,)
    return per_sequence.mean()


# ------------------------------------------------------ GRPO's loss types
# TRL 1.16's GRPOConfig.loss_type and scale_rewards, one function each. They
# share the per-token surrogate and differ only in what divides its sum.
# N is the number of completions in the micro-batch (B·G in the trainer).
# grpo_loss above stays self-contained: notebook 05 shows its source as the
# exercise's solution, so it cannot call a helper the notebook lacks.


def clipped_token_losses(per_token_logps, old_per_token_logps, advantages,
                         epsilon=0.2, beta=0.0, ref_per_token_logps=None,
                         use_bias_correction_kl=False, completion_mask=None,
                         importance_sampling_level="token"):
    """GRPO's loss per token, before any mask or mean (Shao et al., eq. 3).

    ℓ = −min(ρ·A, clip(ρ, 1 − ε, 1 + ε)·A) + β·KL, with ρ = exp(π − π_old)
    and the k3 KL of `per_token_kl`; no KL at all when beta == 0 (then
    ref_per_token_logps may be None). With use_bias_correction_kl (TRL
    1.16's default, DeepSeek-V3.2's unbiased reverse-KL gradient) the KL is
    ρ·KL: its gradient changes even on-policy, where ρ = 1 but ∇ρ ≠ 0.

    With importance_sampling_level="sequence" (GSPO) ρ is one ratio a
    completion, from its masked tokens (`importance_ratio`).

    Shape: (N, T), from log-probs (N, T) and advantages (N,).
    """
    ratio = importance_ratio(per_token_logps, old_per_token_logps,
                             completion_mask, importance_sampling_level)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)  # (N, T)
    advantages = advantages.unsqueeze(1)  # (N, 1) the same for every token
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    return _plus_kl(per_token, per_token_logps, ref_per_token_logps, ratio,
                    beta, use_bias_correction_kl)  # (N, T)


def _plus_kl(per_token, per_token_logps, ref_per_token_logps, ratio, beta,
             use_bias_correction_kl):
    """The token losses + β·KL (× the ratio with the bias correction)."""
    if beta > 0:
        kl = per_token_kl(per_token_logps, ref_per_token_logps)  # (N, T)
        if use_bias_correction_kl:
            kl = kl * ratio
        per_token = per_token + beta * kl
    return per_token


def _masked_sum(per_token, completion_mask):
    """Sum of the token losses on completion tokens. A scalar."""
    return (per_token * completion_mask.float()).sum()


def bnpo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None, use_bias_correction_kl=False,
              importance_sampling_level="token"):
    """"bnpo": the token mean over this micro-batch's active tokens.

    loss = Σ_i Σ_t m_it ℓ_it / Σ_i Σ_t m_it (TRL's "bnpo", batch-normalised
    policy optimisation). Every token weighs the same within a micro-batch,
    but micro-batches with few tokens weigh as much as those with many.
    Arguments as `grpo_loss`; returns a scalar. Shape: () from (N, T).
    """
    per_token = clipped_token_losses(
        per_token_logps, old_per_token_logps, advantages, epsilon, beta,
        ref_per_token_logps, use_bias_correction_kl, completion_mask,
        importance_sampling_level)  # (N, T)
    active = completion_mask.float().sum().clamp(min=1)  # a scalar
    return _masked_sum(per_token, completion_mask) / active


def dr_grpo_loss(per_token_logps, old_per_token_logps, advantages,
                 completion_mask, epsilon=0.2, beta=0.0,
                 ref_per_token_logps=None, max_completion_length=None,
                 use_bias_correction_kl=False,
                 importance_sampling_level="token"):
    """"dr_grpo": the token sum over a constant, N × max_completion_length.

    loss = Σ_i Σ_t m_it ℓ_it / (N · L_max): Dr. GRPO, Liu et al. (2025),
    "Understanding R1-Zero-Like Training", arXiv 2503.20783, section 3.1. A
    constant normaliser has no length bias. L_max is the config's
    max_completion_length, not the longest completion in the data.
    Shape: () from (N, T).
    """
    if max_completion_length is None:
        raise ValueError("dr_grpo_loss needs max_completion_length: pass "
                         "GRPOConfig.max_completion_length")
    per_token = clipped_token_losses(
        per_token_logps, old_per_token_logps, advantages, epsilon, beta,
        ref_per_token_logps, use_bias_correction_kl, completion_mask,
        importance_sampling_level)  # (N, T)
    normaliser = per_token.shape[0] * max_completion_length  # N · L_max
    return _masked_sum(per_token, completion_mask) / normaliser


def dapo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None, num_items_in_batch=None,
              use_bias_correction_kl=False,
              importance_sampling_level="token"):
    """"dapo": the token sum over a token count the caller passes in.

    loss = Σ_i Σ_t m_it ℓ_it / num_items_in_batch: DAPO, Yu et al. (2025),
    arXiv 2503.14476, section 3.3 (token-level policy gradient loss). The
    caller decides what is counted: the active tokens of the whole optimizer
    step make the micro-batch losses add up to one token mean over the step.
    TRL 1.16 passes the generation batch's count rescaled by
    GA / steps_per_generation instead. Shape: () from (N, T).
    """
    if num_items_in_batch is None:
        raise ValueError("dapo_loss needs num_items_in_batch: the number of "
                         "completion tokens to divide by, e.g. the active "
                         "tokens of the whole optimizer step")
    per_token = clipped_token_losses(
        per_token_logps, old_per_token_logps, advantages, epsilon, beta,
        ref_per_token_logps, use_bias_correction_kl, completion_mask,
        importance_sampling_level)  # (N, T)
    return _masked_sum(per_token, completion_mask) / num_items_in_batch


def cispo_loss(per_token_logps, old_per_token_logps, advantages,
               completion_mask, epsilon=0.2, beta=0.0,
               ref_per_token_logps=None, num_items_in_batch=None,
               use_bias_correction_kl=False,
               importance_sampling_level="token", epsilon_high=None):
    """"cispo": clip the importance weight, not the update (MiniMax-M1,
    arXiv 2506.13585): ℓ = −sg(min(ρ, ε_high))·A·log π per token. Every
    token keeps a gradient; the PPO clip instead drops those whose ratio
    left [1 − ε, 1 + ε]. ε_high is epsilon unless given, as in TRL 1.16
    (ScaleRL recommends 5.0). Normalised as "dapo": the token sum over
    num_items_in_batch. Shape: () from (N, T).
    """
    if num_items_in_batch is None:
        raise ValueError("cispo_loss needs num_items_in_batch, as dapo_loss")
    cap = epsilon if epsilon_high is None else epsilon_high
    ratio = importance_ratio(per_token_logps, old_per_token_logps,
                             completion_mask, importance_sampling_level)
    weight = torch.clamp(ratio, max=cap).detach()  # a weight, not a path
    per_token = -weight * advantages.unsqueeze(1) * per_token_logps
    per_token = _plus_kl(per_token, per_token_logps, ref_per_token_logps,
                         ratio, beta, use_bias_correction_kl)
    return _masked_sum(per_token, completion_mask) / num_items_in_batch


def sapo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None, use_bias_correction_kl=False,
              importance_sampling_level="token", sapo_temperature_pos=1.0,
              sapo_temperature_neg=1.05):
    """"sapo": a soft gate instead of the clip (Soft Adaptive Policy
    Optimization, arXiv 2511.20347): ℓ = −σ(τ(ρ − 1))·(4/τ)·A, τ by the
    advantage's sign. At ρ = 1 its gradient is the plain policy gradient;
    as ρ leaves 1 the gradient fades smoothly rather than stopping at a
    band's edge (epsilon is not read). Normalised as "grpo": the mean per
    completion, then over completions. Shape: () from (N, T).
    """
    ratio = importance_ratio(per_token_logps, old_per_token_logps,
                             completion_mask, importance_sampling_level)
    advantages = advantages.unsqueeze(1)  # (N, 1)
    temperature = torch.where(advantages > 0, sapo_temperature_pos,
                              sapo_temperature_neg)  # (N, 1)
    gate = torch.sigmoid(temperature * (ratio - 1)) * 4 / temperature
    per_token = _plus_kl(-gate * advantages, per_token_logps,
                         ref_per_token_logps, ratio, beta,
                         use_bias_correction_kl)
    mask = completion_mask.float()
    return ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()

# --------------------------------------- GRPOConfig.loss_type, one record each
# The function, the GRPOConfig fields it reads beyond the tensors, and
# whether it divides by the whole optimizer step's count (num_items_in_batch,
# which the trainer then passes) rather than leaving GA to the trainer.


class GRPOLoss(NamedTuple):
    fn: Callable  # (per_token_logps, old_per_token_logps, advantages, ...)
    config_fields: tuple = ()  # GRPOConfig fields passed by name
    step_normalised: bool = False


GRPO_LOSSES = {
    "grpo": GRPOLoss(grpo_loss),
    "bnpo": GRPOLoss(bnpo_loss),
    "dr_grpo": GRPOLoss(dr_grpo_loss,
                        config_fields=("max_completion_length",)),
    "dapo": GRPOLoss(dapo_loss, step_normalised=True),
    "cispo": GRPOLoss(cispo_loss, config_fields=("epsilon_high",),
                      step_normalised=True),
    "sapo": GRPOLoss(sapo_loss, config_fields=("sapo_temperature_pos",
                                               "sapo_temperature_neg")),
}


def batch_scaled_advantages(rewards, num_generations):
    """scale_rewards="batch": group baseline, the whole batch's spread.

    (reward − group mean) / (std over all B·G rewards + 1e-4): TRL 1.16's
    "batch", as the Lite PPO paper (Liu et al., 2025, arXiv 2508.08221)
    recommends: one spread for the batch, steadier than G rewards' std.
    Shape: (B·G,) from rewards (B·G,).
    """
    grouped = rewards.view(-1, num_generations)  # (B, G)
    mean = grouped.mean(dim=1, keepdim=True)  # (B, 1)
    std = rewards.std()  # a scalar: unbiased, as TRL's nanstd
    return ((grouped - mean) / (std + 1e-4)).view(-1)  # (B·G,)


def unscaled_advantages(rewards, num_generations):
    """scale_rewards="none": reward − group mean, no division at all.

    Dr. GRPO (Liu et al., 2025, arXiv 2503.20783, section 3.1) drops the
    std: dividing by it gives groups that nearly agree (prompts too easy or
    too hard) the most weight, a question-level difficulty bias.
    Shape: (B·G,) from rewards (B·G,).
    """
    grouped = rewards.view(-1, num_generations)  # (B, G)
    return (grouped - grouped.mean(dim=1, keepdim=True)).view(-1)  # (B·G,)


SCALE_REWARDS = {"group": group_advantages, "batch": batch_scaled_advantages,
                 "none": unscaled_advantages}
# TRL 1.16 also takes booleans, from before the names existed.
SCALE_REWARDS_ALIASES = {True: "group", False: "none"}
