"""The math of each lesson as pure tensor functions: no Trainer in sight.

Shapes: B batch, G generations per prompt, T tokens, V vocabulary.
"""

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
