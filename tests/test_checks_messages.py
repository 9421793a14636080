"""Each checker's words sit beside it (the exercise's `words`), the
machinery's in kit.checks.messages; the report step's order."""

import inspect
import json
import re
from pathlib import Path

import pytest

from conftest import forget, missing_japanese, status
from kit import checks, i18n, losses
from kit.checks import EXERCISES, advice
from kit.checks.messages import MESSAGES

pytestmark = pytest.mark.usefixtures("lenient")


def test_every_exercise_and_mistake_has_its_words():
    for exercise in EXERCISES.values():
        assert exercise.hints, exercise.id
        assert all(isinstance(hint, str) and hint for hint in exercise.hints)
        for mistake in exercise.mistakes:
            assert mistake.words is exercise.words[mistake.id]
            title, why, hint = mistake.words["en"]
            assert title and why and hint, (exercise.id, mistake.id)
        for property in exercise.properties:
            assert property.words is exercise.words[property.key]
            for language in ("en", "ja"):
                title, why = property.words[language]
                assert title and why, (exercise.id, property.key)
            assert 1 <= property.rung <= len(exercise.hints)
    for key in advice.SYMPTOMS.values():
        assert key in MESSAGES["en"]


def test_an_exercise_whose_words_lack_a_mistake_is_refused_where_declared():
    from kit.checks.core import Mistake, Property, exercise
    words = {"hints": {"en": ["a rung"]}}
    with pytest.raises(ValueError, match="no entry for off_by_one"):
        exercise("toy", 1, "00_toy", answer=len, words=words,
                 mistakes=[Mistake("off_by_one", len)])
    with pytest.raises(ValueError, match="no entry for property:ga"):
        exercise("toy", 1, "00_toy", answer=len, words=words,
                 properties=[Property("ga", "GA=2")])
    with pytest.raises(TypeError, match="words"):
        exercise("toy", 1, "00_toy", answer=len)
    assert "toy" not in EXERCISES


def test_every_entry_of_an_exercises_words_is_one_its_checker_asks_for():
    for exercise in EXERCISES.values():
        source = Path(inspect.getsourcefile(exercise.observe)).read_text()
        mistakes = {mistake.id for mistake in exercise.mistakes} | {
            property.key for property in exercise.properties}
        stray = [key for key in exercise.words
                 if key not in {"hints", "stub"} | mistakes
                 and f'["{key}"]' not in source]
        assert stray == [], exercise.id


def test_every_key_of_the_table_is_one_the_checkers_ask_for():
    # each written out where it is used: no key is built from a word
    source = "".join(path.read_text() for path in
                     Path(checks.__file__).parent.glob("*.py")
                     if path.name != "messages.py")
    stray = [key for key in MESSAGES["en"] if f'"{key}"' not in source]
    assert stray == []
    assert not re.search(r"""text\(\s*MESSAGES,\s*f["']""", source)


def test_missing_japanese_lists_every_key_with_no_japanese_text(
        monkeypatch):
    # tests/test_i18n.py says which keys may miss (notebooks 07, 08)
    before = set(missing_japanese())
    monkeypatch.delitem(MESSAGES["ja"], "verdict.passed")
    assert set(missing_japanese()) - before == {"verdict.passed"}


def test_a_verdict_speaks_the_language_of_the_table(monkeypatch, capsys):
    monkeypatch.setitem(MESSAGES["ja"], "verdict.passed", "✅ 合格")
    hints = EXERCISES["causal_lm_loss"].words["hints"]
    monkeypatch.setitem(hints, "ja", ["ずらす"] + hints["ja"][1:])
    monkeypatch.setattr(i18n, "_current", "ja")
    assert status("causal_lm_loss", losses.causal_lm_loss) == "passed"
    checks.hint("causal_lm_loss", 1)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✅ 合格 · causal_lm_loss ★: ")
    assert out[1] == "ヒント 1/4: ずらす"


def test_a_mistake_is_named_in_the_words_of_the_table(monkeypatch):
    mistake = EXERCISES["causal_lm_loss"].mistakes[0]
    monkeypatch.setitem(mistake.words, "en",
                        ("no shift at all",) + mistake.words["en"][1:])
    unshifted = mistake.code
    result = checks.check("causal_lm_loss", unshifted)
    assert result.mistake == "not_shifted"
    assert result.message.startswith("no shift at all — ")


def test_record_is_the_line_grade_reads():
    unshifted = EXERCISES["causal_lm_loss"].mistakes[0].code
    result = checks.check("causal_lm_loss", unshifted)
    assert result.record() == {"id": "causal_lm_loss", "status": "failed",
                               "mistake": "not_shifted",
                               "message": result.message}


def test_strict_mode_prints_and_records_before_it_raises(
        monkeypatch, tmp_path, capsys):
    path = tmp_path / "grades.jsonl"
    monkeypatch.setenv("KIT_GRADE_FILE", str(path))
    monkeypatch.setenv("KIT_STRICT", "1")
    unshifted = EXERCISES["causal_lm_loss"].mistakes[0].code
    with pytest.raises(AssertionError, match="causal_lm_loss: failed"):
        checks.check("causal_lm_loss", unshifted)
    assert capsys.readouterr().out.startswith("❌ failed · causal_lm_loss")
    assert json.loads(path.read_text())["mistake"] == "not_shifted"


def test_each_exercise_keeps_its_own_place_on_its_ladder(capsys):
    def wrong(logits, labels):
        return losses.causal_lm_loss(logits, labels) + 0.1
    for _ in range(2):
        checks.check("causal_lm_loss", wrong)
    first, other = EXERCISES["causal_lm_loss"], EXERCISES["dpo_loss"]
    assert (first.failures, other.failures) == (2, 0)
    forget([first])
    assert first.failures == 0 and first.last_help is None
