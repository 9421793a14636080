"""What the numbers say (kit/checks/relations.py), and the names issue 62
added beside it: each answer here was told only "differs from the
reference" or "raised X" before, or was misread as not attempted."""


import pytest
import torch
import torch.nn.functional as F

from kit import losses
from kit.checks import check, relations
from kit.checks.nb02_callbacks import REQUESTS
from tools import mutants


def named(exercise_id, answer):
    return check(exercise_id, answer)


# ------------------------------------------------- relations, one by one

def test_a_constant_factor_and_a_flipped_sign():
    def doubled(logits, labels):
        return 2 * losses.causal_lm_loss(logits, labels)

    def negated(logits, labels):
        return -losses.causal_lm_loss(logits, labels)
    assert named("causal_lm_loss", doubled).mistake == "property:factor"
    assert named("causal_lm_loss", negated).mistake == "property:sign"


def test_right_value_wrong_gradient_and_the_other_way_round():
    def half_detached(logits, labels):
        loss = losses.causal_lm_loss(logits, labels)
        return 0.5 * loss + 0.5 * loss.detach()

    def shifted_by_a_constant(logits, labels):
        return losses.causal_lm_loss(logits, labels) + 0.3
    assert (named("causal_lm_loss", half_detached).mistake
            == "property:gradient_only")
    result = named("causal_lm_loss", shifted_by_a_constant)
    assert result.mistake == "property:value_only"
    assert "max difference 0.3" in result.message  # the numbers stay


@pytest.mark.parametrize("weights", [[1.0, 2.0, 0.5], [3.0, 3.0, 1.0]])
def test_a_weight_per_completion_is_a_factor_per_row(weights):
    reference = torch.randn(3, 5)
    weights = torch.tensor(weights)
    seen = {"loss": torch.tensor(1.0),
            "gradient": reference * weights[:, None]}
    expected = {"loss": torch.tensor(0.7), "gradient": reference}
    assert relations.name(seen, expected)[0] == "per_row"
    # one weight for every row is a constant factor, said as such
    seen = {"loss": torch.tensor(1.4), "gradient": reference * 2}
    assert relations.name(seen, expected)[0] == "factor"


def test_wrong_only_where_a_setting_takes_a_value():
    seen = {"loss (beta=0.0)": torch.tensor(1.0),
            "loss (beta=0.1)": torch.tensor(2.0),
            "loss (beta=0.2)": torch.tensor(3.5)}
    expected = dict(seen, **{"loss (beta=0.1)": torch.tensor(2.5),
                             "loss (beta=0.2)": torch.tensor(4.0)})
    found = relations.name(seen, expected)
    assert found[0] == "setting"
    assert "beta = 0.0" in found[1] and "beta = 0.1, 0.2" in found[1]


def test_nothing_is_said_where_no_relation_holds():
    seen = {"loss (case 0)": torch.tensor(1.0),
            "loss (case 1)": torch.tensor(2.0)}
    expected = {"loss (case 0)": torch.tensor(1.5),
                "loss (case 1)": torch.tensor(2.2)}
    assert relations.name(seen, expected) is None


# -------------------------------------------------------- a crash's kind

def test_a_crash_is_named_by_its_kind_and_keeps_the_learners_words():
    def unshifted_logits(logits, labels):
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               labels.reshape(-1))
    result = named("causal_lm_loss", unshifted_logits)
    assert result.mistake == "property:crash_shapes"
    assert "your code raised ValueError: Expected input batch_size" in (
        result.message)


def test_torchs_not_implemented_is_a_crash_not_an_untouched_stub():
    def swapped(logits, labels):  # cross_entropy(labels, logits)
        return F.cross_entropy(labels.reshape(-1),
                               logits.reshape(-1, logits.shape[-1]))
    result = named("causal_lm_loss", swapped)
    assert result.status == "failed"  # was "not attempted"
    assert "NotImplementedError" in result.message


def test_the_untouched_stub_is_still_not_attempted():
    def stub(logits, labels):
        raise NotImplementedError("exercise: write your code here")
    assert named("causal_lm_loss", stub).status == "not attempted"


# --------------------------------------- the exercises' own new names

def test_a_request_placed_as_the_other_kind_is_named_by_its_kind():
    when = dict(REQUESTS, **{"Draw a live plot of the loss": "subclass"})
    what = dict(REQUESTS, **{
        "Weigh each token's loss by how rare the token is": "callback"})
    assert named("callback_or_subclass", when).mistake == (
        "property:when_as_what")
    assert named("callback_or_subclass", what).mistake == (
        "property:what_as_when")
    both = dict(when, **{
        "Weigh each token's loss by how rare the token is": "callback"})
    undecided = dict(REQUESTS, **{"Draw a live plot of the loss": "maybe"})
    assert named("callback_or_subclass", both).mistake is None
    assert named("callback_or_subclass", undecided).mistake is None


def test_beta_written_in_is_named_whatever_the_number():
    from tools.wrong_answers import trainers
    for answer in (trainers.BetaOfTheNotebook, trainers.BetaOfTheSnippet):
        result = named("dpo_compute_loss", answer)
        assert result.mistake == "property:beta_written_in", answer


def test_a_resume_that_raises_shows_the_learners_own_words():
    from kit.checks.nb08_private import MyCheckpointedTrainer

    class RefusesAll(MyCheckpointedTrainer):
        def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                                  **kwargs):
            raise ValueError("cannot resume: my own words")
    result = named("buffer_checkpoint", RefusesAll)
    assert result.mistake == "property:resuming_fails"
    assert "ValueError: cannot resume: my own words" in result.message


# ---------------- what the held-out mutants found (tools/mutants.py)

def test_a_fixed_snippet_whose_losses_are_detached_fails():
    from kit.checks.nb03_dpo_losses import fixed_snippet

    def detached(chosen_scores, rejected_scores, beta):
        return fixed_snippet(chosen_scores, rejected_scores, beta).detach()
    result = named("dpo_snippet", detached)
    assert result.status == "failed" and result.symptom == "detached"


def test_return_outputs_must_return_the_loss_first():
    from tools.wrong_answers import trainers

    class ModelFirst(trainers._DPO):
        def compute_loss(self, model, inputs, return_outputs=False,
                         num_items_in_batch=None):
            loss = super().compute_loss(model, inputs, False,
                                        num_items_in_batch)
            return (model, {}) if return_outputs else loss
    result = named("dpo_compute_loss", ModelFirst)
    assert result.status == "failed"
    assert "the tuple's first item is the loss" in result.message


def test_a_name_holding_another_kind_of_value_is_said_so():
    def reads_the_dict(logits, labels):
        return losses.causal_lm_loss(logits, {"labels": labels})
    result = named("causal_lm_loss", reads_the_dict)
    assert result.mistake == "property:crash_kind"
    assert "your code raised TypeError" in result.message


def test_a_callback_that_returns_args_is_told_not_the_checker():
    # the solution with `return control` read as `return args`
    returns_args = mutants.mutant("stop_callback", "control read as args",
                                  line=10, holdout=True)
    result = named("stop_callback", returns_args)
    assert result.status == "failed"
    assert "StopAtLoss.on_log returned a TrainingArguments" in (
        result.message)  # was: "the checker itself failed"
    assert "checker itself failed" not in result.message


def test_a_crash_found_beside_another_line_quotes_the_crash_too():
    # `loss is not None and loss < target` with `or`
    or_for_and = mutants.mutant("stop_callback", "and/or swapped", line=8)
    result = named("stop_callback", or_for_and)
    assert result.mistake == "property:crash_none"
    # the name's own error, then the judge's line: both on screen
    assert "TypeError: '<' not supported" in result.message
    assert "it stopped after the log {'loss': 2.5}" in result.message


def test_a_value_error_about_a_number_is_no_shape():
    error = ValueError("batch_size should be a positive integer value, but "
                       "got batch_size=2.6666666666666665")
    assert relations.crashed(error) is None
    error = RuntimeError("The size of tensor a (4) must match the size of "
                         "tensor b (3) at non-singleton dimension 1")
    assert relations.crashed(error)[0] == "crash_shapes"


@pytest.mark.parametrize("change", [
    "greedy=False",  # evaluation samples
    "sign or not dropped",  # `if self.model.training`: each branch swapped
])
def test_an_evaluation_branch_gone_wrong_is_named_evaluation(change):
    # read first as a wrong step count or an extra generation step
    wrong = mutants.mutant("prepare_inputs", change)
    assert named("prepare_inputs", wrong).mistake == "property:evaluation"


def test_a_count_missing_is_a_factor_per_case_not_per_row():
    from kit.checks.nb07_loss_types import dapo_loss

    def no_division(*args, num_items_in_batch=None, **kwargs):
        return dapo_loss(*args, num_items_in_batch=1, **kwargs)
    result = named("dapo_loss", no_division)
    assert result.mistake == "property:factor_per_case", result.message


def test_rows_with_no_gradient_are_not_a_weight_per_row():
    reference = torch.randn(3, 5)
    seen = {"loss": torch.tensor(1.0),
            "gradient": reference * torch.tensor([[0.0], [2.0], [3.0]])}
    expected = {"loss": torch.tensor(0.7), "gradient": reference}
    found = relations.name(seen, expected)
    assert found is None or found[0] != "per_row"


def test_a_yes_no_gradient_observation_is_no_gradient_to_compare():
    # sequence_logps observes "a gradient back to the logits": True; a
    # mean for the sum is not "the gradient right, the value wrong"
    def mean_not_sum(logits, input_ids, completion_mask):
        logprobs = logits[:, :-1, :].log_softmax(-1)
        targets = input_ids[:, 1:]
        token_logps = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        return (token_logps * completion_mask[:, 1:]).mean(-1)
    assert named("sequence_logps", mean_not_sum).mistake != (
        "property:value_only")
