"""Whether a mistake's remedy is already in the learner's code.

A catalogued mistake is named by what the answer computes, and its hint
names a fix. Two answers can compute the same wrong number for different
reasons: `F.cross_entropy(..., reduction="none").mean()` counts the -100
positions exactly as a hand-written mean over every position does, yet it
already passes `ignore_index=-100` (the default), so "ignore_index=-100
does it" points at what the code already does (issue 66). A Mistake's
`remedy` is a test over the learner's source (its syntax tree): when it
holds, the checker passes over that mistake to the next cause, or says
what it measured.
"""

import ast
import inspect
import textwrap


def source_tree(candidate):
    """The syntax tree of the learner's code (a function, or a class's
    methods), or None where its source cannot be read."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(candidate)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None


def _calls(tree, names):
    """The calls in `tree` of a function or method called one of `names`
    (F.cross_entropy, torch.nn.functional.cross_entropy, cross_entropy)."""
    names = (names,) if isinstance(names, str) else tuple(names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            called = (function.attr if isinstance(function, ast.Attribute)
                      else getattr(function, "id", None))
            if called in names:
                yield node


def _literal(node):
    """The value of a literal (-100, "mean"), or a marker that it is not
    one (a name: we cannot tell what it holds)."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _literal


def passes(function, keyword, value, default=False, positional=2):
    """A remedy: some call of `function` (a name, or a tuple of names)
    has `keyword=value`, or leaves `keyword` out when `value` is its
    default (`default=True`). A call
    with more than `positional` arguments before its keywords, or with
    **kwargs, may pass it unnamed: we cannot tell, so it does not count."""
    def remedied(tree):
        for call in _calls(tree, function):
            given = {k.arg: k.value for k in call.keywords}
            if (len(call.args) > positional
                    or any(k.arg is None for k in call.keywords)):
                continue
            if keyword in given:
                if _literal(given[keyword]) == value:
                    return True
            elif default:
                return True
        return False
    remedied.__doc__ = (f"{function}(..., {keyword}={value!r}) is "
                        f"{'called' if not default else 'in effect'}")
    return remedied


def remedied(mistake, tree):
    """Whether `mistake`'s remedy is already in the code whose syntax is
    `tree` (None: unread, so never)."""
    return (mistake.remedy is not None and tree is not None
            and mistake.remedy(tree))
