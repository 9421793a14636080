"""Refuse what we cannot train on, before or while training: one place.

DPO and GRPO share the dataset checks; GRPO's rewards are checked on every
call, because a reward function can go wrong on any batch. (The stop on a
nan or inf loss lives in kit.trainers.nonfinite.)
"""

import copy
import math
import numbers

import torch

from kit.trainers.nonfinite import StopOnNonFinite  # noqa: F401 (old home)

FLOAT32_MAX = torch.finfo(torch.float32).max


def check_tokenizer(trainer, tokenizer):
    if tokenizer is None or tokenizer.pad_token_id is None:
        raise ValueError(f"{trainer} needs processing_class: a tokenizer "
                         "with a pad token (tokenizer.pad_token = "
                         "tokenizer.eos_token is the usual fix)")


def check_dataset(name, dataset, columns, algorithm, rows):
    """The columns are there, there are rows, and each cell is text."""
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise ValueError(f"{name} has no column {missing[0]!r}: {algorithm} "
                         f"needs {list(columns)} (it has "
                         f"{dataset.column_names})")
    if len(dataset) == 0:
        raise ValueError(f"{name} is empty: {algorithm} needs {rows}")
    for column in columns:
        if _all_text(dataset, column):
            continue  # Arrow knows: no need to look at every row
        for index, value in enumerate(dataset[column]):
            if not isinstance(value, str):
                raise ValueError(
                    f"{name} row {index}: column {column!r} holds "
                    f"{value!r} ({type(value).__name__}), not text: make "
                    f"every {column!r} a string (e.g. str(value))")


def _all_text(dataset, column):
    """True when the column's Arrow type is text and no cell is missing."""
    feature = getattr(dataset, "features", {}).get(column)
    return (getattr(feature, "dtype", None) in ("string", "large_string")
            and dataset.with_format("arrow")[column].null_count == 0)


def check_prompt_length(name, index, length, limit, field, room=0):
    """Refuse row `index` if its prompt and `room` more exceed `limit`."""
    if length + room > limit:
        raise ValueError(
            f"{name} row {index}: the prompt has {length} tokens, "
            f"{field.split('.')[1]} is {limit}: raise {field} or shorten "
            "the prompt")


# ------------------------------------------------------------------ rewards

def reward_name(func):
    """A reward function's name, for metrics and errors."""
    return getattr(func, "__name__", type(func).__name__)


def score(reward_funcs, prompts, completions, columns):
    """Call every reward function; refuse an answer we cannot train on.

    Each function gets its own copies of the lists, so one that edits them
    in place cannot change what the next one sees.
    Returns (B, F): one column per reward function.
    """
    scores = []
    for func in reward_funcs:
        try:
            values = func(prompts=list(prompts),
                          completions=list(completions),
                          **copy.deepcopy(columns))
        except Exception as error:
            raise ValueError(
                f"reward function {reward_name(func)} raised "
                f"{type(error).__name__}: "
                f"{error} (it gets prompts, completions and the dataset "
                f"columns {sorted(columns)} as keyword arguments)") from error
        scores.append(torch.tensor(_rewards(func, values, completions),
                                   dtype=torch.float32))
    return torch.stack(scores, dim=1)


def _rewards(func, values, completions):
    """One float per completion, from a list, tuple, 1-D array or tensor."""
    if hasattr(values, "ndim") and values.ndim != 1:
        raise ValueError(
            f"reward function {reward_name(func)} returned an array of shape "
            f"{tuple(values.shape)}: return one float per completion")
    if hasattr(values, "tolist"):  # numpy arrays and tensors
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        raise ValueError(
            f"reward function {reward_name(func)} returned a "
            f"{type(values).__name__}, not one value per completion: return "
            "a list with one float per completion")
    if len(values) != len(completions):
        raise ValueError(
            f"reward function {reward_name(func)} returned {len(values)} "
            f"values for {len(completions)} completions: return a list with "
            "one float per completion")
    for i, value in enumerate(values):
        if not isinstance(value, numbers.Real) or math.isnan(value):
            raise ValueError(
                f"reward function {reward_name(func)} returned {value!r} for "
                f"completion {i} ({completions[i]!r}): return a float "
                "for every completion, 0.0 for no reward")
        if not abs(value) <= FLOAT32_MAX:  # inf, or inf once in float32
            raise ValueError(
                f"reward function {reward_name(func)} returned {value!r} for "
                f"completion {i} ({completions[i]!r}): rewards must be "
                "finite float32 numbers; clip them (e.g. max(math.log(p), "
                "-10.0) instead of math.log(p))")
    return [float(v) for v in values]
