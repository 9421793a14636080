"""What `check()` recorded in a submission's kernel, read back by `kit grade`
as one row per exercise of its notebook.

Each check(...) call appends one JSON line (kit.checks.Result.record(): id,
status, mistake, message) to the submission's grade file. The file is the
learner's to write, so nothing in it is trusted: the grader reads it after
each cell, and `from_check_cells` keeps a line on exercise X only from a
cell whose code calls check("X", ...); `records` keeps only well-formed
verdicts on the notebook's own exercises, `exercise_rows` turns them into
the report's rows (marking the lines it ignored), and
`raised_before_checks` says which exercise a cell's error stopped before
its check ran.
"""

import json
from collections import Counter

from kit.checks import EXERCISES
from kit.grading.report_text import say
from kit.grading.submissions import CHECK_CALL, code_cell

STATUSES = {"passed", "failed", "not attempted"}  # what check() records
MESSAGE_LIMIT = 500  # characters of a checker's message kept


def records(lines, ids):
    """The grade file's verdicts on exercises in `ids`: forged, mangled or
    foreign lines are skipped, and unknown mistake ids dropped (a named
    property, "property:<id>", is known like a catalogued mistake)."""
    kept = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not (isinstance(record, dict) and record.get("id") in ids
                and record.get("status") in STATUSES):
            continue
        exercise = EXERCISES[record["id"]]  # a property counts as a mistake
        known = ({m.id for m in exercise.mistakes}
                 | {p.key for p in exercise.properties})
        message = record.get("message")
        kept.append({
            "id": record["id"], "status": record["status"],
            "mistake": record.get("mistake") if isinstance(
                record.get("mistake"), str) and record["mistake"] in known
            else None,
            "message": (message if isinstance(message, str)
                        else "")[:MESSAGE_LIMIT]})
    return kept


def from_check_cells(cell_lines, notebook):
    """The grade file's lines check() may have written, and {exercise id:
    [the cells that wrote the others]}.

    `cell_lines`: (number from 1 of the cell that was running as the line
    was written, 0 before any; the line). check() writes one line a call,
    while its cell runs. So a line on exercise X counts only from a cell
    whose code calls check("X", ...), and only while that cell wrote no
    more lines on X than it has such calls: one more means code of the
    learner's wrote one too, and that cell's lines on X all go. What this
    cannot catch is code in the check's own cell, or code that replaces
    the kit's check, in the same kernel (README says so)."""
    by_cell = {}
    for cell, line in cell_lines:
        by_cell.setdefault(cell, []).append(line)
    kept, outside = [], {}
    for cell, lines in sorted(by_cell.items()):
        source = (notebook.cells[cell - 1].source
                  if 0 < cell <= len(notebook.cells)
                  and notebook.cells[cell - 1].cell_type == "code" else "")
        calls = Counter(CHECK_CALL.findall(source))
        written = Counter(_id_of(line) for line in lines)
        for line in lines:
            exercise_id = _id_of(line)
            if written[exercise_id] <= calls[exercise_id]:
                kept.append(line)
            elif exercise_id is not None and cell not in outside.get(
                    exercise_id, []):
                outside.setdefault(exercise_id, []).append(cell)
    return kept, outside


def _id_of(line):
    """The exercise id a grade line names, or None."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    exercise_id = record.get("id") if isinstance(record, dict) else None
    return exercise_id if isinstance(exercise_id, str) else None


def exercise_rows(ids, in_code, verdicts, error, crashed=None,
                   raised=None, outside=None, notebook=None):
    """One row per exercise of `ids`, from `verdicts`: the grade records
    check() wrote (kit.checks.Result.record(): id, status, mistake,
    message), cleaned by records(); the last attempt gives the verdict.

    An exercise with no verdict, or still "not attempted", whose cells
    raised (`raised`: exercise id -> the line saying so) is "crashed", as
    is one the run never reached because it stopped (`crashed`: why);
    `error`: why nothing could be graded. `outside`: exercise id -> the
    cells that wrote lines on it outside its check (from_check_cells): the
    row says they were ignored, and where (in `notebook`).
    """
    raised, outside = raised or {}, outside or {}
    attempts = {}
    for record in verdicts:
        attempts.setdefault(record["id"], []).append(record)
    rows = []
    for exercise_id in ids:
        tries = attempts.get(exercise_id, [])
        last = tries[-1] if tries else {}
        if tries and not (last["status"] == "not attempted"
                          and exercise_id in raised):
            status, message = last["status"], last["message"]
        elif exercise_id in raised:
            status, message = "crashed", raised[exercise_id]
        elif crashed:
            status, message = "crashed", crashed
        elif error:
            status, message = "not graded", error
        elif exercise_id in in_code:
            status = "not attempted"
            message = say("check_never_ran")
        else:
            status = "not attempted"
            message = say("no_check_for_it")
        if outside.get(exercise_id):
            cells = outside[exercise_id]
            message += say("ignored_lines", where=", ".join(
                code_cell(notebook, n) for n in cells[:3]))
        rows.append({
            "id": exercise_id, "stars": EXERCISES[exercise_id].stars,
            "status": status, "mistake": last.get("mistake"),
            "message": message, "attempts": len(tries),
            "ignored": len(outside.get(exercise_id, [])),
            # every named mistake made on the way, for the class summary
            "mistakes": list(dict.fromkeys(
                t["mistake"] for t in tries if t["mistake"]))})
    return rows


def raised_before_checks(notebook, raised):
    """{exercise id: "SyntaxError in cell 7 (`def f(...`): ..."}: the first
    error raised in the cells from after the previous exercise's check up
    to this exercise's own check cell."""
    found, start = {}, 0
    for number, cell in enumerate(notebook.cells, 1):
        checked = (CHECK_CALL.findall(cell.source)
                   if cell.cell_type == "code" else [])
        for exercise_id in checked:
            errors = [n for n in raised if start < n <= number]
            if errors and exercise_id not in found:
                first = min(errors)
                where = code_cell(notebook, first)
                name, why = raised[first]
                found[exercise_id] = say("raised_in", error=name,
                                         where=where, why=why)
        if checked:
            start = number
    return found
