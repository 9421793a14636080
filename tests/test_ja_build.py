"""The Japanese notebooks: built from the English source and one
translation file each, and `build --check` says what is out of step."""

import shutil

import jupytext
import nbformat
import pytest

from kit import cli, course, i18n
from kit.builder import japanese, notebooks, paths

NAME = "00_setup"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A notebooks/ folder holding notebook 00 only, built, as committed."""
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    tmp_path = tmp_path / "notebooks"
    src = tmp_path / "src"
    src.mkdir(parents=True)
    for suffix in (".py", ".ja.md"):
        shutil.copy(paths.SOURCES / f"{NAME}{suffix}", src)
    for name, path in (("NOTEBOOKS", tmp_path), ("SOURCES", src),
                       ("SOLUTIONS", tmp_path / "solutions"),
                       ("JA", tmp_path / "ja"),
                       ("JA_SOLUTIONS", tmp_path / "ja" / "solutions")):
        monkeypatch.setattr(japanese if name.startswith("JA") else paths,
                            name, path)
    assert cli.main(["build"]) == 0
    return tmp_path


def check(capsys):
    """-> (exit status, printed text) of `python -m kit build --check`."""
    capsys.readouterr()
    status = cli.main(["build", "--check"])
    return status, capsys.readouterr().out


def test_the_built_tree_passes_the_check(tree, capsys):
    assert (tree / "ja" / f"{NAME}.ipynb").exists()
    assert (tree / "ja" / "solutions" / f"{NAME}.ipynb").exists()
    assert check(capsys) == (0, "all notebooks match their sources\n")


def test_a_stale_japanese_notebook_fails(tree, capsys):
    path = tree / "ja" / f"{NAME}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[2].source += "\n手で編集"
    nbformat.write(notebook, path)
    status, out = check(capsys)
    assert status == 1
    assert f"ja/{NAME}.ipynb: holds edits build did not write" in out


def test_a_japanese_code_cell_unlike_the_english_one_fails(tree, capsys):
    path = tree / "ja" / "solutions" / f"{NAME}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    code[2].source += "\nprint('only in Japanese')"
    nbformat.write(notebook, path)
    status, out = check(capsys)
    assert status == 1
    assert (f"notebooks/ja/solutions/{NAME}.ipynb: code cell "
            f"{code[2].id} differs from the English one") in out


def test_an_untranslated_english_cell_fails(tree, capsys):
    source = tree / "src" / f"{NAME}.py"
    source.write_text(source.read_text()
                      + "\n# %% [markdown]\n# ## A new section\n")
    status, out = check(capsys)
    assert status == 1
    assert f"{NAME}.ja.md: cell 16 (markdown, '## A new section'" in out
    assert "has no translation" in out


def test_a_changed_english_cell_makes_its_translation_stale(tree, capsys):
    source = tree / "src" / f"{NAME}.py"
    text = source.read_text().replace("## The toy world",
                                      "## The little world")
    source.write_text(text)
    status, out = check(capsys)
    assert status == 1
    assert f"{NAME}.ja.md: cell 4 " in out and "is stale" in out
    assert "2ae120086f" in out  # what the translation records


def test_an_extra_translation_block_fails(tree, capsys):
    path = tree / "src" / f"{NAME}.ja.md"
    path.write_text(path.read_text()
                    + "\n<!-- ja: cell 3 · en 0123456789 -->\n余分\n")
    status, out = check(capsys)
    assert status == 1
    assert f"{NAME}.ja.md: an extra block, cell 3" in out


def test_a_notebook_without_a_translation_file_fails(tree, capsys):
    (tree / "src" / "07_demo.py").write_text(
        "# %% [markdown]\n# # 07 · Demo\n\n# %%\nprint(1)\n")
    status, out = check(capsys)
    assert status == 1
    assert "07_demo.ja.md: missing: notebook 07_demo" in out


def test_ja_stale_lists_what_to_translate_with_its_text(tree, capsys):
    source = tree / "src" / f"{NAME}.py"
    source.write_text(source.read_text().replace("## The toy world",
                                                 "## The little world"))
    capsys.readouterr()
    assert cli.main(["build", "--ja-stale"]) == 0
    out = capsys.readouterr().out
    english = jupytext.read(source).cells[4].source
    assert (f"# {NAME}.ja.md (stale)\n<!-- ja: cell 4 · en "
            f"{japanese.cell_hash(english)} -->\n## The little world") in out
    assert out.count("<!-- ja: cell") == 1


def test_the_japanese_text_gets_the_structure_checks(tree, capsys):
    path = tree / "src" / f"{NAME}.ja.md"
    path.write_text(path.read_text().replace(
        "上から読んでいきましょう", "`loss` panel を見ましょう"))
    status, out = check(capsys)
    assert status == 1 and f"{NAME}.ja.md: cell 14" in out


def test_the_rewrite_adds_the_language_and_the_extra():
    assert japanese.ja_code("setup_notebook()") == 'setup_notebook(lang="ja")'
    assert (japanese.ja_code("x = 1\nsetup_notebook(seed=3)\n")
            == 'x = 1\nsetup_notebook(seed=3, lang="ja")\n')
    install = japanese.ja_code(notebooks.COLAB_INSTALL)
    assert "inside-the-trainer[ja] @" in install


def test_setup_notebook_checks_and_sets_the_language(capsys):
    with pytest.raises(ValueError, match=r"setup_notebook\(lang='fr'\).*"
                                         r"'en', 'ja'"):
        course.setup_notebook(lang="fr")
    try:
        course.setup_notebook(lang="ja")
        assert i18n.language() == "ja"
    finally:
        course.setup_notebook()
    assert i18n.language() == "en"


def test_every_notebook_has_its_japanese_copies():
    for source in sorted(paths.SOURCES.glob("[0-9][0-9]_*.py")):
        for folder in (japanese.JA, japanese.JA_SOLUTIONS):
            path = folder / f"{source.stem}.ipynb"
            notebook = nbformat.read(path, as_version=4)
            rel = path.relative_to(paths.ROOT).as_posix()
            assert f"blob/main/{rel})" in notebook.cells[0].source
            for cell in notebook.cells:
                assert all(len(line) <= 79
                           for line in cell.source.splitlines()
                           if cell.cell_type == "code")


def test_japanese_figures_draw_every_glyph(recwarn):
    """With the `ja` extra's font, Japanese labels are text, not boxes."""
    pytest.importorskip("matplotlib_fontja")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with matplotlib.rc_context():
        assert course.japanese_figures()
        figure, axes = plt.subplots()
        axes.set_title("学習の損失と報酬")
        figure.canvas.draw()
        plt.close(figure)
    assert not [w for w in recwarn if "missing from" in str(w.message)]


def test_japanese_lines_are_joined_where_a_browser_would_show_a_space():
    text = ("損失を\n計算します。\n`loss` を\n返す\n- 項目\n  の続き\n"
            "```\nコード\nです\n```\n$$a\nb$$\n文\nです")
    assert japanese.join_wrapped(text) == (
        "損失を計算します。\n`loss` を返す\n- 項目の続き\n"
        "```\nコード\nです\n```\n$$a\nb$$\n文です")


def test_text_before_the_first_block_is_named(tree, capsys):
    path = tree / "src" / f"{NAME}.ja.md"
    path.write_text("迷子の行\n" + path.read_text())
    status, out = check(capsys)
    assert status == 1
    assert f"{NAME}.ja.md: text before the first '<!-- ja: cell" in out
    assert cli.main(["build", "--ja-stale"]) == 0
    assert "text before the first" in capsys.readouterr().out


def test_a_new_english_cell_leaves_the_later_translations_in_place(
        tree, capsys):
    """Inserting a cell renumbers the ones after it: only the new cell
    lacks a translation, none of the others turns stale."""
    source = tree / "src" / f"{NAME}.py"
    text = source.read_text()
    start = text.index("# %% [markdown]", 1)
    source.write_text(text[:start] + "# %% [markdown]\n# A new cell.\n\n"
                      + text[start:])
    status, out = check(capsys)
    assert status == 1
    assert out.count("has no translation") == 1 and "A new cell" in out
    assert "stale" not in out and "extra block" not in out
