"""Running the learner's code on copies of its inputs, and comparing.

What an exercise observes is a {name: value} dict: tensors, plain values, or
`Raised` where the learner's code raised. `same` compares two observations;
`compare` explains, like Karpathy's cmp(), how a tensor differs.
"""

from contextlib import contextmanager
from dataclasses import dataclass

import torch

from kit.checks.messages import MESSAGES
from kit.i18n import text


class Mismatch(AssertionError):
    """A wrong answer; the message says what differs.

    `symptom` names what kind of difference it is, when the machinery can
    tell ("detached", "shape", "in_place", "crash"): help then starts there.
    """

    def __init__(self, message, symptom=None):
        super().__init__(message)
        self.symptom = symptom


class TimeLimit(Exception):
    """The learner's code ran past check()'s time limit.

    `limit` is the time_limit that expired: an outer limit's expiry is not
    the inner check's to report.
    """

    def __init__(self, limit=None):
        super().__init__()
        self.limit = limit


def not_the_learners(error):
    """Mark `error` as raised by something outside the learner's code (an
    outer alarm's handler): attempt() and check() let it through."""
    error._kit_not_the_learners = True
    return error


def is_the_learners(error):
    return not getattr(error, "_kit_not_the_learners", False)


def describe_error(error):
    said = str(error)
    return f"{type(error).__name__}: {said}" if said else type(error).__name__


def call(function, inputs, **keywords):
    """Call `function` on copies of `inputs` (in order), then `keywords`;
    refuse an answer that edits its inputs in place. Returns the output.

    Copies keep `requires_grad`, so gradients can still be checked.
    """
    copies = {name: _copy(value) for name, value in inputs.items()}
    with no_backward():
        output = function(*copies.values(), **keywords)
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and not torch.equal(
                copies[name].detach(), value.detach()):
            raise Mismatch(text(MESSAGES, "compare.in place", name=name),
                           symptom="in_place")
    return output


@contextmanager
def no_backward():
    """Within: code that backpropagates is stopped, named. A loss function
    returns its loss; the Trainer calls .backward() on what compute_loss
    returns, once. One more inside would add the gradient twice (with
    retain_graph=True: it passed as exact) or free the graph first."""
    def refused(*args, **kwargs):
        raise Mismatch(text(MESSAGES, "compare.backward"),
                       symptom="backward")
    saved = torch.Tensor.backward, torch.autograd.backward
    torch.Tensor.backward = torch.autograd.backward = refused
    try:
        yield
    finally:
        torch.Tensor.backward, torch.autograd.backward = saved


def _copy(value):
    if isinstance(value, torch.Tensor):
        copy = value.detach().clone()
        return copy.requires_grad_() if value.requires_grad else copy
    return value


@dataclass
class Raised:
    """An observation: the learner's code raised this."""
    error: BaseException

    def __eq__(self, other):
        return isinstance(other, Raised) and type(self.error) is type(
            other.error)


class NoGradient:
    """An observation: a result that carries no gradient (detached)."""

    def __eq__(self, other):
        return isinstance(other, NoGradient)

    def __repr__(self):
        return "no gradient"


def gradient(output, inputs):
    """d output / d inputs, flattened into one tensor; NoGradient() when the
    output is a tensor cut from the graph; None when it is no 0-d tensor
    (the output's own comparison says what is wrong with it)."""
    if not isinstance(output, torch.Tensor) or output.dim() != 0:
        return None
    if not output.requires_grad:
        return NoGradient()
    grads = torch.autograd.grad(output, inputs, allow_unused=True,
                                retain_graph=True)
    return torch.cat([torch.zeros(x.numel()) if g is None else g.flatten()
                      for g, x in zip(grads, inputs)])


def graph_leaves(tensor):
    """The leaf tensors `tensor` was computed from ([] without a graph)."""
    found, todo, done = [], [getattr(tensor, "grad_fn", None)], set()
    while todo:
        node = todo.pop()
        if node is None or node in done:
            continue
        done.add(node)
        if hasattr(node, "variable"):
            found.append(node.variable)
        todo.extend(next_node for next_node, _ in node.next_functions)
    return found


def loss_and_gradient(loss):
    """A learner's loss -> (it detached, its gradient to the leaf it was
    computed from), or (it as it came, None) when it is not a 0-d tensor
    with a graph. call() handed the learner a copy of the inputs: the
    gradient flows to that copy, so differentiate through the loss's own
    graph."""
    if not (isinstance(loss, torch.Tensor) and loss.requires_grad
            and loss.dim() == 0):
        return loss, None
    leaves = graph_leaves(loss)
    gradient = torch.autograd.grad(loss, leaves)[0] if leaves else None
    return loss.detach(), gradient


def attempt(function, *args, **kwargs):
    """Run learner code; an exception becomes an observation, Raised.

    Only an exception: KeyboardInterrupt, SystemExit and an outer alarm's
    exception are not the learner's answer, and go on up.
    """
    from kit.checks.blame import raised_in_a_library
    try:
        return function(*args, **kwargs)
    except NotImplementedError as error:
        if not raised_in_a_library(error):
            raise  # the stub: "not attempted"
        return Raised(error)
    except (TimeLimit, Mismatch):
        raise
    except Exception as error:
        if not is_the_learners(error):
            raise
        return Raised(error)


def same(a, b, atol=1e-5, rtol=1e-4):
    """Two observations agree (tensors closely, the rest exactly)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b)))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (a.shape == b.shape
                and a.dtype.is_floating_point == b.dtype.is_floating_point
                and torch.allclose(a.detach().double(), b.detach().double(),
                                   atol=atol, rtol=rtol))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    return a == b


def default_judge(candidate, seen, expected):
    """Compare observation by observation; the first difference fails."""
    verdict = "exact"
    for name, wanted in expected.items():
        verdict = judge_value(name, seen.get(name), wanted, verdict)
    return agreement(verdict)


def agreement(verdict):
    """A verdict as the learner reads it: "exact" (the code's word) in the
    kit's language; "close" already is (compare.close)."""
    return text(MESSAGES, "agree.exact") if verdict == "exact" else verdict


def judge_value(name, actual, wanted, verdict="exact"):
    if isinstance(actual, Raised):
        raise Mismatch(text(MESSAGES, "raised",
                            error=describe_error(actual.error)),
                       symptom="crash")
    if isinstance(wanted, torch.Tensor):
        found = compare(name, actual, wanted)
        return found if verdict == "exact" else verdict
    if not same(actual, wanted):
        raise Mismatch(text(MESSAGES, "compare.value", name=name,
                            actual=actual, wanted=wanted))
    return verdict


# ----------------------------------------------------- comparing answers

def compare(name, actual, expected, atol=1e-5, rtol=1e-4):
    """Compare a learner's tensor with the reference, like Karpathy's cmp().

    Raises Mismatch naming the first thing that differs: type, shape, dtype,
    then values (with the max difference). Returns "exact" or "close".
    """
    if isinstance(actual, Raised):
        raise Mismatch(text(MESSAGES, "raised",
                            error=describe_error(actual.error)),
                       symptom="crash")
    if isinstance(actual, NoGradient):
        raise Mismatch(text(MESSAGES, "compare.no gradient", name=name),
                       symptom="detached")
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(text(MESSAGES, "compare.not a tensor", name=name,
                            kind=type(actual).__name__), symptom="shape")
    if expected.dim() == 0 and actual.dim() > 0:
        raise Mismatch(text(MESSAGES, "compare.not one number", name=name,
                            shape=tuple(actual.shape)), symptom="shape")
    if actual.shape != expected.shape:
        raise Mismatch(text(MESSAGES, "compare.shape", name=name,
                            shape=tuple(actual.shape),
                            expected=tuple(expected.shape)), symptom="shape")
    if actual.dtype.is_floating_point != expected.dtype.is_floating_point:
        raise Mismatch(text(MESSAGES, "compare.dtype", name=name,
                            dtype=actual.dtype, expected=expected.dtype),
                       symptom="shape")
    if expected.requires_grad and not actual.requires_grad:
        raise Mismatch(text(MESSAGES, "compare.detached", name=name),
                       symptom="detached")
    actual = actual.detach().to(expected.dtype)
    expected = expected.detach()
    if torch.equal(actual, expected):
        return "exact"
    difference = (actual - expected).abs().max().item()
    if torch.allclose(actual, expected, atol=atol, rtol=rtol):
        return text(MESSAGES, "compare.close", difference=difference)
    raise Mismatch(text(MESSAGES, "compare.differs", name=name,
                        difference=difference, actual=_preview(actual),
                        expected=_preview(expected)))


def _preview(tensor, n=4):
    flat = tensor.flatten()[:n].tolist()
    shown = ", ".join(f"{v:.4g}" for v in flat)
    return f"[{shown}{', …' if tensor.numel() > n else ''}]"


def scale_factor(seen, expected, atol=1e-5, rtol=1e-4):
    """c when every number that differs in `seen` is c × the reference's
    (c ≠ 1, one c for all), else None: "right but for a constant factor".

    Observations equal to the reference (the model's own loss, a count)
    are left out; at least two differing numbers are needed, since one
    number is always some multiple of another.
    """
    pairs = []
    if not _float_pairs(seen, expected, pairs):
        return None
    pairs = [(a, e) for a, e in pairs if not torch.allclose(
        a, e, atol=atol, rtol=rtol)]
    if not pairs:
        return None
    a = torch.cat([a.flatten() for a, _ in pairs])
    e = torch.cat([e.flatten() for _, e in pairs])
    if a.numel() < 2 or not torch.isfinite(a).all() or e.abs().max() == 0:
        return None
    c = (a @ e / (e @ e)).item()
    if abs(c) < 1e-6 or abs(c - 1) < 1e-3:
        return None
    return c if torch.allclose(a, c * e, atol=atol, rtol=rtol) else None


def _float_pairs(a, b, pairs):
    """Collect (a, b) float tensor pairs; False when a and b differ in
    structure or in anything that is not a float tensor."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            _float_pairs(a[k], b[k], pairs) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(
            _float_pairs(x, y, pairs) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or not (a.dtype.is_floating_point
                                      and b.dtype.is_floating_point):
            return same(a, b)
        pairs.append((a.detach().double(), b.detach().double()))
        return True
    return same(a, b)
