"""GRPO at TRL 1.16's breadth (issue 71): several weighed reward functions,
None rewards, GDPO's aggregation, truncated completions masked, and the
sampling filters. Each compared with TRL's own code on the same tensors
(`GRPOTrainer._generate_and_score_completions` on a stand-in, as
tests/test_loss_types.py runs it), then wired through the kit's trainer.
"""

import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from kit import tasks
from kit.losses import SCALE_REWARDS
from kit.multi_rewards import MULTI_OBJECTIVE
from kit.models import load_policy
from kit.trainers import GRPOConfig, GRPOTrainer
from kit.trainers.generation import (generate, generation_config, truncated,
                                     up_to_first_eos)
from kit.trainers.guards import score

NAN = math.nan
EOS, PAD = 2, 0  # the token ids the stand-in's tokenizer uses


def trl():
    return pytest.importorskip(
        "trl", reason="trl is not installed: pip install -e '.[dev]'")


def trl_scored(rewards_per_func, num_generations, scale_rewards="group",
               aggregation="sum_then_normalize", weights=None,
               completion_ids=None, mask_truncated=False):
    """TRL 1.16's _generate_and_score_completions on one process, given
    the rewards (B, F) and the completions' ids (lists) -> its output."""
    n, F = rewards_per_func.shape
    completion_ids = completion_ids or [[1, EOS]] * n
    accelerator = SimpleNamespace(
        device=torch.device("cpu"), num_processes=1, process_index=0,
        gather=lambda t: t, gather_for_metrics=lambda t: t,
        reduce=lambda t, reduction: t)
    stand_in = SimpleNamespace(
        accelerator=accelerator, model=SimpleNamespace(
            training=True, is_gradient_checkpointing=False),
        _metrics=defaultdict(lambda: defaultdict(list)), use_vllm=False,
        environment_factories=None, tools=None, environments=None,
        _generate=lambda prompts: ([[1]] * n, completion_ids, None,
                                   ["c"] * n, None, {}, None, None),
        _tokenizer=SimpleNamespace(pad_token_id=PAD), eos_token_ids=[EOS],
        pad_to_multiple_of=None, mask_truncated_completions=mask_truncated,
        num_iterations=1, beta=0.0,
        args=SimpleNamespace(per_device_train_batch_size=n,
                             steps_per_generation=1,
                             gradient_accumulation_steps=1,
                             gradient_checkpointing_kwargs=None),
        _calculate_rewards=lambda *args: rewards_per_func.clone(),
        num_generations=num_generations, scale_rewards=scale_rewards,
        multi_objective_aggregation=aggregation,
        reward_weights=torch.ones(F) if weights is None
        else torch.tensor(weights),
        reward_func_names=[f"r{i}" for i in range(F)],
        reward_funcs=[None] * F,
        _logs={"prompt": [], "completion": [], "advantages": [],
               "rewards": defaultdict(list), "extra": defaultdict(list)},
        _pending_metrics={}, _pending_extra_logs={}, log_multimodal=False)
    return trl().GRPOTrainer._generate_and_score_completions(
        stand_in, [{"prompt": "p"}] * n)


def rewards_with_nones(F, G=4, prompts=3, seed=0):
    """(prompts·G, F) rewards; function 1 returns None (nan) for some rows,
    a whole group of it once, and one row for all but one in a group."""
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randint(0, 4, (prompts * G, F), generator=g).float()
    rewards[:, 0] *= 3.0  # a function with a wider range than the others
    rewards[[1, 5, 6], 1] = NAN  # None now and then
    rewards[G * 2:G * 3, 1] = NAN  # a group it did not score at all
    rewards[G * 2 + 1:G * 3, 0] = NAN  # one row scored (by function 0) only
    rewards[:G, -1] = 1.0  # a group that agrees: std 0
    return rewards


def kit_advantages(rewards, G, scale, aggregation, weights):
    F = rewards.shape[1]
    w = torch.ones(F) if weights is None else torch.tensor(weights)
    return MULTI_OBJECTIVE[aggregation](rewards, w, G, scale)


# --------------------------------------- reward_weights and the aggregations

@pytest.mark.parametrize("F, weights", [(2, None), (2, [1.0, 0.5]),
                                        (3, [2.0, -1.0, 0.25])])
@pytest.mark.parametrize("scale", sorted(SCALE_REWARDS))
@pytest.mark.parametrize("aggregation", sorted(MULTI_OBJECTIVE))
@pytest.mark.parametrize("nones", [True, False])
def test_the_advantages_equal_trls(F, weights, scale, aggregation, nones):
    rewards = rewards_with_nones(F)
    if not nones:
        rewards = rewards.nan_to_num(nan=2.0)
    theirs = trl_scored(rewards, 4, scale, aggregation, weights)
    ours = kit_advantages(rewards, 4, scale, aggregation, weights)
    assert torch.allclose(ours, theirs["advantages"], rtol=0, atol=1e-6)


def test_a_completion_no_function_scored_gets_advantage_0_as_in_trl():
    rewards = rewards_with_nones(2)
    rewards[3] = NAN  # neither function scored row 3 (TRL: a warning)
    for aggregation in MULTI_OBJECTIVE:
        theirs = trl_scored(rewards, 4, aggregation=aggregation)
        ours = kit_advantages(rewards, 4, "group", aggregation, None)
        assert ours[3] == 0.0
        assert torch.allclose(ours, theirs["advantages"], rtol=0, atol=1e-6)


def test_normalize_then_sum_reads_no_scale_rewards_in_trl_and_is_refused():
    rewards = rewards_with_nones(2)
    group = trl_scored(rewards, 4, "group", "normalize_then_sum")
    for scale in ("batch", "none"):  # the same advantages in TRL
        other = trl_scored(rewards, 4, scale, "normalize_then_sum")
        assert torch.equal(other["advantages"], group["advantages"])
        with pytest.raises(ValueError, match=(
                f"GRPOConfig.scale_rewards='{scale}' does nothing with "
                "multi_objective_aggregation='normalize_then_sum'")):
            GRPOConfig("unused", scale_rewards=scale,
                       multi_objective_aggregation="normalize_then_sum")


def test_without_none_the_course_functions_run_as_they_are():
    rewards = torch.tensor([[1.0], [0.0], [1.0], [1.0]])
    ours = MULTI_OBJECTIVE["sum_then_normalize"](rewards, torch.ones(1), 4,
                                                 "group")
    assert torch.equal(ours, SCALE_REWARDS["group"](rewards[:, 0], 4))


def reward_a(prompts, completions, **columns):
    return [float(len(c)) for c in completions]


def reward_b(prompts, completions, **columns):
    """None for every other completion: "no opinion" (TRL's)."""
    return [None if i % 2 else 1.0 for i in range(len(completions))]


def grpo(tmp_path, rewards=(reward_a, reward_b), **overrides):
    settings = dict(report_to="none", use_cpu=True, disable_tqdm=True,
                    per_device_train_batch_size=4, num_generations=4,
                    max_completion_length=4, save_strategy="no",
                    logging_steps=1)
    model, tokenizer = load_policy(preset="cpu")
    return GRPOTrainer(model, list(rewards),
                       args=GRPOConfig(str(tmp_path),
                                       **{**settings, **overrides}),
                       train_dataset=tasks.prompt_dataset("train", n=16),
                       processing_class=tokenizer)


def test_the_trainer_weighs_skips_none_and_logs_the_nanmean(tmp_path):
    trainer = grpo(tmp_path, reward_weights=[0.5, 2.0],
                   multi_objective_aggregation="normalize_then_sum")
    trainer.model.train()
    rows = tasks.prompt_dataset("train", n=2).to_list()
    rows = [row for row in rows for _ in range(4)]
    torch.manual_seed(0)
    batch = trainer._generate_and_score(rows)
    tokenizer = trainer.processing_class
    texts = tokenizer.batch_decode(batch["completion_ids"].masked_fill(
        batch["completion_mask"] == 0, tokenizer.pad_token_id),
        skip_special_tokens=True)
    rewards = torch.tensor([reward_a(None, texts),
                            [NAN if v is None else v
                             for v in reward_b(None, texts)]]).T  # (8, 2)
    theirs = trl_scored(rewards, 4, aggregation="normalize_then_sum",
                        weights=[0.5, 2.0])
    assert torch.allclose(batch["advantages"], theirs["advantages"],
                          rtol=0, atol=1e-6)
    logged = {name: total / count for name, (total, count)
              in trainer._metrics["train"].items()}
    assert logged["rewards/reward_b"] == 1.0  # the mean of what it scored
    assert logged["reward"] == pytest.approx(
        (0.5 * rewards[:, 0] + 2.0 * rewards[:, 1].nan_to_num()).mean())


@pytest.mark.parametrize("overrides, message", [
    (dict(reward_weights=[1.0, "2"]), r"GRPOConfig.reward_weights must be "
     r"None or a list of finite numbers, one per reward function, got "
     r"\[1.0, '2'\]: e.g. \[1.0, 0.5\] for two functions"),
    (dict(reward_weights=[1.0, math.inf]), "must be None or a list of finite"),
    (dict(reward_weights=1.0), "must be None or a list of finite"),
    (dict(reward_weights=[0, 0.0]), r"GRPOConfig.reward_weights are all 0 "
     r"\(\[0, 0.0\]\): no reward reaches the advantages"),
    (dict(multi_objective_aggregation="gdpo"),
     "GRPOConfig.multi_objective_aggregation must be one of "
     "'sum_then_normalize', 'normalize_then_sum', got 'gdpo'"),
    (dict(mask_truncated_completions="yes"),
     "GRPOConfig.mask_truncated_completions must be one of True, False"),
    (dict(top_k=1), r"GRPOConfig.top_k=1 keeps only the likeliest token"),
    (dict(top_k=-1), "GRPOConfig.top_k must be a whole number >= 0, got -1"),
    (dict(top_p=0), "GRPOConfig.top_p must be a finite number > 0, got 0"),
    (dict(top_p=1.5), "GRPOConfig.top_p must be a finite number <= 1, got "
     "1.5: 1.0 keeps every token"),
    (dict(min_p=2.0), "GRPOConfig.min_p must be a finite number <= 1"),
    (dict(repetition_penalty=0.0), "GRPOConfig.repetition_penalty must be "
     "a finite number > 0, got 0.0: 1.0 leaves the logits as they are"),
])
def test_bad_settings_are_refused_by_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        GRPOConfig("unused", **overrides)


def test_a_weight_count_unlike_the_functions_is_refused(tmp_path):
    with pytest.raises(ValueError, match=(
            r"GRPOConfig.reward_weights has 3 weights for 2 reward functions "
            r"\(reward_a, reward_b\): give one weight per function")):
        grpo(tmp_path, reward_weights=[1.0, 1.0, 1.0])


def test_a_completion_every_function_declines_is_refused():
    with pytest.raises(ValueError, match=(
            r"reward function reward_b returned None for completion 1 "
            r"\('b'\), and no other reward function scored it")):
        score([reward_b], ["p"] * 2, ["a", "b"], {})
    both = score([reward_a, reward_b], ["p"] * 2, ["a", "b"], {})
    assert both[1, 0] == 1.0 and math.isnan(both[1, 1])


# --------------------------------------------- mask_truncated_completions

def test_truncated_completions_leave_the_mask_as_in_trl():
    T = 4  # max_completion_length: a row of 4 tokens without <eos> is cut
    lists = [[5, 6, EOS], [5, 6, 7, 8], [EOS], [7, 7, 7, 7], [5, 6, 7, EOS],
             [5, PAD, 6, 7], [6, 7, 8, PAD], [6, 7, 6, 7]]
    rewards = torch.arange(8.0).unsqueeze(1)
    theirs = trl_scored(rewards, 4, completion_ids=lists, mask_truncated=True)
    ids = torch.tensor([row + [PAD] * (T - len(row)) for row in lists])
    mask = up_to_first_eos(ids, EOS)
    cut = truncated(ids, mask, EOS, PAD)
    assert cut.tolist() == [False, True, False, True, False, True, False,
                            True]
    ours = mask * (~cut).unsqueeze(1).long()
    assert torch.equal(ours, theirs["completion_mask"].long())


def test_the_trainer_masks_truncated_completions_only_when_asked(tmp_path):
    def long_completions(prompts, completions, **columns):
        return [float(len(c)) for c in completions]  # scored whole
    masked = {}
    for flag in (False, True):
        trainer = grpo(tmp_path, rewards=(long_completions,),
                       max_completion_length=2,
                       mask_truncated_completions=flag)
        trainer.model.train()
        rows = [row for row in tasks.prompt_dataset("train", n=1).to_list()
                for _ in range(4)]
        torch.manual_seed(0)
        masked[flag] = trainer._generate_and_score(rows)
    plain, dropped = masked[False], masked[True]
    eos = trainer.processing_class.eos_token_id
    cut = ~(plain["completion_ids"] == eos).any(1)
    assert cut.any()  # two tokens: most completions are cut
    assert torch.equal(plain["advantages"], dropped["advantages"])
    assert torch.equal(dropped["completion_mask"],
                       plain["completion_mask"] * (~cut)[:, None].long())


# ----------------------------------------------------- the sampling filters

def test_the_generation_config_carries_trls_sampling_settings():
    args = GRPOConfig("unused", top_p=0.9, top_k=20, min_p=0.05,
                      repetition_penalty=1.2)
    _, tokenizer = load_policy(preset="cpu")
    sampling = generation_config(tokenizer, args, True)
    assert (sampling.top_p, sampling.top_k, sampling.min_p,
            sampling.repetition_penalty) == (0.9, 20, 0.05, 1.2)
    greedy = generation_config(tokenizer, args, False)  # evaluation: plain
    assert greedy.do_sample is False and greedy.repetition_penalty == 1.0
    default = generation_config(tokenizer, GRPOConfig("unused"), True)
    assert (default.top_p, default.top_k, default.min_p,
            default.repetition_penalty) == (1.0, 0, None, 1.0)  # TRL's


def test_top_k_1_samples_the_greedy_answer():
    model, tokenizer = load_policy(preset="cpu")
    prompts = [row["prompt"] for row in tasks.prompt_dataset("train", n=4)]
    prompt = tokenizer(prompts, return_tensors="pt", padding=True,
                       padding_side="left")
    base = vars(GRPOConfig("unused", max_completion_length=6))
    device = torch.device("cpu")
    greedy, _ = generate(model, prompt, generation_config(
        tokenizer, SimpleNamespace(**base), False), device)
    hot = SimpleNamespace(**{**base, "temperature": 5.0})
    sampled, _ = generate(model, prompt, generation_config(
        tokenizer, hot, True), device)
    assert not torch.equal(sampled, greedy)  # hot sampling wanders
    top_1 = SimpleNamespace(**{**base, "temperature": 5.0, "top_k": 1})
    for seed in range(3):
        torch.manual_seed(seed)
        sampled, _ = generate(model, prompt, generation_config(
            tokenizer, top_1, True), device)
        assert torch.equal(sampled, greedy)
