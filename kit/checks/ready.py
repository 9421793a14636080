"""`needs(...)`: a cell that runs the learner's code says what is missing
before it runs, instead of printing numbers its prose contradicts.

Notebook 05 trains GRPO with the learner's `group_advantages` and
`grpo_loss`. Before they pass, the run cannot learn, yet the cell after it
printed `0.517 -> 0.517` right above prose saying accuracy climbs (issue
66). A cell that opens with `needs("group_advantages", "grpo_loss")` stops
there with one line naming each exercise still to pass, by its heading.
"""

from kit.checks.core import EXERCISES, heading
from kit.checks.messages import MESSAGES
from kit.i18n import text
from kit.runtime import COPY


class ExercisesFirst(NotImplementedError):
    """Raised by needs(): a NotImplementedError, so a notebook shows its
    one line (`says`) and Run All goes on, as it does past a stub."""

    def __init__(self, says):
        super().__init__(says)
        self.says = says


def missing(*exercise_ids):
    """The exercises among `exercise_ids` not passed in this kernel, or
    none in a solved copy (its cells run the kit's own answers)."""
    if COPY["solved"]:
        return []
    return [EXERCISES[id] for id in exercise_ids if not EXERCISES[id].passed]


def needs(*exercise_ids):
    """Stop this cell, with one line saying which exercises to pass first,
    unless every one of `exercise_ids` has passed its check."""
    left = missing(*exercise_ids)
    if left:
        names = text(MESSAGES, "needs.and").join(map(heading, left))
        raise ExercisesFirst(text(MESSAGES, "needs.first", exercises=names))


def start_here():
    """" Start at “★ Exercise 1 `id`”." for the first exercise of this
    notebook not passed in this kernel, or "": a stopped cell says where
    to go, since Run All leaves the view at the bottom, far from it."""
    left = [e for e in EXERCISES.values() if COPY["notebook"] is not None
            and int(e.notebook[:2]) == COPY["notebook"] and not e.passed]
    if not left:
        return ""
    return text(MESSAGES, "needs.start", heading=heading(left[0]))
