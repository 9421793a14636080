"""The course's training runs, shared by notebooks and `python -m kit train`.

Each `*_trainer` function returns a ready `Trainer`, so a notebook can add a
callback or swap a method before calling `.train()`. Running one to the end
and saving what it leaves (`run`, `save`, the shipped starting policy) is
`kit.runs`.
"""

import torch
from transformers import (DataCollatorForSeq2Seq, PrinterCallback,
                          ProgressCallback, TrainerCallback,
                          TrainingArguments)
from transformers.utils.notebook import NotebookProgressCallback

from kit import cache, tasks
from kit.models import check_preset, greedy_accuracy, load_policy, tiny_model
from kit.runtime import pick_device, run_path

# Per-preset knobs. The starting policy is deliberately half-trained: a
# constant learning rate stopped early leaves it right on about half of the
# held-out sums, so DPO and GRPO have room to show what they add.
SFT = {
    # max_steps is only a ceiling for both: see STOP_IN_BAND
    "cpu": dict(max_steps=1000, per_device_train_batch_size=64,
                learning_rate=3e-3),
    "gpu": dict(max_steps=600, per_device_train_batch_size=256,
                learning_rate=1e-3),
}

# Both models learn the sums in a rush, and where the rush falls depends on
# the CPU's rounding ("cpu" at step 700: 0.517 held-out accuracy on the
# machine that built the shipped policy, 0.386 on an AVX2 EPYC, 0.876 there
# with ATEN_CPU_CAPABILITY=default; "gpu": 0.12 at step 250, 0.78 at 350),
# so a fixed step count could land anywhere on another machine. A run
# instead answers all the held-out sums greedily every `every` steps and
# stops at the first answer inside `band`.
BAND = (0.3, 0.6)  # what the course needs of any starting policy
STOP_IN_BAND = {preset: dict(every=10, band=BAND) for preset in SFT}


def quiet(trainer):
    """No progress bar, no printed logs: for notebooks with a live plot."""
    for callback in (PrinterCallback, ProgressCallback,
                     NotebookProgressCallback):
        trainer.remove_callback(callback)
    return trainer


def common_args(output_dir, seed, **overrides):
    """TrainingArguments every course run shares: quiet, local, seeded."""
    defaults = dict(output_dir=str(run_path(output_dir)), seed=seed,
                    report_to="none",
                    save_strategy="no", logging_steps=25,
                    lr_scheduler_type="constant", warmup_steps=0,
                    dataloader_pin_memory=torch.cuda.is_available(),
                    # Without an accelerator, say so: several processes then
                    # train together over gloo (torchrun, accelerate launch).
                    use_cpu=pick_device().type == "cpu",
                    ddp_find_unused_parameters=False)  # every weight is used
    return {**defaults, **overrides}


def _knobs(preset, table, max_steps, args, base=()):
    """Every recipe's preamble -> (preset, the run's settings).

    The preset's row of `table` over `base`, the caller's keywords over
    both, and max_steps over all when given.
    """
    preset = check_preset(preset)
    knobs = {**dict(base), **table[preset], **args}
    if max_steps is not None:
        knobs["max_steps"] = max_steps
    return preset, knobs


def _policy(preset, model, tokenizer):
    """The caller's model and tokenizer, else the preset's starting policy."""
    if model is None:
        return load_policy(preset=preset)
    return model, tokenizer


# ----------------------------------------------------------------------- SFT

def sft_features(tokenizer):
    """Turn `prompt`/`completion` rows into input_ids and labels.

    The prompt's labels are -100, so only the completion (and its <eos>)
    is learned: the model should answer sums, not write them.
    """
    def encode(example):
        prompt = tokenizer(example["prompt"])["input_ids"]
        completion = tokenizer(example["completion"], add_special_tokens=False)
        completion = completion["input_ids"] + [tokenizer.eos_token_id]
        return {"input_ids": prompt + completion,
                "labels": [-100] * len(prompt) + completion}
    return encode


def sft_rows(tokenizer, split, n=None, seed=0):
    """sft_dataset encoded by sft_features, once per process and tokenizer.

    Notebook 01 builds five trainers on the same 9000 sums: encoding them
    costs 2.5 s of CPU each time. Datasets are never changed in place, so
    trainers can share one.
    """
    def encode():
        rows = tasks.sft_dataset(split, n=n, seed=seed)
        return rows.map(sft_features(tokenizer),
                        remove_columns=rows.column_names)
    key = (split, n, seed, cache.tokenizer_key(tokenizer))
    return cache.once(cache.SFT_ROWS, key, encode)


def sft_trainer(preset=None, output_dir="runs/sft", seed=0, max_steps=None,
                model=None, tokenizer=None, trainer_class=None,
                callbacks=None, **args):
    """A fresh tiny model fine-tuned on the sums with the stock loss.

    By default with CausalLMTrainer: the stock loss written out (the same
    weights, bit for bit), under the kit's checkpoint and nan checks.
    """
    from kit.trainers import CausalLMTrainer
    preset, knobs = _knobs(preset, SFT, max_steps, args)
    tokenizer = tokenizer or tasks.make_tokenizer()
    model = model or tiny_model(preset, seed=seed, tokenizer=tokenizer)
    callbacks = list(callbacks or [])
    if preset in STOP_IN_BAND and max_steps is None:
        callbacks.append(StopInBand(tokenizer, tasks.prompt_dataset("test"),
                                    **STOP_IN_BAND[preset]))
    return (trainer_class or CausalLMTrainer)(
        model=model, processing_class=tokenizer,
        train_dataset=sft_rows(tokenizer, "train", seed=seed),
        eval_dataset=sft_rows(tokenizer, "test", n=200),  # if eval_strategy
        args=TrainingArguments(**common_args(output_dir, seed, **knobs)),
        callbacks=callbacks,
        data_collator=DataCollatorForSeq2Seq(tokenizer, padding=True))


class StopInBand(TrainerCallback):
    """Every `every` steps, greedy held-out accuracy; stop once in `band`."""

    def __init__(self, tokenizer, held_out, every, band):
        self.tokenizer, self.held_out = tokenizer, held_out
        self.every, self.band = every, band

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step % self.every:
            return
        accuracy = greedy_accuracy(model, self.tokenizer, self.held_out)
        # recorded in log_history.json, so the stop can be checked later
        state.log_history.append({"held_out_accuracy": accuracy,
                                  "step": state.global_step})
        low, high = self.band
        if accuracy > high:
            raise RuntimeError(
                f"held-out accuracy jumped past the band to {accuracy:.3f} "
                f"at step {state.global_step}: lower STOP_IN_BAND's `every`")
        control.should_training_stop = accuracy >= low


# ----------------------------------------------------------------------- DPO

# DPO and GRPO evaluate on held-out sums from step 0, so curves start at the
# starting policy; any of these can be overridden by keyword.
EVALUATE = dict(eval_strategy="steps", eval_on_start=True)

# beta=1 rather than TRL's 0.1: our sums are short (2-4 tokens), so the
# log-ratios are small and a gentle beta needs many more steps. On CPU, one
# near miss per sum, 700 steps: beta 0.5 gained +0.12 held-out greedy
# accuracy, beta 1 +0.18 (400 steps of beta 0.1 lost accuracy). The
# learning rate decays to 0: greedy accuracy rises most while it anneals.
# ("gpu" keeps beta 0.5 until a GPU can tune it.)
DPO = {
    "cpu": dict(max_steps=700, per_device_train_batch_size=64,
                learning_rate=1e-3, lr_scheduler_type="linear", beta=1.0,
                eval_steps=50, logging_steps=10),
    "gpu": dict(max_steps=600, per_device_train_batch_size=128,
                learning_rate=5e-4, lr_scheduler_type="linear", beta=0.5,
                eval_steps=50, logging_steps=10),
}


# Notebook 03 trains a shorter run than `python -m kit train dpo`, to stay
# near a minute on two cores: 150 steps, the learning rate decaying over
# them, still show the loss falling, the held-out margin rising and greedy
# accuracy up (+0.11 on CPU; the full 700 steps: +0.2).
DPO_NOTEBOOK = dict(max_steps=150, eval_steps=25)


def dpo_trainer(preset=None, output_dir="runs/dpo", seed=0, max_steps=None,
                model=None, tokenizer=None, trainer_class=None, callbacks=None,
                **args):
    """DPO from the starting policy on right-against-near-miss sums."""
    from kit.trainers import DPOConfig, DPOTrainer
    preset, knobs = _knobs(preset, DPO, max_steps, args, base={
        **EVALUATE, "per_device_eval_batch_size": 200})
    model, tokenizer = _policy(preset, model, tokenizer)
    config = DPOConfig(**common_args(output_dir, seed, **knobs))
    return (trainer_class or DPOTrainer)(
        model=model, args=config, processing_class=tokenizer,
        # Every near miss of each sum (72k pairs), not one drawn at random:
        # each slip the policy makes is pushed down on every prompt (+0.04
        # to +0.05 greedy accuracy in the same steps); held-out pairs stay
        # one a sum.
        train_dataset=tasks.preference_dataset("train", seed=seed,
                                               every_near_miss=True),
        eval_dataset=tasks.preference_dataset("test", n=200),
        callbacks=callbacks)


# ---------------------------------------------------------------------- GRPO

# Four prompts x G=8 completions a step; one generate() serves k=4 steps.
# On CPU a learning rate that starts 3x higher and decays linearly to 0
# gains more in 400 steps (+0.29 held-out accuracy) than a constant 1e-4
# (+0.25) or 800 steps of it (+0.27).
GRPO = {
    "cpu": dict(max_steps=400, per_device_train_batch_size=32,
                num_generations=8, steps_per_generation=4,
                learning_rate=3e-4, lr_scheduler_type="linear",
                max_completion_length=4, eval_steps=50, logging_steps=10),
    "gpu": dict(max_steps=400, per_device_train_batch_size=128,
                num_generations=8, steps_per_generation=4,
                learning_rate=1e-4, max_completion_length=4, eval_steps=50,
                logging_steps=10),
}


def grpo_trainer(preset=None, output_dir="runs/grpo", seed=0, max_steps=None,
                 model=None, tokenizer=None, trainer_class=None,
                 callbacks=None, reward_funcs=(tasks.correctness_reward,),
                 train_dataset=None, eval_dataset=None, **args):
    """GRPO from the starting policy, rewarded for right sums.

    Evaluation answers 500 held-out sums greedily: its `eval_reward` is the
    held-out accuracy. Pass model, tokenizer, datasets and reward_funcs to
    train something else (notebook 06 does, with a Hub model).
    """
    from kit.trainers import GRPOConfig, GRPOTrainer
    preset, knobs = _knobs(preset, GRPO, max_steps, args, base={
        **EVALUATE, "per_device_eval_batch_size": 500})
    model, tokenizer = _policy(preset, model, tokenizer)
    config = GRPOConfig(**common_args(output_dir, seed, **knobs))
    return (trainer_class or GRPOTrainer)(
        model=model, reward_funcs=list(reward_funcs), args=config,
        processing_class=tokenizer,
        train_dataset=(tasks.prompt_dataset("train", seed=seed)
                       if train_dataset is None else train_dataset),
        eval_dataset=(tasks.prompt_dataset("test", n=500)
                      if eval_dataset is None else eval_dataset),
        callbacks=callbacks)


# Notebook 07's comparison: the course GRPO recipe, changed only where the
# toy world hides a length bias. At temperature 1 the starting policy stops
# within 4 tokens (3 digits and <eos>) on 511 of 512 sampled sums, so no
# length can drift: 80 steps of the course's settings left "grpo" and
# "dapo" at the same mean length (3.44 to 3.54, arms within 0.003 on each
# of 3 seeds). Sampled at 3.0 the policy rambles (wrong digits and signs,
# up to max_completion_length), and a learning rate of 1e-3 prunes the
# rambles within the run; 2e-3 and up wreck it (reward 0 by step 20 on
# both arms), and temperature 2 leaves too few rambles to tell the arms
# apart on every seed.
LOSS_TYPE_COMPARISON = dict(max_steps=100, temperature=3.0,
                            learning_rate=1e-3, max_completion_length=16,
                            eval_strategy="no", eval_on_start=False,
                            logging_steps=5)


def loss_type_comparison(loss_type, preset=None, output_dir=None, seed=0,
                         **args):
    """Notebook 07: one arm of "grpo" against "dapo" on one budget.

    The course GRPO recipe with LOSS_TYPE_COMPARISON over it and only
    `loss_type` differing between arms: same seed, data, steps, learning
    rate and sampling, so the arms differ in the normaliser alone. No
    held-out evaluation: the seconds go to training steps.

    Measured on CPU, 100 steps, seeds 0 to 4, means of the last half of the
    logs: "grpo" 3.91 to 4.24 mean completion length (median 4.18),
    "dapo" 3.76 to 3.98 (median 3.92), "grpo" longer on every seed by 0.11
    to 0.32; both start near 4.4, and both rewards stay near 0.07 (hot
    samples). A wrong long completion is penalised less per token under
    "grpo", so its rambles are pruned more slowly: Dr. GRPO's length bias,
    small here. Reproduce with
    `python tools/lengthbias.py --seeds 0 1 2 3 4` (about 8 s an arm).
    """
    knobs = {**LOSS_TYPE_COMPARISON, **args}
    return grpo_trainer(preset, output_dir=output_dir or
                        f"runs/07_{loss_type}", seed=seed,
                        loss_type=loss_type, **knobs)

