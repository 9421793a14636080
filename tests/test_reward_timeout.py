"""A reward function that never returns stops GRPO with its name, not a
hang: each call has GRPOConfig.reward_timeout seconds (issue 67)."""

import time

import pytest

from kit import recipes, tasks


def trainer(reward, **overrides):
    return recipes.grpo_trainer(
        "cpu", reward_funcs=[reward], max_steps=2, eval_strategy="no",
        eval_on_start=False, per_device_train_batch_size=8,
        num_generations=4, steps_per_generation=1, disable_tqdm=True,
        train_dataset=tasks.prompt_dataset("train", n=16), **overrides)


def stalls_in_training(prompts, completions, **kwargs):
    if completions != ["0"] * len(completions):  # the dry run's answers
        time.sleep(3600)
    return [0.0] * len(completions)


def stalls_at_once(prompts, completions, **kwargs):
    while True:
        pass


@pytest.mark.parametrize("reward, when", [(stalls_in_training, "train"),
                                          (stalls_at_once, "build")])
def test_a_reward_that_never_returns_is_stopped_and_named(reward, when,
                                                          tmp_path):
    start = time.monotonic()
    with pytest.raises(ValueError, match=(
            f"reward function {reward.__name__} ran past its time limit "
            r"\(1.5 s a call, GRPOConfig.reward_timeout\) on \d+ completions"
            ": make it faster")):
        trainer(reward, output_dir=tmp_path, reward_timeout=1.5).train()
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("value", [0, -1, float("nan"), "soon"])
def test_reward_timeout_must_be_a_number_above_zero(value, tmp_path):
    with pytest.raises(ValueError, match="GRPOConfig.reward_timeout must be"):
        trainer(tasks.correctness_reward, output_dir=tmp_path,
                reward_timeout=value)
