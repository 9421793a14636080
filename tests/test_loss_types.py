"""GRPO's loss types, scale_rewards and DPO's variants: by hand, and equal
to TRL 1.16's own code on the same tensors.

TRL keeps this math inside trainer methods (`GRPOTrainer._compute_loss`,
`_generate_and_score_completions`, `DPOTrainer.compute_loss`), so the GRPO
tests call those methods on a minimal stand-in that has only the attributes
they read; DPO builds a real `trl.DPOTrainer`, as tests/test_dpo.py does.
"""

import copy
import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
from datasets import Dataset

from kit import losses, tasks
from kit.models import load_policy
from kit.trainers import DPOConfig, DPOTrainer

L_MAX = 7  # max_completion_length, and the width of every completion


def trl():
    return pytest.importorskip(
        "trl", reason="trl is not installed: pip install -e '.[dev]'")


def grpo_batch(n, seed, dtype=torch.float32):
    """n completions of uneven lengths (0 to L_MAX tokens), off-policy so
    that the clip matters. -> dict of tensors, (n, L_MAX) or (n,)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, L_MAX + 1, (n,), generator=g)
    lengths[0] = L_MAX  # one full-length completion, whatever the seed
    mask = (torch.arange(L_MAX) < lengths.unsqueeze(1)).long()  # (n, T)
    logps = -torch.rand(n, L_MAX, generator=g, dtype=dtype) * 3
    return {
        "logps": logps,
        "old": logps + 0.4 * torch.randn(n, L_MAX, generator=g, dtype=dtype),
        "ref": logps + 0.3 * torch.randn(n, L_MAX, generator=g, dtype=dtype),
        "advantages": torch.randn(n, generator=g, dtype=dtype),
        "mask": mask,
    }


def stand_in(**attributes):
    """What TRL's GRPOTrainer methods read from self, on one process."""
    accelerator = SimpleNamespace(
        device=torch.device("cpu"), num_processes=1, process_index=0,
        gather=lambda t: t, gather_for_metrics=lambda t: t,
        reduce=lambda t, reduction: t)
    return SimpleNamespace(
        accelerator=accelerator, model=SimpleNamespace(
            training=True, is_gradient_checkpointing=False),
        _metrics=defaultdict(lambda: defaultdict(list)), use_vllm=False,
        **attributes)


def trl_grpo_loss(loss_type, batch, epsilon, beta, num_items_in_batch,
                  use_bias_correction_kl=False, level="token",
                  epsilon_high=None, sapo_temperature_pos=1.0,
                  sapo_temperature_neg=1.05):
    """TRL 1.16's GRPOTrainer._compute_loss -> (loss, d loss / d logps)."""
    policy = batch["logps"].clone().requires_grad_()
    trainer = stand_in(
        _get_per_token_logps_and_entropies=lambda *args, **kwargs: (
            policy, torch.zeros_like(policy), None),
        loss_type=loss_type, beta=beta, epsilon_low=epsilon,
        epsilon_high=epsilon if epsilon_high is None else epsilon_high,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None, importance_sampling_level=level,
        current_gradient_accumulation_steps=1, max_completion_length=L_MAX,
        _entropy_bonus_enabled=False, aux_loss_enabled=False,
        args=SimpleNamespace(delta=None,
                             use_bias_correction_kl=use_bias_correction_kl,
                             steps_per_generation=1,
                             sapo_temperature_pos=sapo_temperature_pos,
                             sapo_temperature_neg=sapo_temperature_neg))
    n = len(batch["mask"])
    inputs = {"prompt_ids": torch.ones(n, 2, dtype=torch.long),
              "prompt_mask": torch.ones(n, 2, dtype=torch.long),
              "completion_ids": torch.ones_like(batch["mask"]),
              "completion_mask": batch["mask"],
              "advantages": batch["advantages"],
              "old_per_token_logps": batch["old"],
              "ref_per_token_logps": batch["ref"],
              "num_items_in_batch": torch.tensor(float(num_items_in_batch))}
    loss = trl().GRPOTrainer._compute_loss(trainer, None, inputs)
    return loss, torch.autograd.grad(loss, policy)[0]


def kit_grpo_loss(loss_type, batch, epsilon, beta, num_items_in_batch,
                  use_bias_correction_kl=False, level="token", **settings):
    """kit.losses.GRPO_LOSSES[loss_type] -> (loss, d loss / d logps)."""
    policy = batch["logps"].clone().requires_grad_()
    extra = {"dr_grpo": {"max_completion_length": L_MAX},
             "dapo": {"num_items_in_batch": num_items_in_batch},
             "cispo": {"num_items_in_batch": num_items_in_batch}}
    loss = losses.GRPO_LOSSES[loss_type].fn(
        policy, batch["old"], batch["advantages"], batch["mask"],
        epsilon=epsilon, beta=beta,
        ref_per_token_logps=batch["ref"] if beta > 0 else None,
        use_bias_correction_kl=use_bias_correction_kl,
        importance_sampling_level=level, **extra.get(loss_type, {}),
        **settings)
    return loss, torch.autograd.grad(loss, policy)[0]


# ------------------------------------------------------ GRPO against TRL

@pytest.mark.parametrize("loss_type", sorted(losses.GRPO_LOSSES))
@pytest.mark.parametrize("epsilon", [0.1, 0.2, 0.3])
@pytest.mark.parametrize("beta", [0.0, 0.04])
@pytest.mark.parametrize("n", [1, 5, 16])
def test_each_grpo_loss_type_equals_trls(loss_type, epsilon, beta, n):
    batch = grpo_batch(n, seed=n)
    active = int(batch["mask"].sum())
    # dapo: the token count of this micro-batch, then of a bigger step
    for count in (active, 3 * active + 1):
        theirs = trl_grpo_loss(loss_type, batch, epsilon, beta, count)
        ours = kit_grpo_loss(loss_type, batch, epsilon, beta, count)
        assert torch.allclose(ours[0], theirs[0], rtol=0, atol=1e-6)
        assert torch.allclose(ours[1], theirs[1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("loss_type", sorted(losses.GRPO_LOSSES))
@pytest.mark.parametrize("beta", [0.04, 0.1])
@pytest.mark.parametrize("on_policy", [True, False])
@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("n", [5, 16])
def test_the_kl_bias_correction_equals_trls(loss_type, beta, on_policy, flag,
                                            n):
    """GRPOConfig.use_bias_correction_kl, TRL 1.16's default (True): the
    per-token KL times the ratio. On-policy the ratio is 1 but not its
    gradient, so the loss agrees either way and the gradient only with
    the same flag; off-policy both differ (issue 52: 3.9e-4 and 6.5e-4)."""
    batch = grpo_batch(n, seed=n + 1)
    if on_policy:
        batch["old"] = batch["logps"].clone()
    count = int(batch["mask"].sum())
    theirs = trl_grpo_loss(loss_type, batch, 0.2, beta, count, flag)
    ours = kit_grpo_loss(loss_type, batch, 0.2, beta, count, flag)
    assert torch.allclose(ours[0], theirs[0], rtol=0, atol=1e-6)
    assert torch.allclose(ours[1], theirs[1], rtol=0, atol=1e-6)
    # the flag is not a no-op: the other setting's gradient is off
    other = kit_grpo_loss(loss_type, batch, 0.2, beta, count, not flag)
    assert (other[1] - theirs[1]).abs().max() > 1e-5


@pytest.mark.parametrize("loss_type", sorted(losses.GRPO_LOSSES))
@pytest.mark.parametrize("epsilon", [0.1, 0.2])
@pytest.mark.parametrize("beta, corrected", [(0.0, False), (0.04, False),
                                             (0.04, True)])
@pytest.mark.parametrize("on_policy", [True, False])
@pytest.mark.parametrize("n", [1, 5, 16])
def test_the_sequence_level_ratio_equals_trls(loss_type, epsilon, beta,
                                              corrected, on_policy, n):
    """GSPO (importance_sampling_level="sequence"): one ratio a completion,
    exp of its mean token log-ratio, clipped once; equal to TRL 1.16 for
    every loss type, loss and gradient, and not the token-level loss."""
    batch = grpo_batch(n, seed=n + 2)
    if on_policy:
        batch["old"] = batch["logps"].clone()
    count = int(batch["mask"].sum())
    args = (loss_type, batch, epsilon, beta, count, corrected)
    theirs = trl_grpo_loss(*args, level="sequence")
    ours = kit_grpo_loss(*args, level="sequence")
    assert torch.allclose(ours[0], theirs[0], rtol=0, atol=1e-6)
    assert torch.allclose(ours[1], theirs[1], rtol=0, atol=1e-6)
    # on-policy every ratio is 1 at both levels; cispo's weight, capped at
    # epsilon here (TRL's default ε_high), saturates at both levels
    if not on_policy and loss_type != "cispo":
        token = kit_grpo_loss(*args, level="token")
        assert (token[1] - theirs[1]).abs().max() > 1e-5


@pytest.mark.parametrize("loss_type, settings", [
    ("cispo", {"epsilon_high": 5.0}), ("cispo", {"epsilon_high": 1.3}),
    ("sapo", {"sapo_temperature_pos": 0.5, "sapo_temperature_neg": 2.0})])
@pytest.mark.parametrize("on_policy", [True, False])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_cispo_and_sapo_settings_equal_trls(loss_type, settings, on_policy,
                                            beta):
    """cispo's cap (ScaleRL's ε_max = 5.0 and one inside the ratios) and
    sapo's two temperatures, as TRL 1.16 reads them."""
    batch = grpo_batch(16, seed=7)
    if on_policy:
        batch["old"] = batch["logps"].clone()
    args = (loss_type, batch, 0.2, beta, int(batch["mask"].sum()))
    theirs = trl_grpo_loss(*args, **settings)
    ours = kit_grpo_loss(*args, **settings)
    assert torch.allclose(ours[0], theirs[0], rtol=0, atol=1e-6)
    assert torch.allclose(ours[1], theirs[1], rtol=0, atol=1e-6)


def test_the_course_loss_is_the_grpo_type_and_the_clip_is_exercised():
    batch = grpo_batch(16, seed=0)
    ratio = torch.exp(batch["logps"] - batch["old"])[batch["mask"].bool()]
    assert ((ratio < 0.8) | (ratio > 1.2)).any()  # the clip is exercised
    assert losses.GRPO_LOSSES["grpo"].fn is losses.grpo_loss


def trl_advantages(scale_rewards, rewards, num_generations):
    """TRL 1.16's _generate_and_score_completions: the advantages."""
    n = len(rewards)
    trainer = stand_in(
        environment_factories=None, tools=None, environments=None,
        _generate=lambda prompts: ([[1]] * n, [[1, 2]] * n, None, ["c"] * n,
                                   None, {}, None, None),
        _tokenizer=SimpleNamespace(pad_token_id=0), pad_to_multiple_of=None,
        mask_truncated_completions=False, num_iterations=1, beta=0.0,
        args=SimpleNamespace(per_device_train_batch_size=n,
                             steps_per_generation=1,
                             gradient_accumulation_steps=1,
                             gradient_checkpointing_kwargs=None),
        _calculate_rewards=lambda *args: rewards.unsqueeze(1),  # (n, 1)
        num_generations=num_generations, scale_rewards=scale_rewards,
        multi_objective_aggregation="sum_then_normalize",
        reward_weights=torch.ones(1), reward_func_names=["reward"],
        _logs={"prompt": [], "completion": [], "advantages": [],
               "rewards": defaultdict(list), "extra": defaultdict(list)},
        _pending_metrics={},
        _pending_extra_logs={}, log_multimodal=False)
    out = trl().GRPOTrainer._generate_and_score_completions(
        trainer, [{"prompt": "p"}] * n)
    return out["advantages"]


@pytest.mark.parametrize("scale_rewards", sorted(losses.SCALE_REWARDS))
@pytest.mark.parametrize("prompts, num_generations", [(1, 4), (3, 2),
                                                      (4, 8)])
def test_each_scale_rewards_mode_equals_trls(scale_rewards, prompts,
                                             num_generations):
    g = torch.Generator().manual_seed(prompts)
    rewards = torch.randint(0, 3, (prompts * num_generations,),
                            generator=g).float()
    rewards[:num_generations] = 1.0  # a group that agrees: std 0
    rewards[-1] += 0.5
    theirs = trl_advantages(scale_rewards, rewards, num_generations)
    ours = losses.SCALE_REWARDS[scale_rewards](rewards, num_generations)
    assert torch.allclose(ours, theirs, rtol=0, atol=1e-6)


@pytest.mark.parametrize("flag", [True, False])
def test_trls_boolean_scale_rewards_mean_what_the_aliases_say(flag,
                                                              tmp_path):
    args = trl().GRPOConfig(str(tmp_path), scale_rewards=flag,
                            report_to="none", use_cpu=True)
    assert args.scale_rewards == losses.SCALE_REWARDS_ALIASES[flag]


# ------------------------------------------------------------- by hand

def test_the_four_normalisers_by_hand():
    # On-policy and beta = 0, each token's loss is −A. Two completions:
    # one token with A = 1, three tokens with A = −1. Token sum: −1 + 3 = 2.
    logps = torch.zeros(2, 4)
    mask = torch.tensor([[1, 0, 0, 0], [1, 1, 1, 0]])
    args = (logps, logps, torch.tensor([1.0, -1.0]), mask)
    assert losses.grpo_loss(*args).item() == pytest.approx(0.0)  # (−1+1)/2
    assert losses.bnpo_loss(*args).item() == pytest.approx(2 / 4)
    assert losses.dr_grpo_loss(
        *args, max_completion_length=5).item() == pytest.approx(2 / 10)
    assert losses.dapo_loss(
        *args, num_items_in_batch=8).item() == pytest.approx(2 / 8)


def test_the_shared_surrogate_by_hand():
    # ratio e^0.5 > 1 + ε with A = 1: the clip holds it at 1.2; with A = −1
    # the min keeps the unclipped, more pessimistic ratio.
    logps, old = torch.tensor([[0.5], [0.5]]), torch.zeros(2, 1)
    per_token = losses.clipped_token_losses(logps, old,
                                            torch.tensor([1.0, -1.0]))
    assert per_token.squeeze(1).tolist() == pytest.approx(
        [-1.2, math.exp(0.5)])
    kl = losses.clipped_token_losses(logps, old, torch.zeros(2), beta=0.5,
                                     ref_per_token_logps=old)
    assert kl.squeeze(1).tolist() == pytest.approx(
        [0.5 * (math.exp(-0.5) + 0.5 - 1)] * 2)


def test_dr_grpo_and_dapo_refuse_a_missing_normaliser():
    args = (torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1),
            torch.ones(1, 2))
    with pytest.raises(ValueError, match="max_completion_length"):
        losses.dr_grpo_loss(*args)
    with pytest.raises(ValueError, match="num_items_in_batch"):
        losses.dapo_loss(*args)


def test_scale_rewards_by_hand():
    rewards = torch.tensor([0.0, 1.0, 1.0, 1.0])  # groups (0, 1), (1, 1)
    assert losses.SCALE_REWARDS["none"](rewards, 2).tolist() == (
        pytest.approx([-0.5, 0.5, 0.0, 0.0]))
    half = 0.5 / (math.sqrt(0.5) + 1e-4)  # the group std of (0, 1) is √½
    assert losses.SCALE_REWARDS["group"](rewards, 2).tolist() == (
        pytest.approx([-half, half, 0.0, 0.0]))
    # the batch std of (0, 1, 1, 1) is ½ (unbiased: 0.75 / 3 = ¼)
    whole = 0.5 / (0.5 + 1e-4)
    assert losses.SCALE_REWARDS["batch"](rewards, 2).tolist() == (
        pytest.approx([-whole, whole, 0.0, 0.0]))


LOGPS = [torch.tensor([-1.0, -4.0]), torch.tensor([-3.0, -2.0]),
         torch.tensor([-2.0, -3.0]), torch.tensor([-2.0, -2.5])]
# log-ratios: chosen (1, -1), rejected (-1, 0.5) -> difference (2, -1.5)


def test_robust_by_hand():
    for eps in (0.0, 0.25):
        robust, _, _ = losses.robust_loss(*LOGPS, beta=0.5,
                                          label_smoothing=eps)
        expected = [(-(1 - eps) * math.log(1 / (1 + math.exp(-h)))
                     + eps * math.log(1 / (1 + math.exp(h)))) / (1 - 2 * eps)
                    for h in (0.5 * 2, 0.5 * -1.5)]
        assert robust.tolist() == pytest.approx(expected)
    dpo, _, _ = losses.dpo_loss(*LOGPS, beta=0.5)
    assert torch.allclose(losses.robust_loss(*LOGPS, beta=0.5)[0], dpo)


def test_the_length_normalised_losses_ask_for_per_token_means():
    records = losses.PREFERENCE_LOSSES
    assert records["ipo"].logps_fn is losses.sequence_mean_logps
    assert records["sigmoid_norm"].logps_fn is losses.sequence_mean_logps
    for name in ("sigmoid", "hinge", "robust"):  # sums, the default
        assert records[name].logps_fn is losses.sequence_logps
    dpo, _, _ = losses.dpo_loss(*LOGPS, beta=0.5)  # same formula as DPO
    assert torch.allclose(losses.sigmoid_norm_loss(*LOGPS, beta=0.5)[0], dpo)


def test_a_loss_type_is_one_declared_record_of_fields_its_config_has():
    from kit.trainers import DPOConfig, GRPOConfig
    # a misspelt field is an error where it is declared, not a default
    with pytest.raises(TypeError, match="step_normalized"):
        losses.GRPOLoss(losses.dapo_loss, step_normalized=True)
    with pytest.raises(TypeError, match="config_field"):
        losses.PreferenceLoss(losses.robust_loss,
                              config_field=("label_smoothing",))
    assert [name for name, record in losses.GRPO_LOSSES.items()
            if record.step_normalised] == ["dapo", "cispo"]
    for records, config in ((losses.GRPO_LOSSES, GRPOConfig),
                            (losses.PREFERENCE_LOSSES, DPOConfig)):
        fields = set(config.__dataclass_fields__)
        for name, record in records.items():
            assert callable(record.fn), name
            assert set(record.config_fields) <= fields, name
    assert losses.GRPO_LOSSES["dr_grpo"].config_fields == (
        "max_completion_length",)
    assert losses.PREFERENCE_LOSSES["robust"].config_fields == (
        "label_smoothing",)


# --------------------------------------------------------- DPO against TRL

@pytest.fixture
def moved_policy():
    """(policy moved off its reference, reference, tokenizer), fresh for
    each test: a model that a TRL DPOTrainer has already wrapped once
    scores differently under a second one (seen: 0.7231 for 0.7224)."""
    model, tokenizer = load_policy(preset="cpu")
    reference = copy.deepcopy(model)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return model, reference, tokenizer


def uneven_pairs():
    """Toy pairs whose chosen and rejected lengths differ (1 to 4 digits),
    so that per-token means and sums disagree."""
    rows = tasks.preference_dataset("train", n=8, seed=3).to_list()
    for i, row in enumerate(rows):
        key = "rejected" if i % 2 else "chosen"
        row[key] = (row[key] + "0" * (i % 3))[-4:] if i % 4 else row[key][:1]
    assert any(len(r["chosen"]) != len(r["rejected"]) for r in rows)
    return Dataset.from_list(rows)


@pytest.mark.parametrize("loss_type, label_smoothing", [
    ("ipo", 0.0), ("sigmoid_norm", 0.0), ("robust", 0.0), ("robust", 0.1),
    ("robust", 0.3), ("exo_pair", 1e-3), ("exo_pair", 0.2), ("nca_pair", 0.0),
    ("bco_pair", 0.0), ("sppo_hard", 0.0), ("apo_zero", 0.0),
    ("apo_down", 0.0), ("discopop", 0.0)])
def test_each_dpo_variant_equals_trls_dpo_trainer(loss_type, label_smoothing,
                                                  moved_policy, tmp_path):
    model, reference, tokenizer = moved_policy
    data = uneven_pairs()
    settings = dict(beta=0.5, loss_type=loss_type, report_to="none",
                    use_cpu=True, per_device_train_batch_size=len(data),
                    label_smoothing=label_smoothing)
    args = trl().DPOConfig(str(tmp_path / "trl"), **settings)
    theirs = trl().DPOTrainer(model=model, ref_model=reference, args=args,
                              train_dataset=data, processing_class=tokenizer)
    ours = DPOTrainer(model=model, ref_model=reference,
                      args=DPOConfig(str(tmp_path / "kit"), **settings,
                                     disable_tqdm=True),
                      train_dataset=data, processing_class=tokenizer)
    their_batch = next(iter(theirs.get_train_dataloader()))
    our_batch = next(iter(ours.get_train_dataloader()))
    expected = theirs.compute_loss(model, their_batch)
    # 1e-6 of the loss's size, or absolute below 1: float32 rounds a mean
    # over pairs and a sum divided by the pairs apart in the last bit
    # (sppo_hard: 14.6133 both, 1e-6 apart)
    loss = ours.compute_loss(model, our_batch)
    assert torch.allclose(loss, expected, rtol=1e-6, atol=1e-6)
    # and the gradient each gives the policy
    grads = []
    for value in (loss, expected):
        model.zero_grad()
        value.backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()
                                if p.grad is not None]))
    distance = ((grads[0] - grads[1]).norm() / grads[1].norm()).item()
    assert distance < 1e-5, distance


def test_ipo_differs_from_the_summed_form_on_uneven_lengths(moved_policy,
                                                            tmp_path):
    # Per-token means and sums give different IPO losses on pairs of
    # uneven lengths: the trainer must pick the means.
    model, reference, tokenizer = moved_policy
    trainer = DPOTrainer(model=model, ref_model=reference,
                         args=DPOConfig(str(tmp_path), loss_type="ipo",
                                        beta=0.5, report_to="none",
                                        use_cpu=True, disable_tqdm=True),
                         train_dataset=uneven_pairs(),
                         processing_class=tokenizer)
    batch = next(iter(trainer.get_train_dataloader()))
    ids, mask = batch["input_ids"], batch["completion_mask"]
    with torch.no_grad():
        loss = trainer.compute_loss(model, batch)
        sums = [losses.sequence_logps(m(input_ids=ids, attention_mask=batch[
            "attention_mask"]).logits, ids, mask)
                for m in (model, reference)]
    summed = losses.ipo_loss(*sums[0].chunk(2), *sums[1].chunk(2),
                             beta=0.5)[0].mean()
    assert not torch.allclose(loss, summed, atol=1e-3)


# ------------------------------------------------------------- DPOConfig

@pytest.mark.parametrize("settings, message", [
    (dict(loss_type="robust", label_smoothing=0.5),
     "DPOConfig.label_smoothing must be below 0.5"),
    (dict(loss_type="robust", label_smoothing=-0.1),
     "DPOConfig.label_smoothing must be a finite number >= 0"),
    (dict(loss_type="robust", label_smoothing="0.1"),
     "DPOConfig.label_smoothing must be a finite number >= 0.*without "
     "quotes"),
    (dict(loss_type="sigmoid", label_smoothing=0.1),
     "label_smoothing=0.1 does nothing with loss_type='sigmoid'.*"
     "set loss_type='robust'"),
    (dict(loss_type="exo_pair"),
     "loss_type='exo_pair' needs label_smoothing above 0: it is EXO's ε.*"
     "try 1e-3"),
    (dict(loss_type="sigmoid", discopop_tau=0.1),
     "discopop_tau=0.1 does nothing with loss_type='sigmoid': only "
     "'discopop' reads it"),
    (dict(loss_type="discopop", discopop_tau=0),
     "DPOConfig.discopop_tau must be a finite number > 0, got 0: try 0.05"),
])
def test_label_smoothing_is_validated_with_the_fix(settings, message,
                                                   tmp_path):
    with pytest.raises(ValueError, match=message):
        DPOConfig(str(tmp_path), **settings)


def test_robust_with_label_smoothing_is_accepted(tmp_path):
    args = DPOConfig(str(tmp_path), loss_type="robust", label_smoothing=0.1)
    assert args.label_smoothing == 0.1
