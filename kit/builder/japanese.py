"""The Japanese notebooks, built from the English sources.

`notebooks/src/NN_name.ja.md`, beside the English source, holds the
Japanese text of each of its markdown cells, in order, one block each:

    <!-- ja: cell 4 · en 1f0c3a9b2e -->
    ## 日本語の見出し
    ...

"cell 4" is the English cell's index among the source's cells (as in
`kit.builder.prose`'s messages); the hash is the first 10 hex digits of
the sha1 of that English cell's text. Blocks are matched to cells by
that hash (so a cell inserted before them leaves them translated), and
an English edit marks its translation stale. Code cells are the English
ones, with one rewrite (`ja_code`): `setup_notebook(...)` gets
`lang="ja"` (`with_setup_args`, which the build also uses to say which copy
a notebook is) and the Colab install cell installs the `ja` extra (a
Japanese font for the figures).
"""

import hashlib
import re
from pathlib import Path

from kit.builder import paths

JA = paths.NOTEBOOKS / "ja"
JA_SOLUTIONS = JA / "solutions"
JA_BLOCK = re.compile(r"^<!-- ja: cell (\d+) · en ([0-9a-f]{10}) -->$",
                      re.MULTILINE)
SETUP_CALL = re.compile(r"^(\s*)setup_notebook\((.*)\)(\s*)$", re.MULTILINE)
KIT_URL = f'kit = "git+https://github.com/{paths.REPOSITORY}"'
KIT_URL_JA = ('kit = ("inside-the-trainer[ja] @ "\n'
              f'           "git+https://github.com/{paths.REPOSITORY}")')


def cell_hash(text):
    """The 10 hex digits a translation records of its English cell."""
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def ja_code(source):
    """An English code cell as the Japanese notebook has it."""
    return with_setup_args(source, 'lang="ja"').replace(KIT_URL, KIT_URL_JA)


def with_setup_args(source, more, first=False):
    """`source` with `more` (keyword arguments, as text) added to each
    `setup_notebook(...)` call on a line of its own: last, or `first`."""
    def added(match):
        indent, args, tail = match.groups()
        if args.strip():
            args = f"{more}, {args}" if first else f"{args}, {more}"
        else:
            args = more
        return f"{indent}setup_notebook({args}){tail}"
    return SETUP_CALL.sub(added, source)


def _wide(char):
    import unicodedata
    return unicodedata.east_asian_width(char) in "WF"


def join_wrapped(markdown):
    """Japanese prose with its short source lines joined where both sides
    of the break are Japanese: a browser shows a line break inside a
    paragraph as a space, which Japanese text does not have. Code, maths,
    headings, tables and list items keep their lines."""
    out, verbatim = [], False
    for line in markdown.splitlines():
        text = line.lstrip()
        if text.startswith("```") or text.count("$$") % 2:
            verbatim = not verbatim  # a code fence, or $$ maths, opens/shuts
        elif (out and not verbatim and out[-1].strip() and text
              and not out[-1].lstrip().startswith(("#", "|", "$$", "```"))
              and not re.match(r"([-*+>#|]|\d+\.)\s", text)
              and _wide(out[-1][-1]) and _wide(text[0])):
            out[-1] += text
            continue
        out.append(line)
    return "\n".join(out)


def translation_path(source_path):
    return Path(source_path).with_suffix(".ja.md")


def read_translation(path):
    """-> [(cell number, recorded English hash, Japanese text)]."""
    text = Path(path).read_text()
    heads = list(JA_BLOCK.finditer(text))
    if text[:heads[0].start() if heads else len(text)].strip():
        raise ValueError(f"{Path(path).name}: text before the first "
                         "'<!-- ja: cell N · en HASH -->' line")
    blocks = []
    for head, after in zip(heads, heads[1:] + [None]):
        body = text[head.end():after.start() if after else len(text)]
        blocks.append((int(head.group(1)), head.group(2), body.strip("\n")))
    return blocks


def match_blocks(source_cells, blocks):
    """{English markdown cell number: (block, stale?)}, and unused blocks.

    A block belongs to the cell whose text it records the hash of, wherever
    that cell is now: inserting a cell renumbers the ones after it, which
    must not make their translations stale. A block no cell's text
    matches goes to the untranslated cell of its number: an English edit
    made it stale."""
    markdown = [i for i, cell in enumerate(source_cells)
                if cell.cell_type == "markdown"]
    unused, matched = list(blocks), {}
    for i in markdown:
        wanted = cell_hash(source_cells[i].source)
        block = next((b for b in unused if b[1] == wanted), None)
        if block is not None:
            unused.remove(block)
            matched[i] = (block, False)
    for i in markdown:
        block = next((b for b in unused if b[0] == i), None)
        if i not in matched and block is not None:
            unused.remove(block)
            matched[i] = (block, True)
    return matched, unused


def ja_cells(source_cells, blocks, name):
    """The Japanese cells, and one line per translation problem."""
    import copy
    matched, unused = match_blocks(source_cells, blocks)
    cells, problems = [], []
    for i, cell in enumerate(source_cells):
        cell = copy.deepcopy(cell)
        if cell.cell_type == "markdown":
            where = f"{name}: cell {i} (markdown, {cell.source[:40]!r}...)"
            if i not in matched:
                problems.append(f"{where} has no translation")
            else:
                (_, recorded, text), stale = matched[i]
                cell.source = join_wrapped(text)
                if stale:
                    problems.append(
                        f"{where}: the translation is stale (it records en "
                        f"{recorded}, the English cell is now "
                        f"{cell_hash(source_cells[i].source)}): see "
                        "`python -m kit build --ja-stale`")
        elif cell.cell_type == "code":
            cell.source = ja_code(cell.source)
        cells.append(cell)
    for number, _, _ in unused:
        problems.append(f"{name}: an extra block, cell {number}: the English "
                        "source has no markdown cell there")
    return cells, problems


def ja_sources():
    """-> {source path: (Japanese cells or None, translation problems)}."""
    import jupytext
    out = {}
    for path in sorted(paths.SOURCES.glob("[0-9][0-9]_*.py")):
        ja = translation_path(path)
        if not ja.exists():
            out[path] = (None, [f"notebooks/src/{ja.name}: missing: "
                                f"notebook {path.stem} has no Japanese "
                                "translation (start one from `python -m kit "
                                "build --ja-stale`)"])
            continue
        try:
            blocks = read_translation(ja)
        except ValueError as error:
            out[path] = (None, [f"notebooks/src/{error}"])
            continue
        out[path] = ja_cells(jupytext.read(path).cells, blocks,
                             f"notebooks/src/{ja.name}")
    return out


def code_differences(english, japanese, name):
    """Each code cell of `japanese` that is not `english`'s, rewritten."""
    en = [c.source for c in english.cells if c.cell_type == "code"]
    ja = [(c.get("id"), c.source) for c in japanese.cells
          if c.cell_type == "code"]
    if len(en) != len(ja):
        return [f"{name}: {len(ja)} code cells, the English one has "
                f"{len(en)}"]
    return [f"{name}: code cell {cell_id} differs from the English one "
            "beyond the documented rewrite (setup_notebook(lang=\"ja\"), "
            "the ja extra)" for (cell_id, text), want in zip(ja, en)
            if text != ja_code(want)]


def ja_problems():
    """Translation problems, and committed Japanese code cells that are not
    the English ones (a hand edit): one line each, for `build --check`."""
    found = [p for _, problems in ja_sources().values() for p in problems]
    for folder, ja_folder in ((paths.NOTEBOOKS, JA),
                              (paths.SOLUTIONS, JA_SOLUTIONS)):
        for path in sorted(ja_folder.glob("*.ipynb")):
            pair = _read_both(folder / path.name, path)
            if pair:
                found += code_differences(
                    *pair, "notebooks/"
                    + path.relative_to(paths.NOTEBOOKS).as_posix())
    return found


def _read_both(english, japanese):
    """Both copies of a notebook, or None: the English one is missing, or
    either is damaged (a folder, binary, JSON cut off), which the build
    names on a line of its own (kit.builder.notebooks.damage)."""
    import nbformat
    if not english.exists():
        return None
    try:
        return (nbformat.read(english, as_version=4),
                nbformat.read(japanese, as_version=4))
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        return None  # NotJSONError and UnicodeDecodeError are ValueErrors


def ja_stale():
    """For translators: each English cell to (re)translate, as a block to
    paste into its .ja.md file (the English text in place of Japanese)."""
    import jupytext
    out = []
    for path in sorted(paths.SOURCES.glob("[0-9][0-9]_*.py")):
        ja = translation_path(path)
        try:
            blocks = read_translation(ja) if ja.exists() else []
        except ValueError as error:  # fix the file first: say where
            out.append(f"# notebooks/src/{error}\n")
            continue
        cells = jupytext.read(path).cells
        matched, _ = match_blocks(cells, blocks)
        for i, cell in enumerate(cells):
            if cell.cell_type != "markdown":
                continue
            if i not in matched or matched[i][1]:
                why = "stale" if i in matched else "untranslated"
                out.append(f"# {ja.name} ({why})\n"
                           f"<!-- ja: cell {i} · en "
                           f"{cell_hash(cell.source)} -->\n"
                           f"{cell.source}\n")
    return out
