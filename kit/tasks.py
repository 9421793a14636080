"""The offline toy world: a character tokenizer, an addition task, rewards.

Everything here is built locally in well under a second and is deterministic
under a seed, so notebooks and tests never need the internet.

The task is two-digit addition written as `a+b=`, with both operands padded
to two digits ("07+35=") so that every prompt has the same length and batched
generation needs no padding. The answer is the plain sum ("42").
"""

import functools
import random
import re
import warnings
from pathlib import Path

from datasets import Dataset
from tokenizers import (Regex, Tokenizer, decoders, models, pre_tokenizers,
                        processors)
from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS = ["<pad>", "<bos>", "<eos>", "<unk>"]
ALPHABET = list("0123456789+-=")
NUM_PAIRS = 100 * 100  # every (a, b) with 0 <= a, b <= 99
NUM_HELD_OUT = 1000  # pairs that no training split ever contains
_SPLIT_SEED = 1234  # fixed: the held-out pairs never depend on a dataset seed


def make_tokenizer():
    """A character-level tokenizer: one token per character, plus pad/bos/eos.

    Like Llama's tokenizer it puts <bos> in front of every encoded text; it
    adds no <eos> (a trainer appends it to completions itself).
    """
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + ALPHABET)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()  # join characters back without spaces
    bos = ("<bos>", vocab["<bos>"])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[bos])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>",
        pad_token="<pad>", unk_token="<unk>", padding_side="right")


# ---------------------------------------------------------------- the task

@functools.lru_cache(maxsize=None)  # checkers ask hundreds of times
def _pairs(split):
    """All (a, b) pairs of one split: "train" or "test" (held out)."""
    order = list(range(NUM_PAIRS))
    random.Random(_SPLIT_SEED).shuffle(order)
    if split == "test":
        chosen = order[:NUM_HELD_OUT]
    elif split == "train":
        chosen = order[NUM_HELD_OUT:]
    else:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return tuple(divmod(i, 100) for i in chosen)


def _sample(split, n, seed):
    """n (a, b) pairs of `split`, a different draw for each seed."""
    pairs = _pairs(split)
    if n is None or n > len(pairs):
        n = len(pairs)
    return random.Random(seed).sample(pairs, n)


def format_prompt(a, b):
    return f"{a:02d}+{b:02d}="


def near_misses(a, b):
    """Plausible mistakes: off by one, or by ten (a carry gone wrong)."""
    right = a + b
    candidates = [right + d for d in (-11, -10, -9, -1, 1, 9, 10, 11)]
    return [str(c) for c in candidates if c >= 0]


def wrong_answer(a, b, rng):
    """One near miss of a + b, drawn with `rng`."""
    return rng.choice(near_misses(a, b))


def sft_dataset(split="train", n=None, seed=0):
    """`prompt` / `completion` pairs, the format of TRL's SFTTrainer."""
    pairs = _sample(split, n, seed)
    return Dataset.from_dict({
        "prompt": [format_prompt(a, b) for a, b in pairs],
        "completion": [str(a + b) for a, b in pairs],
    })


def preference_dataset(split="train", n=None, seed=0,
                       every_near_miss=False):
    """`prompt` / `chosen` / `rejected`: the right sum against a near miss.

    One random near miss per sum; with every_near_miss=True, one row per
    near miss instead (up to 8 rows per sum), so that each sum's every
    plausible slip is pushed down, not just one of them.
    """
    pairs = _sample(split, n, seed)
    rng = random.Random(seed + 1)
    rows = [(a, b, wrong) for a, b in pairs
            for wrong in (near_misses(a, b) if every_near_miss
                          else [wrong_answer(a, b, rng)])]
    return Dataset.from_dict({
        "prompt": [format_prompt(a, b) for a, b, _ in rows],
        "chosen": [str(a + b) for a, b, _ in rows],
        "rejected": [wrong for _, _, wrong in rows],
    })


def prompt_dataset(split="train", n=None, seed=0):
    """`prompt` / `answer`: what GRPO samples from, and what rewards check."""
    pairs = _sample(split, n, seed)
    return Dataset.from_dict({
        "prompt": [format_prompt(a, b) for a, b in pairs],
        "answer": [str(a + b) for a, b in pairs],
    })


# ------------------------------------------------------- reward functions
# TRL's signature: one float per completion; dataset columns come as lists.

def correctness_reward(prompts, completions, answer, **columns):
    """1.0 when the completion is exactly the right sum, else 0.0."""
    # compared as text: an `answer` column of ints (42) must still match "42"
    return [float(c.strip() == str(a).strip())
            for c, a in zip(completions, answer)]


_NUMBER = re.compile(r"\d{1,3}")


def format_reward(prompts, completions, **columns):
    """1.0 for a bare number of at most three digits, else 0.0 (shaping)."""
    return [float(_NUMBER.fullmatch(c.strip()) is not None)
            for c in completions]


# ------------------------------------------------- a real dataset, online

_LAST_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def last_number(text):
    """The last number written in `text` ("1,234" -> "1234"), or None."""
    numbers = _LAST_NUMBER.findall(text)
    return numbers[-1].replace(",", "").rstrip(".") if numbers else None


def final_number_reward(prompts, completions, answer, **columns):
    """1.0 when the last number in the completion is the answer (GSM8K)."""
    return [float(last_number(c) == str(a).strip())
            for c, a in zip(completions, answer)]


# Local files are read by the builder of their type, as the Hub would.
_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv",
             ".parquet": "parquet"}


def _load_rows(name_or_path, config, split):
    """A Hub dataset, a local folder of data files, or one local file."""
    from datasets import load_dataset
    path = Path(name_or_path).expanduser()
    if path.is_file():
        if path.suffix not in _BUILDERS:
            raise ValueError(
                f"hub_prompt_dataset: cannot read {path.suffix or 'a file '}"
                f" files; give one of {sorted(_BUILDERS)}")
        return load_dataset(_BUILDERS[path.suffix], data_files=str(path),
                            split="train")
    if path.is_dir():  # its files name the splits; a Hub config means nothing
        return load_dataset(str(path), split=split)
    return load_dataset(name_or_path, config, split=split)


def _check_gsm8k_columns(name_or_path, data):
    """GSM8K's two columns, or one line naming the missing one (it was a
    KeyError 'answer' from inside datasets' filter)."""
    missing = [c for c in ("question", "answer") if c not in data.column_names]
    if missing:
        raise ValueError(
            f"hub_prompt_dataset: {name_or_path} has no column "
            f"{missing[0]!r} (it has {data.column_names}): GSM8K's layout is "
            f"`question`, and `answer` ending in '#### <number>'; rename its "
            f"columns to those (Dataset.rename_column)")


_GSM8K_ANSWER = re.compile(r"####\s*(-?[\d,]*\.?\d+)\s*$")


def _gsm8k_answer(text):
    """'... #### 1,234' -> '1234'; None when no number follows ####."""
    found = _GSM8K_ANSWER.search(str(text))
    return found.group(1).replace(",", "") if found else None


def hub_prompt_dataset(name_or_path="openai/gsm8k", config="main",
                       split="train", n=None, tokenizer=None):
    """A GSM8K-style dataset mapped to `prompt` / `answer`.

    Works for the Hub's openai/gsm8k and for any local folder or file
    (.jsonl, .json, .csv, .parquet) with its columns: `question`, and
    `answer` ending in "#### <number>". Rows whose answer has no such number
    could never be rewarded: they are skipped, with a warning that counts
    them. With a tokenizer that has a chat template (an instruct model),
    each prompt is the question as a user turn, ready for the assistant.
    """
    data = _load_rows(name_or_path, config, split)
    _check_gsm8k_columns(name_or_path, data)
    usable = data.filter(lambda row: _gsm8k_answer(row["answer"]) is not None)
    if len(usable) < len(data):
        warnings.warn(
            f"hub_prompt_dataset: skipped {len(data) - len(usable)} of "
            f"{len(data)} rows whose `answer` does not end in "
            f"'#### <number>'", stacklevel=2)
    if len(usable) == 0:
        raise ValueError(
            f"hub_prompt_dataset: no row of {name_or_path} has an `answer` "
            f"ending in '#### <number>' (GSM8K's layout)")
    data = usable
    if n is not None:
        data = data.select(range(min(n, len(data))))
    templated = tokenizer is not None and tokenizer.chat_template is not None

    def to_prompt(row):
        question = row["question"] + "\nGive the final answer as a number."
        if templated:
            question = tokenizer.apply_chat_template(
                [{"role": "user", "content": question}], tokenize=False,
                add_generation_prompt=True)
        return {"prompt": question, "answer": _gsm8k_answer(row["answer"])}
    mapped = data.map(to_prompt, remove_columns=data.column_names)
    return mapped.select_columns(["prompt", "answer"])
