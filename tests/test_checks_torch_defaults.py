"""check() tells the truth when the learner's kernel changed torch's
defaults, or when an answer backpropagates itself (issue 67)."""

import pytest
import torch
import torch.nn.functional as F

from kit.checks import check


def right(logits, labels, num_items_in_batch=None):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1),
                           labels[:, 1:].flatten(), ignore_index=-100)


def backpropagates(retain_graph):
    def causal_lm_loss(logits, labels, num_items_in_batch=None):
        loss = right(logits, labels)
        loss.backward(retain_graph=retain_graph)
        return loss
    return causal_lm_loss


def calls_autograd(logits, labels, num_items_in_batch=None):
    loss = right(logits, labels)
    torch.autograd.backward(loss, retain_graph=True)
    return loss


@pytest.mark.parametrize("answer", [backpropagates(True), calls_autograd])
def test_an_answer_that_calls_backward_is_told_so(answer, capsys):
    result = check("causal_lm_loss", answer)
    assert result.status == "failed"
    assert "your code calls .backward(): return the loss instead" in (
        result.message)
    assert "delete the .backward() line" in capsys.readouterr().out
    # the kit's own backward still works after the check
    x = torch.ones(2, requires_grad=True)
    x.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("change, undo", [
    (lambda: torch.set_default_dtype(torch.bfloat16),
     lambda: torch.set_default_dtype(torch.float32)),
    (lambda: torch.set_default_device("meta"),
     lambda: torch.set_default_device("cpu"))])
def test_a_right_answer_passes_whatever_defaults_the_kernel_set(
        change, undo, capsys):
    change()
    try:
        before = torch.get_default_dtype(), torch.get_default_device()
        result = check("causal_lm_loss", right)
        after = torch.get_default_dtype(), torch.get_default_device()
    finally:
        undo()
    assert result.status == "passed", result.message
    assert after == before  # the kernel's own settings, given back
    assert "the check ran with torch's defaults (float32 on the CPU)" in (
        capsys.readouterr().out)
