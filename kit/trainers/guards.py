"""Refuse what we cannot train on, before or while training: one place.

The configs share one rule for numbers; DPO and GRPO share what they accept
as a dataset and the dataset checks; GRPO's rewards are checked on every
call, because a reward function can go wrong on any batch. (The stop on a
nan or inf loss lives in kit.trainers.nonfinite.)
"""

import copy
import functools
import math
import numbers
import operator
import sys
import warnings
from contextlib import nullcontext

import torch
from datasets import Dataset, DatasetDict, IterableDataset

from kit import i18n
# the words of every refusal, en and ja (one table: each names the field
# and the fix), and the rules' own words
from kit.trainers.guards_words import FIXES, MESSAGES

FLOAT32_MAX = torch.finfo(torch.float32).max


def refusal(key, **fields):
    """The ValueError of MESSAGES[key], in the kit's language."""
    return ValueError(i18n.text(MESSAGES, key, **fields))


def in_words(english):
    """A rule's English words in the kit's language (as they are when the
    table does not have them)."""
    return i18n.text(FIXES, english) if english in FIXES["en"] else english


# ------------------------------------------------------------------ configs

# TrainingArguments' counts that the kit's formulas multiply and divide by:
# checked before any of them is used.
BATCH_RULES = [
    ("per_device_train_batch_size", int, ">= 1", "try 8"),
    ("gradient_accumulation_steps", int, ">= 1",
     "1 means no accumulation"),
]
_BOUNDS = {">": operator.gt, ">=": operator.ge, "<=": operator.le}


def check_fields(config, rules):
    """Refuse a setting of the wrong type or range, naming it and the fix.

    Each rule is (field, kind, bound, fix): kind `int` for counts (a whole
    number; True is not one), `float` for a finite number; bound ">= 1".
    """
    for field, kind, bound, fix in rules:
        value = getattr(config, field)
        if _fits(value, kind, bound):
            if kind is float:
                check_float32(config, field, bound, fix)
            continue
        what = in_words("a whole number" if kind is int
                        else "a finite number")
        shown = _shown(value)
        if not _is_number(value, kind):
            shown += f" ({type(value).__name__}"
            shown += (": " + in_words("write it without quotes") + ")"
                      if isinstance(value, str) else ")")
        raise refusal("field", owner=type(config).__name__, field=field,
                      what=what, bound=bound, shown=shown,
                      fix=in_words(fix))


def check_float32(config, field, bound, fix):
    """A float setting must stay what it is in float32: 1e300 becomes inf
    there, and 1e-50 becomes 0 (which "> 0" refuses), silently."""
    value = getattr(config, field)
    as32 = float(torch.tensor(float(value), dtype=torch.float32))
    if math.isinf(as32) or (as32 == 0 and value != 0 and bound.startswith(
            ">") and not bound.startswith(">=")):
        raise refusal("float32", owner=type(config).__name__, field=field,
                      shown=_shown(value), as32=_shown(as32),
                      fix=in_words(fix))


def check_ipo_beta(beta):
    """IPO's loss aims the margin at 1/(2·beta): that must be a number."""
    if torch.isinf(1 / (2 * torch.tensor(beta, dtype=torch.float32))):
        raise refusal("ipo_beta", shown=f"{beta:g}")


def check_choice(config, name, choices):
    """Refuse a setting that is not one of `choices`' keys, listing them
    (a list or None too, which `in` would raise TypeError on)."""
    value = getattr(config, name)
    if not isinstance(value, str) or value not in choices:
        raise refusal("choice", owner=type(config).__name__, name=name,
                      value=value, choices=", ".join(map(repr, choices)))


def _is_number(value, kind):
    wanted = numbers.Integral if kind is int else numbers.Real
    return isinstance(value, wanted) and not isinstance(value, bool)


def _fits(value, kind, bound):
    op, limit = bound.split()
    return (_is_number(value, kind) and _finite(value)
            and _BOUNDS[op](value, float(limit)))


def _finite(value):
    """Not nan, not inf, and not an int too big for a float (10**400)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


# ------------------------------------------------------------------ inputs

def as_dataset(name, data):
    """The inputs the trainers accept, as a Dataset, or one line why not.

    A list of dicts and a DataFrame are converted (Dataset.from_list,
    Dataset.from_pandas); a streamed IterableDataset is refused: the
    samplers need to know how many rows there are.
    """
    pandas = sys.modules.get("pandas")  # not imported: no DataFrame exists
    if isinstance(data, Dataset):
        return data
    if pandas is not None and isinstance(data, pandas.DataFrame):
        return Dataset.from_pandas(data, preserve_index=False)
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return Dataset.from_list(data)
    if isinstance(data, IterableDataset):
        raise refusal("streamed", name=name)
    if isinstance(data, DatasetDict):
        raise refusal("splits", name=name, splits=list(data),
                      first=next(iter(data), "train"))
    raise refusal("not_a_dataset", name=name, kind=type(data).__name__)


def check_tokenizer(trainer, tokenizer):
    if tokenizer is None or tokenizer.pad_token_id is None:
        raise refusal("no_pad_token", trainer=trainer)


def check_dataset(name, dataset, columns, algorithm, rows):
    """-> the dataset: one we accept, with the columns, rows, and text."""
    if isinstance(dataset, list) and not dataset:
        raise refusal("empty", name=name, algorithm=algorithm, rows=rows)
    dataset = as_dataset(name, dataset)
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise refusal("no_column", name=name, column=missing[0],
                      algorithm=algorithm, columns=list(columns),
                      has=dataset.column_names)
    if len(dataset) == 0:
        raise refusal("empty", name=name, algorithm=algorithm, rows=rows)
    for column in columns:
        if _all_text(dataset, column):
            continue  # Arrow knows: no need to look at every row
        for index, value in enumerate(whole_column(dataset, column)):
            if not isinstance(value, str):
                raise refusal("not_text", name=name, index=index,
                              column=column, value=value,
                              kind=type(value).__name__)
    return dataset


def whole_column(dataset, column):
    """A column as a list, read in one go: iterating `dataset[column]`
    formats it row by row, about 150x slower (1 s for DPO's 72k pairs)."""
    return dataset.with_format("arrow")[column].to_pylist()


def _all_text(dataset, column):
    """True when the column's Arrow type is text and no cell is missing."""
    feature = getattr(dataset, "features", {}).get(column)
    return (getattr(feature, "dtype", None) in ("string", "large_string")
            and dataset.with_format("arrow")[column].null_count == 0)


def check_prompt_length(name, index, length, limit, field, room=0):
    """Refuse row `index` if its prompt and `room` more exceed `limit`."""
    if length + room > limit:
        raise refusal("prompt_too_long", name=name, index=index,
                      length=length, short=field.split(".")[1], limit=limit,
                      field=field)


def warn_unknown_text(name, tokenizer, dataset, columns):
    """Warn, with counts, when text falls outside the tokenizer's vocabulary.

    The toy tokenizer turns every character it does not know into one
    <unk>, so "42 apples" and "42 pears!" look the same to the model.
    Tokenizers without an unk token, or with byte fallback, lose nothing.
    """
    unk = tokenizer.unk_token_id
    if unk is None or not tokenizer.is_fast:  # offsets need a fast one
        return
    rows, counts, examples, first = set(), {}, {}, None
    for column in columns:
        texts = whole_column(dataset, column)
        lost = _unknown_spans(tokenizer, list(dict.fromkeys(texts)), unk)
        hit = [i for i, text in enumerate(texts) if text in lost]
        if not hit:
            continue
        rows.update(hit)
        counts[column] = (len(hit), sum(len("".join(lost[texts[i]]))
                                        for i in hit))
        first = first or (hit[0], column, texts[hit[0]])
        for span in (s for i in hit for s in lost[texts[i]]):
            if len(examples) >= 5:  # enough to see what is going on
                break
            examples.setdefault(span, None)
    if not rows:
        return
    per_column = "; ".join(f"{c!r}: {k} characters in {n} rows"
                           for c, (n, k) in counts.items())
    row, column, first_text = first
    warnings.warn(i18n.text(
        MESSAGES, "unknown_text", name=name, rows=len(rows),
        total=len(dataset), unk=tokenizer.unk_token, per_column=per_column,
        row=row, column=column, start=first_text[:40],
        examples=", ".join(map(repr, examples))), stacklevel=3)


def _unknown_spans(tokenizer, texts, unk):
    """{text: [the pieces of it that became unk]}, for texts with any."""
    encoded = tokenizer(texts, add_special_tokens=False,
                        return_attention_mask=False,
                        return_offsets_mapping=True)
    lost = {}
    for text, ids, offsets in zip(texts, encoded["input_ids"],
                                  encoded["offset_mapping"]):
        spans = [text[a:b] for i, (a, b) in zip(ids, offsets) if i == unk]
        if spans:
            lost[text] = spans
    return lost


# ------------------------------------------------------------------ rewards

def reward_name(func):
    """A reward function's name; a partial is named after what it wraps."""
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


def reward_names(reward_funcs):
    """One name per function, made unique: <lambda>, <lambda>_2, ...

    Metrics are keyed by these names (rewards/<name>), so two functions
    with the same name would otherwise log as one.
    """
    names = []
    for func in reward_funcs:
        name, n = reward_name(func), 1
        while (name if n == 1 else f"{name}_{n}") in names:
            n += 1
        names.append(name if n == 1 else f"{name}_{n}")
    return names


def check_reward_funcs(reward_funcs):
    """-> a list of at least one callable reward function."""
    funcs = (list(reward_funcs) if isinstance(reward_funcs, (list, tuple))
             else [reward_funcs])
    if not funcs:
        raise refusal("no_rewards")
    for i, func in enumerate(funcs):
        if not callable(func):
            raise refusal("not_callable", i=i, shown=_shown(func),
                          kind=type(func).__name__)
    return funcs


def check_reward_weights(weights):
    """GRPOConfig.reward_weights: None, or finite numbers not all 0 -> a
    list of floats (a tuple would not equal its saved list on resume)."""
    if weights is None:
        return None
    if (not isinstance(weights, (list, tuple)) or not weights
            or not all(_is_number(w, float) and _within_float32(w)
                       for w in weights)):
        raise refusal("reward_weights", shown=_shown(weights))
    if not any(weights):
        raise refusal("reward_weights_zero", shown=_shown(list(weights)))
    return [float(w) for w in weights]


def check_reward_weights_count(weights, names):
    """One weight per reward function (GRPOTrainer knows the functions)."""
    if weights is not None and len(weights) != len(names):
        raise refusal("reward_weights_count", have=len(weights),
                      wanted=len(names), names=", ".join(names))


def score(reward_funcs, prompts, completions, columns, dataset="dataset",
          timeout=None):
    """Call every reward function; refuse an answer we cannot train on,
    naming `dataset` (train_dataset, eval_dataset) where the rows came from.

    Each function gets its own copies of the lists, so one that edits them
    in place cannot change what the next one sees, and `timeout` seconds
    a call (GRPOConfig.reward_timeout): one that never returns is stopped
    and named, not waited on.
    Returns (B, F): one column per reward function.
    """
    # the checkers' nesting alarm (a reward may run inside a check's limit)
    from kit.checks.clock import TimeLimit, time_limit
    scores = []
    for func, name in zip(reward_funcs, reward_names(reward_funcs)):
        try:
            with (time_limit(timeout) if timeout else nullcontext()) as limit:
                values = func(prompts=list(prompts),
                              completions=list(completions),
                              **copy.deepcopy(columns))
        except TimeLimit as expired:
            if limit is None or expired.limit is not limit:
                raise  # an outer limit's (a check's): not ours to name
            raise refusal("reward_timeout", name=name, seconds=timeout,
                          n=len(completions)) from None
        except Exception as error:
            raise refusal("reward_raised", name=name,
                          kind=type(error).__name__, error=error,
                          dataset=dataset, columns=sorted(columns)) from error
        scores.append(torch.tensor(_reward_values(name, values, completions),
                                   dtype=torch.float32))
    scores = torch.stack(scores, dim=1)  # (B, F)
    check_scored(scores, reward_names(reward_funcs), completions)
    return scores


def check_scored(scores, names, completions):
    """Each completion scored by at least one function: a None (nan) is
    "no opinion" (TRL's), and a completion with none but opinions would
    train on nothing (TRL warns and gives it advantage 0)."""
    unscored = scores.isnan().all(dim=1).nonzero()
    if len(unscored):
        i = int(unscored[0])
        raise refusal("reward_unscored", name=names[0], i=i,
                      completion=completions[i], count=len(names))


def check_prompts(name, dataset, tokenizer, args, reward_funcs):
    """GRPO's datasets -> the dataset; refuse bad input before training."""
    dataset = check_dataset(name, dataset, ["prompt"], "GRPO", "prompts")
    check_no_empty_prompts(name, dataset)
    warn_unknown_text(name, tokenizer, dataset, ["prompt"])
    encoded = tokenizer(whole_column(dataset, "prompt"))["input_ids"]
    lengths = [len(ids) for ids in encoded]
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    check_prompt_length(name, longest, lengths[longest],
                        args.max_prompt_length, "GRPOConfig.max_prompt_length")
    # A dry run of every reward function on two rows, so that a broken one
    # fails now and not after the first generate().
    rows = dataset.select(range(min(2, len(dataset))))
    columns = {key: list(rows[key]) for key in rows.column_names
               if key != "prompt"}
    score(reward_funcs, list(rows["prompt"]), ["0"] * len(rows), columns,
          dataset=name, timeout=getattr(args, "reward_timeout", None))
    return dataset


def check_no_empty_prompts(name, dataset):
    """Every prompt asks something: "" (or only spaces) was trained on,
    the policy generating from <bos> alone, a run that learns nothing of
    the task."""
    prompts = whole_column(dataset, "prompt")
    empty = [i for i, prompt in enumerate(prompts) if not prompt.strip()]
    if empty:
        raise refusal("empty_prompt", name=name, index=empty[0],
                      prompt=prompts[empty[0]], count=len(empty))


def check_enough_prompts(dataset, needed):
    """GRPO's train_dataset must fill one generation's big batch."""
    if dataset is not None and len(dataset) < needed:
        raise refusal("enough_prompts", have=len(dataset), needed=needed)


def _reward_values(name, values, completions):
    """One float per completion, from a list, tuple, 1-D array or tensor."""
    if hasattr(values, "ndim") and values.ndim != 1:
        raise refusal("reward_shape", name=name, shape=tuple(values.shape))
    if hasattr(values, "tolist"):  # numpy arrays and tensors
        try:
            values = values.tolist()
        except Exception as error:  # a meta tensor has no values to read
            raise refusal("reward_unreadable", name=name,
                          kind=type(values).__name__,
                          error_kind=type(error).__name__,
                          error=error) from error
    if not isinstance(values, (list, tuple)):
        raise refusal("reward_not_a_list", name=name,
                      kind=type(values).__name__)
    if len(values) != len(completions):
        raise refusal("reward_count", name=name, have=len(values),
                      wanted=len(completions))
    for i, value in enumerate(values):
        if value is None:  # TRL's "no opinion": nan, skipped (kit.losses)
            continue
        # value != value: nan, without math.isnan's overflow on 10**400
        if not isinstance(value, numbers.Real) or value != value:
            raise refusal("reward_not_a_number", name=name,
                          shown=_shown(value), i=i,
                          completion=completions[i])
        if not _within_float32(value):  # inf, or inf once in float32
            raise refusal("reward_not_finite", name=name,
                          shown=_shown(value), i=i,
                          completion=completions[i])
    return [math.nan if v is None else float(v) for v in values]


def _within_float32(value):
    """Finite in float32, whatever it came as: compared as a Python number
    (np.float16(70000) is float16's inf, which numpy 2 compares with
    FLOAT32_MAX in float16, where that is inf too)."""
    try:
        return abs(float(value)) <= FLOAT32_MAX
    except OverflowError:  # an int beyond any float: 10**400
        return False


def _shown(value):
    """repr(value), cut short: 10**400 has 401 digits."""
    text = repr(value)
    return text if len(text) <= 40 else (
        f"{text[:20]}... ({len(text)} characters)")

