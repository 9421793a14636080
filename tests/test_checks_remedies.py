"""A verdict never names a fix the learner's code already has (issue 66).

`F.cross_entropy(..., reduction="none").mean()` computes what a mean over
every position computes, and was told "ignore_index=-100 does it" — with
ignore_index=-100 in effect. A catalogued mistake whose remedy is in the
source (kit.checks.remedies) is passed over for the next cause, or for
what the check measured. Each answer below is written as a learner would.
"""

import torch.nn.functional as F

from kit.checks import EXERCISES, check, hint
from kit.checks.remedies import passes, source_tree

ID = "causal_lm_loss"


def none_then_mean(logits, labels):
    V = logits.shape[-1]
    per_token = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                                labels[:, 1:].reshape(-1),
                                ignore_index=-100, reduction="none")
    return per_token.mean()


def none_then_mean_default_index(logits, labels):
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2),
                                labels[:, 1:], reduction="none")
    return per_token.mean()


def sum_over_every_position(logits, labels):
    V = logits.shape[-1]
    total = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                            labels[:, 1:].reshape(-1), reduction="sum")
    return total / labels[:, 1:].numel()


def nll_then_mean(logits, labels):
    logprobs = logits[:, :-1].log_softmax(-1)
    return F.nll_loss(logprobs.transpose(1, 2), labels[:, 1:],
                      reduction="none").mean()


def gathered_over_every_position(logits, labels):
    logprobs = logits[:, :-1].log_softmax(-1)
    mask = (labels[:, 1:] != -100).float()
    token = logprobs.gather(-1, labels[:, 1:].clamp(min=0).unsqueeze(-1))
    return -(token.squeeze(-1) * mask).sum() / mask.numel()


def mean_times_count(logits, labels):
    V = logits.shape[-1]
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                           labels[:, 1:].reshape(-1))
    return loss * (labels[:, 1:] != -100).sum()  # a sum, by another road


def test_ignore_index_is_not_the_fix_where_it_is_in_effect(capsys):
    for answer in (none_then_mean, none_then_mean_default_index,
                   sum_over_every_position, nll_then_mean):
        result = check(ID, answer)
        out = capsys.readouterr().out
        assert result.mistake == "unreduced_mean", (answer.__name__, out)
        assert "ignore_index=-100 does it" not in out, out
        assert "reduction='mean'" in out, out


def test_without_cross_entropy_the_mistake_is_still_named(capsys):
    result = check(ID, gathered_over_every_position)
    assert result.mistake == "minus_100_counted"
    assert "ignore_index=-100 does it" in capsys.readouterr().out


def test_with_the_remedy_there_and_no_other_cause_it_says_what_it_measured(
        capsys):
    result = check(ID, mean_times_count)
    out = capsys.readouterr().out
    # numerically a sum without dividing, whose fix (reduction='mean') it
    # already has: the verdict is the relation measured instead
    assert result.mistake != "sum_not_divided", out
    assert result.mistake.startswith("property:"), out
    assert "keep F.cross_entropy's default reduction='mean'" not in out, out


def test_the_hint_after_a_mistake_follows_from_what_broke(capsys):
    check(ID, none_then_mean)
    capsys.readouterr()
    hint(ID, 2)
    second = capsys.readouterr().out
    assert "factor" in second and "reduction='mean'" in second, second
    assert "t+1" not in second and ".reshape(-1, V)" not in second, second


def test_a_remedy_reads_the_call_as_python_would():
    in_effect = passes("cross_entropy", "ignore_index", -100, default=True)
    spelled = passes("cross_entropy", "reduction", "mean")
    assert in_effect(source_tree(none_then_mean))
    assert in_effect(source_tree(none_then_mean_default_index))
    assert not in_effect(source_tree(gathered_over_every_position))
    assert not spelled(source_tree(none_then_mean))
    # a name or **kwargs: we cannot tell what it holds, so no remedy
    assert not spelled(source_tree(reduction_by_name))
    assert not in_effect(source_tree(options_by_name))
    assert source_tree(len) is None  # no source: never remedied


def reduction_by_name(logits, labels, kind="mean"):
    return F.cross_entropy(logits, labels, reduction=kind)


def options_by_name(logits, labels, **options):
    return F.cross_entropy(logits, labels, **options)


def test_every_remedy_is_one_a_mistake_of_the_catalogue_carries():
    remedied = {m.id for e in EXERCISES.values() for m in e.mistakes
                if m.remedy is not None}
    assert {"minus_100_counted", "unreduced_mean",
            "sum_not_divided"} <= remedied
