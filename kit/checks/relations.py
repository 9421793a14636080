"""What the numbers say, when no catalogued mistake or property explains a
wrong answer (issue 62).

"loss differs from the reference: max difference 0.018" teaches nothing.
The checker already has the learner's observations and the reference's,
made on inputs that vary (ε, β, B, GA, ...). Read side by side, they often
show one relation: the whole answer is c × the reference (a division
missing), the sign is flipped, each row is off by its own factor (a
normalisation per completion), the value is right but not the gradient
(something detached), it is wrong only where one setting takes a value,
it is not finite where the reference is. Or the code raised, and the
error says which kind of thing broke (two shapes that do not fit, a key the
batch lacks). `name(...)` returns the first relation that holds as
(id, why); check() reports it as "property:<id>", its words in MESSAGES
under "relation.<id>". Each relation holds for every observation that
differs, or it is not said.
"""

import re

import torch

from kit.checks.compare import NoGradient, Raised, describe_error, same
from kit.checks.messages import MESSAGES
from kit.i18n import text

SETTING = re.compile(r"\b(\w+)=([\w.\-]+)")


def name(seen, expected, error=None, symptom=None, said=None):
    """(relation id, its line with the numbers) or None.

    `seen` and `expected` are opened observations ({name: value}); `error`
    is what the learner's code raised, if it did; `said` the line that
    reports it.
    """
    if error is None:
        error = next((v.error for v in seen.values()
                      if isinstance(v, Raised)), None)
    if error is not None:  # `said` may be about something else
        return crashed(error, said if said and str(error) in said else None)
    differs = [n for n in expected if not same(seen.get(n), expected[n])]
    if not differs:
        return None
    for relation in (setting, gradient_only, value_only, factor,
                     factor_per_case, per_row, not_finite, shape,
                     gradient_where):
        found = relation(seen, expected, differs)
        if found:
            return found
    if symptom == "detached":
        return "detached", text(MESSAGES, "relation.detached")
    return None


def _tensors(seen, expected, names):
    """[(yours, reference)] as float64, for names where both are float
    tensors of one shape; None when any is not."""
    pairs = []
    for n in names:
        a, e = seen.get(n), expected[n]
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)
                and a.shape == e.shape and a.dtype.is_floating_point
                and e.dtype.is_floating_point):
            return None
        pairs.append((a.detach().double(), e.detach().double()))
    return pairs


def _close(a, b):
    return torch.allclose(a, b, atol=1e-5, rtol=1e-4)


# ------------------------------------------------------------ relations

def setting(seen, expected, differs):
    """Wrong exactly where one setting in the names (beta=0.1, G=8) takes
    some values, right at its others."""
    values = {n: dict(SETTING.findall(n)) for n in expected}
    keys = {k for v in values.values() for k in v}
    for key in sorted(keys):
        having = [n for n in expected if key in values[n]]
        wrong = {values[n][key] for n in differs if key in values[n]}
        right = {values[n][key] for n in having if n not in differs}
        if (len(wrong) and right and not wrong & right
                and all(key in values[n] for n in differs)):
            return "setting", text(
                MESSAGES, "relation.setting", setting=key,
                right=", ".join(sorted(right)),
                wrong=", ".join(sorted(wrong)))
    return None


def factor(seen, expected, differs):
    """Every number that differs is one c × the reference's."""
    pairs = _tensors(seen, expected, differs)
    if not pairs:
        return None
    a = torch.cat([a.flatten() for a, _ in pairs])
    e = torch.cat([e.flatten() for _, e in pairs])
    if not torch.isfinite(a).all() or e.abs().max() == 0:
        return None
    c = (a @ e / (e @ e)).item()
    if abs(c) < 1e-6 or abs(c - 1) < 1e-3 or not _close(a, c * e):
        return None
    if abs(c + 1) < 1e-3:
        return "sign", text(MESSAGES, "relation.sign")
    return "factor", text(MESSAGES, "relation.factor", factor=c,
                          inverse=1 / c)


def factor_per_case(seen, expected, differs):
    """Each case (the observations sharing a "(...)" of settings: its loss
    and its gradient) is its own c × the reference's, one c per case: a
    division by a count that the cases vary (num_items_in_batch, a
    length, B)."""
    cases = {}
    for n in differs:
        found = re.search(r"\((.*)\)", n)
        if not found:
            return None
        cases.setdefault(found.group(1), []).append(n)
    if len(cases) < 2:
        return None
    factors = []
    for names in cases.values():
        pairs = _tensors(seen, expected, names)
        if not pairs:
            return None
        a = torch.cat([a.flatten() for a, _ in pairs])
        e = torch.cat([e.flatten() for _, e in pairs])
        if (a.numel() < 2 or e.abs().max() == 0  # one number is always
                or not torch.isfinite(a).all()):  # a multiple of another
            return None
        c = (a @ e / (e @ e)).item()
        if abs(c) < 1e-6 or not _close(a, c * e):
            return None
        factors.append(c)
    if max(factors) - min(factors) < 1e-3 * max(map(abs, factors)):
        return None  # one factor: factor() says it
    shown = ", ".join(f"{c:.3g}" for c in factors[:4])
    return "factor_per_case", text(MESSAGES, "relation.factor_per_case",
                                   factors=shown)


def per_row(seen, expected, differs):
    """Each row of a (B, T) result is its own c_i × the reference's row:
    a weight per completion (a length, a count) the reference does not
    use. Scalars that differ too (the loss) are allowed: they follow."""
    rows = [n for n in differs if getattr(expected[n], "dim", lambda: 0)()
            == 2]
    pairs = _tensors(seen, expected, rows)
    if not pairs:
        return None
    found = []
    for a, e in pairs:
        norms = (e * e).sum(-1)
        if not torch.isfinite(a).all():
            return None
        live = norms > 0  # a row with no gradient says nothing of its c
        c = (a * e).sum(-1)[live] / norms[live]  # (B,)
        if not live.any() or not _close(a[live], c[:, None] * e[live]):
            return None
        found.append(c)
    c = torch.cat(found)
    if _close(c, c.mean().expand_as(c)):
        return None  # one factor for all: factor() says it
    if (c.abs() < 1e-6).any():
        return None  # a row with no gradient: gradient_where() says it
    shown = ", ".join(f"{v:.3g}" for v in found[0][:4].tolist())
    return "per_row", text(MESSAGES, "relation.per_row", factors=shown)


def _gradients(expected):
    """The observations that are gradients: named so, and numbers (not
    "a gradient back to the logits": True)."""
    return [n for n in expected if "gradient" in n
            and isinstance(expected[n], torch.Tensor)
            and expected[n].dtype.is_floating_point]


def gradient_only(seen, expected, differs):
    """The values are right, only the gradients differ."""
    grads = _gradients(expected)
    values = [n for n in expected if n not in grads]
    if values and grads and set(differs) <= set(grads):
        return "gradient_only", text(MESSAGES, "relation.gradient_only")
    return None


def value_only(seen, expected, differs):
    """The gradients are right, only the values differ: a term that
    carries no gradient (a constant, a detached copy)."""
    grads = _gradients(expected)
    if not grads or set(differs) & set(grads):
        return None
    pairs = _tensors(seen, expected, differs)
    if pairs is None:
        return None
    return "value_only", text(MESSAGES, "relation.value_only")


def gradient_where(seen, expected, differs):
    """Where the gradients differ, token by token: only where the
    reference's is 0 (yours flows where a clip or a mask stops it), only
    where yours is 0 (yours stops where it should flow), or only by sign."""
    grads = [n for n in differs if n in _gradients(expected)]
    pairs = _tensors(seen, expected, grads)
    if not pairs:
        return None
    kinds = set()
    for a, e in pairs:
        off = ~torch.isclose(a, e, atol=1e-5, rtol=1e-4)
        if not off.any():
            continue
        zero = 1e-7
        if (e[off].abs() < zero).all():
            kinds.add("relation.flows")
        elif (a[off].abs() < zero).all():
            kinds.add("relation.stopped")
        elif torch.allclose(a[off], -e[off], atol=1e-5, rtol=1e-4):
            kinds.add("relation.flipped")
        elif ((e[off].abs() < zero) | (a[off].abs() < zero)).all():
            kinds.add("relation.elsewhere")  # both: other tokens stopped
        else:
            return None
    if kinds >= {"relation.flows", "relation.stopped"}:
        kinds = {"relation.elsewhere"}
    if len(kinds) != 1:
        return None
    key = kinds.pop()
    return key.split(".")[1], text(MESSAGES, key)


def not_finite(seen, expected, differs):
    for n in differs:
        a, e = seen.get(n), expected[n]
        if (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)
                and a.dtype.is_floating_point
                and torch.isfinite(e).all() and not torch.isfinite(a).all()):
            return "not_finite", text(MESSAGES, "relation.not_finite",
                                      name=n)
    return None


def shape(seen, expected, differs):
    """A result of another shape or kind: it broadcast, or was reduced
    over another dim, or is an integer where a float belongs."""
    for n in differs:
        a, e = seen.get(n), expected[n]
        if isinstance(a, NoGradient):
            return "detached", text(MESSAGES, "relation.detached")
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)):
            continue
        if a.shape != e.shape and e.dim() == 0:
            return None  # "should be one number": the judge said it all
        if a.shape != e.shape:
            key = ("relation.broadcast" if a.dim() > e.dim() and a.numel()
                   > e.numel() else "relation.reduced")
            return "shape", text(MESSAGES, key, name=n,
                                 shape=tuple(a.shape),
                                 expected=tuple(e.shape))
        if a.dtype.is_floating_point != e.dtype.is_floating_point:
            return "dtype", text(MESSAGES, "relation.dtype", name=n,
                                 dtype=a.dtype)
    return None


# ----------------------------------------------------------- a crash

# an error's kind, by its type and words: what broke
CRASHES = [
    ("relation.crash_dim", IndexError, r"[Dd]imension out of range"),
    ("relation.crash_dtype", Exception,
     r"dtype|Long|could not infer output|expected scalar type|Float"),
    ("relation.crash_shapes", (RuntimeError, ValueError, IndexError),
     # the size of a tensor: not any "size" ("batch_size should be a
     # positive integer" is a value, not a shape)
     r"size of tensor|shape|dimension|must match|to match|broadcast|"
     r"expand|mat1|values to unpack|index \d+ is out of bounds"),
    ("relation.crash_key", KeyError, ""),
    ("relation.crash_none", (TypeError, AttributeError), r"NoneType"),
    ("relation.crash_argument", (TypeError, ValueError),
     r"argument|positional|takes|unexpected keyword|missing|must specify"),
    ("relation.crash_attribute", AttributeError, ""),
    ("relation.crash_kind", TypeError,
     r"subscriptable|unsupported operand|not supported between|has no len|"
     r"unhashable|not iterable|not callable|must be|indices must be"),
    ("relation.crash_unset", NameError, ""),  # UnboundLocalError too
]
# every id name() may return: kit.checks.core reports "property:<id>"
IDS = {"setting", "sign", "factor", "factor_per_case", "per_row",
       "gradient_only", "value_only", "not_finite", "shape", "dtype",
       "detached", "flows", "stopped", "elsewhere", "flipped"} | {
           key.split(".")[1] for key, _, _ in CRASHES}


def crashed(error, said=None):
    """(crash kind, its line with the learner's own error) or None.
    `said`: the line that reports the error ("your code raised ...")."""
    for key, types, words in CRASHES:
        if isinstance(error, types) and re.search(words, str(error)):
            return key.split(".")[1], text(MESSAGES, key, error=said or text(
                MESSAGES, "raised", error=describe_error(error)))
    return None
