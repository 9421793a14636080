"""What each student is handed, and what the LMS takes: `kit grade
--feedback DIR` and `--gradebook FILE`.

The class page (kit.grading.gradebook) is the whole class on one page, so
it stays with the instructor. Here every student gets a page of their own
(HTML, and the same in Markdown for an LMS comment box): per exercise the
verdict, the checker's words, the named mistake or property, hint 1 and
the cell to look at again; what could not be graded and why; the score.
It is written from the same cards as the class page, in the student's
language (their notebooks' own, unless --lang or KIT_LANG chose one), and
holds nothing of another student, no path of the grader's machine and no
grader internals (a failure of the grader is "ask your instructor").

The gradebook is one row per student, one column per notebook (points:
the stars of the exercises passed; the maximum in the header) and a
total, for Canvas, Moodle or a spreadsheet (README, "kit grade").
"""

import csv
import io
import re
from html import escape
from pathlib import Path, PurePath

from kit import i18n
from kit.checks import EXERCISES
from kit.grading import gradebook, students
from kit.grading.report_text import say, status
from kit.grading.submissions import (CHECK_CALL, COURSE, code_cell,
                                     not_a_plain_file, notebook_language,
                                     read_notebook)

# what the student reads, beside the code that says it (kit.i18n's shape)
WORDS = {"en": {
    "title": "Feedback for {student}",
    "score": "Score: {passed} of {total} exercises passed, {points} of "
             "{most} ★.",
    "notebook": "Notebook {notebook}",
    "checker_said": "The checker said",
    "mistake": "Named mistake",
    "property": "What your answer misses",
    "hint": "Hint 1",
    "look_at": "Look again at",
    "no_check_cell": "its check(...) cell is not in your notebook",
    "not_graded": "What could not be graded",
    "grader_failed": "the grader could not run this notebook; your "
                     "instructor has the details",
    "label": "{label}: {text}",
    "interrupted": "the grading run was stopped before this notebook was "
                   "finished: it will be graded again",
    # the gradebook's header: English in every run, the words an LMS's
    # column mapping is set up with
    "student": "student",
    "out_of": "{name} (max {most})",
    "total": "total",
    "note": "not graded",
}, "ja": {
    "title": "{student} さんへのフィードバック",
    "score": "得点：{total} 問の演習のうち {passed} 問に合格、★ {most} 個の"
             "うち {points} 個。",
    "notebook": "ノートブック {notebook}",
    "checker_said": "チェッカーの言葉",
    "mistake": "名前の付いた間違い",
    "property": "答えが満たしていない性質",
    "hint": "ヒント 1",
    "look_at": "もう一度見る場所",
    "no_check_cell": "この演習の check(...) のセルがノートブックにありません",
    "not_graded": "採点できなかったもの",
    "grader_failed": "採点の仕組みがこのノートブックを実行できませんでした。"
                     "詳しいことは先生が知っています",
    "label": "{label}：{text}",
    "interrupted": "このノートブックの採点は途中で止められました。もう一度"
                   "採点されます",
}}
# in each page's head: which command wrote it
MARK = "kit grade --feedback"
# an absolute path (POSIX or Windows): the grader's machine, not the
# student's business; the last part, the file's own name, is kept
ABSOLUTE_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?(?:[\\/][\w.~+@-]+){2,}")


def _say(key, **fields):
    return i18n.text(WORDS, key, **fields)


def _scrubbed(text):
    return ABSOLUTE_PATH.sub(lambda m: re.split(r"[\\/]", m.group())[-1],
                             text or "")


def safe_names(names):
    """{student: a file name stem}: no separator, no leading dot, nothing a
    shell or a file system minds, each one unique."""
    stems, taken = {}, set()
    for name in names:
        stem = re.sub(r"[^\w-]+", "_", name).strip("._-")[:80] or "student"
        unique, n = stem, 1
        while unique.lower() in taken:
            n += 1
            unique = f"{stem}-{n}"
        taken.add(unique.lower())
        stems[name] = unique
    return stems


# ----------------------------------------------- what one exercise says

class Verdict(str):
    """The label of an exercise's verdict line: its status's class
    (gradebook.CSS), for the page's colour."""


def _where(notebook, exercise_id):
    """The cell a learner finds again: the heading above the exercise's
    check(...) cell, and that cell as JupyterLab counts it."""
    heading = ""
    for number, cell in enumerate(notebook.cells, 1):
        if cell.cell_type == "markdown" and cell.source.lstrip()[:1] == "#":
            heading = cell.source.strip().splitlines()[0].lstrip("# ")
        if cell.cell_type == "code" and exercise_id in CHECK_CALL.findall(
                cell.source):
            where = code_cell(notebook, number)
            return f"{heading} — {where}" if heading else where
    return _say("no_check_cell")


def _named(exercise_id, mistake_id):
    """(label, 'title — why', hint 1) of a named mistake or property; the
    first hint of the ladder when none is named."""
    exercise = EXERCISES.get(exercise_id)
    if exercise is None:
        return None, "", ""
    for mistake in exercise.mistakes:
        if mistake.id == mistake_id:
            return "mistake", f"{mistake.title} — {mistake.why}", mistake.hint
    hints = exercise.hints
    for found in exercise.properties:
        if found.key == mistake_id:
            rung = min(max(found.rung or 1, 1), len(hints))
            return ("property", f"{found.title} — {found.why}",
                    hints[rung - 1])
    return None, "", hints[0] if hints else ""


def exercise_lines(row, notebook, run_language):
    """[(label, text)] for one exercise of a student's card, its verdict
    first."""
    mark = gradebook.PAGE_MARKS.get(row["status"], "?")
    stars = "★" * (row["stars"] or 0)
    lines = [(Verdict(gradebook.CSS.get(row["status"], "not-graded")),
              f"{mark} {row['id']} {stars}: {status(row['status'])}")]
    # the checker spoke the run's language: another's words stay out
    if row["message"] and i18n.language() == run_language \
            and row["status"] not in ("passed", "not graded"):
        lines.append((_say("checker_said"), _scrubbed(row["message"])))
    if row["status"] in ("passed", "not graded"):
        return lines
    kind, named, hint = _named(row["id"], row["mistake"])
    if kind and row["mistake"]:  # its words once, if the checker said them
        said = any(named in text for _, text in lines[1:])
        lines.append((_say(kind), row["mistake"] if said
                      else f"{row['mistake']}: {named}"))
    if hint:
        lines.append((_say("hint"), hint))
    if notebook is not None:
        lines.append((_say("look_at"), _where(notebook, row["id"])))
    return lines


def _why_not_graded(card, run_language):
    """Why a file's run stopped, as the student may read it."""
    if card.get("interrupted"):
        return _say("interrupted")
    error = card["error"]
    if error.startswith(say("grader_failed", why="")) \
            or i18n.language() != run_language:
        return _say("grader_failed")
    return _scrubbed(error)


def points(cards):
    """(stars of the exercises passed, stars of all of them)."""
    rows = [row for card in cards for row in card["exercises"]]
    return (sum(row["stars"] or 0 for row in rows
                if row["status"] == "passed"),
            sum(row["stars"] or 0 for row in rows))


# ------------------------------------------------------ one student's page

def student_parts(name, cards, sources, run_language):
    """[(heading, [(label, text)])] for one student: a notebook each,
    then what could not be graded."""
    parts, stopped = [], []
    for card in cards:
        notebook = _read(sources.get(card["submission"]))
        lines = [line for row in card["exercises"]
                 for line in exercise_lines(row, notebook, run_language)]
        parts.append((_say("notebook", notebook=card["notebook"]), lines))
        if card["error"]:
            stopped.append((PurePath(card["submission"]).name,
                            _why_not_graded(card, run_language)))
    if stopped:
        parts.append((_say("not_graded"), stopped))
    return parts


def _read(path):
    """The submission as the student wrote it, or None (a link, a FIFO,
    not a notebook: its card says why)."""
    try:
        return None if path is None or not_a_plain_file(path) \
            else read_notebook(path)
    except Exception:
        return None


def _score(cards):
    earned, most = points(cards)
    return _say("score", passed=sum(card["passed"] for card in cards),
                total=sum(card["total"] for card in cards), points=earned,
                most=most)


PAGE_STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 auto; padding: 1em;
  max-width: 48em; color: #222; line-height: 1.45; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; }
h1, h2, p, dd, dt { overflow-wrap: anywhere; }
section { border-left: 4px solid #ccc; padding-left: 0.8em; }
p.row { font-weight: 600; margin: 1em 0 0.2em; }
p.passed { color: #2b6b2b; } p.failed { color: #a32a26; }
p.crashed { color: #a35a00; } p.not-attempted, p.not-graded { color: #666; }
dl { margin: 0 0 0 0.5em; } dt { color: #555; font-size: 0.9em; }
dd { margin: 0 0 0.4em 0.8em; white-space: pre-wrap; }
"""


def html_page(name, parts, score):
    body = [f"<h1>{escape(_say('title', student=name))}</h1>",
            f"<p>{escape(score)}</p>"]
    for heading, lines in parts:
        items = []
        for label, text in lines:
            if isinstance(label, Verdict):
                items.append(f'<p class="row {label}">{escape(text)}</p>')
            else:
                items.append(f"<dl><dt>{escape(label)}</dt>"
                             f"<dd>{escape(text)}</dd></dl>")
        body.append(f"<section><h2>{escape(heading)}</h2>"
                    f"{''.join(items)}</section>")
    return (f'<!DOCTYPE html><html lang="{i18n.language()}"><head>'
            '<meta charset="utf-8"><meta name="viewport" '
            'content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="{MARK}">'
            f"<title>{escape(_say('title', student=name))}</title>"
            f"<style>{PAGE_STYLE}</style></head><body>{''.join(body)}"
            "</body></html>\n")


def _md(text):
    """Text an LMS's Markdown shows as written (no HTML, no link, no
    emphasis), and a plain-text comment box nearly so: a backslash before
    each character that would start markup; `_` inside a word is left."""
    text = re.sub(r"([\\`*\[\]<>&|~]|(?<!\w)_|_(?!\w))", r"\\\1",
                  " ".join(text.split()))
    return text


def markdown_page(name, parts, score):
    lines = [f"# {_md(_say('title', student=name))}",
             "", _md(score)]
    for heading, items in parts:
        lines += ["", f"## {_md(heading)}", ""]
        for label, text in items:
            # an exercise's verdict opens a paragraph; its lines, a list
            lines += (["", f"**{_md(text)}**", ""]
                      if isinstance(label, Verdict)
                      else ["- " + _say("label", label=_md(label),
                                        text=_md(text))])
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)) + "\n"


def _student_language(cards, sources, chosen):
    if chosen:
        return chosen
    found = {notebook_language(sources[card["submission"]])
             for card in cards if card["submission"] in sources}
    return found.pop() if len(found) == 1 else "en"


def write_feedback(cards, folder, sources, chosen=None):
    """One HTML and one Markdown file per student in `folder`; `sources`:
    {submission: its path}; `chosen`: the language --lang or KIT_LANG
    chose, else each student's notebooks' own. Returns the files."""
    folder, run_language, written = Path(folder), i18n.language(), []
    rows = students.rows(cards)
    stems = safe_names(name for name, _ in rows)
    try:
        for name, theirs in rows:
            i18n.set_language(_student_language(theirs, sources, chosen))
            parts = student_parts(name, theirs, sources, run_language)
            score = _score(theirs)
            for suffix, page in ((".html", html_page),
                                 (".md", markdown_page)):
                path = folder / (stems[name] + suffix)
                gradebook.write_whole(path, page(name, parts, score))
                written.append(path)
    finally:
        i18n.set_language(run_language)
    return written


# ------------------------------------------------------------ the gradebook

def gradebook_rows(cards):
    """The header, then [student, points per notebook..., total, the
    notebooks not graded in full]."""
    notebooks = [notebook for notebook, _ in students.columns(cards)]
    most = {n: sum(EXERCISES[i].stars for i in COURSE.get(n, []))
            for n in notebooks}
    header = ([_say("student")] + [_say("out_of", name=n, most=most[n])
                                   for n in notebooks]
              + [_say("out_of", name=_say("total"),
                      most=sum(most.values())), _say("note")])
    table = [header]
    for name, theirs in sorted(students.rows(cards)):
        by_notebook = {n: [c for c in theirs if c["notebook"] == n]
                       for n in notebooks}
        earned = [points(by_notebook[n])[0] for n in notebooks]
        unfinished = [c["notebook"] for c in theirs
                      if not gradebook.complete(c)]
        table.append([name] + earned + [sum(earned),
                                        " ".join(unfinished)])
    return table


def write_gradebook(cards, path):
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerows([gradebook.spreadsheet_cell(value) for value in row]
                     for row in gradebook_rows(cards))
    gradebook.write_whole(path, text.getvalue(), newline="")


def wrote_gradebook(path):
    """An existing file that is a gradebook of ours (a rerun rewrites it)."""
    try:
        with open(path, encoding="utf-8") as file:
            header = next(csv.reader([file.readline()]), [])
    except (OSError, UnicodeDecodeError):
        return False
    return header[:1] == ["student"] and header[-1:] == ["not graded"]
