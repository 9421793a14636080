"""The Japanese edition keeps its glossary (README.ja.md, 用語集): one term
for each thing, none of the words the glossary rules out, and Japanese
punctuation inside Japanese sentences.

Every text the kit prints in Japanese passes, and so does every prose
file (the notebooks' .ja.md, README.ja.md): NOT_YET_REWRITTEN, the list of
those that did not, is empty, and a file on it that passes fails the test,
so the list can only shrink.
"""

import re
from pathlib import Path

import pytest

import math
import warnings
from types import SimpleNamespace

from datasets import Dataset

from kit import i18n, labels
from kit.checks import EXERCISES
from kit.checks.messages import MESSAGES
from kit.grading import report_text
from kit.trainers import checkpoint, guards
from tools.japanese_outputs import english_runs

ROOT = Path(__file__).resolve().parents[1]
README_JA = ROOT / "README.ja.md"
PROSE = (sorted(ROOT.glob("notebooks/src/*.ja.md")) + [README_JA]
         + sorted(ROOT.glob("docs/ja/*.md")))
NOT_YET_REWRITTEN = set()  # issue 51 emptied it: a new file starts passing

JAPANESE = "\u3040-\u30ff\u4e00-\u9fff"
# an ASCII , : or ; with Japanese on both sides (a closing bracket before,
# an opening one after, count as Japanese)
ASCII_PUNCTUATION = re.compile(
    rf"[{JAPANESE}）」][ \t]*[,:;][ \t]*[{JAPANESE}（「]")
# what the glossary's words must never say (issue 50): num_items_in_batch
# is the step's token count, not a number of steps
WRONG_MEANING = [
    re.compile(r"(ステップの数|ステップ数)である num_items_in_batch"),
    re.compile(r"それ以上の数で割ると不合格"),
    re.compile(r"その後オプティマイザのステップを経た方策でサンプリング"),
]


def glossary():
    """{term: [words not to use]} from README.ja.md's 用語集 table."""
    section = README_JA.read_text(encoding="utf-8").split("## 用語集")[1]
    rows = [line.strip("|").split("|") for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| 日本語")]
    return {cells[0].strip(): [w.strip() for w in cells[2].split("、")
                               if w.strip()] for cells in rows}


def forbidden():
    return sorted({word for words in glossary().values() for word in words})


def kit_texts():
    """(where, text) for every Japanese line the kit prints."""
    tables = {"checks.MESSAGES": MESSAGES,
              "guards.MESSAGES": guards.MESSAGES, "guards.FIXES": guards.FIXES,
              "checkpoint.REFUSALS": checkpoint.REFUSALS, **labels.TABLES,
              **report_text.TABLES}
    for name, table in tables.items():
        for key, text in table["ja"].items():
            yield f"{name}[{key!r}]", text
    for exercise in EXERCISES.values():
        for key, entry in exercise.words.items():
            lines = entry["ja"]
            for line in [lines] if isinstance(lines, str) else lines:
                yield f"{exercise.id} {key}", line


def prose(path):
    """What a reader reads of a Japanese markdown file: no code block, no
    code span, no comment (the build's cell markers)."""
    text = path.read_text(encoding="utf-8")
    # the glossary's own words-not-to-use column is not prose
    text = text.split("## 用語集")[0]
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def breaches(text):
    """What in `text` breaks the glossary's rules, one line each."""
    found = [f"uses {word!r}" for word in forbidden() if word in text]
    found += [f"ASCII punctuation in {m.group()!r}"
              for m in ASCII_PUNCTUATION.finditer(text)]
    found += [f"says the wrong thing: {m.group()!r}"
              for pattern in WRONG_MEANING for m in pattern.finditer(text)]
    return found


def test_the_glossary_decides_one_term_and_the_words_not_to_use():
    terms = glossary()
    assert terms["補完"] == ["回答", "応答"]
    assert "探索" in terms["エクスプローラー（スライダーで動かす図）"]
    for word in ("腕", "熱いサンプル", "予算", "配管", "出荷", "兄弟",
                 "端から端まで", "コード片", "開始時の方策", "小さな世界"):
        assert word in forbidden()
    # a term is never also a word not to use
    assert not set(terms) & set(forbidden())


def test_every_text_the_kit_prints_in_japanese_keeps_the_glossary():
    found = [f"{where}: {why}" for where, text in kit_texts()
             for why in breaches(text)]
    assert found == []


@pytest.mark.parametrize("path", PROSE, ids=lambda p: p.name)
def test_the_japanese_prose_keeps_the_glossary(path):
    name = path.relative_to(ROOT).as_posix()
    found = breaches(prose(path))
    if name in NOT_YET_REWRITTEN:
        assert found, f"{name} keeps the glossary now: take it off " \
                      "NOT_YET_REWRITTEN"
        # meaning comes first: no file may say the wrong thing meanwhile
        assert not [f for f in found if f.startswith("says the wrong")]
    else:
        assert found == []


def test_readme_ja_quotes_the_verdicts_as_the_screen_shows_them():
    readme = README_JA.read_text(encoding="utf-8")
    for status in ("passed", "failed", "not attempted"):
        assert f"「{MESSAGES['ja']['verdict.' + status]}」" in readme


def test_the_rules_catch_what_they_name():
    assert breaches("ステップの数である num_items_in_batch で割ります")
    assert breaches("割りました: それは bnpo です") == [
        "ASCII punctuation in 'た: そ'"]
    assert breaches("3 つの腕を比べます") == ["uses '腕'"]
    assert breaches("`x: y` の値") == []  # ASCII beside ASCII is code
    assert breaches("損失：勾配、報酬。") == []


# ------------------------------------------------ English in a Japanese run

def test_no_japanese_text_of_the_kit_holds_an_english_sentence():
    found = [f"{where}: {run}" for where, text in kit_texts()
             for run in english_runs(text)]
    assert found == []


def test_the_english_detector_finds_sentences_not_names():
    assert english_runs("the loss is nan or inf") == ["the loss is nan or inf"]
    assert english_runs("GRPOConfig.beta は 1e300 です。0 で KL 項") == []
    assert english_runs("loss_type='robust' にするか label_smoothing=0") == []
    assert english_runs("rewards/margins: 0.5、log(0) を探す") == []
    assert english_runs("`pip install trl` を実行") == []
    assert english_runs("差: 1e-06 で TRL と同じ: exact against it") == [
        "exact against it"]


@pytest.fixture
def ja():
    i18n.set_language("ja")
    yield
    i18n.set_language("en")


def refused(make):
    with pytest.raises(ValueError) as caught:
        make()
    return str(caught.value)


SETTINGS = dict(report_to="none", use_cpu=True, disable_tqdm=True,
                per_device_train_batch_size=8)
GRPO = dict(num_generations=4, max_completion_length=4, save_strategy="no")


@pytest.mark.parametrize("make, overrides", [
    ("grpo", dict(num_generations="4")), ("grpo", dict(num_generations=1)),
    ("grpo", dict(steps_per_generation=2.5)),
    ("grpo", dict(max_prompt_length=None)),
    ("grpo", dict(max_completion_length=0)),
    ("grpo", dict(per_device_train_batch_size=0)),
    ("grpo", dict(gradient_accumulation_steps=0)),
    ("grpo", dict(beta=math.nan)), ("grpo", dict(beta=1e300)),
    ("grpo", dict(temperature="1.0")), ("grpo", dict(temperature=1e-30)),
    ("grpo", dict(epsilon=1e-50)), ("grpo", dict(epsilon=0)),
    ("grpo", dict(per_device_train_batch_size=6)),
    ("grpo", dict(epsilon_high=0.28)),
    ("grpo", dict(loss_type="cispo", epsilon_high=-1.0)),
    ("grpo", dict(sapo_temperature_neg=0)),
    ("grpo", dict(importance_sampling_level="seq")),
    ("dpo", dict(beta="0.1")), ("dpo", dict(beta=1e-50)),
    ("dpo", dict(max_length=64.0)), ("dpo", dict(loss_type=["sigmoid"])),
    ("dpo", dict(loss_type="ipo", beta=1e-39)),
    ("dpo", dict(label_smoothing=0.5, loss_type="robust")),
    ("dpo", dict(label_smoothing=0.1)), ("dpo", dict(label_smoothing=-1)),
])
def test_a_bad_config_is_refused_in_japanese(ja, make, overrides, tmp_path):
    from kit.trainers import DPOConfig, GRPOConfig
    config, extra = ((GRPOConfig, GRPO) if make == "grpo"
                     else (DPOConfig, {}))
    said = refused(lambda: config(str(tmp_path), **{
        **SETTINGS, **extra, **overrides}))
    assert re.search(f"[{JAPANESE}]", said), said
    assert english_runs(said) == [], said


def test_dpos_pairs_resuming_and_a_nan_are_refused_in_japanese(ja,
                                                               tmp_path):
    from kit.trainers import checkpoint, nonfinite
    from kit.trainers.dpo import PreferenceTokenizer
    pairs = Dataset.from_list([
        {"chosen": "4", "rejected": "4", "same_ids": True, "cut": True,
         "cut_equal": True}] * 2)
    trainer = SimpleNamespace(max_length=8)
    said = [refused(lambda: PreferenceTokenizer.check_pairs_differ(
                None, "train_dataset", pairs)),
            refused(lambda: PreferenceTokenizer.check_token_pairs_differ(
                None, "train_dataset", pairs)),
            refused(lambda: PreferenceTokenizer.check_cuts(
                trainer, "train_dataset", pairs)),
            refused(lambda: checkpoint.damaged(tmp_path, "optimizer.pt",
                                               "EOF")),
            str(pytest.raises(FloatingPointError, nonfinite.stop, 3,
                              "loss = inf").value)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cut = pairs.map(lambda row: {"cut_equal": False})
        PreferenceTokenizer.check_cuts(trainer, "train_dataset", cut)
    said.append(str(caught[0].message))
    for line in said:
        assert re.search(f"[{JAPANESE}]", line), line
        assert english_runs(line) == [], line
