"""Your trainer beside TRL's: the same toy batch, both losses, the gap.

Notebooks 03 and 05 call these once the learner's DPO trainer and GRPO
loss work. Everything is built offline on the kit's toy policy, on the
CPU, in a couple of seconds; TRL is optional (`pip install .[trl]`).

Two TRL 1.16 defaults would make the numbers differ for reasons that are
not the learner's: its configs default to `bf16=True`, which on a CPU runs
the reference model under bfloat16 autocast, and GRPOConfig defaults to
`use_bias_correction_kl=True`, which multiplies the KL by the importance
ratio (the paper's KL, and the kit's, is not). Both are switched off here.
TRL also patches the forward of the models it is given (a fused LM head),
so its DPOTrainer gets copies of ours.
"""

import copy
import functools
import inspect
import os
import tempfile
import warnings

import torch

from kit.labels import say

TOLERANCE = 1e-6  # of the loss's size, at least 1e-6: float32 rounding


def bound(theirs):
    """How far two float32 losses may differ and still agree: a few ulps
    of a loss of 6.6 are 3e-6 (seen where torch runs without AVX)."""
    return TOLERANCE * max(1.0, abs(float(theirs)))


def agrees(ours, theirs):
    return abs(float(ours) - float(theirs)) <= bound(theirs)


def _quietly(function):
    """Without the deprecation warnings TRL's configs raise on import."""
    @functools.wraps(function)
    def quiet(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return function(*args, **kwargs)
    return quiet


def _trl():
    try:
        import trl
    except ImportError:
        return None
    return trl


def _toy_policies(scale=0.02, moved=1):
    """(reference, tokenizer, *`moved` copies of it moved off it by noise
    of std `scale`), on the CPU: the kit's starting policy."""
    from kit.models import load_policy
    reference, tokenizer = load_policy(preset="cpu")
    reference.to("cpu").eval()  # the same forward pass for both trainers
    generator = torch.Generator().manual_seed(0)
    copies = []
    for _ in range(moved):
        model = copy.deepcopy(reference)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(scale * torch.randn(p.shape, generator=generator))
        copies.append(model)
    return (reference, tokenizer, *copies)


def _report(ours, theirs, what):
    """Print both losses and their gap; raise under KIT_STRICT=1 if they do
    not agree (`agrees`)."""
    try:
        ours = float(ours)
    except (TypeError, ValueError, RuntimeError):
        print(say("trl_not_a_number", what=what, kind=type(ours).__name__))
        if os.environ.get("KIT_STRICT") == "1":
            raise AssertionError(f"{what}: returned {ours!r}") from None
        return None
    theirs = float(theirs)
    difference = abs(ours - theirs)
    print(say("trl_losses", what=what, ours=ours, theirs=theirs,
              difference=difference))
    if agrees(ours, theirs):
        print(say("trl_same", tolerance=bound(theirs)))
    else:
        print(say("trl_apart", tolerance=bound(theirs), what=what))
        if os.environ.get("KIT_STRICT") == "1":
            raise AssertionError(f"{what}: {ours} vs TRL's {theirs}")
    return ours, theirs, difference


# ------------------------------------------------------------------ DPO

@_quietly
def dpo_beside_trl(trainer_class, beta=0.5, pairs=8, seed=3):
    """Run `trainer_class.compute_loss` and TRL's DPOTrainer on one batch.

    Returns (yours, TRL's, |difference|), or None when TRL is missing or
    the learner's compute_loss is not written yet.
    """
    trl = _trl()
    if trl is None:
        print(say("trl_missing"))
        return None
    from kit import recipes, tasks
    from kit.trainers import DPOConfig
    reference, tokenizer, model = _toy_policies()
    # TRL patches the forward of the models it is given: its own copies
    trl_model, trl_reference = copy.deepcopy((model, reference))
    data = tasks.preference_dataset("train", n=pairs, seed=seed)
    common = dict(beta=beta, report_to="none", use_cpu=True, bf16=False,
                  per_device_train_batch_size=pairs)
    with tempfile.TemporaryDirectory() as folder:
        ours = trainer_class(model=model, ref_model=reference,
                             args=DPOConfig(folder, **common),
                             train_dataset=data, processing_class=tokenizer)
        recipes.quiet(ours)
        batch = next(iter(ours.get_train_dataloader()))
        try:
            with torch.no_grad():
                mine = ours.compute_loss(model, batch)
        except NotImplementedError:
            print(say("not_done_beside_trl", what="compute_loss"))
            return None
        theirs = trl.DPOTrainer(
            model=trl_model, ref_model=trl_reference,
            args=trl.DPOConfig(folder, loss_type="sigmoid", **common),
            train_dataset=data, processing_class=tokenizer)
        batch = next(iter(theirs.get_train_dataloader()))
        with torch.no_grad():
            trls = theirs.compute_loss(trl_model, batch)
    return _report(mine, trls, "DPO loss")


# ------------------------------------------------------------------ GRPO

def _grpo_batch(tokenizer, prompts=2, generations=4, seed=0):
    """A batch as a GRPO trainer hands it to its loss, without generating:
    each prompt with G answers (the right one and near misses)."""
    from kit import tasks
    rows = tasks.prompt_dataset("train", n=prompts, seed=seed)
    prompt_texts, answers = [], []
    for row in rows:
        wrong = [str(int(row["answer"]) + d) for d in (1, -1, 10)]
        answers += [row["answer"]] + wrong[:generations - 1]
        prompt_texts += [row["prompt"]] * generations
    prompt = tokenizer(prompt_texts, return_tensors="pt", padding=True,
                       padding_side="left")
    eos = tokenizer.eos_token
    completion = tokenizer([a + eos for a in answers], return_tensors="pt",
                           padding=True, padding_side="right",
                           add_special_tokens=False)
    advantages = torch.linspace(-1.5, 1.5, len(answers))  # (B,)
    return {"prompt_ids": prompt["input_ids"],
            "prompt_mask": prompt["attention_mask"],
            "completion_ids": completion["input_ids"],
            "completion_mask": completion["attention_mask"],
            "advantages": advantages}


def _completion_logps(model, batch):
    """Per-token log-probs of the completions: (B, C)."""
    from kit.losses import per_token_logps
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    logits = model(input_ids=ids, attention_mask=mask).logits  # (B, T, V)
    return per_token_logps(logits, ids)[:, -batch["completion_ids"].shape[1]:]


def _takes(function, keyword):
    """Whether `function` accepts `keyword` (by name, or **kwargs)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return keyword in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


@_quietly
def grpo_beside_trl(loss_fn, beta=0.1, epsilon=0.2, generations=4):
    """Run `loss_fn` (grpo_loss's signature) and TRL's GRPOTrainer loss
    with loss_type="grpo" on one batch, off-policy, with a KL term.

    TRL runs with its defaults, use_bias_correction_kl=True among them (the
    KL times the ratio), when `loss_fn` takes that keyword (kit.losses'
    functions do). A loss without it is the paper's, as notebook 05's
    exercise is: TRL then runs with the flag off, the one setting changed.

    Returns (yours, TRL's, |difference|), or None when TRL is missing or
    the learner's loss is not written yet.
    """
    trl = _trl()
    if trl is None:
        print(say("trl_missing"))
        return None
    from kit import tasks
    # the policy as it is now, as it generated (old), and the reference
    reference, tokenizer, model, old_model = _toy_policies(0.05, moved=2)
    batch = _grpo_batch(tokenizer, generations=generations)
    with torch.no_grad():
        batch["old_per_token_logps"] = _completion_logps(old_model, batch)
        batch["ref_per_token_logps"] = _completion_logps(reference, batch)
        logps = _completion_logps(model, batch)
        corrected = _takes(loss_fn, "use_bias_correction_kl")
        flag = {"use_bias_correction_kl": True} if corrected else {}
        try:
            mine = loss_fn(logps, batch["old_per_token_logps"],
                           batch["advantages"], batch["completion_mask"],
                           epsilon=epsilon, beta=beta,
                           ref_per_token_logps=batch["ref_per_token_logps"],
                           **flag)
        except NotImplementedError:
            print(say("not_done_beside_trl", what="grpo_loss"))
            return None
    size = len(batch["advantages"])
    with tempfile.TemporaryDirectory() as folder:
        args = trl.GRPOConfig(
            folder, loss_type="grpo", beta=beta, epsilon=epsilon,
            num_generations=generations, per_device_train_batch_size=size,
            report_to="none", use_cpu=True, bf16=False,
            # TRL's default (True) multiplies the KL by the ratio; a loss
            # that cannot is compared with the paper's KL, TRL's flag off
            **({} if corrected else {"use_bias_correction_kl": False}))
        theirs = trl.GRPOTrainer(
            model=model, reward_funcs=tasks.correctness_reward, args=args,
            train_dataset=tasks.prompt_dataset("train", n=size),
            processing_class=tokenizer)
        with torch.no_grad():
            trls = theirs.compute_loss(model, batch)
    return _report(mine, trls, "GRPO loss")
