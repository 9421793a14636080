"""Live training plots: loss and metrics beside the cost of generation.

`LivePlotCallback` is the course's example of a callback: it only *watches*
(`on_log`) and never changes what the Trainer computes. It redraws one figure
in place through an IPython display handle, which JupyterLab and Colab both
understand, so a run leaves exactly one figure behind. `plot_history` draws
the same figure from a finished run's `trainer.state.log_history`.
"""

import io
import os
import time

from matplotlib.figure import Figure
from transformers import TrainerCallback

from kit.labels import fonts, label


# Legible at 1280 px (issue 66): JupyterLab in a 1280-px window, its file
# browser open, shows an output about 840 px wide and scales a wider PNG
# down, text and all. A figure at most that wide keeps its text at the size
# drawn, and no text smaller than the notebook's own (14 px).
DPI = 80  # LiveFigure's PNG
OUTPUT_PX = 840
TEXT_PX = 14
SMALLEST_PT = TEXT_PX * 72 / DPI


def headless():
    """True under nbval, pytest or `kit grade`: draw once, at the end."""
    return bool(os.environ.get("PYTEST_CURRENT_TEST")
                or os.environ.get("KIT_HEADLESS"))


def _series(log_history, key):
    """(steps, values) of every log entry that has `key`."""
    rows = [(row["step"], row[key]) for row in log_history if key in row]
    return [s for s, _ in rows], [v for _, v in rows]


def _generation_cost(log_history):
    """Cumulative generate() seconds, and seconds per step between logs."""
    steps, seconds = _series(log_history, "generation/seconds")
    per_step, last_step, last_seconds = [], 0, 0.0
    for step, total in zip(steps, seconds):
        if step > last_step:
            per_step.append((total - last_seconds) / (step - last_step))
        else:  # a second log at the same step (eval): nothing new happened
            per_step.append(per_step[-1] if per_step else 0.0)
        last_step, last_seconds = step, total
    return steps, seconds, per_step


def generates(log_history):
    """True once a run has logged a generate() call (GRPO, not SFT/DPO)."""
    return any(row.get("generation/calls") for row in log_history)


# Why GRPO's loss hovers at 0, said where the learner looks for it, and
# only while it does: off-policy slices (k > 1) swing it away from 0.
NEAR_ZERO = 0.05  # |loss| at most this at every log: "≈ 0" is true


def panels(metrics=(), generates=False):
    """The live plot's panel names, left to right (the build checks that
    the notebooks' prose speaks only of these). English: the titles drawn
    are these, in the current language (kit.labels)."""
    metrics = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    return ("loss",) + ((", ".join(metrics),) if metrics else ()) + (
        ("generation",) if generates else ())


def plain(text):
    """Text from users, shown as written: a `$` starts no mathtext."""
    return text.replace("$", r"\$")


def _plot(ax, steps, values, style, **kwargs):
    """A line, with markers while the series is short (one point shows)."""
    short = len(steps) < 30 and "o" not in style
    marker = {"marker": "o", "ms": 3} if short else {}
    return ax.plot(steps, values, style, **marker, **kwargs)[0]


def _limits(histories, keys):
    """(low, high) over every value of `keys` in all `histories`."""
    values = [v for history in histories for key in keys
              for v in _series(history, key)[1]]
    if not values:
        return None
    low, high = min(values), max(values)
    pad = 0.05 * (high - low) or 0.05 * abs(high) or 0.05
    return low - pad, high + pad


def draw(figure, log_history, metrics=(), title=None, status=None,
         share_y=()):
    """Draw the panels of a run onto `figure` (cleared first).

    Panels: the loss, the `metrics` if any, and the cost of generation if
    the run generates. `status` follows the title (step, time left).
    `share_y`: other runs' log histories whose values
    the y-axes also cover, so runs side by side compare at a glance.
    """
    metrics = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    histories = [log_history, *share_y]
    figure.clear()
    count = len(panels(metrics, generates(log_history)))
    figure.set_size_inches(min(5 * count, OUTPUT_PX / DPI), 3.6 + 0.4 * (
        count > 2))
    axes = list(figure.subplots(1, count, squeeze=False)[0])

    loss_ax = axes.pop(0)
    for key, style in (("loss", "-"), ("eval_loss", "o--")):
        steps, values = _series(log_history, key)
        if steps:
            _plot(loss_ax, steps, values, style, label=key)
    loss_ax.set(title=label("loss"), xlabel=label("optimizer_step"))
    if generates(log_history) and _near_zero(log_history):
        loss_ax.text(0.02, 0.03, _wrapped(label("grpo_loss_note"),
                                          figure, count),
                     transform=loss_ax.transAxes, fontsize="small",
                     color="0.35")
    _share(loss_ax, histories, ("loss", "eval_loss"))

    if metrics:
        ax = axes.pop(0)
        for key in metrics:  # train-time line and eval-time dots, one colour
            steps, values = _series(log_history, key)
            color = _plot(ax, steps, values, "-",
                          label=plain(key)).get_color()
            steps, values = _series(log_history, "eval_" + key)
            if steps:
                ax.plot(steps, values, "o--", color=color,
                        label=plain("eval_" + key))
        ax.set(title=plain(", ".join(metrics)),
               xlabel=label("optimizer_step"))
        _share(ax, histories, metrics + tuple("eval_" + k for k in metrics))

    for ax in figure.axes:  # the generation panel makes its own legend
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    if axes:
        _draw_generation(axes[0], log_history, histories)
    if len(histories) == 1:  # runs side by side share their ranges instead
        for ax in figure.axes[:1 + bool(metrics)]:
            _from_zero_while_flat(ax)
    _heading(figure, title, status, size=SMALLEST_PT + 1)
    _legible(figure)
    figure.tight_layout()
    return figure


def _wrapped(text, figure, count):
    """`text` in lines that fit one of `count` panels (a note inside the
    loss panel must not run into the next one)."""
    import textwrap
    width = figure.get_figwidth() / count * 72 / (0.55 * SMALLEST_PT)
    if any(ord(char) > 0x2E80 for char in text):  # Japanese: twice as wide
        width /= 2
    return "\n".join(textwrap.wrap(text, max(8, int(0.65 * width))))


def _from_zero_while_flat(ax):
    """A first frame's one point (or a flat start) drawn from 0, not on
    an axis of ±4% around it (9.6 to 10.4 for a loss of 10)."""
    values = [y for line in ax.get_lines() for y in line.get_ydata()]
    if not values:
        return
    steps = {x for line in ax.get_lines() for x in line.get_xdata()}
    if len(steps) == 1:  # one step so far: the axis starts at 0
        ax.set_xlim(0, 1.1 * max(steps) or 1)
    low, high = min(values), max(values)
    if high - low > 0.1 * max(abs(low), abs(high)):
        return  # the values spread: matplotlib's range reads well
    low, high = min(0.0, low), max(0.0, high)
    pad = 0.1 * (high - low) or 1.0
    ax.set_ylim(low - pad * (low < 0), high + pad)


def _legible(figure):
    """No text smaller than the notebook's: ticks, legends, titles."""
    from matplotlib.text import Text
    for ax in figure.axes:
        ax.tick_params(labelsize=SMALLEST_PT)
    for text in figure.findobj(Text):
        if text.get_fontsize() < SMALLEST_PT:
            text.set_fontsize(SMALLEST_PT)


def _near_zero(log_history):
    values = _series(log_history, "loss")[1]
    return bool(values) and max(abs(v) for v in values) <= NEAR_ZERO


def _heading(figure, title, status, size=11):
    """Title, then status on a line of its own, wrapped to stay inside the
    figure (a long heading is never clipped at both edges)."""
    import textwrap
    characters = int(0.9 * figure.get_figwidth() * 72 / (0.6 * size))
    lines = [line for text in (title, status) if text
             for line in textwrap.wrap(str(text), max(20, characters))]
    if lines:
        figure.suptitle(plain("\n".join(lines)), fontsize=size)


def _share(ax, histories, keys):
    limits = _limits(histories, keys) if len(histories) > 1 else None
    if limits:
        ax.set_ylim(*limits)


def _draw_generation(ax, log_history, histories):
    """Cumulative seconds in generate() (bold), per step (light, right)."""
    steps, seconds, per_step = _generation_cost(log_history)
    calls = _series(log_history, "generation/calls")[1]
    _plot(ax, [0] + steps, [0.0] + seconds, "C3-", drawstyle="steps-post",
          label=label("cumulative"))
    ax.set(title=label("generation_title", calls=int(calls[-1]),
                       seconds=seconds[-1]),
           xlabel=label("optimizer_step"),
           ylabel=label("seconds_in_generate"))
    top = max(max(_generation_cost(h)[1], default=0) for h in histories)
    ax.set_ylim(0, 1.05 * top or 1)
    light = ax.twinx()  # per-step cost is noisy on a busy CPU: a light line
    light.plot(steps, per_step, color="0.6", lw=0.8, alpha=0.6,
               label=label("per_step_right"))
    light.set_ylabel(label("per_step"), color="0.5")
    light.tick_params(axis="y", colors="0.5")
    top = max(max(_generation_cost(h)[2], default=0) for h in histories)
    light.set_ylim(0, 1.05 * top or 1)
    lines = ax.get_lines() + light.get_lines()  # one legend, on top
    light.legend(lines, [line.get_label() for line in lines],
                 fontsize="small", loc="upper left")


class LiveFigure(Figure):
    """A matplotlib Figure that notebooks display as a PNG by itself.

    It is not registered with pyplot, so Jupyter never shows it a second
    time when a cell ends, and it needs no particular matplotlib backend.
    """

    def __init__(self, *args, **kwargs):
        fonts()  # before its texts exist: they take the font of their birth
        super().__init__(*args, **kwargs)

    def _repr_png_(self):
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=DPI)
        return buffer.getvalue()


def plot_history(log_history, metrics=(), title=None, share_y=()):
    """The live plot's figure, drawn from a finished run's log_history."""
    return draw(LiveFigure(), log_history, metrics, title, share_y=share_y)


def _clock(seconds):
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}:{seconds:02d}"


def progress(step, max_steps, elapsed, ended=False):
    """'step 120 / 400 · 0:12 elapsed · 0:28 left' (no guess at step 0);
    a run that `ended` before max_steps says it stopped there."""
    text = label("progress", step=step, max_steps=max_steps,
                 elapsed=_clock(elapsed))
    if ended and step < max_steps:
        return label("stopped_at", text=text)
    if 0 < step < max_steps:
        text = label("progress_left", text=text, left=_clock(
            elapsed / step * (max_steps - step)))
    return text


class LivePlotCallback(TrainerCallback):
    """Redraw loss, chosen metrics and generation cost as training logs.

    Args:
        metrics: extra logged keys to plot, e.g. "reward" or
            ("rewards/margins", "rewards/accuracies").
        title: a title above the panels; the step, the time elapsed and
            the time left follow it.
        min_interval: seconds between redraws at the least; a slow drawing
            spaces them further, so drawing stays a small share of the run.
        share_y: other LivePlotCallbacks (e.g. earlier runs to compare
            with): every figure of the group gets the same y-scales, and
            theirs are redrawn when this run ends.
    """

    def __init__(self, metrics=(), title=None, min_interval=0.5,
                 share_y=()):
        # a string is one metric, not a sequence of one-letter metrics
        self.metrics = (metrics,) if isinstance(metrics, str) else tuple(
            metrics)
        self.title, self.min_interval = title, min_interval
        self.log_history, self.figure = [], None
        self._handle, self._next_draw = None, 0.0
        self._progress, self._live = None, False
        self.shared = list(share_y)
        for other in self.shared:
            other.shared.append(self)

    def on_train_begin(self, args, state, control, **kwargs):
        # The Trainer appends every log to this very list: we only read it.
        self.log_history = state.log_history
        self._started = time.monotonic()
        self.figure = LiveFigure()
        # Nothing is shown yet: a run that fails at its first step (an
        # unfinished exercise) leaves no empty figure, and the first
        # drawing already has every panel the run's logs call for.
        self._live = (state.is_world_process_zero and not headless()
                      and _in_notebook())

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not self._live or time.monotonic() < self._next_draw:
            return
        if state.global_step == 0:
            # a step-0 evaluation alone (GRPO, DPO): the first step may
            # still fail on an unfinished exercise, leaving an empty figure
            return
        started = time.monotonic()
        self._show(state)
        took = time.monotonic() - started  # wait 9x as long: <= 10% overhead
        self._next_draw = started + max(self.min_interval, 10 * took)

    def on_train_end(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        self._show(state, ended=True)  # headless: the one and only drawing
        for other in self.shared:  # earlier runs rescale to this one
            if other._handle is not None:
                other._handle.update(other._redrawn())

    def _show(self, state, ended=False):
        """Draw the figure: displayed the first time, updated after."""
        self._progress = progress(state.global_step, state.max_steps,
                                  time.monotonic() - self._started, ended)
        if self._handle is None:
            self._handle = _display(self._redrawn())
        else:
            self._handle.update(self._redrawn())

    def _redrawn(self):
        return draw(self.figure, self.log_history, self.metrics, self.title,
                    self._progress,
                    share_y=[other.log_history for other in self.shared])


def _in_notebook():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def _display(figure):
    """Show `figure` in the notebook and return a handle to update it."""
    if not _in_notebook():
        return None
    from IPython.display import display
    return display(figure, display_id=True)


def compare_generation_cost(histories):
    """Cumulative generate() seconds against optimizer steps, one line a run.

    Args:
        histories: {label: log_history} of finished runs.
    """
    figure = LiveFigure(figsize=(6, 3.6))
    ax = figure.subplots()
    for name, history in histories.items():
        steps, seconds = _series(history, "generation/seconds")
        calls = _series(history, "generation/calls")[1]
        ax.step([0] + steps, [0.0] + seconds, where="post",
                label=label("run_calls", label=name,
                            calls=int(calls[-1]) if calls else 0))
    ax.set(title=label("compare_title"), xlabel=label("optimizer_step"),
           ylabel=label("seconds_cumulative"))
    if histories:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, label("no_runs"), ha="center", va="center",
                transform=ax.transAxes)
    figure.tight_layout()
    return figure
