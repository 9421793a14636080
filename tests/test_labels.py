"""Every text the figures and the report show comes from one table a
language: Japanese when the kit speaks it, English (as before) otherwise."""

import re
import string
import warnings

import pytest

from kit import bench, course, explore, i18n, labels, live
from kit.grading import gradebook, report_text
from kit.live import LiveFigure

TABLES = {**labels.TABLES, **report_text.TABLES}
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")  # kana, kanji
HISTORY = [
    {"loss": 0.01, "step": 1}, {"loss": 0.02, "reward": 0.2, "step": 2},
    {"loss": 0.01, "reward": 0.5, "step": 4, "generation/calls": 2,
     "generation/seconds": 0.8},
]
EXPLORERS = [explore.explore_ga_split, explore.explore_dpo,
             explore.explore_sampler, explore.explore_clip]
CARDS = [{"submission": "alice/03.ipynb", "notebook": "03", "error": None,
          "exercises": [{"id": "dpo_loss", "stars": 2, "status": "failed",
                         "mistake": "no_ref", "message": "m", "attempts": 2,
                         "mistakes": ["no_ref"]}], "passed": 0, "total": 1},
         {"submission": "bob/03.ipynb", "notebook": "03", "error": "boom",
          "exercises": [], "passed": 0, "total": 0}]


@pytest.fixture
def ja():
    i18n.set_language("ja")
    yield
    i18n.set_language("en")


def texts(figure):
    """Every title, axis label, legend entry, tick label and note drawn."""
    found = [t.get_text() for t in figure.texts]
    if figure._suptitle is not None:
        found.append(figure._suptitle.get_text())
    for ax in figure.axes:
        found += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        found += [t.get_text() for t in ax.texts]
        found += [t.get_text() for t in ax.get_yticklabels()]
        if ax.get_legend():
            found += [t.get_text() for t in ax.get_legend().get_texts()]
    return [t for t in found if t]


def japanese(figure):
    return [t for t in texts(figure) if JAPANESE.search(t)]


@pytest.mark.parametrize("name", sorted(TABLES))
def test_no_table_misses_a_japanese_text(name):
    assert i18n.missing(TABLES[name]) == []
    assert set(TABLES[name]["ja"]) == set(TABLES[name]["en"])  # no stale


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_japanese_text_takes_the_english_fields(name):
    def fields(text):
        return {f for _, f, _, _ in string.Formatter().parse(text) if f}
    table = TABLES[name]
    assert {k: fields(v) for k, v in table["ja"].items()} == {
        k: fields(v) for k, v in table["en"].items()}


def test_the_live_plot_speaks_japanese(ja):
    figure = live.plot_history(HISTORY, metrics="reward", title="GRPO")
    loss_ax = figure.axes[0]
    assert loss_ax.get_title() == "損失"
    # the optimizer step, as in English: 学習ステップ is training_step
    assert loss_ax.get_xlabel() == "オプティマイザのステップ"
    assert "GRPO の損失" in loss_ax.texts[0].get_text()  # the ≈ 0 note
    assert figure.axes[2].get_title() == "generate(): 2 回, 0.80 秒"
    assert live.progress(1, 4, 3.0) == "ステップ 1 / 4 · 経過 0:03 · 残り 0:09"
    assert live.progress(1, 4, 3.0, ended=True).endswith("で停止")
    # the build's panel names stay the English words the prose uses
    assert live.panels("reward", True) == ("loss", "reward", "generation")


def test_the_live_plot_is_english_otherwise():
    figure = live.plot_history(HISTORY, metrics="reward")
    assert [figure.axes[0].get_title(), figure.axes[0].get_xlabel()] == [
        "loss", "optimizer step"]
    # wrapped to fit its panel (kit.live._wrapped): the same words
    assert " ".join(figure.axes[0].texts[0].get_text().split()) == (
        labels.PLOTS["en"]["grpo_loss_note"])
    assert not japanese(figure)


@pytest.mark.parametrize("make", EXPLORERS, ids=lambda f: f.__name__)
def test_each_explorers_figure_speaks_japanese(make, ja):
    figure = make()  # headless under pytest: the static figure
    assert all(JAPANESE.search(ax.get_title() + ax.get_xlabel())
               for ax in figure.axes), texts(figure)
    assert len(figure.axes) == len(explore.PANELS[make.__name__])


@pytest.mark.parametrize("make", EXPLORERS, ids=lambda f: f.__name__)
def test_each_explorers_figure_is_english_otherwise(make):
    assert not japanese(make())


def test_a_japanese_figure_has_every_glyph(ja):
    pytest.importorskip("matplotlib_fontja")
    figure = explore.draw_sampler_plan(LiveFigure(figsize=(11, 4.5)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure._repr_png_()
    assert not [w for w in caught if "missing from font" in str(w.message)]


def test_the_explorers_slider_speaks_japanese(ja, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.delenv("KIT_HEADLESS", raising=False)
    slider = explore.explore_ga_split().controls["split"]
    assert slider.description == "マイクロバッチ"
    # two columns a character: the label keeps room for its width
    assert slider.style.description_width == "112px"


def test_the_bench_speaks_japanese_in_aligned_columns(ja):
    rows = [{"steps_per_generation": k, "generate_calls": 8 // k,
             "generation_seconds_per_step": 0.1 / k, "seconds_per_step": 0.2,
             "tokens_per_second": 900.0} for k in (1, 2)]
    header, *lines = bench.table(rows).splitlines()
    assert "トークン/秒" in header
    assert labels.width(header) == len(lines[0])
    assert japanese(bench.plot(rows))


def test_the_notebook_lines_speak_japanese(ja, capsys):
    course._not_done_yet(None, NotImplementedError, None, None)
    assert "まだ終わっていません" in capsys.readouterr().out


def test_the_class_report_speaks_japanese(ja):
    summary = gradebook.summarise(CARDS)
    page = gradebook.html_page(CARDS, summary)
    for heading in ("クラスの成績レポート", "<h2>演習",
                    "<h2>チェッカーが見分けた間違い",
                    "<h2>受講者", '<th rowspan="2">受講者</th>',
                    "<th>不合格</th>"):
        assert heading in page
    assert "Class report" not in page and "Students" not in page
    card = gradebook.scorecard(CARDS[0])
    assert card.startswith("alice/03.ipynb の成績") and "不合格" in card
    said = gradebook.class_summary(CARDS, summary)
    assert "2 件の提出のうち" in said
    # Japanese order: the word, then its count (was '1/2 合格, 1 不合格')
    assert re.search(r"★+: 合格 \d+/\d+、不合格 \d+、未着手 \d+", said), said


def test_the_class_report_is_english_otherwise():
    page = gradebook.html_page(CARDS, gradebook.summarise(CARDS))
    assert "<h1>Class report</h1>" in page and "<h2>Students" in page
    assert not JAPANESE.search(page)
    assert "failed (no_ref)" in gradebook.scorecard(CARDS[0])


def test_grade_lang_ja_speaks_japanese(capsys):
    from kit import cli
    try:
        assert cli.main(["grade", "--lang", "ja", "no-such.ipynb"]) == 2
    finally:
        i18n.set_language("en")
    assert "そのノートブックもフォルダーもありません" in capsys.readouterr().out


def test_without_the_font_one_warning_says_how_to_get_it(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib_fontja", None)  # missing
    monkeypatch.setattr(labels, "_font_found", None)
    with pytest.warns(UserWarning, match="pip install matplotlib-fontja"):
        labels.use_japanese_font()
    labels.use_japanese_font()  # once: no second warning
