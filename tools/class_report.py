"""A made-up class's report, as `kit grade --html` writes it: the browser
test looks at it at 1280 px in English and Japanese (tests/test_browser.py,
which copies its screenshots to docs/screenshots/ with KIT_UPDATE_DOCS=1).

Eight students, each a folder of notebooks but one, whose two files sit in
the class folder named alike (ken_01…, ken-03…). Failed verdicts are the
checkers' own, on the catalogued mistakes, in the page's language; a
syntax error and a kernel that died say what `kit grade` says of them.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kit import i18n  # noqa: E402
from kit.checks import EXERCISES  # noqa: E402
from kit.checks.core import evaluate  # noqa: E402
from kit.grading import gradebook  # noqa: E402
from kit.grading.report_text import say  # noqa: E402
from kit.grading.submissions import COURSE  # noqa: E402

NOTEBOOKS = ["01_stock_compute_loss", "03_dpo_compute_loss",
             "05_grpo_end_to_end"]
# student -> {exercise: "passed", "stub", "crash" or a catalogued mistake}
CLASS = {
    "aki": {},
    "ken": {"causal_lm_loss": "not_shifted", "dpo_loss": "published_snippet",
            "dpo_compute_loss": "stub"},
    "mio": {"sequence_logps": "mean_not_sum", "dpo_snippet": "stub",
            "dpo_compute_loss": "stub", "grpo_loss": "no_min"},
    "ren": {"dpo_loss": "crash", "dpo_snippet": "stub",
            "dpo_compute_loss": "stub"},
    "sora": {"group_advantages": "stub", "grpo_loss": "stub"},
    "taro": {"compute_loss": "stub", "grpo_loss": "no_min"},
    "yui": {"causal_lm_loss": "not_shifted"},
    "emi": {"dpo_loss": "published_snippet", "sequence_logps": "stub"},
}
# files that name the student beside the notebook, in the class folder
BY_NAME = {"ken": ["ken_01_stock_compute_loss.ipynb", "ken-03.ipynb"]}
DIED = ("emi", "05_grpo_end_to_end")  # the kernel died in this one


def _row(exercise_id, plan):
    exercise = EXERCISES[exercise_id]
    row = {"id": exercise_id, "stars": exercise.stars, "status": "passed",
           "mistake": None, "message": say("passed"), "attempts": 1,
           "mistakes": []}
    if plan == "stub":
        row.update(status="not attempted", message="")
    elif plan == "crash":
        row.update(status="crashed", message=say(
            "raised_in", error="SyntaxError", where=say("cell", n=9) +
            " (`def dpo_loss(policy_chosen, policy_rejected,:`)",
            why="invalid syntax (line 1)"))
    elif plan:
        mistake = next(m for m in exercise.mistakes if m.id == plan)
        result = evaluate(exercise, mistake.code)
        row.update(status=result.status, mistake=result.mistake,
                   message=result.message, attempts=2,
                   mistakes=[result.mistake])
    return row


def made_up_class(lang):
    """The cards `kit grade --lang LANG` would make for CLASS."""
    previous = i18n.language()
    i18n.set_language(lang)
    try:
        return _cards()
    finally:
        i18n.set_language(previous)


def _cards():
    cards = []
    for student, plans in CLASS.items():
        files = BY_NAME.get(student, [f"{student}/{n}.ipynb"
                                      for n in NOTEBOOKS])
        for notebook, file in zip(NOTEBOOKS, files):
            died = (student, notebook) == DIED
            rows = [_row(i, "stub" if died else plans.get(i))
                    for i in COURSE[notebook]]
            error = None
            if died:
                error = say("dead_kernel", where=say("cell", n=14) +
                            " (`trainer.train()`)")
                for row in rows:
                    row.update(status="crashed", message=error)
            cards.append({
                "submission": file, "notebook": notebook, "error": error,
                "exercises": rows, "total": len(rows),
                "passed": sum(r["status"] == "passed" for r in rows)})
    return sorted(cards, key=lambda card: card["submission"])


def page(lang):
    """The made-up class's HTML page in `lang`."""
    previous = i18n.language()
    i18n.set_language(lang)
    try:
        cards = _cards()
        return gradebook.html_page(cards, gradebook.summarise(cards))
    finally:
        i18n.set_language(previous)


if __name__ == "__main__":
    for lang in i18n.LANGUAGES:
        path = Path(f"class_report_{lang}.html")
        path.write_text(page(lang), encoding="utf-8")
        print(path)
