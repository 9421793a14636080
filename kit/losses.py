"""The math of each lesson as pure tensor functions: no Trainer in sight.

Shapes: B batch, G generations per prompt, T tokens, V vocabulary.
"""

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
    logprobs = logits[:, :-1, :].float().log_softmax(-1)  # (B, T-1, V)
    targets = input_ids[:, 1:]  # (B, T-1) the token each position predicts
    token_logps = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (token_logps * completion_mask[:, 1:]).sum(-1)  # (B,)


def _logratios(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
               ref_rejected_logps):
    """How much more the policy prefers chosen over rejected than the
    reference does: (π_c − ref_c) − (π_r − ref_r). Shape: (B,)."""
    return ((policy_chosen_logps - ref_chosen_logps)
            - (policy_rejected_logps - ref_rejected_logps))


def _rewards(beta, policy_chosen_logps, policy_rejected_logps,
             ref_chosen_logps, ref_rejected_logps):
    """DPO's implicit rewards β·(π − ref), detached: for logging only."""
    chosen = beta * (policy_chosen_logps - ref_chosen_logps).detach()
    rejected = beta * (policy_rejected_logps - ref_rejected_logps).detach()
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


def ipo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
             ref_rejected_logps, beta=0.1):
    """IPO, eq. 17 of Azar et al. (2023): (logratios − 1/(2β))².

    A squared loss pulls the margin to a target instead of pushing it to
    infinity, so IPO does not overfit deterministic preferences. Departure:
    TRL averages log-probs over tokens for IPO; we keep sums, as for DPO.
    Same arguments and returns as `dpo_loss`.
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


PREFERENCE_LOSSES = {"sigmoid": dpo_loss, "ipo": ipo_loss, "hinge": hinge_loss}
