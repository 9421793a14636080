"""How well the checkers name wrong answers nobody here wrote (issue 62).

tools/naming.py replays wrong answers written by the people who wrote the
checkers; they can be tuned to them, case by case. This script makes its
wrong answers mechanically instead: each solved exercise cell of
notebooks/src/, changed in one place at a time by an AST pass (an operator,
a reduction, a dim, a slice bound, a constant, a dropped term, mask or
keyword, a dropped .detach() / no_grad / super() call, swapped arguments,
a written-in argument), then run as the learner's cell would run: the
cell's code, then its own check(...) line, in a scope that holds the
notebook's imports and the solved cells before it.

Per exercise it prints: mutants, rejected, named (a catalogued mistake or a
property: Result.mistake), passed; then every passing mutant, for a person
to triage (the same as the solution, or a checker that lets a wrong answer
through). Mutants are generated in a fixed order; --sample N picks N named
ones at random (--seed) to read whether the name fits.

    python tools/mutants.py                   # every exercise
    python tools/mutants.py grpo_loss         # some of them
    python tools/mutants.py --sample 30 --seed 0
    python tools/mutants.py --holdout         # changes made after the fixes
"""

import argparse
import ast
import contextlib
import copy
import io
import os
import random
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from kit import checks  # noqa: E402
from kit.builder import paths  # noqa: E402
from kit.builder.notebooks import _regions  # noqa: E402
from kit.checks import EXERCISES  # noqa: E402

CHECK_LINE = re.compile(r"""^check\(\s*["']([\w.-]+)["']""", re.M)
CELL = re.compile(r"^# %%.*$", re.M)

# one change each way: what a learner swaps by mistake
OPERATORS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div,
             ast.Div: ast.Mult, ast.FloorDiv: ast.Div, ast.Pow: ast.Mult}
COMPARISONS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
               ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
               ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn,
               ast.NotIn: ast.In}
REDUCTIONS = {"sum": "mean", "mean": "sum", "min": "max", "max": "min",
              "amin": "amax", "amax": "amin", "minimum": "maximum",
              "maximum": "minimum", "log_softmax": "softmax",
              "logsigmoid": "sigmoid", "exp": "log", "log": "exp",
              "pop": "get", "argmax": "argmin"}
# a word answered or a key read: its neighbour in the lesson
WORDS = {"callback": "subclass", "subclass": "callback",
         "completion_mask": "attention_mask",
         "attention_mask": "completion_mask", "loss": "eval_loss",
         "eval_loss": "loss", "labels": "input_ids",
         "chosen": "rejected", "rejected": "chosen"}
# a config field written in as a number: the value the toy runs use
WRITTEN_IN = {"gradient_accumulation_steps": 1, "steps_per_generation": 1,
              "per_device_train_batch_size": 4, "num_generations": 4,
              "seed": 42, "beta": 0.1, "epsilon": 0.2}


# ------------------------------------------------------- the solved cells

def exercise_cells(name):
    """[(exercise id, answer code, its check lines, solution line numbers)]
    of notebook `name`'s source, in order."""
    source = (paths.SOURCES / f"{name}.py").read_text()
    out = []
    for cell in CELL.split(source):
        found = CHECK_LINE.search(cell)
        if not found:
            continue
        lines, solution_lines = [], set()
        for kind, run in _regions(cell.splitlines()):
            if kind == "solution":
                solution_lines.update(range(len(lines) + 1,
                                            len(lines) + len(run) - 1))
                lines += run[1:-1]
            elif kind == "code":
                lines += run
        code = "\n".join(lines)
        found = CHECK_LINE.search(code)
        out.append((found.group(1), code[:found.start()],
                    code[found.start():], solution_lines))
    return out


# ------------------------------------------------------------ mutations

def _number(node):
    """The int or float a node writes, -1 included, or None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if (isinstance(node, ast.Constant) and not isinstance(node.value, bool)
            and isinstance(node.value, (int, float))):
        return node.value
    return None


def _const(value):
    return (ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0
            else ast.Constant(value))


def _has_super(node):
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id == "super" for n in ast.walk(node))


def changes(node, parents, defaults):
    """[(label, new node or list of statements)] for one node."""
    out = []
    if isinstance(node, ast.BinOp):
        if type(node.op) in OPERATORS:
            new = copy.copy(node)
            new.op = OPERATORS[type(node.op)]()
            out.append((f"operator {_sign(node.op)} -> {_sign(new.op)}",
                        new))
        if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            out.append(("term dropped: keep the left side", node.left))
            if isinstance(node.op, (ast.Add, ast.Mult)):
                out.append(("term dropped: keep the right side",
                            node.right))
    elif (isinstance(node, ast.UnaryOp) and _number(node) is None
          and isinstance(node.op, (ast.USub, ast.Not))):
        out.append(("sign or not dropped", node.operand))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(
            node.ops[0]) in COMPARISONS:
        new = copy.copy(node)
        new.ops = [COMPARISONS[type(node.ops[0])]()]
        out.append(("comparison changed", new))
    elif isinstance(node, ast.Attribute) and node.attr in REDUCTIONS:
        new = copy.copy(node)
        new.attr = REDUCTIONS[node.attr]
        out.append((f".{node.attr} -> .{new.attr}", new))
    elif isinstance(node, ast.Attribute) and node.attr in WRITTEN_IN and (
            isinstance(node.ctx, ast.Load)):
        out.append((f"{node.attr} written in as {WRITTEN_IN[node.attr]}",
                    _const(WRITTEN_IN[node.attr])))
    elif (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
          and node.id in defaults):
        out.append((f"{node.id} written in as {defaults[node.id]}",
                    _const(defaults[node.id])))
    elif isinstance(node, ast.Call):
        out += _call_changes(node)
    elif isinstance(node, ast.Slice):
        for bound in ("lower", "upper"):
            value = _number(getattr(node, bound))
            if value is None:
                continue
            dropped = copy.copy(node)
            setattr(dropped, bound, None)
            out.append((f"slice bound {value} dropped", dropped))
            moved = copy.copy(node)
            setattr(moved, bound, _const(value - 1 if value < 0
                                         else value + 1))
            out.append((f"slice bound {value} off by one", moved))
    elif isinstance(node, ast.Subscript) and _number(node.slice) is not None:
        value = _number(node.slice)
        out.append((f"index {value} -> {value - 1 if value else 1}",
                    ast.Subscript(node.value, _const(
                        value - 1 if value else 1), node.ctx)))
    elif (_number(node) is not None and not _in_slice(node, parents)
          and not isinstance(parents.get(node), ast.UnaryOp)):
        value = _number(node)
        new = value * 2 if isinstance(value, float) else (
            value + 1 if value >= 0 else value - 1)
        out.append((f"constant {value} -> {new}", _const(new)))
    elif isinstance(node, ast.With):
        what = ast.unparse(node.items[0].context_expr).split("(")[0]
        out.append((f"with {what} dropped", node.body))
    elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
          or isinstance(node, ast.AugAssign)
          or isinstance(node, ast.Assign) and isinstance(
              node.targets[0], (ast.Attribute, ast.Subscript))):
        label = ("super() call dropped" if _has_super(node)
                 else "statement dropped")
        out.append((label, [ast.Pass()]))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        out.append(("and/or swapped", ast.BoolOp(other, node.values)))
        for i in range(len(node.values)):
            rest = node.values[:i] + node.values[i + 1:]
            out.append((f"condition {i + 1} dropped", rest[0] if len(
                rest) == 1 else ast.BoolOp(node.op, rest)))
    elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
          and node.value in WORDS):
        out.append((f"{node.value!r} -> {WORDS[node.value]!r}",
                    ast.Constant(WORDS[node.value])))
    elif isinstance(node, ast.IfExp):
        out.append(("branches of an if-expression swapped",
                    ast.IfExp(node.test, node.orelse, node.body)))
    return out


def _call_changes(node):
    out = []
    if isinstance(node.func, ast.Attribute) and node.func.attr in (
            "detach", "clone", "float", "contiguous"):
        out.append((f".{node.func.attr}() dropped", node.func.value))
    positional = [a for a in node.args if not isinstance(a, ast.Starred)]
    if len(positional) == len(node.args) >= 2:
        new = copy.copy(node)
        new.args = [node.args[1], node.args[0]] + node.args[2:]
        out.append((f"arguments of {ast.unparse(node.func)} swapped", new))
    for i, keyword in enumerate(node.keywords):
        if keyword.arg is None:
            continue
        new = copy.copy(node)
        new.keywords = node.keywords[:i] + node.keywords[i + 1:]
        out.append((f"keyword {keyword.arg}= dropped", new))
        value = _number(keyword.value)
        if keyword.arg == "dim" and value is not None:
            moved = copy.copy(node)
            moved.keywords = list(node.keywords)
            moved.keywords[i] = ast.keyword("dim", _const(
                0 if value != 0 else -1))
            out.append((f"dim={value} -> dim={0 if value else -1}", moved))
        if isinstance(keyword.value, ast.Constant) and isinstance(
                keyword.value.value, bool):
            flipped = copy.copy(node)
            flipped.keywords = list(node.keywords)
            flipped.keywords[i] = ast.keyword(
                keyword.arg, ast.Constant(not keyword.value.value))
            out.append((f"{keyword.arg}={not keyword.value.value}",
                        flipped))
    return out


def _in_slice(node, parents):
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.Slice, ast.keyword)):
            return True  # bounds and keywords have their own changes
        if isinstance(node, ast.arguments):
            return True  # a default of the signature the stub gives
    return False


def _sign(op):
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
            ast.FloorDiv: "//", ast.Pow: "**"}[type(op)]


def _defaults(tree):
    """{argument: its numeric default} of the functions the cell defines:
    an argument written in as that number is a mistake (β = 0.1)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args[len(node.args.args)
                                  - len(node.args.defaults):]
            for arg, default in zip(args + node.args.kwonlyargs,
                                    node.args.defaults
                                    + node.args.kw_defaults):
                if default is not None and _number(default) is not None:
                    out[arg.arg] = _number(default)
    return out


def _docstring(node):
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


# ------------------------------------------------- held-out mutations

# Made after the checkers' fixes of issue 62 and never looked at while
# making them: the figure on these is the one nobody could tune to.
SHAPERS = ("unsqueeze", "squeeze", "view", "reshape", "flatten")
REDUCERS = ("sum", "mean", "max", "min", "logsumexp", "softmax",
            "log_softmax", "chunk", "split")
MODULES = {"torch", "F", "self", "super", "os", "math", "len", "range",
           "min", "max", "sum", "isinstance", "dict", "list", "None"}


def held_out(node, parents, names):
    """[(label, new node)]: another local name read, a shape call dropped,
    a reduction's dim dropped, a returned tensor detached."""
    out = []
    if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
            and node.id in names and not (
                isinstance(parents.get(node), ast.Call)
                and parents[node].func is node)):
        others = [n for n in names if n != node.id][:2]
        out += [(f"{node.id} read as {other}", ast.Name(other, ast.Load()))
                for other in others]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in SHAPERS:
            out.append((f".{node.func.attr}(...) dropped", node.func.value))
        elif node.func.attr in REDUCERS and node.args:
            new = copy.copy(node)
            new.args = []
            out.append((f"the dim of .{node.func.attr} dropped", new))
    elif (isinstance(node, ast.Return) and node.value is not None
          and not isinstance(node.value, (ast.Tuple, ast.IfExp,
                                          ast.Constant))):
        out.append(("returned detached", ast.Return(ast.Call(
            ast.Attribute(node.value, "detach", ast.Load()), [], []))))
    return out


def _local_names(tree):
    """Names the cell's functions take or assign, in order of first
    appearance: what a learner may read by mistake for another."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            name = node.arg
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            name = node.id
        else:
            continue
        if name not in found and name not in MODULES:
            found.append(name)
    return found


def mutants(code, solution_lines, holdout=False):
    """[(line, label, mutated code)]: one change each, only on lines of
    the solution regions, without repeats or no-ops; `holdout`: the
    held-out changes instead."""
    tree = ast.parse(code)
    original = ast.unparse(tree)
    seen, out = {original}, []
    count = len(list(ast.walk(tree)))

    def made(node, parents, tree):
        if holdout:
            return held_out(node, parents, _local_names(tree))
        return changes(node, parents, _defaults(tree))
    for index in range(count):
        node = list(ast.walk(tree))[index]
        line = getattr(node, "lineno", None)
        if line not in solution_lines or _docstring(node):
            continue
        parents = _parents(tree)
        for label, _ in made(node, parents, tree):
            # redo the change on a fresh copy: nodes are shared above
            fresh = ast.parse(code)
            target = list(ast.walk(fresh))[index]
            fresh_parents = _parents(fresh)
            replacement = dict(made(target, fresh_parents, fresh))[label]
            _replace(fresh_parents, target, replacement)
            try:
                text = ast.unparse(ast.fix_missing_locations(fresh))
                compile(text, "<mutant>", "exec")
            except (SyntaxError, ValueError, TypeError):
                continue
            if text not in seen:
                seen.add(text)
                out.append((line, label, text))
    return out


def _parents(tree):
    return {child: parent for parent in ast.walk(tree)
            for child in ast.iter_child_nodes(parent)}


def _replace(parents, old, new):
    parent = parents[old]
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list) and any(v is old for v in value):
            at = next(i for i, v in enumerate(value) if v is old)
            value[at:at + 1] = new if isinstance(new, list) else [new]
            return


# ------------------------------------------------------------- grading

def graded(scope, code, check_lines):
    """The Result of running a learner's cell: its code, then its check
    line; or the exception the cell raised before check() ran."""
    results = []

    def recording(exercise_id, candidate, *args, **kwargs):
        exercise = EXERCISES[exercise_id]
        exercise.failures, exercise.last_help = 0, None  # a fresh kernel
        results.append(checks.check(exercise_id, candidate, timeout=10))
        return results[-1]

    cell_scope = dict(scope, check=recording)
    with contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        try:
            exec(compile(code + "\n" + check_lines, "<cell>", "exec"),
                 cell_scope)
        except Exception as error:  # the cell broke before its check
            return None, f"{type(error).__name__}: {error}"[:120]
    return results[-1] if results else None, None


def imports(name):
    """The scope a learner's exercise cells start from: the notebook's
    imports cell, run."""
    learner = nbformat.read(paths.NOTEBOOKS / f"{name}.ipynb", 4)
    code = [c.source for c in learner.cells if c.cell_type == "code"]
    scope = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code[1], scope)  # the imports (code[0] is Colab's)
    return scope


def mutant(exercise_id, label, line=None, holdout=False):
    """What the learner's cell defines (a function, a class) in the one
    mutant of `exercise_id` made by the change `label` (on `line` of the
    cell, where one label is made on several): a wrong answer a test can
    grade without writing it out again."""
    name = EXERCISES[exercise_id].notebook
    scope = imports(name)
    for cell_id, answer, check_lines, lines in exercise_cells(name):
        if cell_id != exercise_id:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(answer, scope)  # an earlier exercise, solved
            continue
        made = [text for at, found, text in mutants(answer, lines, holdout)
                if found == label and line in (None, at)]
        if len(made) != 1:
            raise ValueError(f"{len(made)} mutants of {exercise_id} are "
                             f"{label!r}")
        exec(made[0], scope)
        return scope[re.search(r",\s*(\w+)", check_lines).group(1)]
    raise KeyError(exercise_id)


def run(only, verbose, holdout=False):
    rows = []  # (exercise id, line, label, status, mistake, message)
    notebooks = sorted({e.notebook for e in EXERCISES.values()})
    for name in notebooks:
        cells = exercise_cells(name)
        if only and not any(cell[0] in only for cell in cells):
            continue
        scope = imports(name)
        for exercise_id, answer, check_lines, lines in cells:
            if not only or exercise_id in only:
                started = time.perf_counter()
                for line, label, text in mutants(answer, lines, holdout):
                    result, broke = graded(scope, text, check_lines)
                    status = ("broke the cell" if result is None
                              else result.status)
                    mistake = result.mistake if result is not None else None
                    message = broke or (
                        result.message if result is not None else "")
                    rows.append((exercise_id, line, label, status, mistake,
                                 message, text))
                    if verbose:
                        print(f"{exercise_id:22} line {line:3} {label:42} "
                              f"{status:15} {mistake or '-'}")
                print(f"# {exercise_id}: {time.perf_counter() - started:.0f}"
                      " s", file=sys.stderr)
            # the solved cell, for the exercises after it
            with contextlib.redirect_stdout(io.StringIO()):
                exec(answer, scope)
    return rows


def report(rows, sample, seed):
    by_exercise = defaultdict(list)
    for row in rows:
        by_exercise[row[0]].append(row)
    print(f"{'exercise':22} {'mutants':>7} {'rejected':>8} {'named':>6} "
          f"{'passed':>6} {'broke':>6}")
    for exercise_id, its in by_exercise.items():
        rejected = [r for r in its if r[3] == "failed"]
        named = [r for r in rejected if r[4]]
        print(f"{exercise_id:22} {len(its):7} {len(rejected):8} "
              f"{len(named):6} {sum(r[3] == 'passed' for r in its):6} "
              f"{sum(r[3] == 'broke the cell' for r in its):6}")
    rejected = [r for r in rows if r[3] == "failed"]
    named = [r for r in rejected if r[4]]
    print(f"all: {len(rows)} mutants over {len(by_exercise)} exercises, "
          f"{len(rejected)} rejected, {len(named)} of them named "
          f"({100 * len(named) / max(len(rejected), 1):.0f} %), "
          f"{sum(r[3] == 'passed' for r in rows)} passed, "
          f"{sum(r[3] == 'broke the cell' for r in rows)} broke the cell "
          "before its check, "
          f"{sum(r[3] == 'not attempted' for r in rows)} not attempted")
    print("\npassing mutants (to triage):")
    for exercise_id, line, label, *_ in (r for r in rows
                                         if r[3] == "passed"):
        print(f"  {exercise_id:22} line {line:3} {label}")
    print("\nrejected, not named:")
    for exercise_id, line, label, _, _, message, _ in (
            r for r in rejected if not r[4]):
        print(f"  {exercise_id:22} line {line:3} {label:42} "
              f"{message.splitlines()[0][:90] if message else ''}")
    if sample:
        print(f"\n{sample} named mutants at random (seed {seed}):")
        for row in random.Random(seed).sample(named, min(sample, len(named))):
            exercise_id, line, label, _, mistake, message, _ = row
            print(f"- {exercise_id} line {line}: {label}\n    named "
                  f"{mistake}: {message.splitlines()[0][:150]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exercises", nargs="*")
    parser.add_argument("--sample", type=int, default=0,
                        help="print this many named mutants at random")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--holdout", action="store_true",
                        help="the held-out changes (another local name "
                             "read, a shape call or a dim dropped, a "
                             "result detached) instead")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="a line per mutant as it is graded")
    options = parser.parse_args()
    os.environ.pop("KIT_STRICT", None)  # a failure is counted, not raised
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE",
                 "TRANSFORMERS_OFFLINE"):
        os.environ[name] = "1"
    rows = run(set(options.exercises), options.verbose, options.holdout)
    report(rows, options.sample, options.seed)


if __name__ == "__main__":
    main()
