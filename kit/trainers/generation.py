"""GRPO's generation helpers: the settings, the call, the masks, log-probs.

Plain functions of a model and tensors; `GRPOTrainer` strings them together
and keeps the counters.
"""

import time

import torch
from transformers import GenerationConfig

from kit.losses import per_token_logps


def keep_rows(rows):
    """The collator: rows stay as they are; _prepare_inputs tokenises."""
    return rows


def synchronize(device):
    """Wait for the GPU to finish, so timings measure work, not queueing."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def generation_config(tokenizer, args, sample):
    """Every setting that shapes the tokens, the trainer's own.

    Sampling uses the GRPOConfig's temperature, top_p, top_k, min_p and
    repetition_penalty (TRL 1.16's); evaluation is plain greedy. Settings a
    model brings (its own top_k, do_sample...) would make the samples
    differ from what the config says: `generate` lends generate() this
    config as the model's own, so none of them applies.
    """
    # the defaults (top_k=0, top_p=1, min_p=None, penalty 1) keep the whole
    # vocabulary: no warper is installed, the policy is sampled as it is
    sampling = dict(temperature=args.temperature, top_k=args.top_k,
                    top_p=args.top_p, min_p=args.min_p,
                    repetition_penalty=args.repetition_penalty)
    return GenerationConfig(
        max_new_tokens=args.max_completion_length, do_sample=sample,
        num_beams=1, use_cache=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        **(sampling if sample else {"repetition_penalty": 1.0}))


def generate(model, prompt, config, device):
    """One timed generate() call -> (completion_ids (B, T), seconds)."""
    synchronize(device)
    start = time.perf_counter()
    # generate() fills any setting we leave unset from the model's own
    # generation_config: lend it ours for the call, so none leaks in.
    own, model.generation_config = model.generation_config, config
    try:
        with torch.no_grad():
            out = model.generate(**prompt, generation_config=config)
    finally:
        model.generation_config = own
    synchronize(device)
    completion_ids = out[:, prompt["input_ids"].shape[1]:]
    return completion_ids, time.perf_counter() - start


def up_to_first_eos(completion_ids, eos_token_id):
    """The completion mask: every token up to and including the first <eos>.

    Shape: (B, T), long.
    """
    is_eos = completion_ids == eos_token_id
    before_eos = is_eos.int().cumsum(1) - is_eos.int() == 0
    return before_eos.long()


def truncated(completion_ids, completion_mask, eos_token_id, pad_token_id):
    """Completions cut by max_completion_length: the last token kept is
    neither <eos> nor pad (TRL's rule for mask_truncated_completions).

    Shape: (B,), bool.
    """
    last = (completion_mask.sum(1, keepdim=True) - 1).clamp(min=0)  # (B, 1)
    last_token = completion_ids.gather(1, last).squeeze(1)  # (B,)
    return (last_token != eos_token_id) & (last_token != pad_token_id)


def completion_logps(model, batch, temperature):
    """Per-token log-probs of the completions under `model`: (B, T)."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    positions = (mask.cumsum(1) - 1).clamp(min=0)  # as generate() counts
    logits = model(input_ids=ids, attention_mask=mask,
                   position_ids=positions).logits
    # the distribution the tokens were sampled from, as TRL scores it
    logits = logits / temperature  # (B, T, V)
    width = batch["completion_ids"].shape[1]
    return per_token_logps(logits, ids)[:, -width:]
