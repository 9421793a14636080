"""Every table of learner-facing text has its Japanese half, with the
English fields, and the checkers speak it when the kit speaks Japanese."""

import os
import string

import pytest

from kit import checks, i18n, labels
from kit.grading import report_text
from kit.checks import EXERCISES, advice
from kit.checks.messages import MESSAGES
from kit.trainers import guards

TABLES = {"checks.MESSAGES": MESSAGES, "guards.MESSAGES": guards.MESSAGES,
          **labels.TABLES, **report_text.TABLES}
pytestmark = pytest.mark.usefixtures("lenient")


@pytest.fixture
def ja():
    i18n.set_language("ja")
    yield
    i18n.set_language("en")


def fields(entry):
    return {f for _, f, _, _ in string.Formatter().parse(entry) if f}


# Notebooks whose checker texts are not translated yet (issue 22 is open
# for them): their keys are the only ones allowed to miss, and the list
# must shrink, not grow -- a notebook here that is translated fails too.
UNTRANSLATED = ()


def untranslated_keys():
    ids = tuple(f"{exercise.id}." for exercise in EXERCISES.values()
                if exercise.notebook in UNTRANSLATED)
    return {key for key in i18n.missing(MESSAGES) if key.startswith(ids)}


def test_only_the_listed_notebooks_miss_japanese():
    gaps = untranslated_keys()
    notebooks = {exercise.notebook for exercise in EXERCISES.values()
                 if any(key.startswith(f"{exercise.id}.") for key in gaps)}
    assert notebooks == set(UNTRANSLATED)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_has_all_its_japanese(name):
    table = TABLES[name]
    allowed = untranslated_keys() if table is MESSAGES else set()
    assert sorted(set(i18n.missing(table)) - allowed) == []
    assert set(table["ja"]) <= set(table["en"])  # no key English lost


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_japanese_entry_takes_the_english_fields(name):
    table = TABLES[name]
    differ = [key for key, entry in table["ja"].items()
              if fields(entry) != fields(table["en"][key])]
    assert differ == []


def test_every_exercise_and_mistake_has_its_japanese_words():
    keys = {f"symptom.{symptom}" for symptom in advice.SYMPTOMS}
    for exercise in EXERCISES.values():
        keys |= {f"{exercise.id}.hint.{level}"
                 for level in range(1, len(exercise.hints) + 1)}
        keys |= {f"{exercise.id}.{mistake.id}.{part}"
                 for mistake in exercise.mistakes
                 for part in ("title", "why", "hint")}
    assert sorted(keys - set(MESSAGES["ja"]) - untranslated_keys()) == []


def test_the_verdict_words_match_the_reports_status_words():
    # the text after the emoji is the status word the class report shows
    for status in ("passed", "failed", "not attempted"):
        emoji, word = MESSAGES["ja"][f"verdict.{status}"].split(maxsplit=1)
        assert emoji == MESSAGES["en"][f"verdict.{status}"].split()[0]
        assert word == report_text.REPORT["ja"][status]


def stub(logits, labels):
    raise NotImplementedError


def test_a_stub_gets_the_japanese_pause_line(ja, capsys):
    assert checks.check("causal_lm_loss", stub).status == "not attempted"
    out = capsys.readouterr().out
    assert out.startswith("⏸  未着手 · causal_lm_loss ★: ")
    assert "あなたのコードに置き換えてください" in out


def test_a_known_mistake_is_named_in_japanese(ja, capsys):
    unshifted = EXERCISES["causal_lm_loss"].mistakes[0].code
    result = checks.check("causal_lm_loss", unshifted)
    assert result.mistake == "not_shifted"  # the record keeps its id
    out = capsys.readouterr().out
    assert out.startswith("❌ 不合格 · causal_lm_loss ★: ずらしていない — ")
    assert "ヒント: logits[:, :-1] と labels[:, 1:] を比べてください" in out


def test_hint_and_solution_speak_japanese(ja, capsys):
    checks.hint("causal_lm_loss", 1)
    checks.solution("causal_lm_loss")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ヒント 1/4: 位置 t はトークン t+1 を予測します")
    assert out[1] == "# causal_lm_loss の解答: 演習のセルに貼り付けてください"
    assert "def causal_lm_loss" in "\n".join(out[2:])


def test_the_kit_speaks_english_again_after_a_japanese_test(capsys):
    checks.hint("causal_lm_loss", 1)
    assert capsys.readouterr().out.startswith("hint 1/4: Position t")


@pytest.mark.parametrize("value, spoken, said", [
    ("JA", "ja", ""), (" ja ", "ja", ""), ("en", "en", ""),
    ("fr", "en", "KIT_LANG='fr': the kit speaks 'en', 'ja'; speaking 'en'\n"),
])
def test_kit_lang_of_any_case_or_unknown_stops_no_command(value, spoken,
                                                          said):
    # N66: before, KIT_LANG=fr or JA failed every command at import
    import subprocess
    import sys
    result = subprocess.run(
        [sys.executable, "-c", "from kit import i18n; print(i18n.language())"],
        capture_output=True, text=True, env={**os.environ, "KIT_LANG": value})
    assert (result.returncode, result.stdout, result.stderr) == (
        0, spoken + "\n", said)
