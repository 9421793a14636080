"""kit.losses against hand computations and the model's own loss."""

import math

import torch

from kit import losses


def test_causal_lm_loss_equals_the_models_own_loss(policy):
    model, tokenizer = policy
    batch = tokenizer(["07+35=42", "99+1=100"], return_tensors="pt",
                      padding=True)
    labels = batch["input_ids"].clone()
    labels[batch["attention_mask"] == 0] = -100
    labels[:, :4] = -100  # a masked prompt, as in SFT
    with torch.no_grad():
        outputs = model(**batch, labels=labels)
    ours = losses.causal_lm_loss(outputs.logits, labels)
    assert torch.allclose(ours, outputs.loss, atol=1e-6)


def test_causal_lm_loss_by_hand():
    # One sequence of three tokens over a vocabulary of two: position 0
    # predicts token 1, position 1 predicts token 2, position 2 predicts nothing.
    logits = torch.tensor([[[0.0, 0.0], [2.0, 0.0], [5.0, 5.0]]])
    labels = torch.tensor([[-100, 1, 0]])
    expected = (math.log(2) + math.log(1 + math.exp(-2))) / 2
    assert math.isclose(losses.causal_lm_loss(logits, labels).item(), expected,
                        rel_tol=1e-6)
    labels = torch.tensor([[-100, -100, 0]])  # -100 is ignored
    assert math.isclose(losses.causal_lm_loss(logits, labels).item(),
                        math.log(1 + math.exp(-2)), rel_tol=1e-6)


def test_num_items_in_batch_turns_the_mean_into_a_share_of_the_big_batch():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7)
    labels = torch.randint(0, 7, (2, 5))
    labels[0, :3] = -100
    counted = int((labels[:, 1:] != -100).sum())
    mean = losses.causal_lm_loss(logits, labels)
    assert torch.allclose(losses.causal_lm_loss(logits, labels, counted), mean)
    # Twice the items in the whole batch: this micro-batch weighs half as much.
    assert torch.allclose(losses.causal_lm_loss(logits, labels, 2 * counted),
                          mean / 2)


def test_sequence_mean_logps_by_hand():
    # As test_dpo's sequence_logps case: log 1/2 + log 3/4 over 2 tokens.
    logits = torch.tensor([[[0.0, 0.0], [math.log(3), 0.0], [9.0, 9.0]]])
    input_ids = torch.tensor([[1, 1, 0]])
    completion_mask = torch.tensor([[0, 1, 1]])
    mean = losses.sequence_mean_logps(logits, input_ids, completion_mask)
    assert math.isclose(mean.item(), (math.log(0.5) + math.log(0.75)) / 2,
                        rel_tol=1e-6)
    # an empty completion scores 0, not 0 / 0
    empty = losses.sequence_mean_logps(logits, input_ids,
                                       torch.zeros_like(completion_mask))
    assert empty.item() == 0.0


def test_a_completion_from_position_0_is_divided_as_trl_divides():
    """An empty prompt, no <bos>: the completion's first token has no logit
    to score it. TRL 1.16 ("ipo", "sigmoid_norm": dpo_trainer.py divides
    the scores by completion_mask.sum()) keeps it in the count; so does the
    kit (it divided by the shifted count: 0.66 apart in ipo, issue 52)."""
    logits = torch.tensor([[[0.0, 0.0], [math.log(3), 0.0], [9.0, 9.0]]])
    input_ids = torch.tensor([[1, 1, 0]])
    from_0 = torch.tensor([[1, 1, 1]])  # three tokens, two scored
    summed = losses.sequence_logps(logits, input_ids, from_0)
    assert math.isclose(summed.item(), math.log(0.5) + math.log(0.75),
                        rel_tol=1e-6)
    mean = losses.sequence_mean_logps(logits, input_ids, from_0)
    assert math.isclose(mean.item(), summed.item() / 3, rel_tol=1e-6)
