"""The gradient a Trainer applies after gradient accumulation.

Used to show the gradient-accumulation trap in notebook 01 and, in the tests,
to hold every trainer to the promise: micro-batches that add up to one big
batch give the big batch's gradient.
"""

import torch


def accumulated_gradient(trainer, micro_batches):
    """Run `training_step` over micro-batches as `Trainer.train()` does.

    Mirrors one optimizer step of the Trainer's loop: `get_batch_samples`
    counts the items of all micro-batches once (`num_items_in_batch`), then
    each one goes through `training_step`. Returns the flattened gradient;
    the weights are not updated.
    """
    model = trainer.model
    model.zero_grad()
    batches, num_items = trainer.get_batch_samples(
        iter(micro_batches), len(micro_batches), trainer.args.device)
    trainer.current_gradient_accumulation_steps = len(batches)
    for batch in batches:
        if isinstance(batch, dict):  # a copy: a trainer may pop its keys
            batch = dict(batch)
        trainer.training_step(model, batch, num_items)  # GRPO's: prompt rows
    grads = [p.grad.flatten() for p in model.parameters()
             if p.grad is not None]
    model.zero_grad()
    return torch.cat(grads)


def split(batch, sizes):
    """Cut a collated batch (a dict of tensors) into micro-batches."""
    out, start = [], 0
    for size in sizes:
        out.append({k: v[start:start + size] for k, v in batch.items()})
        start += size
    return out



# "close" means within this much, in direction: |g - g_big| / |g_big|, the
# measure notebook 01's cell prints and its explorer's legend says "off"
CLOSE = 0.05


def ga_verdict(ratio, off):
    """Notebook 01's words for an accumulated gradient against the big
    batch's: `ratio` = |g| / |g_big|, `off` = |g - g_big| / |g_big|."""
    from kit.labels import say  # the notebook's language
    if off < 1e-3:
        return say("ga_exact")  # the big batch's gradient
    if abs(ratio - 2) < 0.25:
        return say("ga_mean_trap", ratio=ratio)  # nobody divided by 2
    words = "ga_close" if off <= CLOSE else "ga_apart"
    return say(words, ratio=ratio, off=off, tolerance=CLOSE)
