"""Whose is each submission: `kit grade`'s reports give one row per student.

A student hands in each course notebook once, so the rule that groups a
class is the one that never puts two copies of one notebook in a row:

1. by folder: alice/01_stock_compute_loss.ipynb and alice/03.ipynb are
   alice's (the folder is the student; a file in the class folder itself
   goes by its name, as in 2);
2. by name: in one folder for the class (or a folder per notebook),
   alice_01_stock_compute_loss.ipynb and alice-03.ipynb are alice's (what
   the file's name says beside the notebook's name or number).

The folder rule is tried first; the one that leaves fewer submissions out
wins. A submission left out (two copies of one notebook in its row, or a
name that is only the notebook's) has a row of its own, named by its path.
"""

import re
from pathlib import PurePath

from kit.checks import EXERCISES
from kit.grading.submissions import COURSE

SEPARATORS = " _-.()"


def by_folder(card):
    folder = str(PurePath(card["submission"]).parent)
    return by_name(card) if folder == "." else folder


def by_name(card):
    """'alice' from alice_03_dpo_compute_loss or alice-03, where the card's
    course notebook is 03_dpo_compute_loss; the file name when it names
    no course notebook."""
    stem, notebook = PurePath(card["submission"]).stem, card["notebook"]
    number = notebook.split("_")[0]
    for known in (notebook, number):
        # the number alone only as a number of its own: not bob2003
        found = re.search(rf"(?<![0-9]){re.escape(known)}(?![0-9])", stem)
        if known and found:
            stem = stem[:found.start()] + " " + stem[found.end():]
            break
    return re.sub(r"\s+", " ", stem).strip(SEPARATORS)


def _left_out(cards, rule):
    """Submissions `rule` cannot place: no name, or a notebook twice."""
    seen, out = {}, set()
    for card in cards:
        key = rule(card)
        if not key:
            out.add(card["submission"])
            continue
        other = seen.setdefault((key, card["notebook"]), card["submission"])
        if other != card["submission"]:
            out |= {other, card["submission"]}
    # a row that holds a notebook twice is split whole: it is not one
    # student's, or is one student's twice
    split = {rule(c) for c in cards if c["submission"] in out}
    return {c["submission"] for c in cards if rule(c) in split} | out


def students(cards):
    """{submission: the student it is of}, by the rule that leaves out the
    fewest submissions (see the module's docstring)."""
    rule, left_out = min(((rule, _left_out(cards, rule))
                          for rule in (by_folder, by_name)),
                         key=lambda pair: len(pair[1]))
    return {card["submission"]: card["submission"]
            if card["submission"] in left_out else rule(card)
            for card in cards}


def name_students(cards):
    """Each card gains "student" (the CSV's and the JSON's field)."""
    named = students(cards)
    for card in cards:
        card["student"] = named[card["submission"]]
    return cards


def rows(cards):
    """[(student, their cards in the course's order)], the lowest share
    passed first, then by name."""
    grouped = {}
    course = list(COURSE)
    for card in sorted(name_students(cards), key=lambda card: (
            course.index(card["notebook"]) if card["notebook"] in course
            else len(course), card["submission"])):
        grouped.setdefault(card["student"], []).append(card)

    def share(item):
        name, theirs = item
        total = sum(card["total"] for card in theirs)
        passed = sum(card["passed"] for card in theirs)
        return (passed / total if total else 0, name)
    return sorted(grouped.items(), key=share)


def columns(cards):
    """[(notebook, its exercise ids)] the class was graded on, in the
    course's order (an exercise the course does not know: after them)."""
    course_order = list(EXERCISES)
    seen = {}
    for card in cards:
        for row in card["exercises"]:
            exercise = EXERCISES.get(row["id"])
            notebook = exercise.notebook if exercise else card["notebook"]
            seen.setdefault(notebook, set()).add(row["id"])

    def order(exercise_id):
        return (course_order.index(exercise_id) if exercise_id in
                course_order else len(course_order), exercise_id)
    notebooks = sorted(seen, key=lambda n: min(map(order, seen[n])))
    return [(n, sorted(seen[n], key=order)) for n in notebooks]
