"""Watch a real `Trainer.train()`: which method calls which, and when.

Notebook 00 draws its map of the Trainer from this trace rather than from
memory, so the map is right for the installed transformers.
"""

from transformers import TrainerCallback

METHODS = ("get_train_dataloader", "create_optimizer", "training_step",
           "_prepare_inputs", "compute_loss", "evaluate", "prediction_step",
           "log", "_save_checkpoint")


class _EventRecorder(TrainerCallback):
    """A callback that only notes which of its events fired."""

    def __init__(self, note):
        self.note = note


# Define every on_* event of TrainerCallback on the recorder, so that new
# events in a later transformers show up in the trace without edits here.
for _event in [n for n in dir(TrainerCallback) if n.startswith("on_")]:
    setattr(_EventRecorder, _event,
            lambda self, *args, _event=_event, **kwargs: self.note(_event))


def trace_calls(trainer, methods=METHODS):
    """Record the nested calls of `methods` and callback events on `trainer`.

    Only this trainer instance is patched. Returns a list that fills up with
    (depth, name) pairs as the trainer runs.
    """
    calls, depth = [], [0]

    def note(name):
        calls.append((depth[0], name))

    def wrap(name, method):
        def traced(*args, **kwargs):
            note(name + "()")
            depth[0] += 1
            try:
                return method(*args, **kwargs)
            finally:
                depth[0] -= 1
        return traced

    for name in methods:
        setattr(trainer, name, wrap(name, getattr(trainer, name)))
    trainer.add_callback(_EventRecorder(note))
    return calls


def format_calls(calls):
    """One line per call, indented by depth; runs of the same line folded."""
    lines, previous, repeats = [], None, 0
    for depth, name in calls + [(None, None)]:  # sentinel flushes the last
        line = "    " * (depth or 0) + (name or "")
        if line == previous:
            repeats += 1
            continue
        if previous is not None:
            lines.append(previous + (f"   ×{repeats + 1}" if repeats else ""))
        previous, repeats = line, 0
    return "\n".join(lines)
