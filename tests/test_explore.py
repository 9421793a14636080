"""The explorers: their numbers against hand computations, then the widgets."""

import math

import pytest

from kit import explore
from kit.live import LiveFigure
from kit.trainers.sampler import RepeatSampler


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


# ------------------------------------------------ 01: gradient accumulation

def test_ga_split_weights_match_a_hand_computation():
    data = explore.ga_split("1+3", tokens=(3, 4, 2, 3))
    N = 12  # labelled tokens in all
    assert data["num_items_in_batch"] == N
    assert data["row_of_token"] == [0] * 3 + [1] * 4 + [2] * 2 + [3] * 3
    assert data["micro_of_token"] == [0] * 3 + [1] * 9
    assert data["one big batch"]["weights"] == pytest.approx([1 / N] * N)
    exact = data["sum / num_items_in_batch"]
    assert exact["weights"] == pytest.approx([1 / N] * N)
    assert exact["off"] == pytest.approx(0, abs=1e-6)
    # a mean per micro-batch, halved: 1/(2·3) for row 0, 1/(2·9) for the rest
    mean = data["mean ÷ GA"]
    assert mean["weights"] == pytest.approx([1 / 6] * 3 + [1 / 18] * 9)
    off = math.sqrt(3 * (1 / 6 - 1 / N) ** 2 + 9 * (1 / 18 - 1 / N) ** 2)
    assert mean["off"] == pytest.approx(off / math.sqrt(N / N ** 2), rel=1e-5)


def test_one_micro_batch_is_the_big_batch():
    data = explore.ga_split("4")
    assert data["mean ÷ GA"]["off"] == pytest.approx(0, abs=1e-6)


@pytest.mark.parametrize("split", ["1+2", "0+4", "5"])
def test_a_split_that_does_not_cover_the_rows_is_refused(split):
    with pytest.raises(ValueError, match="adding up to 4 rows, e.g. '1\\+3'"):
        explore.ga_split(split)


# ----------------------------------------------------------------- 03: DPO

def test_dpo_weights_correct_against_the_snippet():
    beta, h = 0.5, 4.0
    data = explore.dpo_weights(beta, "sigmoid", margins=[0.0, h])
    assert data["loss"] == pytest.approx([math.log(2),
                                          -math.log(sigmoid(beta * h))])
    # correct DPO: β·σ(−βh) on both sides, whatever the margin
    weight = [beta / 2, beta * sigmoid(-beta * h)]
    assert data["chosen"] == pytest.approx(weight)
    assert data["rejected"] == pytest.approx(weight)
    # the snippet: z = β·(h/2) − (−h/2); rejected weighs 1/β times chosen
    z = [0.0, beta * h / 2 + h / 2]
    assert data["snippet_loss"] == pytest.approx(
        [-math.log(sigmoid(x)) for x in z])
    assert data["snippet_chosen"] == pytest.approx(
        [beta * sigmoid(-x) for x in z])
    assert data["snippet_rejected"] == pytest.approx([sigmoid(-x) for x in z])


def test_dpo_weights_follow_the_loss_type():
    beta = 0.5  # IPO: (h − 1/(2β))², gradient 2·(1/(2β) − h) on each side
    data = explore.dpo_weights(beta, "ipo", margins=[0.0])
    assert data["loss"] == pytest.approx([1.0])
    assert data["chosen"] == pytest.approx([2.0])
    assert data["rejected"] == pytest.approx([2.0])
    hinge = explore.dpo_weights(beta, "hinge", margins=[4.0])
    assert hinge["loss"] == pytest.approx([0.0])  # past the hinge: no push
    assert hinge["chosen"] == pytest.approx([0.0])
    with pytest.raises(ValueError, match="loss_type must be one of"):
        explore.dpo_weights(beta, "kto")


# -------------------------------------------------------- 04: the sampler

def test_sampler_plan_uses_the_trainers_sampler():
    plan = explore.sampler_plan(per_device_train_batch_size=8,
                                num_generations=4, steps_per_generation=4,
                                gradient_accumulation_steps=1, max_steps=8,
                                dataset_size=32, seed=0)
    sampler = RepeatSampler(32, 4, 8, 4, 0)  # 8·4/4 prompts a big batch
    assert plan["order"] == list(sampler)[:8 * 32]
    assert plan["slice"] == [0, 1, 2, 3] * 2
    assert plan["generation"] == [0] * 4 + [1] * 4
    first = plan["batches"][0]
    assert len(first) == 32 and plan["batches"][3] == first  # served k times
    assert plan["batches"][4] != first
    groups = [first[i:i + 4] for i in range(0, 32, 4)]  # G in a row
    assert all(len(set(g)) == 1 for g in groups)
    assert plan["generate_calls"] == 2  # N·GA/k = 8·1/4


@pytest.mark.parametrize("k, GA, calls", [(4, 2, 4), (3, 1, 3), (1, 2, 16)])
def test_generate_calls_are_n_ga_over_k(k, GA, calls):
    plan = explore.sampler_plan(8, 4, k, GA, max_steps=8)
    assert plan["micro_steps"] == 8 * GA
    assert plan["optimizer_step"][:GA] == [0] * GA
    assert plan["generate_calls"] == calls == math.ceil(8 * GA / k)


def test_a_batch_that_splits_groups_is_refused_by_the_config_itself():
    # the explorer asks GRPOConfig, so its message is the trainer's
    with pytest.raises(ValueError, match=r"GRPOConfig\."
                                         r"per_device_train_batch_size \(6\)"
                                         r" counts completions and must be a "
                                         r"multiple of num_generations \(4\)"):
        explore.sampler_plan(6, 4, 2, 1)
    with pytest.raises(ValueError, match="GRPOConfig.num_generations must "
                                         "be a whole number >= 2"):
        explore.sampler_plan(8, 1, 2, 1)


# --------------------------------------------------------- 05: the clip

def test_clip_surrogate_by_hand():
    up = explore.clip_surrogate(0.2, 1.0, ratios=[0.5, 1.0, 1.5])
    assert up["loss"] == pytest.approx([-0.5, -1.0, -1.2])
    assert up["unclipped"] == pytest.approx([-0.5, -1.0, -1.5])
    # d(−ρA)/d log π = −ρA; zero where the clip holds ρ at 1 + ε
    assert up["gradient"] == pytest.approx([-0.5, -1.0, 0.0])
    down = explore.clip_surrogate(0.2, -1.0, ratios=[0.5, 1.0, 1.5])
    assert down["loss"] == pytest.approx([0.8, 1.0, 1.5])
    assert down["gradient"] == pytest.approx([0.0, 1.0, 1.5])
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        explore.clip_surrogate(0.0)


# --------------------------------------------------- 07: the normalisers

def test_normaliser_weights_by_hand():
    lengths = (2, 4, 6, 8)
    data = explore.normaliser_weights(lengths, 2, max_completion_length=10)
    assert data["tokens"] == 20
    # grpo: 1 / (own length · N in the micro-batch · GA)
    assert data["grpo"] == pytest.approx(
        [1 / (2 * 2 * 2), 1 / (4 * 2 * 2), 1 / (6 * 2 * 2), 1 / (8 * 2 * 2)])
    # bnpo: 1 / (the micro-batch's tokens · GA): 6 tokens, then 14
    assert data["bnpo"] == pytest.approx([1 / 12, 1 / 12, 1 / 28, 1 / 28])
    # dr_grpo: 1 / (N · max_completion_length · GA), the same everywhere
    assert data["dr_grpo"] == pytest.approx([1 / 40] * 4)
    # dapo: 1 / the step's tokens, the same everywhere, whatever GA
    assert data["dapo"] == pytest.approx([1 / 20] * 4)
    assert explore.normaliser_weights(lengths, 4, 10)["dapo"] == \
        data["dapo"]
    with pytest.raises(ValueError, match="gradient_accumulation_steps=3"):
        explore.normaliser_weights(lengths, 3)
    with pytest.raises(ValueError, match="max_completion_length=6"):
        explore.normaliser_weights(lengths, 1, 6)


# ------------------------------------------------------------ the widgets

EXPLORERS = [explore.explore_ga_split, explore.explore_dpo,
             explore.explore_sampler, explore.explore_clip,
             explore.explore_normalisers]


@pytest.mark.parametrize("make", EXPLORERS, ids=lambda f: f.__name__)
def test_headless_explorers_draw_one_static_figure(make):
    figure = make()  # PYTEST_CURRENT_TEST is set: no live frontend
    assert isinstance(figure, LiveFigure)
    assert figure._repr_png_().startswith(b"\x89PNG")


def _another(control):
    options = getattr(control, "options", None)
    if options:
        return next(o for o in options if o != control.value)
    return control.max if control.value != control.max else control.min


@pytest.mark.parametrize("make", EXPLORERS, ids=lambda f: f.__name__)
def test_moving_a_control_redraws_the_figure(make, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.delenv("KIT_HEADLESS", raising=False)
    explorer = make()
    assert isinstance(explorer, explore.Explorer)
    before, draws = bytes(explorer.image.value), explorer.draws
    assert before.startswith(b"\x89PNG")
    control = next(iter(explorer.controls.values()))
    control.value = _another(control)
    assert explorer.draws == draws + 1
    assert bytes(explorer.image.value) != before


def test_an_impossible_setting_is_drawn_as_its_error():
    figure = explore.draw_sampler_plan(LiveFigure(), 6, 4)
    assert "must be a multiple of num_generations" in figure.axes[0].texts[
        0].get_text()


@pytest.mark.parametrize("make", EXPLORERS, ids=lambda f: f.__name__)
def test_each_explorer_draws_the_panels_it_names(make):
    """The build checks the notebooks' prose against these names."""
    figure = make()
    assert len(figure.axes) == len(explore.PANELS[make.__name__])


def px(value):
    assert value.endswith("px"), value
    return int(value[:-2])


@pytest.mark.parametrize("make", EXPLORERS, ids=lambda f: f.__name__)
def test_no_slider_label_eats_its_track(make, monkeypatch):
    """04's per_device_train_batch_size slider once had a ~25 px track."""
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.delenv("KIT_HEADLESS", raising=False)
    explorer = make()
    row = explorer.widget.children[0]
    assert row.layout.flex_flow == "row wrap"  # a second line, no squeeze
    for control in explorer.controls.values():
        if "Slider" not in type(control).__name__:
            continue
        label = px(control.style.description_width)
        assert label >= 8 * len(control.description)
        track = px(control.layout.width) - label - explore.READOUT_PX
        assert track >= 150, (control.description, track)
        assert control.layout.flex == "0 0 auto"  # it never shrinks


def overlapping(texts):
    """Pairs of labels, one above the other, with less than a quarter of a
    line between them (at GA = 3, k = 6 they once touched: 0.5 px)."""
    boxes = sorted((t.get_window_extent() for t in texts if t.get_text()),
                   key=lambda box: box.y0)
    return [(a, b) for a, b in zip(boxes, boxes[1:])
            if b.y0 - a.y1 < 0.25 * a.height]


@pytest.mark.parametrize("k, GA", [(4, 1), (6, 3), (8, 4)])
def test_the_sampler_rows_and_their_labels_never_crowd(k, GA):
    figure = explore.draw_sampler_plan(LiveFigure(figsize=(11, 4.5)), 8, 4,
                                       k, GA)
    figure.draw_without_rendering()
    ax = figure.axes[0]
    assert not overlapping(ax.get_yticklabels())
    assert not overlapping([t for t in ax.texts])  # the generate() marks


def test_the_dpo_title_rounds_beta_as_its_slider_does(monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.delenv("KIT_HEADLESS", raising=False)
    explorer = explore.explore_dpo()
    slider = explorer.controls["beta"]
    slider.value = 10 ** -0.8  # 0.158489...
    shown = format(slider.value, slider.readout_format)
    assert shown == "0.158"
    title = explorer.figure.axes[1].get_title()
    assert title.endswith(f"β = {shown}"), title


def test_trls_rescaled_dapo_count_is_exact_only_when_k_is_ga():
    lengths = (2, 4, 6, 8)  # micro-batches of 6 and 14 tokens at GA = 2
    exact = explore.normaliser_weights(lengths, 2, 10)["dapo"]
    for k in (1, 2, 4):
        rescaled = explore.normaliser_weights(
            lengths, 2, 10, steps_per_generation=k)["dapo TRL 1.16"]
        assert (rescaled == pytest.approx(exact)) == (k == 2), k
    # k = 1: each micro-batch its own generation, 6 x 2 then 14 x 2 tokens
    assert explore.normaliser_weights(lengths, 2, 10, 1)[
        "dapo TRL 1.16"] == pytest.approx([1 / 12, 1 / 12, 1 / 28, 1 / 28])
    # k = 4: this step's 20 tokens and 10 of later, halved completions
    assert explore.normaliser_weights(lengths, 2, 10, 4)[
        "dapo TRL 1.16"] == pytest.approx([1 / 15] * 4)
