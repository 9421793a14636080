"""Every table of learner-facing text has its Japanese half, with the
English fields, and the checkers speak it when the kit speaks Japanese."""

import os
import string

import pytest

from kit import checks, i18n, labels
from kit.grading import report_text
from kit.checks import EXERCISES, advice
from kit.checks.messages import MESSAGES
from kit.trainers import checkpoint, guards

TABLES = {"checks.MESSAGES": MESSAGES, "guards.MESSAGES": guards.MESSAGES,
          "guards.FIXES": guards.FIXES, "checkpoint.REFUSALS":
          checkpoint.REFUSALS, **labels.TABLES, **report_text.TABLES}
pytestmark = pytest.mark.usefixtures("lenient")


@pytest.fixture
def ja():
    i18n.set_language("ja")
    yield
    i18n.set_language("en")


def fields(entry):
    return {f for _, f, _, _ in string.Formatter().parse(entry) if f}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_has_all_its_japanese(name):
    table = TABLES[name]
    assert sorted(i18n.missing(table)) == []
    assert set(table["ja"]) <= set(table["en"])  # no key English lost


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_japanese_entry_takes_the_english_fields(name):
    table = TABLES[name]
    differ = [key for key, entry in table["ja"].items()
              if fields(entry) != fields(table["en"][key])]
    assert differ == []


def test_every_exercise_and_mistake_has_its_japanese_words():
    # each entry of an exercise's words: Japanese in the English shape
    # (as many rungs, three parts a mistake) with the English {fields}
    for exercise in EXERCISES.values():
        for key, entry in exercise.words.items():
            english, japanese = entry["en"], entry.get("ja")
            where = f"{exercise.id} {key}"
            assert japanese, f"{where}: no Japanese"
            if isinstance(english, str):
                english, japanese = [english], [japanese]
            assert len(japanese) == len(english), where
            assert [fields(line) for line in japanese] == [
                fields(line) for line in english], where
    assert not [key for key in advice.SYMPTOMS.values()
                if key not in MESSAGES["ja"]]


def test_the_machinerys_japanese_half_follows_the_english_order():
    # read from the file: a test that patches an entry moves it in the dict
    import ast
    import inspect
    from kit.checks import messages
    table = ast.parse(inspect.getsource(messages)).body[1].value
    english, japanese = ([key.value for key in half.keys]
                         for half in table.values)
    assert japanese == [key for key in english if key in japanese]


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
    assert out[1] == "# causal_lm_loss の解答：演習のセルに貼り付けてください"
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
