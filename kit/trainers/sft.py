"""The stock loss, written out: what notebook 01 builds."""

from transformers import Trainer

from kit.losses import causal_lm_loss
from kit.trainers.checkpoint import CheckpointMixin
from kit.trainers.nonfinite import NonFiniteMixin


class CausalLMTrainer(CheckpointMixin, NonFiniteMixin, Trainer):
    """`Trainer` with its language-model loss computed in the open.

    The loss is a sum over labelled tokens divided by `num_items_in_batch`,
    the count over the whole accumulated batch, so it is already scaled for
    gradient accumulation: we say so, and the Trainer does not divide again.
    (The Trainer counts `num_items_in_batch` for any model whose forward
    takes **kwargs, as every transformers causal LM does.)

    With several processes, that count is summed over all of them, while
    the gradients of the processes are averaged: so, as the stock loss
    does, we multiply by the number of processes to get back the sum.

    Like every kit trainer, it refuses a checkpoint it cannot resume
    exactly and stops on a nan or inf loss or gradient.
    """

    loss_is_scaled_for_ga = True

    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")  # we compute the loss, not the model
        outputs = model(**inputs)
        loss = causal_lm_loss(outputs.logits, labels, num_items_in_batch)
        if (num_items_in_batch is not None
                and self.args.average_tokens_across_devices):
            loss = loss * self.accelerator.num_processes  # see above
        return (loss, outputs) if return_outputs else loss
