"""`python -m kit grade NOTEBOOK`: run a learner's notebook, print a scorecard.

The notebook runs headless in a fresh kernel, every cell even after an
error. Each `check(...)` call appends its verdict to a file named in
KIT_GRADE_FILE; the exercises themselves are found in the notebook's code,
so one that never got checked still shows up, as "not attempted".

Exit codes: 0 every exercise passed, 1 some did not, 2 the notebook could
not be graded (missing, not a notebook, or over the time limit).
"""

import json
import os
import re
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from kit.checks import EXERCISES

CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([\w.-]+)["']""")


def exercises_in(notebook):
    """Exercise ids in the order the notebook's code cells check them."""
    ids = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            ids += [i for i in CHECK_CALL.findall(cell.source) if i not in ids]
    return ids


def run(path, timeout=600):
    """Execute the notebook; return {exercise id: last recorded status}."""
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        grades = Path(tmp) / "grades.jsonl"
        saved = dict(os.environ)
        os.environ.update(KIT_GRADE_FILE=str(grades), KIT_HEADLESS="1",
                          HF_HUB_OFFLINE=os.environ.get("HF_HUB_OFFLINE", "1"))
        # grade every exercise, stop at none
        os.environ.pop("KIT_STRICT", None)
        try:
            client = NotebookClient(
                notebook, timeout=timeout, allow_errors=True,
                kernel_name="python3",
                resources={"metadata": {"path": str(Path(path).parent)}})
            client.execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        records = [json.loads(line) for line in
                   grades.read_text().splitlines()] if grades.exists() else []
    return notebook, {r["id"]: r["status"] for r in records}


def scorecard(path, timeout=600):
    notebook, statuses = run(path, timeout)
    rows = [{"id": i, "stars": EXERCISES[i].stars if i in EXERCISES else 1,
             "status": statuses.get(i, "not attempted")}
            for i in exercises_in(notebook)]
    passed = sum(row["status"] == "passed" for row in rows)
    return {"notebook": str(path), "exercises": rows, "passed": passed,
            "total": len(rows)}


def main(path, as_json=False, timeout=600):
    try:
        card = scorecard(path, timeout)
    except FileNotFoundError:
        print(f"no such notebook: {path}")
        return 2
    except (nbformat.reader.NotJSONError, nbformat.ValidationError) as error:
        print(f"{path} is not a notebook: {error}")
        return 2
    except (CellTimeoutError, DeadKernelError) as error:
        print(f"could not grade {path}: {type(error).__name__} "
              f"(time limit {timeout}s)")
        return 2
    if as_json:
        print(json.dumps(card, indent=1))
    else:
        marks = {"passed": "✅", "failed": "❌", "not attempted": "⏸ "}
        print(f"Scorecard for {card['notebook']}")
        for row in card["exercises"]:
            print(f"  {marks[row['status']]} {row['id']:<24} "
                  f"{'★' * row['stars']:<4} {row['status']}")
        print(f"  {card['passed']}/{card['total']} passed")
    return 0 if card["passed"] == card["total"] else 1
