"""What `kit grade` reports: a scorecard, a class summary, CSV and HTML.

Everything here reads the cards `kit.grade` makes, one per submission:
{"submission", "notebook", "error", "exercises": [{"id", "stars",
"status", "mistake", "message", "attempts", "mistakes"}], "passed",
"total"}. The summary puts first what the class got wrong most.
"""

import base64
import csv
import io
from collections import Counter
from html import escape
from pathlib import PurePath

MARKS = {"passed": "✅", "failed": "❌", "not attempted": "⏸ ",
         "not graded": "⚠️"}
# the page's marks: plain symbols every font has (emoji may show as boxes)
PAGE_MARKS = {"passed": "✓", "failed": "✗", "not attempted": "–",
              "not graded": "?"}
CSV_COLUMNS = ["submission", "notebook", "exercise", "stars", "status",
               "mistake", "attempts", "message"]


def _stars(stars):
    return "★" * (stars or 0)


def summarise(cards):
    """Per exercise: counts of each status and the named mistakes, worst first.

    A mistake counts once per submission that made it, at any attempt.
    """
    exercises = {}
    for card in cards:
        for row in card["exercises"]:
            line = exercises.setdefault(row["id"], {
                "id": row["id"], "stars": row["stars"], "submissions": 0,
                "passed": 0, "failed": 0, "not attempted": 0,
                "not graded": 0, "mistakes": Counter()})
            line["submissions"] += 1
            line[row["status"]] = line.get(row["status"], 0) + 1
            line["mistakes"].update(row["mistakes"])
    summary = list(exercises.values())
    for line in summary:
        line["pass_rate"] = line["passed"] / line["submissions"]
        line["mistakes"] = line["mistakes"].most_common()
    # what to re-teach first: the lowest pass rate (sort is stable on ties)
    return sorted(summary, key=lambda line: line["pass_rate"])


def summary_line(line):
    """'dpo_loss ★★: 18/30 passed, 9 failed, 3 not attempted; x ×7'."""
    text = (f"{line['id']} {_stars(line['stars'])}: {line['passed']}/"
            f"{line['submissions']} passed, {line['failed']} failed, "
            f"{line['not attempted']} not attempted")
    if line["not graded"]:
        text += f", {line['not graded']} not graded"
    if line["mistakes"]:
        text += "; " + ", ".join(f"{mistake} ×{count}"
                                 for mistake, count in line["mistakes"][:3])
    return text


def scorecard(card):
    """One submission, for the terminal."""
    if card["error"] and not card["exercises"]:
        return f"could not grade {card['submission']}: {card['error']}"
    lines = [f"Scorecard for {card['submission']}"]
    for row in card["exercises"]:
        mistake = f" ({row['mistake']})" if row["mistake"] else ""
        lines.append(f"  {MARKS.get(row['status'], '?')} {row['id']:<24} "
                     f"{_stars(row['stars']):<4} {row['status']}{mistake}")
        if row["status"] == "failed" and row["message"]:
            lines.append(f"       {row['message']}")
    if card["error"]:
        lines.append(f"  could not grade {card['submission']}: "
                     f"{card['error']}")
    else:
        lines.append(f"  {card['passed']}/{card['total']} passed")
    return "\n".join(lines)


def class_summary(cards, summary):
    """Per exercise counts and mistakes, then what could not be graded."""
    graded = [card for card in cards if not card["error"]]
    lines = [f"Graded {len(graded)} of {len(cards)} submissions."]
    lines += ["  " + summary_line(line) for line in summary]
    broken = [card for card in cards if card["error"]]
    if broken:
        lines.append("Could not grade:")
        lines += [f"  {card['submission']}: {card['error']}"
                  for card in broken]
    return "\n".join(lines)


def csv_rows(cards):
    """One row per submission × exercise (one row for an empty submission)."""
    for card in cards:
        common = {"submission": card["submission"],
                  "notebook": card["notebook"]}
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
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(csv_rows(cards))


# ------------------------------------------------------------------- HTML

def pass_rate_chart(summary):
    """A horizontal bar chart of pass rates, as base64 PNG text."""
    from matplotlib.figure import Figure  # no pyplot: safe off the main thread
    figure = Figure(figsize=(7, 0.45 * len(summary) + 1.2), dpi=100)
    axes = figure.subplots()
    names = [f"{line['id']} {_stars(line['stars'])}" for line in summary]
    rates = [100 * line["pass_rate"] for line in summary]
    colours = ["#d9534f" if r < 50 else "#f0ad4e" if r < 80 else "#5cb85c"
               for r in rates]
    axes.barh(names, rates, color=colours)
    axes.invert_yaxis()  # worst on top, as in the tables
    axes.set_xlim(0, 100)
    axes.set_xlabel("passed (% of submissions)")
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
td.not-graded { background: #fcf8e3; }
.muted { color: #777; }
table.students td, td:first-child { white-space: nowrap; }
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


def html_page(cards, summary):
    """One self-contained page: summary, chart, mistakes, students."""
    graded = sum(not card["error"] for card in cards)
    parts = [f"<h1>Class report</h1><p>Graded {graded} of {len(cards)} "
             "submissions. Worst first: re-teach from the top.</p>"]
    parts.append("<h2>Exercises</h2>" + _table(
        ["exercise", "passed", "failed", "not attempted", "not graded",
         "most common mistakes"],
        [[_cell(f"{line['id']} {_stars(line['stars'])}"),
          _cell(f"{line['passed']}/{line['submissions']}"),
          _cell(line["failed"]), _cell(line["not attempted"]),
          _cell(line["not graded"]),
          _cell(", ".join(f"{m} ×{n}" for m, n in line["mistakes"][:3]))]
         for line in summary]))
    if summary:
        parts.append('<img alt="pass rate per exercise" src="data:image/png;'
                     f'base64,{pass_rate_chart(summary)}">')
    mistakes = Counter()
    examples = {}
    for card in cards:
        for row in card["exercises"]:
            for mistake in row["mistakes"]:
                mistakes[row["id"], mistake] += 1
                if row["mistake"] == mistake:
                    examples.setdefault((row["id"], mistake), row["message"])
    parts.append("<h2>Named mistakes</h2>" + (_table(
        ["mistake", "exercise", "submissions", "what the checker said"],
        [[_cell(m), _cell(e), _cell(n),
          _cell(examples.get((e, m), ""), "muted")]
         for (e, m), n in mistakes.most_common()])
        if mistakes else "<p>None named.</p>"))
    ids = [line["id"] for line in summary]
    students = sorted(cards, key=lambda c: (not c["error"], c["passed"],
                                            c["submission"]))
    # alice/03.ipynb, bob/03.ipynb: the folder alone tells them apart
    files = {PurePath(card["submission"]).name for card in cards}
    same_file = files.pop() if len(files) == 1 and len(cards) > 1 else None
    rows = []
    for card in students:
        by_id = {row["id"]: row for row in card["exercises"]}
        name = card["submission"]
        if same_file:
            name = str(PurePath(name).parent)
        cells = [_cell(name), _cell(f"{card['passed']}/{card['total']}"
                                    if by_id else "–")]
        if card["error"] and not by_id:
            cells.append(f'<td colspan="{len(ids)}" class="not-graded">'
                         f"{escape(card['error'])}</td>")
        for exercise_id in ids if by_id else []:
            row = by_id.get(exercise_id)
            if row is None:
                cells.append(_cell(""))
                continue
            text = PAGE_MARKS.get(row["status"], "?") + (
                f" {row['mistake']}" if row["mistake"] else "")
            cells.append(_cell(text, row["status"].replace(" ", "-"),
                               f"{row['attempts']} attempts: "
                               f"{row['message']}"))
        rows.append(cells)
    common = f" (each {same_file})" if same_file else ""
    parts.append(f"<h2>Students{escape(common)}</h2><p class=\"muted\">✓ passed, ✗ failed "
                 "(with the named mistake), – not attempted, ? not graded; "
                 "hover a cell for the checker's message.</p>" + _table(
                     ["submission", "score"] + ids, rows, "students"))
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            f"<title>Class report</title><style>{STYLE}</style></head>"
            f"<body>{''.join(parts)}</body></html>")


def write_html(cards, summary, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write(html_page(cards, summary))
