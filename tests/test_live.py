"""The live plot, headless: what it draws and how often it displays."""

import pytest

from kit import live, recipes
from kit.labels import PLOTS

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
    loss_ax, metrics_ax, cost_ax, per_step_ax = figure.axes
    assert lines(loss_ax)["loss"] == ([1, 2, 4, 8], [2.0, 1.5, 1.0, 0.9])
    assert lines(loss_ax)["eval_loss"] == ([2], [1.6])
    assert lines(metrics_ax)["reward"] == ([2, 4], [0.2, 0.5])
    assert lines(metrics_ax)["eval_reward"] == ([2], [0.3])
    # cumulative seconds in generate(), bold; per step, light, on the right
    assert lines(cost_ax)["cumulative"] == ([0, 4, 8], [0.0, 0.8, 1.0])
    per_step = lines(per_step_ax)["per step (right)"]
    assert per_step[0] == [4, 8]
    assert per_step[1] == pytest.approx([0.2, 0.05])  # 0.8 s / 4 steps, ...
    assert cost_ax.get_title() == "generate(): 3 calls, 1.00 s"
    assert figure._repr_png_().startswith(b"\x89PNG")


def test_a_run_that_never_generates_has_no_generation_panel():
    figure = live.plot_history(HISTORY[:3])
    assert len(figure.axes) == 1  # the loss only
    assert len(live.plot_history(HISTORY[:3], "reward").axes) == 2


def grpo_history(losses):
    return [{"loss": loss, "reward": 0.5, "step": step,
             "generation/calls": step, "generation/seconds": 0.1 * step}
            for step, loss in enumerate(losses, 1)]


def test_grpo_says_why_its_loss_is_about_zero_while_it_is():
    on_policy = grpo_history([1e-8, -3e-8, 2e-8])  # k = 1 in notebook 04
    loss_ax = live.plot_history(on_policy).axes[0]
    # wrapped to fit its panel (issue 66): the same words
    assert [" ".join(t.get_text().split()) for t in loss_ax.texts] == [
        PLOTS["en"]["grpo_loss_note"]]
    assert not live.plot_history(HISTORY[:3]).axes[0].texts  # no GRPO
    # k = 8: the off-policy slices swing the loss by ±0.4, "≈ 0" is untrue
    swinging = grpo_history([0.01, -0.38, 0.47, -0.2])
    assert not live.plot_history(swinging).axes[0].texts


@pytest.mark.parametrize("metrics, history", [
    ((), HISTORY[:3]), ("reward", HISTORY[:3]), ((), HISTORY),
    (("reward", "eval_reward"), HISTORY)])
def test_the_live_plot_says_which_panels_it_draws(metrics, history):
    figure = live.plot_history(history, metrics)
    own = [ax for ax in figure.axes if ax.get_label() != "twin"]
    names = live.panels(metrics, live.generates(history))
    assert len([ax for ax in figure.axes if ax.get_title()]) == len(names)
    assert names[0] == "loss" and ("generation" in names) == (
        live.generates(history))
    assert len(own) >= len(names)


def test_text_from_users_is_shown_as_written_not_as_mathtext():
    # an output dir like runs/cost_$5_$x once raised ParseSyntaxException
    figure = live.plot_history(HISTORY, metrics="cost_$", title="cost_$5_$x")
    assert figure._repr_png_().startswith(b"\x89PNG")
    assert "cost_$5_$x" in figure._suptitle.get_text().replace("\\$", "$")


def inside(figure, text):
    figure.draw_without_rendering()
    box, page = text.get_window_extent(), figure.bbox
    return page.x0 <= box.x0 and box.x1 <= page.x1 and box.y1 <= page.y1


def test_a_long_heading_stays_inside_a_one_panel_figure():
    """02: 'stopped by a callback · step 38 / 150 · ...' was clipped at
    both edges of its 5-inch figure."""
    figure = live.draw(live.LiveFigure(), HISTORY[:1],
                       title="stopped by a callback, a long title here",
                       status=live.progress(38, 150, 5.0, ended=True))
    assert inside(figure, figure._suptitle)
    for ax in figure.axes:  # and it does not sit on a panel's own title
        assert not figure._suptitle.get_window_extent().overlaps(
            ax.title.get_window_extent())


def test_a_string_is_one_metric():
    figure = live.plot_history(HISTORY, metrics="reward")
    assert set(lines(figure.axes[1])) == {"reward", "eval_reward"}
    assert live.LivePlotCallback(metrics="reward").metrics == ("reward",)


def test_short_series_have_markers_so_one_point_shows():
    figure = live.plot_history([{"loss": 2.0, "step": 1}])
    (line,) = figure.axes[0].get_lines()
    assert line.get_marker() == "o"
    long = [{"loss": 1.0, "step": s} for s in range(1, 101)]
    (line,) = live.plot_history(long).axes[0].get_lines()
    assert line.get_marker() in ("None", None, "")


def test_runs_compared_share_their_y_scales():
    slow = [{"loss": 4.0, "reward": 0.1, "step": 1, "generation/calls": 8,
             "generation/seconds": 3.0}]
    fast = [{"loss": 1.0, "reward": 0.9, "step": 1, "generation/calls": 1,
             "generation/seconds": 0.5}]
    alone = live.plot_history(fast, "reward")
    shared = live.plot_history(fast, "reward", share_y=[slow])
    assert alone.axes[0].get_ylim() != shared.axes[0].get_ylim()
    other = live.plot_history(slow, "reward", share_y=[fast])
    for mine, theirs in zip(shared.axes, other.axes):
        assert mine.get_ylim() == pytest.approx(theirs.get_ylim())
    assert shared.axes[2].get_ylim()[1] >= 3.0  # the slow run's seconds


def test_progress_says_step_elapsed_and_left():
    assert live.progress(100, 400, 10.0) == (
        "step 100 / 400 · 0:10 elapsed · 0:30 left")
    assert live.progress(0, 400, 0.0) == "step 0 / 400 · 0:00 elapsed"
    assert live.progress(400, 400, 75.0) == "step 400 / 400 · 1:15 elapsed"


def test_a_run_that_ended_early_says_it_stopped():
    assert live.progress(38, 150, 5.0, ended=True) == (
        "stopped at step 38 / 150 · 0:05 elapsed")
    assert live.progress(150, 150, 5.0, ended=True) == (
        "step 150 / 150 · 0:05 elapsed")


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
    monkeypatch.setattr(live, "_in_notebook", lambda: True)
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
    assert shown.count("update") >= 1  # at the first log, then in place
    assert callback.log_history is trainer.state.log_history
    steps = lines(callback.figure.axes[0])["loss"][0]
    assert steps == [1, 2, 3, 4, 5, 6]
    heading = callback.figure._suptitle.get_text()
    assert heading.startswith("step 6 / 6 · ") and "elapsed" in heading


def test_headless_runs_display_once_at_the_end(shown, tmp_path):
    callback = live.LivePlotCallback()  # PYTEST_CURRENT_TEST is set here
    run_with(callback, tmp_path)
    assert shown == ["display"]


def test_a_linked_earlier_run_is_redrawn_on_the_shared_scale(
        shown, tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    first = live.LivePlotCallback(min_interval=3600)
    run_with(first, tmp_path)
    updates = shown.count("update")
    second = live.LivePlotCallback(min_interval=3600, share_y=[first])
    assert first.shared == [second]
    run_with(second, tmp_path)
    assert shown.count("display") == 2
    # the second run's own final update, and one for the first run's figure
    assert shown.count("update") == updates + 2


def test_redraws_are_throttled(shown, tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    run_with(live.LivePlotCallback(min_interval=3600), tmp_path)
    # the first log draws, then nothing for an hour, then the final drawing
    assert shown == ["display", "update"]


def hooks(callback, max_steps=150):
    """Drive a callback as the Trainer does, without training."""
    from transformers import TrainerControl, TrainerState, TrainingArguments
    state = TrainerState(max_steps=max_steps, is_world_process_zero=True)
    args = TrainingArguments("unused", report_to="none")
    callback.on_train_begin(args, state, TrainerControl())
    return args, state


def test_nothing_is_shown_before_the_first_log(shown, monkeypatch):
    """A learner's unfinished exercise fails at step 1: no empty
    'step 0 / 150' figure above the 'not done yet' line."""
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    callback = live.LivePlotCallback(title="your compute_loss")
    hooks(callback)  # ... and the first training step raises
    assert shown == []


def test_a_stopped_run_says_so_in_its_title(shown, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    from transformers import TrainerControl
    callback = live.LivePlotCallback(title="stopped by a callback",
                                     min_interval=0.0)
    args, state = hooks(callback)
    state.global_step = 38
    state.log_history += [{"loss": 1.0, "step": 38}]
    callback.on_log(args, state, TrainerControl())
    assert "left" in callback.figure._suptitle.get_text()
    callback.on_train_end(args, state, TrainerControl())  # stopped early
    heading = callback.figure._suptitle.get_text()
    assert "stopped at step 38 / 150" in heading and "left" not in heading
    assert shown == ["display", "update"]
