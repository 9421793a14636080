"""DPO: the losses by hand and against TRL, and what DPOTrainer guarantees."""

import copy
import json
import math
import warnings

import pytest
import torch
from datasets import Dataset

from kit import course, losses, recipes, tasks
from kit.builder import notebooks, paths
from kit.gradients import accumulated_gradient
from kit.models import load_policy
from kit.trainers import DPOConfig, DPOTrainer
from kit.trainers.dpo import PreferenceTokenizer


def config(tmp_path, **overrides):
    settings = dict(report_to="none", use_cpu=True, disable_tqdm=True,
                    per_device_train_batch_size=8, beta=0.5)
    return DPOConfig(str(tmp_path), **{**settings, **overrides})


@pytest.fixture
def moved_policy():
    """(policy moved off its reference, reference, tokenizer)."""
    model, tokenizer = load_policy(preset="cpu")
    reference = copy.deepcopy(model)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return model, reference, tokenizer


# ------------------------------------------------------------------ losses

def test_sequence_logps_by_hand():
    # Vocabulary of 2; logits at position t score token t+1.
    logits = torch.tensor([[[0.0, 0.0], [math.log(3), 0.0], [9.0, 9.0]]])
    input_ids = torch.tensor([[1, 1, 0]])
    completion_mask = torch.tensor([[0, 1, 1]])  # the prompt is token 0
    # token 1 after position 0: log 1/2; token 0 after position 1: log 3/4
    expected = math.log(0.5) + math.log(0.75)
    assert losses.sequence_logps(logits, input_ids, completion_mask).item() == (
        pytest.approx(expected))
    completion_mask = torch.tensor([[0, 0, 1]])  # only the last token
    assert losses.sequence_logps(logits, input_ids, completion_mask).item() == (
        pytest.approx(math.log(0.75)))


def test_sequence_logps_ignores_padding_and_prompt(moved_policy):
    model, _, tokenizer = moved_policy
    preferences = PreferenceTokenizer(tokenizer, 64)
    collate = preferences.collate
    row = preferences.dataset(Dataset.from_list(
        [{"prompt": "12+34=", "chosen": "46", "rejected": "100"}]), "test")[0]
    batch = collate([row])  # chosen is padded to the rejected's length
    logits = model(input_ids=batch["input_ids"],
                   attention_mask=batch["attention_mask"]).logits
    padded = losses.sequence_logps(logits, batch["input_ids"],
                                   batch["completion_mask"])[0]
    alone = torch.tensor([row["prompt_ids"] + row["chosen_ids"]])
    unpadded = losses.sequence_logps(model(input_ids=alone).logits, alone,
                                     torch.tensor([[0] * 7 + [1] * 3]))[0]
    assert torch.allclose(padded, unpadded, atol=1e-5)


LOGPS = [torch.tensor([-1.0, -4.0]), torch.tensor([-3.0, -2.0]),
         torch.tensor([-2.0, -3.0]), torch.tensor([-2.0, -2.5])]
# log-ratios: chosen (1, -1), rejected (-1, 0.5) -> difference (2, -1.5)


def test_dpo_loss_by_hand():
    losses_, chosen, rejected = losses.dpo_loss(*LOGPS, beta=0.5)
    expected = [math.log(1 + math.exp(-0.5 * 2)),
                math.log(1 + math.exp(-0.5 * -1.5))]
    assert losses_.tolist() == pytest.approx(expected)
    assert chosen.tolist() == pytest.approx([0.5, -0.5])
    assert rejected.tolist() == pytest.approx([-0.5, 0.25])


def test_ipo_and_hinge_by_hand():
    ipo, _, _ = losses.ipo_loss(*LOGPS, beta=0.5)
    assert ipo.tolist() == pytest.approx([(2 - 1) ** 2, (-1.5 - 1) ** 2])
    hinge, _, _ = losses.hinge_loss(*LOGPS, beta=0.5)
    assert hinge.tolist() == pytest.approx([0.0, 1 + 0.75])


@pytest.mark.parametrize("loss", [record.fn for record in
                                  losses.PREFERENCE_LOSSES.values()])
def test_rewards_are_detached_and_everything_is_per_pair(loss):
    logps = [t.clone().requires_grad_() for t in LOGPS]
    out = loss(*logps, beta=0.1)
    assert [t.shape for t in out] == [(2,)] * 3
    assert out[0].requires_grad and not out[1].requires_grad
    assert not out[2].requires_grad


def trl_loss(loss_type, model, reference, tokenizer, data, tmp_path):
    trl = pytest.importorskip("trl")
    args = trl.DPOConfig(str(tmp_path / "trl"), beta=0.5, loss_type=loss_type,
                         report_to="none", use_cpu=True,
                         per_device_train_batch_size=len(data))
    trainer = trl.DPOTrainer(model=model, ref_model=reference, args=args,
                             train_dataset=data, processing_class=tokenizer)
    return trainer.compute_loss(model, next(iter(trainer.get_train_dataloader())))


@pytest.mark.parametrize("loss_type", ["sigmoid", "hinge"])
def test_the_loss_matches_trls_dpo_trainer(loss_type, moved_policy, tmp_path):
    model, reference, tokenizer = moved_policy
    data = tasks.preference_dataset("train", n=8, seed=3)
    theirs = trl_loss(loss_type, model, reference, tokenizer, data, tmp_path)
    ours = DPOTrainer(model=model, ref_model=reference,
                      args=config(tmp_path, loss_type=loss_type),
                      train_dataset=data, processing_class=tokenizer)
    batch = next(iter(ours.get_train_dataloader()))
    assert torch.allclose(ours.compute_loss(model, batch), theirs, atol=1e-5)


# ------------------------------------------------------------------ config

@pytest.mark.parametrize("field, value, message", [
    ("beta", 0.0, "DPOConfig.beta must be a finite number > 0"),
    ("beta", -1.0, "DPOConfig.beta must be a finite number > 0"),
    ("beta", math.inf, "DPOConfig.beta must be a finite number > 0"),
    ("beta", math.nan, "DPOConfig.beta must be a finite number > 0"),
    ("loss_type", "kto", "DPOConfig.loss_type must be one of"),
    ("max_length", 1, "DPOConfig.max_length must be a whole number >= 2"),
])
def test_invalid_configs_name_the_field(field, value, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        DPOConfig(str(tmp_path), **{field: value})


# ----------------------------------------------------------------- trainer

def make(tmp_path, policy, data=None, **overrides):
    model, reference, tokenizer = policy
    return DPOTrainer(model=model, ref_model=reference,
                      args=config(tmp_path, **overrides),
                      train_dataset=(tasks.preference_dataset("train", n=32)
                                     if data is None else data),
                      eval_dataset=tasks.preference_dataset("test", n=16),
                      processing_class=tokenizer)


def test_a_missing_column_is_named(tmp_path, moved_policy):
    data = tasks.preference_dataset("train", n=4).remove_columns("rejected")
    with pytest.raises(ValueError, match="train_dataset has no column 'rejected'"):
        make(tmp_path, moved_policy, data)


def test_an_empty_dataset_is_refused(tmp_path, moved_policy):
    data = tasks.preference_dataset("train", n=4).select([])
    with pytest.raises(ValueError, match="train_dataset is empty"):
        make(tmp_path, moved_policy, data)


def test_a_prompt_longer_than_max_length_is_refused(tmp_path, moved_policy):
    with pytest.raises(ValueError, match="raise DPOConfig.max_length"):
        make(tmp_path, moved_policy, max_length=5)


def test_a_tokenizer_without_pad_token_is_refused(tmp_path, moved_policy):
    model, reference, tokenizer = moved_policy
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.pad_token = None
    with pytest.raises(ValueError, match="pad token"):
        make(tmp_path, (model, reference, tokenizer))


def test_the_collator_stacks_chosen_then_rejected(tmp_path, moved_policy):
    trainer = make(tmp_path, moved_policy, per_device_train_batch_size=4)
    batch = next(iter(trainer.get_train_dataloader()))
    assert batch["input_ids"].shape[0] == 8  # 4 chosen rows, 4 rejected rows
    tokenizer = moved_policy[2]
    texts = tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=True)
    chosen = [t.split("=") for t in texts[:4]]
    rejected = [t.split("=") for t in texts[4:]]
    for (p1, c), (p2, r) in zip(chosen, rejected):
        a, b = p1.split("+")
        assert p1 == p2 and c == str(int(a) + int(b)) and r != c
    # completion_mask covers the answer and <eos>, never prompt or padding
    ids, completion = batch["input_ids"], batch["completion_mask"].bool()
    assert (ids[completion] != tokenizer.pad_token_id).all()
    assert (completion.sum(1) == batch["attention_mask"].sum(1) - 7).all()


def test_remove_unused_columns_keeps_what_dpo_needs(tmp_path, moved_policy):
    trainer = make(tmp_path, moved_policy, remove_unused_columns=True,
                   max_steps=1)
    trainer.train()  # would fail if the token columns had been dropped
    assert trainer.state.global_step == 1


def test_the_reference_is_a_frozen_copy(tmp_path):
    model, tokenizer = load_policy(preset="cpu")
    trainer = DPOTrainer(model=model, args=config(tmp_path, max_steps=3),
                         train_dataset=tasks.preference_dataset("train", n=32),
                         processing_class=tokenizer)
    reference = trainer.ref_model
    assert reference is not trainer.model and not reference.training
    before = [p.clone() for p in reference.parameters()]
    trainer.train()
    assert all(not p.requires_grad for p in reference.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, reference.parameters()))
    assert next(reference.parameters()).device == trainer.args.device
    moved = [not torch.equal(a, b) for a, b in
             zip(before, trainer.model.parameters())]
    assert any(moved)  # the policy did train


def test_gradient_accumulation_gives_the_big_batch_gradient(tmp_path,
                                                           moved_policy):
    trainer = make(tmp_path, moved_policy)
    rows = list(trainer.train_dataset.select(range(8)))
    collate = trainer.data_collator
    big = accumulated_gradient(trainer, [collate(rows)])
    uneven = accumulated_gradient(trainer, [collate(rows[:3]),
                                            collate(rows[3:])])
    assert torch.allclose(big, uneven, rtol=1e-4, atol=1e-6)
    assert big.norm() > 0


def test_metrics_do_not_depend_on_how_the_batch_is_split(tmp_path,
                                                        moved_policy):
    trainer = make(tmp_path, moved_policy)
    rows = list(trainer.train_dataset.select(range(8)))
    logs = []
    for sizes in ([8], [3, 3, 2], [5, 3]):
        parts, start = [], 0
        for size in sizes:
            parts.append(trainer.data_collator(rows[start:start + size]))
            start += size
        accumulated_gradient(trainer, parts)
        logs.append({})
        trainer.log(logs[-1])
    for name in ("rewards/accuracies", "rewards/margins", "logps/chosen"):
        assert logs[1][name] == pytest.approx(logs[0][name]), name
        assert logs[2][name] == pytest.approx(logs[0][name]), name


def pairs(prompt, chosen, rejected):
    return Dataset.from_dict({"prompt": prompt, "chosen": chosen,
                              "rejected": rejected})


def test_completions_cut_by_max_length_are_counted(tokenizer):
    data = pairs(["1+2=", "1+2="], ["3", "3"], ["45", "4"])
    room = len(tokenizer("1+2=")["input_ids"]) + 2  # "3" and <eos> fit
    with pytest.warns(UserWarning, match="train_dataset: 1 of 2 pairs were "
                                         "cut to max_length="):
        PreferenceTokenizer(tokenizer, room).dataset(data, "train_dataset")


def test_the_same_rows_are_tokenised_once_and_still_warn(tokenizer,
                                                          monkeypatch):
    calls = []
    rows = PreferenceTokenizer.rows
    monkeypatch.setattr(PreferenceTokenizer, "rows", lambda self, *a, **k: (
        calls.append(1), rows(self, *a, **k))[1])
    room = len(tokenizer("1+2=")["input_ids"]) + 2  # "3" and <eos> fit
    for _ in range(2):  # equal rows, built twice, as two trainers do
        data = pairs(["1+2=", "1+2="], ["3", "3"], ["47", "4"])
        with pytest.warns(UserWarning, match="1 of 2 pairs were cut"):
            out = PreferenceTokenizer(tokenizer, room).dataset(
                data, "train_dataset")
        assert out["rejected_ids"][0] == out["rejected_ids"][0][:room - 4]
    assert len(calls) == 1
    PreferenceTokenizer(tokenizer, room + 1).dataset(data, "train_dataset")
    assert len(calls) == 2  # another max_length: tokenised again


def test_a_cut_that_makes_chosen_equal_rejected_is_refused(tmp_path,
                                                           moved_policy):
    with pytest.raises(ValueError, match=r"chosen equals rejected in \d+ of "
                                         r"32 pairs .*raise DPOConfig."
                                         "max_length"):
        make(tmp_path, moved_policy, max_length=8)


def test_a_pair_with_the_same_answer_twice_is_refused_before_training(
        tmp_path, moved_policy):
    data = pairs(["1+2=", "2+2=", "3+2="], ["3", "4", "5"], ["4", "4", "5"])
    with pytest.raises(ValueError, match="train_dataset row 1: chosen and "
                                         "rejected are both '4' \\(2 such "
                                         "pairs\\).*drop those rows"):
        make(tmp_path, moved_policy, data)


def test_a_pair_that_tokenises_to_the_same_ids_is_refused(tmp_path,
                                                          moved_policy):
    data = pairs(["1+2=", "2+2="], ["42 apples", "4"], ["42 pears!", "5"])
    with pytest.warns(UserWarning, match=r"train_dataset: 1 of 2 rows have "
                                         r"characters outside the tokenizer's"
                                         r" vocabulary.*'chosen': 7 "
                                         r"characters in 1 rows; 'rejected': "
                                         r"7 characters in 1 rows; e.g. row 0"
                                         r" 'chosen' '42 apples': ' ', 'a'"):
        with pytest.raises(ValueError, match="train_dataset row 0: chosen "
                                             "'42 apples' and rejected '42 "
                                             "pears!' become the same tokens"
                                             r" \(1 such pairs"):
            make(tmp_path, moved_policy, data)


def test_text_the_tokenizer_knows_gives_no_warning(tmp_path, moved_policy):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(tmp_path, moved_policy, max_length=16)


def test_completions_that_are_not_text_are_refused_naming_the_row(
        tmp_path, moved_policy):
    data = pairs(["1+2="] * 3, ["3", "3", None], ["4"] * 3)
    with pytest.raises(ValueError, match="train_dataset row 2: column "
                                         "'chosen' holds None"):
        make(tmp_path, moved_policy, data)
    data = pairs(["1+2="] * 3, ["3"] * 3, [4] * 3)
    with pytest.raises(ValueError, match="train_dataset row 0: column "
                                         "'rejected' holds 4 \\(int\\)"):
        make(tmp_path, moved_policy, data)


def test_args_default_to_a_dpo_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, tokenizer = load_policy(preset="cpu")
    trainer = DPOTrainer(model, train_dataset=tasks.preference_dataset(
        "train", n=8), processing_class=tokenizer)
    assert isinstance(trainer.args, DPOConfig)
    assert trainer.args.output_dir == "tmp_trainer"


def test_logs_and_evaluate_carry_trls_metric_names(tmp_path, moved_policy):
    trainer = make(tmp_path, moved_policy, max_steps=2, logging_steps=1)
    trainer.train()
    names = ["rewards/chosen", "rewards/rejected", "rewards/accuracies",
             "rewards/margins", "logps/chosen", "logps/rejected"]
    assert all(name in trainer.state.log_history[0] for name in names)
    metrics = trainer.evaluate()
    assert "eval_loss" in metrics
    assert all("eval_" + name in metrics for name in names)


def test_notebook_03_checks_what_its_run_learns():
    """The claims of notebook 03's shorter run, on any CPU (the loss
    halves, the held-out margin passes 1 and rewards/accuracies 0.75 (1.54
    and 0.87 here), greedy held-out accuracy does not fall (+0.11 here)),
    are asserted by the notebook itself, after its training: `make test`
    runs the solution under KIT_STRICT=1, so they fail there, and no unit
    test trains the same 150 steps again."""
    claims = notebooks.expectations("03_dpo_compute_loss")
    # each claim is its condition, as code: the same in both languages
    assert [claim for claim, _ in claims] == [
        "losses[-1] < losses[0] / 2",
        "evals[0] == 0 and evals[-1] == max_steps",
        "eval_rewards/margins > 1", "eval_rewards/accuracies >= 0.75",
        "accuracy_after >= accuracy_before"]
    cells = json.loads((paths.SOLUTIONS / "03_dpo_compute_loss.ipynb")
                       .read_text())["cells"]
    trained = next(index for index, cell in enumerate(cells)
                   if "trainer_class=MyDPOTrainer" in "".join(cell["source"]))
    assert all(index > trained for _, index in claims)
    assert recipes.DPO_NOTEBOOK == dict(max_steps=150, eval_steps=25)


def test_a_failed_expectation_fails_strict_runs_and_tells_learners(
        monkeypatch, capsys):
    monkeypatch.setenv("KIT_STRICT", "1")
    course.expect("the loss to fall", True, "it fell")  # silent
    with pytest.raises(AssertionError,
                       match="expected the loss to fall; saw 1.0 -> 2.0"):
        course.expect("the loss to fall", False, "1.0 -> 2.0")
    monkeypatch.delenv("KIT_STRICT")
    course.expect("the loss to fall", False, "1.0 -> 2.0")
    assert "expected the loss to fall; saw 1.0 -> 2.0" in capsys.readouterr(
        ).out