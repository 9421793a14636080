"""What `kit grade` reports: a scorecard, a class summary, CSV and HTML.

Everything here reads the cards `kit.grading.grade` makes, one per submission:
{"submission", "notebook", "error", "exercises": [{"id", "stars",
"status", "mistake", "message", "attempts", "mistakes"}], "passed",
"total"}. The summary puts first what the class got wrong most.

Every report counts the same way: a submission is "graded" when each of
its exercises has a verdict; one whose run stopped early (a dead kernel, a
time limit) keeps the verdicts it got, shows its error with them, and its
other exercises are "crashed"; one that could not be read at all is "not
graded". The page has a row per student, the CSV and JSON a "student"
field (kit.grading.students says whose each file is).
Files are written whole or not at all (a temporary file, then a rename).
"""

import base64
import csv
import io
import os
import tempfile
import unicodedata
from collections import Counter
from html import escape
from pathlib import Path, PurePath

from kit import i18n
from kit.grading import students
from kit.grading.report_text import chart_font, say, status

# every status a row may have, in the order the reports show them
STATUSES = ("passed", "failed", "crashed", "not attempted", "not graded")
MARKS = {"passed": "✅", "failed": "❌", "crashed": "💥",
         "not attempted": "⏸ ", "not graded": "⚠️"}
# the page's marks: plain symbols every font has (emoji may show as boxes)
PAGE_MARKS = {"passed": "✓", "failed": "✗", "crashed": "!",
              "not attempted": "–", "not graded": "?"}
# the page's cell classes: a fixed word per status, whatever a file says
CSS = {"passed": "passed", "failed": "failed", "crashed": "crashed",
       "not attempted": "not-attempted", "not graded": "not-graded"}
# the exercises table: failures first, what it is sorted by
COLUMNS = ("failed", "passed", "crashed", "not attempted", "not graded")
CSV_COLUMNS = ["student", "submission", "notebook", "exercise", "stars",
               "status", "mistake", "attempts", "message", "error"]


# ------------------------------------------------- what a submission wrote

def inert(text):
    """`text` with nothing a terminal obeys: control, bidi and line-break
    characters written out as escapes (\\x1b, \\n, \\u202e). A file name
    or a message comes from the submission: it must not clear the screen
    or print a line of its own."""
    return "".join(
        char if char.isprintable() or unicodedata.category(char) == "Zs"
        else char.encode("unicode_escape").decode("ascii") for char in text)


def inert_card(card):
    """The card with every text the submission chose made inert."""
    card["submission"] = inert(card["submission"])
    card["error"] = card["error"] and inert(card["error"])
    for row in card["exercises"]:
        row["message"] = inert(row["message"])
    return card


def spreadsheet_cell(value):
    """A CSV cell a spreadsheet shows and does not compute: one starting
    with = + - @ (or a tab or return) gets a leading ' (OWASP's rule)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t",
                                               "\r"):
        return "'" + value
    return value


def _stars(stars):
    return "★" * (stars or 0)


def complete(card):
    """Graded in full: every exercise has a verdict."""
    return bool(card["exercises"]) and all(
        row["status"] != "not graded" for row in card["exercises"])


def attempts(n):
    return say("attempt" if n == 1 else "attempts", n=n)


def headline(cards, total=0):
    """'Graded 30 of 31 submissions.'; while the run goes on (`total`, the
    submissions of the run, more than the cards), 'In progress: ...'; after
    an interrupt, how many it left."""
    done = sum(map(complete, cards))
    if len(cards) < total:
        return say("in_progress", graded=len(cards), total=total)
    left = sum(bool(card.get("interrupted")) for card in cards)
    if left:
        return say("headline_interrupted", complete=done, total=len(cards),
                   left=left)
    return say("headline", complete=done, total=len(cards))


def write_whole(path, text, newline=None):
    """Write `text` to `path` through a temporary file and a rename, so a
    reader (or a kill) never finds half a report."""
    handle, temporary = tempfile.mkstemp(dir=Path(path).parent or ".",
                                         prefix=".kit-grade-", suffix=".tmp")
    try:
        with open(handle, "w", encoding="utf-8", newline=newline) as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def summarise(cards):
    """Per exercise: counts of each status and the named mistakes, the most
    failed first.

    A mistake counts once per submission that made it, at any attempt.
    """
    exercises = {}
    for card in cards:
        for row in card["exercises"]:
            line = exercises.setdefault(row["id"], {
                "id": row["id"], "stars": row["stars"], "submissions": 0,
                **dict.fromkeys(STATUSES, 0), "mistakes": Counter()})
            line["submissions"] += 1
            line[row["status"]] = line.get(row["status"], 0) + 1
            line["mistakes"].update(row["mistakes"])
    summary = list(exercises.values())
    for line in summary:
        line["pass_rate"] = line["passed"] / line["submissions"]
        line["fail_rate"] = line["failed"] / line["submissions"]
        line["mistakes"] = line["mistakes"].most_common()
    # what to re-teach first: the most failures (an answer that ran and was
    # wrong), not stubs left or crashes; at a tie the lower pass rate
    return sorted(summary, key=lambda line: (-line["fail_rate"],
                                             line["pass_rate"]))


def summary_line(line):
    """'dpo_loss ★★: 18/30 passed, 9 failed, 3 not attempted; x ×7'."""
    text = f"{line['id']} {_stars(line['stars'])}: " + say(
        "summary_counts", passed=line["passed"],
        submissions=line["submissions"], failed=line["failed"],
        not_attempted=line["not attempted"])
    if line["crashed"]:
        text += say("summary_crashed", n=line["crashed"])
    if line["not graded"]:
        text += say("summary_not_graded", n=line["not graded"])
    if line["mistakes"]:
        text += "; " + ", ".join(f"{mistake} ×{count}"
                                 for mistake, count in line["mistakes"][:3])
    return text


def scorecard(card):
    """One submission, for the terminal."""
    if card["error"] and not card["exercises"]:
        return say("could_not_grade", submission=card["submission"],
                   error=card["error"])
    lines = [say("scorecard", submission=card["submission"])]
    for row in card["exercises"]:
        mistake = f" ({row['mistake']})" if row["mistake"] else ""
        lines.append(f"  {MARKS.get(row['status'], '?')} {row['id']:<24} "
                     f"{_stars(row['stars']):<4} {status(row['status'])}"
                     f"{mistake}")
        if row["status"] in ("failed", "crashed") and row["message"]:
            lines.append(f"       {row['message']}")
    if card["error"]:
        lines.append("  " + say("could_not_grade",
                                submission=card["submission"],
                                error=card["error"]))
    else:
        lines.append("  " + say("score", passed=card["passed"],
                                total=card["total"]))
    return "\n".join(lines)


def class_summary(cards, summary):
    """Per exercise counts and mistakes, then every error, and what they
    mean for the exit code (README: 1 some submission stopped with an
    error, 2 none was graded)."""
    lines = [headline(cards)]
    lines += ["  " + summary_line(line) for line in summary]
    broken = [card for card in cards if card["error"]]
    if broken:
        lines.append(say("errors"))
        lines += [f"  {card['submission']}: {card['error']}"
                  for card in broken]
        if not any(card.get("interrupted") for card in cards):
            lines.append(say("exit_1" if len(broken) < len(cards)
                             else "exit_2", n=len(broken), total=len(cards)))
    return "\n".join(lines)


def csv_rows(cards):
    """One row per submission × exercise (one row for an empty submission)."""
    for card in students.name_students(cards):
        common = {"student": card["student"],
                  "submission": card["submission"],
                  "notebook": card["notebook"], "error": card["error"] or ""}
        for row in card["exercises"]:
            yield {**common, "exercise": row["id"],
                   "stars": row["stars"] or "", "status": row["status"],
                   "mistake": row["mistake"] or "",
                   "attempts": row["attempts"], "message": row["message"]}
        if not card["exercises"]:
            yield {**common, "exercise": "", "stars": "",
                   "status": "not graded", "mistake": "", "attempts": 0,
                   "message": card["error"] or ""}


def write_csv(cards, summary, path):
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows({key: spreadsheet_cell(value)
                      for key, value in row.items()} for row in csv_rows(cards))
    write_whole(path, text.getvalue(), newline="")


# ------------------------------------------------------------------- HTML

def pass_rate_chart(summary):
    """A horizontal bar chart of pass rates, as base64 PNG text."""
    from matplotlib.figure import Figure  # no pyplot: safe off the main thread
    chart_font()
    figure = Figure(figsize=(7, 0.45 * len(summary) + 1.2), dpi=100)
    axes = figure.subplots()
    names = [f"{line['id']} {_stars(line['stars'])}" for line in summary]
    rates = [100 * line["pass_rate"] for line in summary]
    colours = ["#d9534f" if r < 50 else "#f0ad4e" if r < 80 else "#5cb85c"
               for r in rates]
    axes.barh(range(len(names)), rates, color=colours)
    # plain text: a `$` in a label must not start matplotlib's mathtext
    axes.set_yticks(range(len(names)), names, parse_math=False)
    axes.invert_yaxis()  # worst on top, as in the tables
    axes.set_xlim(0, 100)
    axes.set_xlabel(say("chart_xlabel"))
    for y, (rate, line) in enumerate(zip(rates, summary)):
        axes.text(min(rate + 1, 88), y, f"{line['passed']}/"
                  f"{line['submissions']}", va="center")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
th { background: #f4f4f4; }
td.passed { background: #dff0d8; } td.failed { background: #f2dede; }
td.not-attempted { background: #f7f7f7; }
td.crashed { background: #f9dcc4; }
td.not-graded, td.error { background: #fcf8e3; }
.muted { color: #777; }
td:first-child { white-space: nowrap; }
table.students tr.said td { white-space: normal; color: #444;
  font-size: 0.9em; border-top: none; padding-bottom: 0.6em; }
table.students th { vertical-align: bottom; }
th { white-space: nowrap; } th.id { white-space: normal; }
"""


def _table(header, rows, css=None):
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(cells) + "</tr>" for cells in rows)
    attributes = f' class="{css}"' if css else ""
    return f"<table{attributes}><tr>{head}</tr>{body}</table>"


def _cell(text, css=None, title=None):
    attributes = f' class="{css}"' if css else ""
    attributes += f' title="{escape(title)}"' if title else ""
    return f"<td{attributes}>{escape(str(text))}</td>"


def _catalogue(exercise_id, mistake_id):
    """The catalogue's own words for a mistake, or for a named property
    ("property:<id>"): 'title — why'."""
    from kit.checks import EXERCISES
    exercise = EXERCISES.get(exercise_id)
    named = exercise.mistakes + exercise.properties if exercise else []
    for mistake in named:
        if getattr(mistake, "key", mistake.id) == mistake_id:
            return f"{mistake.title} — {mistake.why}"
    return ""


def _chart(summary):
    try:
        return (f'<img alt="{escape(say("chart_alt"))}" '
                f'src="data:image/png;base64,{pass_rate_chart(summary)}">')
    except Exception as error:  # the numbers matter more than the picture
        return (f'<p class="muted">'
                f'{escape(say("no_chart", error=error))}</p>')


def _mistakes_table(cards):
    counts = Counter()
    for card in cards:
        for row in card["exercises"]:
            for mistake in row["mistakes"]:
                counts[row["id"], mistake] += 1
    if not counts:
        return f"<p>{escape(say('none_named'))}</p>"
    return _table([say("mistake"), say("exercise"), say("submissions"),
                   say("what_it_is")],
                  [[_cell(m), _cell(e), _cell(n),
                    _cell(_catalogue(e, m), "muted")]
                   for (e, m), n in counts.most_common()])


def _breakable(text):
    """Escaped, with a line break allowed after each _ and : (ids are long
    words: dpo_compute_loss, property:labelled_first_position)."""
    return escape(str(text)).replace("_", "_<wbr>").replace(":", ":<wbr>")


def _students_table(cards):
    """One row per student (kit.grading.students), a column per exercise
    under its notebook, and under each row what the checkers said."""
    notebooks = students.columns(cards)
    ids = [i for _, theirs in notebooks for i in theirs]
    head = ("<tr>" + "".join(f'<th rowspan="2">{escape(say(word))}</th>'
                             for word in ("student", "score_column"))
            + "".join(f'<th class="id" colspan="{len(theirs)}">'
                      f"{_breakable(notebook)}</th>"
                      for notebook, theirs in notebooks)
            + "</tr><tr>" + "".join(f'<th class="id">{_breakable(i)}</th>'
                                    for i in ids)
            + "</tr>")
    body = []
    for name, theirs in students.rows(cards):
        by_id = {row["id"]: row for card in theirs
                 for row in card["exercises"]}
        passed = sum(card["passed"] for card in theirs)
        total = sum(card["total"] for card in theirs)
        files = ", ".join(card["submission"] for card in theirs)
        cells = [f'<td title="{escape(files)}">{escape(name)}</td>',
                 _cell(f"{passed}/{total}" if total else "–")]
        for exercise_id in ids:
            row = by_id.get(exercise_id)
            if row is None:
                cells.append(_cell(""))
                continue
            text = _breakable(PAGE_MARKS.get(row["status"], "?") + (
                f" {row['mistake']}" if row["mistake"] else ""))
            title = escape(f"{attempts(row['attempts'])}: {row['message']}")
            cells.append(f'<td class="{CSS.get(row["status"], "not-graded")}'
                         f'" title="{title}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
        said = _said(theirs)
        if said:
            body.append(f'<tr class="said"><td colspan="{len(ids) + 2}">'
                        f"{said}</td></tr>")
    return f'<table class="students">{head}{"".join(body)}</table>'


def _said(cards):
    """What the checkers said of a student's failed and crashed exercises,
    and why a file stopped, one line each: on the page, not in a tooltip."""
    lines = []
    # why an exercise is "not attempted" when it is not a stub left as it
    # was: the grader's, not a checker's (its check(...) deleted)
    reasons = {say("no_check_for_it"), say("check_never_ran")}
    for card in cards:
        for row in card["exercises"]:
            if (row["status"] in ("failed", "crashed") or row[
                    "status"] == "not attempted" and row["message"] in
                    reasons) and row["message"] \
                    and row["message"] != card["error"]:
                lines.append(f"{PAGE_MARKS[row['status']]} "
                             f"<b>{escape(row['id'])}</b>: "
                             f"{escape(row['message'])}")
        if card["error"]:
            lines.append(f"<b>{escape(PurePath(card['submission']).name)}"
                         f"</b>: {escape(card['error'])}")
    return "".join(f"<div>{line}</div>" for line in lines)


def html_page(cards, summary, isolation="", total=0):
    """One self-contained page: summary, chart, mistakes, students; under
    the title, how the kernels were kept apart (`isolation`); `total`: the
    run's submissions, more than the cards while it goes on."""
    parts = [f"<h1>{escape(say('title'))}</h1><p>"
             f"{escape(headline(cards, total))}"
             f" {escape(say('worst_first'))}</p>"]
    if isolation:
        parts.append(f'<p class="muted">{escape(isolation)}</p>')
    parts.append(f"<h2>{escape(say('exercises'))}</h2>" + _table(
        [say("exercise")] + [status(word) for word in COLUMNS]
        + [say("most_common")],
        [[_cell(f"{line['id']} {_stars(line['stars'])}"),
          _cell(line["failed"])]
         + [_cell(line[word]) for word in COLUMNS[1:]] + [
          _cell(", ".join(f"{m} ×{n}" for m, n in line["mistakes"][:3]))]
         for line in summary]))
    if summary:
        parts.append(_chart(summary))
    parts.append(f"<h2>{escape(say('named_mistakes'))}</h2>"
                 + _mistakes_table(cards))
    legend = escape(say("legend"), quote=False)
    parts.append(f"<h2>{escape(say('students'))}</h2>"
                 f"<p class=\"muted\">{legend}</p>" + _students_table(cards))
    # lang: a browser picks the Japanese forms of the CJK characters
    return (f"<!DOCTYPE html><html lang=\"{i18n.language()}\"><head>"
            "<meta charset=\"utf-8\">"
            f"<title>{escape(say('title'))}</title><style>{STYLE}</style>"
            "</head>"
            f"<body>{''.join(parts)}</body></html>")


def write_html(cards, summary, path, isolation="", total=0):
    write_whole(path, html_page(cards, summary, isolation, total))
