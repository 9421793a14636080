"""Your trainer beside TRL's: the same batch gives the same loss, and a
wrong loss, a stub or a missing TRL each say so in one line."""

import pytest

from kit import beside_trl, losses
from kit.labels import say
from kit.trainers import DPOTrainer

pytest.importorskip("trl")


def test_the_kits_dpo_trainer_matches_trls(capsys):
    ours, theirs, _ = beside_trl.dpo_beside_trl(DPOTrainer)
    assert beside_trl.agrees(ours, theirs)
    assert "✅" in capsys.readouterr().out


def test_agreement_is_float32_rounding_of_the_losss_size():
    """A loss of 6.58 apart by 2.9e-6 (a few float32 ulps: seen with
    ATEN_CPU_CAPABILITY=default) agrees; by 1e-5 it does not; near 0 the
    bound is 1e-6."""
    assert beside_trl.agrees(6.580347, 6.580347 + 2.9e-6)
    assert not beside_trl.agrees(6.580347, 6.580347 + 1e-5)
    assert beside_trl.agrees(0.1, 0.1 + 9e-7)
    assert not beside_trl.agrees(0.1, 0.1 + 2e-6)


def test_the_kits_grpo_loss_matches_trls_grpo_loss(capsys):
    ours, theirs, _ = beside_trl.grpo_beside_trl(losses.grpo_loss)
    assert beside_trl.agrees(ours, theirs)
    assert "✅" in capsys.readouterr().out


def paper_kl(per_token_logps, old_per_token_logps, advantages,
             completion_mask, epsilon=0.2, beta=0.0,
             ref_per_token_logps=None):
    """grpo_loss as notebook 05's exercise writes it: the paper's KL."""
    return losses.grpo_loss(per_token_logps, old_per_token_logps,
                            advantages, completion_mask, epsilon, beta,
                            ref_per_token_logps)


def test_trls_defaults_are_compared_where_the_loss_can_take_them(
        monkeypatch, capsys):
    """kit.losses.grpo_loss takes use_bias_correction_kl: TRL runs with
    its default (True) and the kit's loss with it on. The paper's KL (no
    flag) is compared with TRL's flag off; forced to TRL's default it
    differs (the KL's ratio), which the comparison would report."""
    seen = []
    real = beside_trl._takes
    monkeypatch.setattr(beside_trl, "_takes", lambda f, k: seen.append(
        real(f, k)) or real(f, k))
    for loss in (losses.grpo_loss, paper_kl):
        ours, theirs, _ = beside_trl.grpo_beside_trl(loss)
        assert beside_trl.agrees(ours, theirs)
    assert seen == [True, False]
    monkeypatch.setattr(beside_trl, "_takes", lambda f, k: True)
    forced = beside_trl.grpo_beside_trl(
        lambda *args, use_bias_correction_kl=False, **kwargs: paper_kl(
            *args, **kwargs))
    assert not beside_trl.agrees(*forced[:2])
    capsys.readouterr()


def unclipped(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None):
    """grpo_loss with the clip forgotten."""
    return losses.grpo_loss(per_token_logps, old_per_token_logps,
                            advantages, completion_mask, epsilon=1e9,
                            beta=beta, ref_per_token_logps=ref_per_token_logps)


def test_a_wrong_loss_prints_the_gap_and_raises_only_when_strict(
        monkeypatch, capsys):
    monkeypatch.delenv("KIT_STRICT", raising=False)
    ours, theirs, _ = beside_trl.grpo_beside_trl(unclipped)
    assert not beside_trl.agrees(ours, theirs)
    assert "❌ more than 1.3e-06 apart" in capsys.readouterr().out
    monkeypatch.setenv("KIT_STRICT", "1")
    with pytest.raises(AssertionError, match="GRPO loss"):
        beside_trl.grpo_beside_trl(unclipped)


def test_a_loss_that_returns_none_is_named(monkeypatch, capsys):
    monkeypatch.delenv("KIT_STRICT", raising=False)
    assert beside_trl.grpo_beside_trl(lambda *a, **k: None) is None
    assert "returned NoneType" in capsys.readouterr().out


def test_a_stub_says_not_done_yet(capsys):
    def stub(*args, **kwargs):
        raise NotImplementedError("exercise: write your code here")

    class StubTrainer(DPOTrainer):
        compute_loss = stub

    assert beside_trl.grpo_beside_trl(stub) is None
    assert beside_trl.dpo_beside_trl(StubTrainer) is None
    out = capsys.readouterr().out
    assert out.count("⏸  Not done yet") == 2


def test_a_stub_says_not_done_yet_in_japanese(capsys):
    from kit import i18n

    def stub(*args, **kwargs):
        raise NotImplementedError("exercise: write your code here")

    before = i18n.language()
    i18n.set_language("ja")
    try:
        assert beside_trl.grpo_beside_trl(stub) is None
    finally:
        i18n.set_language(before)
    assert capsys.readouterr().out.startswith("⏸  まだ終わっていません: grpo_loss")


def test_without_trl_one_line_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setattr(beside_trl, "_trl", lambda: None)
    assert beside_trl.dpo_beside_trl(DPOTrainer) is None
    assert beside_trl.grpo_beside_trl(losses.grpo_loss) is None
    lines = capsys.readouterr().out.splitlines()
    assert lines == [say("trl_missing")] * 2
    assert "pip install .[trl]" in say("trl_missing")
