"""GRPO: the losses by hand, and what GRPOTrainer guarantees."""

import copy
import functools
import json
import math

import numpy as np
import pytest
import torch
from datasets import Dataset

from kit import losses, recipes, tasks
from kit.builder import notebooks, paths
from kit.gradients import accumulated_gradient
from kit.models import greedy_accuracy, load_policy
from kit.trainers import GRPOConfig, GRPOTrainer
from kit.trainers.guards import score
from kit.trainers.sampler import RepeatSampler


def config(tmp_path, **overrides):
    settings = dict(report_to="none", use_cpu=True, disable_tqdm=True,
                    per_device_train_batch_size=8, num_generations=4,
                    max_completion_length=4, learning_rate=1e-4,
                    save_strategy="no", logging_steps=1)
    return GRPOConfig(str(tmp_path), **{**settings, **overrides})


def make(tmp_path, data=None, rewards=(tasks.correctness_reward,), **overrides):
    model, tokenizer = load_policy(preset="cpu")
    return GRPOTrainer(model, list(rewards), args=config(tmp_path, **overrides),
                       train_dataset=(tasks.prompt_dataset("train", n=64)
                                      if data is None else data),
                       processing_class=tokenizer)


# ------------------------------------------------------------------ losses

def test_group_advantages_normalise_within_each_group():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0, 5.0])
    advantages = losses.group_advantages(rewards, num_generations=4)
    std = torch.tensor([1.0, 0.0, 0.0, 0.0]).std().item()  # unbiased: 0.5
    assert advantages[:4].tolist() == pytest.approx(
        [0.75 / (std + 1e-4)] + [-0.25 / (std + 1e-4)] * 3)
    assert advantages[4:].tolist() == [0.0] * 4  # all equal: no signal


def test_grpo_loss_on_policy_is_minus_the_mean_advantage():
    logps = torch.tensor([[-1.0, -2.0, 0.0], [-0.5, -0.5, -0.5]],
                         requires_grad=True)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    advantages = torch.tensor([1.0, -3.0])
    loss = losses.grpo_loss(logps, logps.detach(), advantages, mask)
    assert loss.item() == pytest.approx(-(1.0 - 3.0) / 2)
    loss.backward()
    # d loss / d logp = -A / (tokens in the sequence) / B, masked tokens 0
    expected = torch.tensor([[-1 / 2 / 2, -1 / 2 / 2, 0.0], [3 / 3 / 2] * 3])
    assert torch.allclose(logps.grad, expected)


def test_grpo_loss_clips_the_ratio():
    old = torch.zeros(1, 2)
    logps = torch.tensor([[math.log(1.5), math.log(0.9)]], requires_grad=True)
    mask = torch.ones(1, 2)
    loss = losses.grpo_loss(logps, old, torch.tensor([1.0]), mask, epsilon=0.2)
    # token 1: ratio 1.5 is clipped to 1.2 (no gradient); token 2: 0.9 stays
    assert loss.item() == pytest.approx(-(1.2 + 0.9) / 2)
    loss.backward()
    assert logps.grad[0, 0] == 0 and logps.grad[0, 1] < 0


def test_grpo_loss_adds_beta_times_the_kl():
    logps = torch.tensor([[-1.0, -1.0]])
    ref = torch.tensor([[-1.5, -0.5]])
    mask = torch.ones(1, 2)
    plain = losses.grpo_loss(logps, logps, torch.tensor([0.0]), mask)
    with_kl = losses.grpo_loss(logps, logps, torch.tensor([0.0]), mask,
                               beta=0.1, ref_per_token_logps=ref)
    kl = losses.per_token_kl(logps, ref)
    assert kl[0].tolist() == pytest.approx(
        [math.exp(-0.5) + 0.5 - 1, math.exp(0.5) - 0.5 - 1])
    assert (with_kl - plain).item() == pytest.approx(0.1 * kl.mean().item())
    assert losses.per_token_kl(logps, logps).abs().max() == 0


# ------------------------------------------------------------------ config

@pytest.mark.parametrize("overrides, message", [
    (dict(num_generations=1), "num_generations must be a whole number >= 2, "
     "got 1: advantages compare completions of the same prompt"),
    (dict(steps_per_generation=0), "steps_per_generation must be a whole "
     "number >= 1"),
    (dict(per_device_train_batch_size=6), r"per_device_train_batch_size \(6\)"
     r" .* must be a multiple of num_generations \(4\): try 4 or 8"),
    (dict(temperature=0.0), "temperature must be a finite number > 0"),
    (dict(epsilon=0.0), "epsilon must be a finite number > 0"),
    (dict(beta=-0.1), "beta must be a finite number >= 0"),
    (dict(max_completion_length=0), "max_completion_length must be a whole "
     "number >= 1"),
])
def test_invalid_configs_name_the_field_and_the_fix(overrides, message,
                                                    tmp_path):
    with pytest.raises(ValueError, match=f"GRPOConfig\\..*{message}"):
        config(tmp_path, **overrides)


def test_steps_per_generation_defaults_to_gradient_accumulation(tmp_path):
    assert config(tmp_path, gradient_accumulation_steps=3
                  ).steps_per_generation == 3


# ------------------------------------------------------- sampler and loader

def test_the_sampler_repeats_prompts_in_groups_and_batches_for_k_steps():
    sampler = RepeatSampler(size=10, num_generations=2, prompts_per_batch=3,
                            repeats=2, seed=0)
    indices = list(sampler)
    assert len(indices) == len(sampler) == 9 * 2 * 2  # 3 full big batches
    big_batches = [indices[i:i + 12] for i in range(0, len(indices), 12)]
    for big in big_batches:
        assert big[:6] == big[6:]  # served twice
        assert big[0::2] == big[1::2]  # each prompt twice in a row
    prompts = [i for big in big_batches for i in big[:6:2]]
    assert len(set(prompts)) == 9  # no prompt twice in an epoch
    sampler.set_epoch(1)
    assert list(sampler) != indices  # a new order each epoch...
    sampler.set_epoch(0)
    assert list(sampler) == indices  # ...fixed by the seed


def test_the_dataloader_serves_one_big_batch_for_k_steps(tmp_path):
    trainer = make(tmp_path, steps_per_generation=3)
    batches = iter(trainer.get_train_dataloader())
    first = [next(batches) for _ in range(3)]
    assert len(first[0]) == 8 * 3  # per_device_train_batch_size x k
    assert first[0] == first[1] == first[2]
    assert next(batches) != first[0]


# --------------------------------------------------------------- guarantees

@pytest.mark.parametrize("steps, k, accumulation", [(7, 1, 1), (7, 3, 1),
                                                    (4, 2, 2), (4, 4, 2)])
def test_one_generate_per_steps_per_generation_micro_steps(steps, k,
                                                           accumulation,
                                                           tmp_path):
    trainer = make(tmp_path, max_steps=steps, steps_per_generation=k,
                   gradient_accumulation_steps=accumulation)
    trainer.train()
    calls = trainer.state.log_history[-2]["generation/calls"]
    assert calls == math.ceil(steps * accumulation / k)


def fixed_generation(trainer, rows):
    """Generate once, then make the trainer serve that batch every time."""
    trainer.model.train()
    batch = trainer._generate_and_score(rows)
    trainer._generate_and_score = lambda rows, greedy=False: batch
    return batch


def test_gradient_accumulation_gives_the_big_batch_gradient(tmp_path):
    accumulated = make(tmp_path / "a", gradient_accumulation_steps=2,
                       steps_per_generation=2)  # 2 micro-batches of 8
    big = make(tmp_path / "b", per_device_train_batch_size=16)  # one of 16
    rows = next(iter(big.get_train_dataloader()))
    torch.manual_seed(0)
    batch = fixed_generation(big, rows)
    assert batch["advantages"].abs().sum() > 0  # a batch with a signal
    accumulated._generate_and_score = lambda rows, greedy=False: batch
    one = accumulated_gradient(big, [rows])
    two = accumulated_gradient(accumulated, [rows, rows])
    assert torch.allclose(one, two, rtol=1e-4, atol=1e-7)


def test_off_policy_slices_keep_the_log_probs_they_were_sampled_with(tmp_path):
    on_policy = make(tmp_path, gradient_accumulation_steps=2,
                     steps_per_generation=2)
    rows = next(iter(on_policy.get_train_dataloader()))
    on_policy.model.train()
    assert on_policy._generate_and_score(rows)["old_per_token_logps"] is None
    off_policy = make(tmp_path, steps_per_generation=2)
    off_policy.model.train()
    batch = off_policy._generate_and_score(rows)
    logps = off_policy._completion_logps(off_policy.model, batch)
    assert torch.allclose(batch["old_per_token_logps"], logps)


def test_logs_carry_the_rewards_and_the_generation_cost(tmp_path):
    trainer = make(tmp_path, max_steps=2, rewards=(tasks.correctness_reward,
                                                   tasks.format_reward))
    trainer.train()
    log = trainer.state.log_history[0]
    for key in ("reward", "reward_std", "completions/mean_length",
                "rewards/correctness_reward", "rewards/format_reward",
                "generation/calls", "generation/seconds", "generation/tokens"):
        assert key in log, key
    assert log["reward"] == pytest.approx(log["rewards/correctness_reward"]
                                          + log["rewards/format_reward"])
    assert log["generation/tokens"] > 0 and log["generation/seconds"] > 0


@pytest.mark.parametrize("prompts, batch_size", [(100, 64), (100, 50),
                                               (10, 4)])
def test_evaluation_reports_the_held_out_greedy_reward(prompts, batch_size,
                                                       tmp_path):
    # a last batch smaller than the others weighs by its prompts
    model, tokenizer = load_policy(preset="cpu")
    held_out = tasks.prompt_dataset("test", n=prompts)
    trainer = GRPOTrainer(model, [tasks.correctness_reward],
                          args=config(tmp_path,
                                      per_device_eval_batch_size=batch_size),
                          train_dataset=tasks.prompt_dataset("train", n=64),
                          eval_dataset=held_out, processing_class=tokenizer)
    metrics = trainer.evaluate()
    assert metrics["eval_reward"] == pytest.approx(
        greedy_accuracy(model, tokenizer, held_out))
    assert trainer._generation["calls"] == 0  # not a training cost


def by_position(prompts, completions, **columns):
    """Fixed rewards, whatever was generated: 0, 1, 0, 0, 1, 1, 1, 0."""
    return [float(i % 8 in (1, 4, 5, 6)) for i in range(len(completions))]


def test_reward_std_is_trls_the_spread_of_the_batchs_rewards(tmp_path):
    from trl.trainer.utils import nanstd
    trainer = make(tmp_path, max_steps=1, rewards=(by_position,))
    trainer.train()
    log = trainer.state.log_history[0]
    rewards = torch.tensor(by_position(None, [""] * 8))
    assert log["reward_std"] == pytest.approx(nanstd(rewards).item())
    assert log["reward_std_in_group"] == pytest.approx(
        rewards.view(2, 4).std(1).mean().item())


def sampled(trainer, rows):
    """Sample as the trainer does; keep the scores generate() sampled from.
    -> (batch for _completion_logps, per-token log-probs sampled from)."""
    tokenizer = trainer.processing_class
    prompt = tokenizer([r["prompt"] for r in rows], return_tensors="pt",
                       padding=True, padding_side="left")
    out = trainer.model.generate(
        **prompt, do_sample=True, temperature=trainer.args.temperature,
        top_k=0, top_p=1.0, max_new_tokens=trainer.args.max_completion_length,
        pad_token_id=tokenizer.pad_token_id, output_scores=True,
        return_dict_in_generate=True)
    completion_ids = out.sequences[:, prompt["input_ids"].shape[1]:]
    scores = torch.stack(out.scores, 1).log_softmax(-1)  # (B, C, V)
    logps = scores.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)
    is_eos = completion_ids == tokenizer.eos_token_id
    mask = (is_eos.int().cumsum(1) - is_eos.int() == 0).long()
    return {"prompt_ids": prompt["input_ids"],
            "prompt_mask": prompt["attention_mask"],
            "completion_ids": completion_ids, "completion_mask": mask}, logps


def test_log_probs_score_the_tempered_distribution_that_was_sampled(tmp_path):
    trainer = make(tmp_path, temperature=0.5)
    rows = next(iter(trainer.get_train_dataloader()))
    torch.manual_seed(0)
    with torch.no_grad():
        batch, expected = sampled(trainer, rows)
        logps = trainer._completion_logps(trainer.model, batch)
    mask = batch["completion_mask"].bool()
    assert torch.allclose(logps[mask], expected[mask], atol=1e-4)


def test_generation_settings_do_not_leak_from_the_model(tmp_path):
    clean = make(tmp_path / "clean")
    leaky = make(tmp_path / "leaky")
    leaky.model.generation_config.repetition_penalty = 3.0
    leaky.model.generation_config.do_sample = True
    rows = next(iter(clean.get_train_dataloader()))
    prompt = clean.processing_class([r["prompt"] for r in rows],
                                    return_tensors="pt", padding=True,
                                    padding_side="left")
    for greedy, seeds in ((False, (0, 0)), (True, (0, 1))):
        outputs = []
        for trainer, seed in zip((clean, leaky), seeds):
            torch.manual_seed(seed)
            outputs.append(trainer._generate(prompt, greedy))
        assert torch.equal(*outputs), "greedy" if greedy else "sampling"
    assert leaky.model.generation_config.repetition_penalty == 3.0  # as lent


def test_a_nan_loss_stops_training_naming_the_step(tmp_path):
    class NaNAtStepTwo(GRPOTrainer):
        def compute_loss(self, model, inputs, **kwargs):
            loss = super().compute_loss(model, inputs, **kwargs)
            return loss * math.nan if self.state.global_step == 1 else loss
    model, tokenizer = load_policy(preset="cpu")
    trainer = NaNAtStepTwo(model, [tasks.correctness_reward],
                           args=config(tmp_path, max_steps=3),
                           train_dataset=tasks.prompt_dataset("train", n=64),
                           processing_class=tokenizer)
    with pytest.raises(FloatingPointError, match="stopped at step 2: the "
                                                 "loss or a gradient is nan"):
        trainer.train()
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_args_default_to_a_grpo_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, tokenizer = load_policy(preset="cpu")
    trainer = GRPOTrainer(model, [tasks.correctness_reward],
                          train_dataset=tasks.prompt_dataset("train", n=8),
                          processing_class=tokenizer)
    assert isinstance(trainer.args, GRPOConfig)
    assert trainer.args.output_dir == "tmp_trainer"


def test_a_kl_penalty_uses_a_frozen_reference(tmp_path):
    trainer = make(tmp_path, beta=0.1, max_steps=2)
    reference = trainer.ref_model
    before = [p.clone() for p in reference.parameters()]
    trainer.train()
    assert reference is not trainer.model
    assert all(torch.equal(a, b) for a, b in zip(before, reference.parameters()))
    assert "kl" in trainer.state.log_history[0]
    assert make(tmp_path).ref_model is None  # beta=0: no reference at all


def test_notebook_05_checks_that_its_run_raises_held_out_accuracy():
    """The claim of notebook 05 (held-out accuracy climbs by 0.2, on any
    CPU) is asserted by the notebook, after its 400-step course run:
    `make test` runs the solution under KIT_STRICT=1 rather than training
    the same run again here."""
    claims = notebooks.expectations("05_grpo_end_to_end")
    assert [claim for claim, _ in claims] == [
        "accuracy_after - accuracy_before >= 0.2"]
    cells = json.loads((paths.SOLUTIONS / "05_grpo_end_to_end.ipynb")
                       .read_text())["cells"]
    trained = next(index for index, cell in enumerate(cells)
                   if "trainer_class=MyGRPOTrainer" in "".join(cell["source"]))
    assert claims[0][1] > trained
    source = "".join(cells[trained]["source"])
    assert 'recipes.grpo_trainer(\n    "cpu"' in source  # the course recipe


# ---------------------------------------------------------------- bad input

def wrong_length(prompts, completions, **columns):
    return [1.0]


def gives_nan(prompts, completions, **columns):
    return [float("nan")] * len(completions)


def gives_text(prompts, completions, **columns):
    return ["good"] * len(completions)


def gives_none(prompts, completions, **columns):
    return [None] * len(completions)


def raises(prompts, completions, **columns):
    raise KeyError("score")


def gives_inf(prompts, completions, **columns):
    return [math.log(0.5)] + [-math.inf] * (len(completions) - 1)


def gives_huge(prompts, completions, **columns):
    return [1e39] * len(completions)  # inf in float32


def gives_float16_inf(prompts, completions, **columns):
    with np.errstate(over="ignore"):  # 70000 overflows float16: inf
        return [np.float16(70000)] * len(completions)


def gives_numpy_huge(prompts, completions, **columns):
    return np.array([1e39] * len(completions))  # float64 there, inf in 32


def gives_dict(prompts, completions, **columns):
    return {c: 1.0 for c in range(len(completions))}


def gives_matrix(prompts, completions, **columns):
    return np.ones((len(completions), 1))


@pytest.mark.parametrize("reward, message", [
    (wrong_length, "wrong_length returned 1 values for 2 completions"),
    (gives_nan, "gives_nan returned nan for completion 0"),
    (gives_text, "gives_text returned 'good' for completion 0"),
    (gives_none, "gives_none returned None for completion 0"),
    (raises, "raises raised KeyError"),
    (gives_inf, r"gives_inf returned -inf for completion 1 \('0'\): rewards "
     "must be finite float32 numbers; clip them"),
    (gives_huge, "gives_huge returned 1e[+]39 for completion 0"),
    (gives_float16_inf, r"gives_float16_inf returned np.float16\(inf\) for completion 0 "
     r"\('0'\): rewards must be finite float32 numbers"),  # N12
    (gives_numpy_huge, r"gives_numpy_huge returned 1e\+39 for completion 0"),
    (gives_dict, "gives_dict returned a dict, not one value per completion"),
    (gives_matrix, r"gives_matrix returned an array of shape \(2, 1\)"),
])
def test_a_broken_reward_function_is_refused_before_training(reward, message,
                                                             tmp_path):
    with pytest.raises(ValueError, match=message):
        make(tmp_path, rewards=(reward,))


@pytest.mark.parametrize("kind", [list, tuple, np.array, torch.tensor])
def test_rewards_may_be_any_sequence_of_numbers(kind):
    def reward(prompts, completions, **columns):
        return kind([0.5, 2.0, -1.0])
    rewards = score([reward], ["p"] * 3, ["a", "b", "c"], {})
    assert rewards[:, 0].tolist() == [0.5, 2.0, -1.0]


def test_each_reward_function_gets_its_own_copies():
    seen = []
    def vandal(prompts, completions, answer, **columns):
        completions[0], answer[0], prompts[:] = "9", "9", []
        return [0.0] * len(completions)
    def witness(prompts, completions, answer, **columns):
        seen.append((list(prompts), list(completions), list(answer)))
        return [0.0] * len(completions)
    score([vandal, witness], ["1+2="], ["3"], {"answer": ["3"]})
    assert seen == [(["1+2="], ["3"], ["3"])]


def test_prompts_that_are_not_text_are_refused_naming_the_row(tmp_path):
    data = Dataset.from_dict({"prompt": ["1+2=", None], "answer": ["3", "4"]})
    with pytest.raises(ValueError, match="train_dataset row 1: column "
                                         "'prompt' holds None"):
        make(tmp_path, data)


def test_a_reward_missing_its_column_names_the_columns(tmp_path):
    data = tasks.prompt_dataset("train", n=8).remove_columns("answer")
    with pytest.raises(ValueError, match=r"correctness_reward raised TypeError"
                                         r".*dataset columns \[\]"):
        make(tmp_path, data)


def test_a_reward_missing_its_column_in_the_eval_set_names_that_set(
        tmp_path):
    # N24: before, "the dataset columns []", and which dataset?
    model, tokenizer = load_policy(preset="cpu")
    held_out = tasks.prompt_dataset("test", n=8).remove_columns("answer")
    with pytest.raises(ValueError, match=r"correctness_reward raised TypeError"
                                         r".*the eval_dataset columns \[\] as"):
        GRPOTrainer(model, [tasks.correctness_reward], args=config(tmp_path),
                    train_dataset=tasks.prompt_dataset("train", n=64),
                    eval_dataset=held_out, processing_class=tokenizer)


def test_bad_datasets_are_refused(tmp_path):
    with pytest.raises(ValueError, match="no column 'prompt'"):
        make(tmp_path, tasks.sft_dataset("train", n=8).rename_column(
            "prompt", "question"))
    with pytest.raises(ValueError, match="train_dataset is empty"):
        make(tmp_path, tasks.prompt_dataset("train", n=8).select([]))
    with pytest.raises(ValueError, match="raise GRPOConfig.max_prompt_length"):
        make(tmp_path, max_prompt_length=4)


def test_too_few_prompts_for_one_generation_is_refused(tmp_path):
    with pytest.raises(ValueError, match="train_dataset has 3 prompts; one "
                                         "generation needs 4"):
        make(tmp_path, tasks.prompt_dataset("train", n=3),
             steps_per_generation=2)


def test_a_tokenizer_without_pad_token_is_refused(tmp_path):
    model, tokenizer = load_policy(preset="cpu")
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.pad_token = None
    with pytest.raises(ValueError, match="pad token"):
        GRPOTrainer(model, [tasks.correctness_reward], args=config(tmp_path),
                    train_dataset=tasks.prompt_dataset("train", n=8),
                    processing_class=tokenizer)


# ------------------------------------------------------------ reward names

def test_reward_functions_with_the_same_name_log_apart(tmp_path):
    rewards = [lambda prompts, completions, **columns: [1.0] * len(prompts),
               lambda prompts, completions, **columns: [2.0] * len(prompts),
               functools.partial(tasks.correctness_reward),
               functools.partial(tasks.correctness_reward)]
    trainer = make(tmp_path, rewards=rewards, max_steps=1)
    trainer.train()
    logged = trainer.state.log_history[0]
    assert logged["rewards/<lambda>"] == 1.0
    assert logged["rewards/<lambda>_2"] == 2.0
    assert "rewards/correctness_reward_2" in logged
    assert logged["rewards/correctness_reward"] == pytest.approx(
        logged["rewards/correctness_reward_2"])


def test_an_error_names_the_reward_function_by_its_unique_name(tmp_path):
    rewards = [lambda prompts, completions, **columns: [1.0] * len(prompts),
               lambda prompts, completions, **columns: [1.0]]
    with pytest.raises(ValueError, match="reward function <lambda>_2 "
                                         "returned 1 values for 2"):
        make(tmp_path, rewards=rewards)


# -------------------------------------------------------- outside the vocab

def test_a_prompt_in_words_is_counted_outside_the_vocabulary(tmp_path):
    data = Dataset.from_dict({"prompt": ["What is 3 plus 4?", "01+02="] * 8,
                              "answer": ["7", "3"] * 8})
    with pytest.warns(UserWarning, match=r"train_dataset: 8 of 16 rows have "
                                         r"characters outside the tokenizer's"
                                         r" vocabulary, which all become "
                                         r"<unk>.*'prompt': 120 characters in"
                                         r" 8 rows; e.g. row 0 'prompt' "
                                         r"'What is 3 plus 4\?': 'W', 'h'"):
        make(tmp_path, data, max_prompt_length=32)
