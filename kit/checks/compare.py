"""Running the learner's code on copies of its inputs, and comparing.

What an exercise observes is a {name: value} dict: tensors, plain values, or
`Raised` where the learner's code raised. `same` compares two observations;
`compare` explains, like Karpathy's cmp(), how a tensor differs.
"""

from dataclasses import dataclass

import torch


class Mismatch(AssertionError):
    """A wrong answer; the message says what differs."""


class TimeLimit(Exception):
    """The learner's code ran past check()'s time limit."""


def describe_error(error):
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def call(function, inputs, **keywords):
    """Call `function` on copies of `inputs` (in order), then `keywords`;
    refuse an answer that edits its inputs in place. Returns the output.

    Copies keep `requires_grad`, so gradients can still be checked.
    """
    copies = {name: _copy(value) for name, value in inputs.items()}
    output = function(*copies.values(), **keywords)
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and not torch.equal(
                copies[name].detach(), value.detach()):
            raise Mismatch(
                f"your function changed its input `{name}` in place: work "
                f"on new tensors (x = x * m, not x.mul_(m) or x[...] = ...) "
                f"— the caller still needs its inputs")
    return output


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


def attempt(function, *args, **kwargs):
    """Run learner code; an exception becomes an observation, Raised."""
    try:
        return function(*args, **kwargs)
    except (NotImplementedError, TimeLimit, Mismatch):
        raise
    except Exception as error:
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
    return verdict


def judge_value(name, actual, wanted, verdict="exact"):
    if isinstance(actual, Raised):
        raise Mismatch(f"your code raised {describe_error(actual.error)}")
    if isinstance(wanted, torch.Tensor):
        found = compare(name, actual, wanted)
        return found if verdict == "exact" else verdict
    if not same(actual, wanted):
        raise Mismatch(f"{name}: yours {actual!r}, expected {wanted!r}")
    return verdict


# ----------------------------------------------------- comparing answers

def compare(name, actual, expected, atol=1e-5, rtol=1e-4):
    """Compare a learner's tensor with the reference, like Karpathy's cmp().

    Raises Mismatch naming the first thing that differs: type, shape, dtype,
    then values (with the max difference). Returns "exact" or "close".
    """
    if isinstance(actual, Raised):
        raise Mismatch(f"your code raised {describe_error(actual.error)}")
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{name} should be a torch.Tensor, got "
                       f"{type(actual).__name__}")
    if expected.dim() == 0 and actual.dim() > 0:
        raise Mismatch(f"{name} should be one number (a 0-d tensor), got "
                       f"shape {tuple(actual.shape)}")
    if actual.shape != expected.shape:
        raise Mismatch(f"{name} has shape {tuple(actual.shape)}, expected "
                       f"{tuple(expected.shape)}")
    if actual.dtype.is_floating_point != expected.dtype.is_floating_point:
        raise Mismatch(f"{name} has dtype {actual.dtype}, expected "
                       f"{expected.dtype}")
    actual = actual.detach().to(expected.dtype)
    expected = expected.detach()
    if torch.equal(actual, expected):
        return "exact"
    difference = (actual - expected).abs().max().item()
    if torch.allclose(actual, expected, atol=atol, rtol=rtol):
        return f"close (max difference {difference:.1e})"
    raise Mismatch(f"{name} differs from the reference: max difference "
                   f"{difference:.3g} (yours {_preview(actual)}, expected "
                   f"{_preview(expected)})")


def _preview(tensor, n=4):
    flat = tensor.flatten()[:n].tolist()
    text = ", ".join(f"{v:.4g}" for v in flat)
    return f"[{text}{', …' if tensor.numel() > n else ''}]"
