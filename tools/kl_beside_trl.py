"""How far the kit's GRPO KL is from TRL 1.16's default (issue 52).

TRL 1.16 multiplies the per-token KL by the importance ratio
(`use_bias_correction_kl=True`, its default); the kit's default is the
paper's KL. On the random batches of tests/test_loss_types.py (5 and 16
completions, β = 0.04, ε = 0.2, every loss type), this prints the largest
difference in loss and in the gradient with respect to the policy's
log-probs, on- and off-policy, for the kit with the flag off and on.

    python tools/kl_beside_trl.py      # needs trl (pip install -e '.[dev]')
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import test_loss_types as cases  # noqa: E402

from kit import losses  # noqa: E402

BETA, EPSILON = 0.04, 0.2


def worst(on_policy, flag):
    """(max |loss difference|, max |gradient difference|) to TRL's default."""
    loss_gap = grad_gap = 0.0
    for loss_type in sorted(losses.GRPO_LOSSES):
        for n in (5, 16):
            batch = cases.grpo_batch(n, seed=n + 1)
            if on_policy:
                batch["old"] = batch["logps"].clone()
            count = int(batch["mask"].sum())
            trl = cases.trl_grpo_loss(loss_type, batch, EPSILON, BETA, count,
                                      True)
            kit = cases.kit_grpo_loss(loss_type, batch, EPSILON, BETA, count,
                                      flag)
            loss_gap = max(loss_gap, (kit[0] - trl[0]).abs().item())
            grad_gap = max(grad_gap, (kit[1] - trl[1]).abs().max().item())
    return loss_gap, grad_gap


if __name__ == "__main__":
    for on_policy in (True, False):
        for flag in (False, True):
            loss_gap, grad_gap = worst(on_policy, flag)
            print(f"{'on' if on_policy else 'off'}-policy, kit "
                  f"use_bias_correction_kl={flag}: loss {loss_gap:.1e}, "
                  f"gradient {grad_gap:.1e} from TRL's default")
