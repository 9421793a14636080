"""Stop a run whose loss or gradient stops being a number.

transformers hides both: a nan or inf loss is logged as the average of the
losses before it, and clipping an infinite gradient norm multiplies every
gradient by max_grad_norm / inf = 0, so the step changes nothing and the
run "succeeds". So we look where the Trainer does, before clipping: at each
micro-batch's loss, and at the gradient norm the Trainer computes (and
logs) just before it clips and steps.
"""

import math

import torch

from kit import i18n
from kit.trainers.guards import MESSAGES


def stop(step, what):
    """The one error every kit trainer raises for a nan or an inf."""
    raise FloatingPointError(i18n.text(MESSAGES, "nonfinite", step=step,
                                       what=what))


class NonFiniteMixin:
    """Every kit trainer: stop before an optimizer step on a nan or an inf.

    The losses of one optimizer step's micro-batches are remembered (on the
    device: no waiting for the GPU); the step is checked once, when the
    Trainer has the gradient norm before clipping. With several processes
    the verdict is shared, so all of them stop together.
    """

    def __init__(self, *args, **kwargs):
        # True while every loss of this optimizer step was finite (a tensor
        # once a loss came: no waiting for the GPU)
        self._finite_losses = True
        super().__init__(*args, **kwargs)

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        finite = torch.isfinite(loss.detach()).all()
        self._finite_losses = finite & self._finite_losses
        return loss

    def _get_grad_norm(self, model, grad_norm=None):
        # grad_norm: what _clip_grad_norm measured before it clipped
        grad_norm = super()._get_grad_norm(model, grad_norm)
        losses = self._finite_losses
        self._finite_losses = True  # the next step starts afresh
        verdict = torch.tensor(
            [not bool(losses), not self._finite_norm(grad_norm)],
            dtype=torch.float32, device=self.accelerator.device)
        if self.accelerator.num_processes > 1:
            verdict = self.accelerator.reduce(verdict, "sum")
        loss_bad, norm_bad = verdict.tolist()
        if loss_bad or norm_bad:
            what = ("loss: nan or inf" if loss_bad else
                    f"gradient norm before clipping: {float(grad_norm)}")
            stop(self.state.global_step + 1, what)
        return grad_norm

    def _finite_norm(self, grad_norm):
        if grad_norm is None:
            return True
        if self.accelerator.scaler is not None:
            return True  # float16: the scaler skips steps that overflow
        return math.isfinite(float(grad_norm))

