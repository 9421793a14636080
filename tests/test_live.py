"""The live plot, headless: what it draws and how often it displays."""

import pytest

from kit import live, recipes

HISTORY = [
    {"loss": 2.0, "step": 1}, {"loss": 1.5, "reward": 0.2, "step": 2},
    {"eval_loss": 1.6, "eval_reward": 0.3, "step": 2},
    {"loss": 1.0, "reward": 0.5, "step": 4,
     "generation/calls": 2, "generation/seconds": 0.8, "generation/tokens": 40},
    {"loss": 0.9, "step": 8, "generation/calls": 3, "generation/seconds": 1.0},
]


def lines(ax):
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
            for line in ax.get_lines()}


def test_plot_history_draws_loss_metrics_and_generation_cost():
    figure = live.plot_history(HISTORY, metrics=["reward"])
    loss_ax, metrics_ax, cost_ax = figure.axes
    assert lines(loss_ax)["loss"] == ([1, 2, 4, 8], [2.0, 1.5, 1.0, 0.9])
    assert lines(loss_ax)["eval_loss"] == ([2], [1.6])
    assert lines(metrics_ax)["reward"] == ([2, 4], [0.2, 0.5])
    assert lines(metrics_ax)["eval_reward"] == ([2], [0.3])
    per_step = lines(cost_ax)["since last log"][1]
    assert per_step == pytest.approx([0.2, 0.05])  # 0.8 s over 4 steps, ...
    assert lines(cost_ax)["amortised"][1] == pytest.approx([0.2, 0.125])
    assert "3 generate calls" in cost_ax.get_title()
    assert figure._repr_png_().startswith(b"\x89PNG")


def test_the_generation_panel_says_so_when_nothing_was_generated():
    figure = live.plot_history(HISTORY[:3])
    assert len(figure.axes) == 2  # no metrics asked: loss and cost only
    texts = [t.get_text() for t in figure.axes[-1].texts]
    assert texts == ["no generate() calls logged"]


class FakeHandle:
    def __init__(self, shown):
        self.shown = shown

    def update(self, figure):
        self.shown.append("update")


@pytest.fixture
def shown(monkeypatch):
    """Pretend to be in a notebook; count displays and in-place updates."""
    calls = []

    def display(figure):
        calls.append("display")
        return FakeHandle(calls)
    monkeypatch.setattr(live, "_display", display)
    return calls


def run_with(callback, tmp_path):
    trainer = recipes.sft_trainer("cpu", output_dir=tmp_path, max_steps=6,
                                  logging_steps=1, callbacks=[callback])
    recipes.quiet(trainer).train()
    return trainer


def test_in_a_notebook_one_figure_is_updated_in_place(shown, tmp_path,
                                                      monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    callback = live.LivePlotCallback(min_interval=0.0)
    trainer = run_with(callback, tmp_path)
    assert shown.count("display") == 1
    assert shown.count("update") >= 2  # during training, and at its end
    assert callback.log_history is trainer.state.log_history
    steps = lines(callback.figure.axes[0])["loss"][0]
    assert steps == [1, 2, 3, 4, 5, 6]


def test_headless_runs_display_once_at_the_end(shown, tmp_path):
    callback = live.LivePlotCallback()  # PYTEST_CURRENT_TEST is set here
    run_with(callback, tmp_path)
    assert shown == ["display"]


def test_redraws_are_throttled(shown, tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    run_with(live.LivePlotCallback(min_interval=3600), tmp_path)
    # the first log draws, then nothing for an hour, then the final drawing
    assert shown == ["display", "update", "update"]
