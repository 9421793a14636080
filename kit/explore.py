"""Explorers: move a value, see the idea. One per lesson.

Each explorer is a pure function that computes what is drawn (tested on its
own, with the kit's real losses and sampler, never a second copy) and a thin
ipywidgets layer around it:

    ga_split        01: micro-batch split -> the accumulated gradient
    dpo_weights     03: beta, loss type   -> per-pair loss, gradient weights
    sampler_plan    04: batch, G, k, GA   -> the sampler's order, slices, calls
    clip_surrogate  05: epsilon, sign(A)  -> GRPO's clipped surrogate
    normaliser_weights 07: GA, max length -> each loss type's token weights

`explore_*()` returns a widget in a live notebook, and one static figure at
the default values where no frontend is live (nbval, `kit grade`,
KIT_HEADLESS=1), so graded outputs stay stable. Widgets are core ipywidgets
(sliders, an image), which JupyterLab (ipywidgets 8) and Colab (7.7) share.
"""

import io

import torch
from matplotlib.figure import Figure

from kit import losses
from kit.labels import fonts, label, width
from kit.live import LiveFigure, _legible, headless

# The panels each explorer draws, left to right (the build checks that the
# notebooks' prose speaks only of these). English names: the titles drawn
# say them in the current language (kit.labels).
PANELS = {
    "explore_ga_split": ("each token's share of the gradient",),
    "explore_dpo": ("loss of one pair", "gradient weight on each log-prob"),
    "explore_sampler": ("the dataloader's batches, micro-step by micro-step",),
    "explore_clip": ("GRPO's clipped surrogate",),
    "explore_normalisers": ("each token's weight in the step",
                            "each completion's weight in the step"),
}
# β as its slider shows it, and as the figure's title prints it
BETA_FORMAT = ".3g"

# ------------------------------------------------ 01: gradient accumulation

# Labelled tokens (answer digits + <eos>) of four rows, as in notebook 01.
GA_TOKENS = (3, 4, 2, 3)
GA_SPLITS = ("4", "1+3", "2+2", "3+1", "1+1+2", "2+1+1", "1+1+1+1")


def _parse_split(split, rows):
    sizes = ([int(s) for s in split.split("+")] if isinstance(split, str)
             else list(split))
    if sum(sizes) != rows or min(sizes) < 1:
        raise ValueError(f"split {split!r} must be sizes >= 1 adding up to "
                         f"{rows} rows, e.g. '1+3'")
    return sizes


def ga_split(split="1+3", tokens=GA_TOKENS, vocab=8):
    """The gradient each token gets after accumulating micro-batches.

    Rows have `tokens[i]` labelled tokens; logits start uniform, so a
    token's gradient on its right answer is -(1 - 1/V) times its weight in
    the loss. Three ways to the same optimizer step:

    - "one big batch": `causal_lm_loss` on all rows at once;
    - "mean ÷ GA": each micro-batch's mean loss, divided by the number of
      micro-batches (the Trainer's division when loss_is_scaled_for_ga is
      False);
    - "sum / num_items_in_batch": `causal_lm_loss(..., num_items_in_batch)`
      with the token count of the whole accumulated batch.

    Returns:
        {"sizes", "row_of_token", "micro_of_token", and per method
        name: {"weights": (N,) per-token weights, "size": |g| / |g_big|,
        "off": |g - g_big| / |g_big|}}.
    """
    sizes = _parse_split(split, len(tokens))
    B, T = len(tokens), max(tokens) + 1  # +1: the prompt token, unlabelled
    labels = torch.full((B, T), -100)
    for row, n in enumerate(tokens):
        labels[row, 1:n + 1] = torch.arange(n) % vocab
    num_items = int((labels[:, 1:] != -100).sum())

    def gradient(loss_of_micro_batch):
        logits = torch.zeros(B, T, vocab, requires_grad=True)  # uniform
        start = 0
        for size in sizes:  # backward per micro-batch: grads accumulate
            rows = slice(start, start + size)
            loss_of_micro_batch(logits[rows], labels[rows]).backward()
            start += size
        return logits.grad

    logits = torch.zeros(B, T, vocab, requires_grad=True)
    losses.causal_lm_loss(logits, labels).backward()
    grads = {"one big batch": logits.grad,
             "mean ÷ GA": gradient(
                 lambda lg, lb: losses.causal_lm_loss(lg, lb) / len(sizes)),
             "sum / num_items_in_batch": gradient(
                 lambda lg, lb: losses.causal_lm_loss(lg, lb, num_items))}
    # The gradient at position t-1 belongs to the token at t (the shift).
    where = labels[:, 1:] != -100  # (B, T-1)
    targets = labels[:, 1:][where]  # (N,)
    big = grads["one big batch"]
    out = {"sizes": sizes, "num_items_in_batch": num_items,
           "row_of_token": where.nonzero()[:, 0].tolist()}
    micro = torch.repeat_interleave(torch.arange(len(sizes)),
                                    torch.tensor(sizes))
    out["micro_of_token"] = micro[out["row_of_token"]].tolist()
    for name, grad in grads.items():
        on_target = grad[:, :-1][where].gather(1, targets[:, None])[:, 0]
        out[name] = {
            "weights": (on_target / -(1 - 1 / vocab)).tolist(),
            "size": (grad.norm() / big.norm()).item(),
            "off": ((grad - big).norm() / big.norm()).item()}
    return out


def draw_ga_split(figure, split="1+3"):
    data = ga_split(split)
    figure.clear()
    ax = figure.subplots()
    n = len(data["row_of_token"])
    x = torch.arange(n)
    colors = [f"C{m}" for m in data["micro_of_token"]]
    mean, exact = data["mean ÷ GA"], data["sum / num_items_in_batch"]
    ax.bar(x - 0.2, mean["weights"], 0.4, color=colors, alpha=0.45,
           label=label("ga_mean", size=mean["size"], off=mean["off"]))
    ax.bar(x + 0.2, exact["weights"], 0.4, color=colors,
           label=label("ga_exact", off=exact["off"]))
    ax.axhline(data["one big batch"]["weights"][0], color="k", ls="--",
               label=label("ga_big"))
    rows = data["row_of_token"]
    ax.set_xticks(x.tolist(), [f"r{r}" for r in rows])
    ax.set(xlabel=label("ga_xlabel"), ylabel=label("ga_ylabel"),
           title=label("ga_title", split=split,
                       n=data["num_items_in_batch"]))
    ax.set_ylim(0, 0.5)
    ax.legend(fontsize="small", loc="upper right")
    figure.tight_layout()
    return figure


# ----------------------------------------------------------------- 03: DPO

def dpo_weights(beta=0.1, loss_type="sigmoid", margins=None):
    """Per-pair loss and gradient weights against the log-ratio margin.

    Each pair has chosen log-ratio +h/2 and rejected log-ratio -h/2, so the
    margin (π_c − ref_c) − (π_r − ref_r) is h. The loss is the kit's
    (`kit.losses.PREFERENCE_LOSSES[loss_type]`) and, for comparison, the
    published snippet −log σ(β·chosen − rejected). Weights are what the
    gradient does to each log-prob: `chosen` = −∂loss/∂π_c (how hard it
    pushes chosen up), `rejected` = ∂loss/∂π_r (how hard it pushes rejected
    down).

    Returns:
        {"margins": (M,), "loss", "chosen", "rejected", "snippet_loss",
        "snippet_chosen", "snippet_rejected"}: lists of M floats.
    """
    from kit.losses import published_snippet
    if loss_type not in losses.PREFERENCE_LOSSES:
        raise ValueError(f"loss_type must be one of "
                         f"{sorted(losses.PREFERENCE_LOSSES)}, got "
                         f"{loss_type!r}")
    margins = (torch.linspace(-10, 10, 201) if margins is None
               else torch.as_tensor(margins, dtype=torch.float32))
    zeros = torch.zeros_like(margins)

    def weights(loss_of):
        chosen = (margins / 2).clone().requires_grad_(True)
        rejected = (-margins / 2).clone().requires_grad_(True)
        per_pair = loss_of(chosen, rejected)  # (M,)
        per_pair.sum().backward()  # pairs are independent: per-pair grads
        return (per_pair.detach().tolist(), (-chosen.grad).tolist(),
                rejected.grad.tolist())

    loss_fn = losses.PREFERENCE_LOSSES[loss_type].fn
    out = {"margins": margins.tolist()}
    out["loss"], out["chosen"], out["rejected"] = weights(
        lambda c, r: loss_fn(c, r, zeros, zeros, beta=beta)[0])
    (out["snippet_loss"], out["snippet_chosen"],
     out["snippet_rejected"]) = weights(
        lambda c, r: published_snippet(c, r, beta))
    return out


def draw_dpo_weights(figure, beta=0.1, loss_type="sigmoid"):
    data = dpo_weights(beta, loss_type)
    figure.clear()
    loss_ax, weight_ax = figure.subplots(1, 2)
    h = data["margins"]
    loss_ax.plot(h, data["loss"], "C0",
                 label=label("dpo_kit", loss_type=loss_type))
    loss_ax.plot(h, data["snippet_loss"], "C3--", label=label("dpo_snippet"))
    loss_ax.set(title=label("dpo_loss_title"), ylim=(0, 8),
                xlabel=label("dpo_margin_long"))
    weight_ax.plot(h, data["chosen"], "C0", label=label("dpo_chosen_kit"))
    weight_ax.plot(h, data["rejected"], "C1", ls=":", lw=3,
                   label=label("dpo_rejected_kit"))
    weight_ax.plot(h, data["snippet_chosen"], "C3--",
                   label=label("dpo_chosen_snippet"))
    weight_ax.plot(h, data["snippet_rejected"], "C5--",
                   label=label("dpo_rejected_snippet"))
    weight_ax.set(title=label("dpo_weight_title",
                              beta=f"{beta:{BETA_FORMAT}}"),
                  xlabel=label("dpo_margin"), ylim=(0, 1.05))
    for ax in (loss_ax, weight_ax):
        ax.legend(fontsize="small")
    figure.tight_layout()
    return figure


# -------------------------------------------------------- 04: the sampler

def sampler_plan(per_device_train_batch_size=8, num_generations=4,
                 steps_per_generation=4, gradient_accumulation_steps=1,
                 max_steps=8, dataset_size=32, seed=0):
    """What GRPO's dataloader serves, micro-step by micro-step.

    Uses the trainer's own `GRPOConfig` (its rules), `RepeatSampler` and
    `prompts_per_generation`, as `GRPOTrainer` builds them on one process.
    Micro-step m is served by generation m // k, slice m % k; `generate()`
    runs at every micro-step with m % k == 0.

    Returns:
        {"order": the sampler's indices (one per completion, in order),
        "batches": one list of prompt indices per micro-step (the
        dataloader's k-times-bigger batch), "generation", "slice",
        "optimizer_step": one int per micro-step, "generate_calls":
        ceil(N·GA/k), "micro_steps": N·GA}.
    """
    from kit.trainers.grpo_config import GRPOConfig
    from kit.trainers.sampler import RepeatSampler, prompts_per_generation
    if max_steps < 1:  # the explorer's own setting; the rest are the config's
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    # the config's own rules: what the trainer would refuse, refused here
    args = GRPOConfig(
        "unused", per_device_train_batch_size=per_device_train_batch_size,
        num_generations=num_generations,
        steps_per_generation=steps_per_generation,
        gradient_accumulation_steps=gradient_accumulation_steps, seed=seed,
        use_cpu=True, report_to="none")  # never trains: nothing is written
    B, G = args.per_device_train_batch_size, args.num_generations
    k, GA = args.steps_per_generation, args.gradient_accumulation_steps
    sampler = RepeatSampler(dataset_size, G,
                            prompts_per_generation(B, k, G), k, seed)
    micro_steps = max_steps * GA
    order, batches = [], []
    indices = iter(sampler)
    for _ in range(micro_steps):  # the sampler restarts at each epoch
        batch = [next(indices, None) for _ in range(B * k)]
        if None in batch:
            sampler.set_epoch(sampler.epoch + 1)
            indices = iter(sampler)
            batch = [next(indices) for _ in range(B * k)]
        order += batch
        batches.append(batch)
    steps = range(micro_steps)
    return {"order": order, "batches": batches,
            "generation": [m // k for m in steps],
            "slice": [m % k for m in steps],
            "optimizer_step": [m // GA for m in steps],
            "micro_steps": micro_steps,
            "generate_calls": -(-micro_steps // k)}


ROW_INCHES = 0.2  # a row of the sampler's grid: room for a small label


def draw_sampler_plan(figure, per_device_train_batch_size=8,
                      num_generations=4, steps_per_generation=4,
                      gradient_accumulation_steps=1, max_steps=8):
    figure.clear()
    ax = figure.subplots()
    try:
        plan = sampler_plan(per_device_train_batch_size, num_generations,
                            steps_per_generation, gradient_accumulation_steps,
                            max_steps)
    except ValueError as error:
        ax.text(0.5, 0.5, str(error), ha="center", va="center", wrap=True,
                transform=ax.transAxes)
        ax.set_axis_off()
        return figure
    B, k = per_device_train_batch_size, steps_per_generation
    # one row per micro-step, each tall enough for its labels (GA = 4 and
    # k = 8 make 32 rows)
    figure.set_size_inches(figure.get_figwidth(),
                           max(4.5, 1.6 + ROW_INCHES * plan["micro_steps"]))
    grid = torch.tensor(plan["batches"], dtype=torch.float32)  # (M, B·k)
    ax.imshow((grid % 20).numpy(), cmap="tab20", aspect="auto", vmin=0,
              vmax=19, interpolation="nearest")
    for m, j in enumerate(plan["slice"]):  # the slice this micro-step trains
        ax.add_patch(_box(j * B - 0.5, m - 0.5, B, 1))
        if j == 0:
            ax.text(-0.8, m, label("sampler_generate"), ha="right",
                    va="center",
                    fontsize="small", color="C3")
    for m, step in enumerate(plan["optimizer_step"]):
        if m and step != plan["optimizer_step"][m - 1]:
            ax.axhline(m - 0.5, color="k", lw=1.5)
    ax.set_yticks(range(plan["micro_steps"]),
                  [label("sampler_row", step=s, slice=j) for s, j in
                   zip(plan["optimizer_step"], plan["slice"])])
    ax.yaxis.tick_right()
    ax.set_xlabel(label("sampler_xlabel", rows=B * k))
    GA, N = gradient_accumulation_steps, max_steps
    ax.set_title(label("sampler_title", N=N, GA=GA, k=k,
                       calls=plan["generate_calls"]))
    figure.tight_layout()
    return figure


def _box(x, y, width, height):
    from matplotlib.patches import Rectangle
    return Rectangle((x, y), width, height, fill=False, lw=2, ec="k")


# --------------------------------------------------------- 05: the clip

def clip_surrogate(epsilon=0.2, advantage=1.0, ratios=None):
    """GRPO's per-token loss −min(ρA, clip(ρ, 1±ε)A) against the ratio ρ.

    Computed with `kit.losses.grpo_loss` on one one-token completion per
    ratio (log π − log π_old = log ρ), with its gradient with respect to
    log π: zero where the clip holds the ratio.

    Returns:
        {"ratios", "loss", "unclipped" (−ρA), "gradient"}: lists.
    """
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    ratios = (torch.linspace(0.2, 2.0, 181) if ratios is None
              else torch.as_tensor(ratios, dtype=torch.float32))
    out = {"ratios": ratios.tolist(), "loss": [], "gradient": [],
           "unclipped": (-ratios * advantage).tolist()}
    for ratio in ratios:
        logps = ratio.log().view(1, 1).requires_grad_(True)  # (B=1, T=1)
        loss = losses.grpo_loss(logps, torch.zeros(1, 1),
                                torch.tensor([float(advantage)]),
                                torch.ones(1, 1), epsilon=epsilon)
        loss.backward()
        out["loss"].append(loss.item())
        out["gradient"].append(logps.grad.item())
    return out


def draw_clip_surrogate(figure, epsilon=0.2, advantage="A > 0"):
    A = 1.0 if advantage == "A > 0" else -1.0
    data = clip_surrogate(epsilon, A)
    figure.clear()
    ax = figure.subplots()
    rho = data["ratios"]
    ax.axvspan(1 - epsilon, 1 + epsilon, color="0.9",
               label=label("clip_band", epsilon=epsilon))
    ax.plot(rho, data["unclipped"], "0.5", ls="--",
            label=label("clip_unclipped"))
    ax.plot(rho, data["loss"], "C0", lw=2.5, label=label("clip_loss"))
    flat = [r for r, g in zip(rho, data["gradient"]) if g == 0]
    if flat:
        ax.plot(flat, [data["loss"][rho.index(r)] for r in flat], "C3.",
                ms=4, label=label("clip_flat"))
    ax.set(xlabel=label("clip_xlabel"), ylabel=label("clip_ylabel"),
           title=label("clip_title", advantage=advantage, A=A),
           ylim=(-2.2, 2.2))
    ax.legend(fontsize="small", loc="lower left" if A > 0 else "upper left")
    figure.tight_layout()
    return figure


# ----------------------------------------------------- 07: the normalisers

# One optimizer step's completions, short to long, as notebook 07 draws them
NORM_LENGTHS = (2, 4, 6, 8, 12, 16, 20, 28)
NORM_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")


def normaliser_weights(lengths=NORM_LENGTHS, gradient_accumulation_steps=2,
                       max_completion_length=32, steps_per_generation=None):
    """Each loss type's weight on one token of each completion in a step.

    The step's completions (`lengths`, in order) are split into GA equal
    micro-batches. Each micro-batch goes through the kit's real loss
    (`kit.losses.GRPO_LOSSES`) with A = 1 on-policy, so a token's loss is
    −ρ and its weight is minus the gradient on its log-prob. As the Trainer
    does, the micro-batch losses of "grpo", "bnpo" and "dr_grpo" are divided
    by GA; "dapo" divides by the step's token count and is not.

    With `steps_per_generation` (k), also "dapo TRL 1.16": each
    micro-batch divided by its generation's tokens x GA / k (TRL 1.16's
    rescaled count, `kit.bench.normaliser_comparison`). A generation is k
    micro-batches; past this step's GA, the later ones hold completions half
    as long as this step's (cycled), so the rescaled count is exact only
    when k == GA.

    Returns:
        {"lengths", "tokens" (the step's count), and per loss type a list
        of per-token weights, one per completion}.
    """
    GA = gradient_accumulation_steps
    if GA < 1 or len(lengths) % GA:
        raise ValueError(f"gradient_accumulation_steps={GA} must divide the "
                         f"{len(lengths)} completions into equal micro-"
                         f"batches: use one of 1, 2, 4 or 8")
    if max(lengths) > max_completion_length:
        raise ValueError(f"max_completion_length={max_completion_length} is "
                         f"shorter than a completion ({max(lengths)})")
    tokens = sum(lengths)
    size = len(lengths) // GA
    out = {"lengths": list(lengths), "tokens": tokens}
    for name in NORM_TYPES:
        out[name] = []
        for start in range(0, len(lengths), size):
            chunk = torch.tensor(lengths[start:start + size])
            width = int(chunk.max())
            mask = (torch.arange(width) < chunk.unsqueeze(1)).float()
            logps = torch.zeros(len(chunk), width, requires_grad=True)
            extra = {"dr_grpo": {"max_completion_length":
                                 max_completion_length},
                     "dapo": {"num_items_in_batch": tokens}}.get(name, {})
            loss = losses.GRPO_LOSSES[name].fn(
                logps, logps.detach(), torch.ones(len(chunk)), mask,
                **extra)
            (loss if name == "dapo" else loss / GA).backward()
            out[name] += (-logps.grad[:, 0]).tolist()  # token 0: all alike
    if steps_per_generation:
        out["dapo TRL 1.16"] = _rescaled_dapo(lengths, GA,
                                              steps_per_generation)
    return out


def _rescaled_dapo(lengths, GA, k):
    """A token's weight when each micro-batch divides by its generation's
    tokens x GA / k, as TRL 1.16 does."""
    size = len(lengths) // GA
    step = [lengths[i:i + size] for i in range(0, len(lengths), size)]
    later = [[n // 2 or 1 for n in chunk] for chunk in step]
    timeline = step + later * (-(-k // GA))  # enough for one generation
    weights = []
    for i, chunk in enumerate(step):
        first = i - i % k  # the generation's first micro-batch
        tokens = sum(sum(c) for c in timeline[first:first + k])
        weights += [1 / (tokens * GA / k)] * len(chunk)
    return weights


def draw_normaliser_weights(figure, gradient_accumulation_steps=2,
                            max_completion_length=32, steps_per_generation=4):
    data = normaliser_weights(
        gradient_accumulation_steps=gradient_accumulation_steps,
        max_completion_length=max_completion_length,
        steps_per_generation=steps_per_generation)
    figure.clear()
    left, right = figure.subplots(1, 2)
    lengths = data["lengths"]
    for i, name in enumerate((*NORM_TYPES, "dapo TRL 1.16")):
        weights, style = data[name], f"C{i}o-" if i < 4 else "C3x:"
        left.plot(lengths, weights, style, label=name)
        right.plot(lengths, [w * n for w, n in zip(weights, lengths)],
                   style, label=name)
    left.set(xlabel=label("norm_xlabel"), ylabel=label("norm_weight_ylabel"),
             title=label("norm_weight_title",
                         GA=gradient_accumulation_steps,
                         k=steps_per_generation), yscale="log")
    right.set(xlabel=label("norm_xlabel"), ylabel=label("norm_total_ylabel"),
              title=label("norm_total_title", tokens=data["tokens"]))
    left.legend(fontsize="small")
    figure.tight_layout()
    return figure


# ------------------------------------------------------------ the widgets

def _png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


class Explorer:
    """Controls + one image: each change redraws the figure.

    `draws` counts redraws (the tests move a slider and look).
    """

    def __init__(self, draw, controls, size=(9, 3.6)):
        import ipywidgets as widgets
        self.draw, self.controls = draw, controls
        fonts()
        self.figure = Figure(figsize=size)
        self.image = widgets.Image(format="png")
        self.draws = 0
        for control in controls.values():
            control.observe(self.redraw, names="value")
        # controls wrap onto a second line rather than squeeze each other
        row = widgets.HBox(list(controls.values()),
                           layout={"flex_flow": "row wrap"})
        self.widget = widgets.VBox([row, self.image])
        self.redraw()

    def values(self):
        return {name: c.value for name, c in self.controls.items()}

    def redraw(self, change=None):
        legibly(self.draw, self.figure, **self.values())
        self.image.value = _png(self.figure)
        self.draws += 1

    def _ipython_display_(self):  # ipywidgets 7 and 8 alike
        from IPython.display import display
        display(self.widget)


def _show(draw, controls, size=(9, 3.6)):
    """A live widget, or where no frontend is live one static figure."""
    if headless():
        defaults = {name: c.value for name, c in controls.items()}
        return legibly(draw, LiveFigure(figsize=size), **defaults)
    return Explorer(draw, controls, size)


def legibly(draw, figure, **values):
    """`draw`, then no text smaller than the notebook's (kit.live)."""
    draw(figure, **values)
    _legible(figure)
    figure.tight_layout()
    return figure


# A slider's width: its label (about 8 px a column; a CJK character takes
# two), a track, a readout.
TRACK_PX, READOUT_PX = 200, 60


def _slider(kind, description, **kwargs):
    """A slider whose label never eats its track: fixed widths, no shrink."""
    import ipywidgets as widgets
    label_px = max(24, 8 * width(description))
    style = {"description_width": f"{label_px}px"}
    layout = {"width": f"{label_px + TRACK_PX + READOUT_PX}px",
              "flex": "0 0 auto"}
    return getattr(widgets, kind)(description=description, style=style,
                                  layout=layout, continuous_update=False,
                                  **kwargs)


def explore_ga_split():
    """01: split 4 rows into micro-batches; see each token's weight."""
    return _show(draw_ga_split, {"split": _slider(
        "SelectionSlider", label("ga_slider"), options=GA_SPLITS,
        value="1+3")})


def explore_dpo():
    """03: move β, pick the loss; correct DPO against the snippet."""
    import ipywidgets as widgets
    return _show(draw_dpo_weights, {
        "beta": _slider("FloatLogSlider", "β", value=0.1, base=10, min=-2,
                        max=1, step=0.1, readout_format=BETA_FORMAT),
        "loss_type": widgets.Dropdown(
            options=sorted(losses.PREFERENCE_LOSSES), value="sigmoid",
            description="loss_type")}, size=(11, 3.6))


def explore_sampler():
    """04: batch size, G, k and GA -> what each micro-step trains on."""
    return _show(draw_sampler_plan, {
        "per_device_train_batch_size": _slider(
            "IntSlider", "per_device_train_batch_size", value=8, min=2,
            max=16, step=2),
        "num_generations": _slider("IntSlider", "G", value=4, min=2, max=8),
        "steps_per_generation": _slider("IntSlider", "k", value=4, min=1,
                                        max=8),
        "gradient_accumulation_steps": _slider("IntSlider", "GA", value=1,
                                               min=1, max=4),
    }, size=(11, 4.5))


def explore_clip():
    """05: move ε, flip the advantage's sign; see where the clip holds."""
    import ipywidgets as widgets
    return _show(draw_clip_surrogate, {
        "epsilon": _slider("FloatSlider", "ε", value=0.2, min=0.05, max=0.5,
                           step=0.05),
        "advantage": widgets.ToggleButtons(options=["A > 0", "A < 0"],
                                           value="A > 0")})


def explore_normalisers():
    """07: GA, max_completion_length and k -> each loss type's weights."""
    return _show(draw_normaliser_weights, {
        "gradient_accumulation_steps": _slider(
            "SelectionSlider", "GA", options=(1, 2, 4, 8), value=2),
        "max_completion_length": _slider("IntSlider",
                                         "max_completion_length", value=32,
                                         min=28, max=64, step=4),
        "steps_per_generation": _slider(
            "SelectionSlider", "k", options=(1, 2, 4, 8), value=4),
    }, size=(11, 4))
