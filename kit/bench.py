"""`python -m kit bench`: what generating for k steps at once saves.

The same GRPO workload (the starting policy, one prompt x G=8 completions a
step, gradient accumulation 1) trains for the same number of optimizer steps
at each steps_per_generation k. The numbers are the trainer's own log:
GRPOTrainer's `generation/*` counters and `train_runtime`, medians of
`repeats` runs.

Why the measured saving is smaller than the ideal 1/k: k times fewer calls,
but each one generates for k times as many sequences, and the arithmetic of
every token step grows with the batch. What batching saves is the fixed cost
of each call and of each token step (Python, the sampling loop, kernel
launches) - most of the cost for a model this small, but not all of it.
"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from matplotlib.ticker import NullFormatter
from transformers.utils import logging

from kit import recipes
from kit.labels import label, rjust, width
from kit.live import LiveFigure

# the table's columns: a heading (kit.labels) and its width
COLUMNS = (("bench_k", 3), ("bench_calls", 15), ("bench_generation", 18),
           ("bench_total", 13), ("bench_tokens", 9), ("bench_ratio", 16))
KEYS = ("steps_per_generation", "generate_calls",
        "generation_seconds_per_step", "seconds_per_step", "tokens_per_second")


def one_run(k, steps, preset=None, seed=0):
    """Train the workload once; the last logged value of every key."""
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = recipes.grpo_trainer(  # model=None: a fresh policy per run
            preset, output_dir=output_dir, seed=seed, max_steps=steps,
            steps_per_generation=k, gradient_accumulation_steps=1,
            # One prompt x G=8 a step keeps each generate() small, so on a
            # CPU the fixed cost of a call dominates and serving k steps
            # from one call pays off. Bigger batches would hide it.
            per_device_train_batch_size=8, num_generations=8,
            # The recipe evaluates from step 0; we time training alone.
            eval_strategy="no", eval_on_start=False, logging_steps=steps,
            save_strategy="no", disable_tqdm=True)
        recipes.quiet(trainer).train()
    return {key: value for logs in trainer.state.log_history
            for key, value in logs.items()}


def check_ks(ks, steps=None):
    """One generation at k serves k steps of one prompt's 8 completions:
    k prompts, which the workload's train set must hold, and k steps,
    which each run must take."""
    from kit import tasks
    have = len(tasks.prompt_dataset("train"))
    if max(ks) > have:
        raise ValueError(
            f"bench: --k {max(ks)} needs {max(ks)} prompts a generation (one "
            f"prompt a step, k steps), and the workload has {have}: give k "
            f"at most {have}")
    # A run shorter than k stops inside its first generation: one call at
    # every such k, so the table compared runs that never reached k.
    if steps is not None and max(ks) > steps:
        raise ValueError(
            f"bench: --k {max(ks)} is more than --steps {steps}: a run of "
            f"{steps} steps ends before one generation has served its "
            f"{max(ks)} steps, so it never measures k = {max(ks)}: give "
            f"--steps {max(ks)} or more (or k at most {steps})")


def run(ks=(1, 2, 4, 8), repeats=5, steps=64, preset=None, seed=0):
    """Time the workload at each k.

    Returns:
        One dict per k with the keys in `KEYS`; timings are medians.
    """
    for name, value in (("repeats", repeats), ("steps", steps),
                        *(("k", k) for k in ks)):
        if value < 1:
            raise ValueError(f"bench: {name} must be 1 or more, got {value}")
    check_ks(ks, steps)
    # Untimed warm-up: the first run pays one-off costs (imports, loading
    # the policy from disk, allocator growth) that would land on k=ks[0].
    one_run(1, 2, preset, seed)
    # Interleave the ks in every repeat, so that a machine slowing down or
    # speeding up mid-benchmark touches every k alike.
    finals = {k: [] for k in ks}
    for _ in range(repeats):
        for k in ks:
            finals[k].append(one_run(k, steps, preset, seed))
    return [_row(k, steps, runs) for k, runs in finals.items()]


def _row(k, steps, runs):
    """One row of the table from the final logs of a k's runs."""
    median = statistics.median
    return {
        "steps_per_generation": k,
        "generate_calls": int(runs[0]["generation/calls"]),  # same every run
        "generation_seconds_per_step":
            median(r["generation/seconds"] for r in runs) / steps,
        "seconds_per_step": median(r["train_runtime"] for r in runs) / steps,
        "tokens_per_second": median(r["generation/tokens"]
                                    / r["generation/seconds"] for r in runs)}


def table(rows):
    """The rows as a plain-text table, each k's generation cost against k=1."""
    base = {r["steps_per_generation"]: r for r in rows}.get(1)
    headings = [label(key) for key, _ in COLUMNS]
    # a heading wider than its column (another language) widens it
    widths = [max(columns, width(heading))
              for heading, (_, columns) in zip(headings, COLUMNS)]
    lines = [" ".join(map(rjust, headings, widths))]
    for r in rows:
        gen = r["generation_seconds_per_step"]
        ratio = "-" if base is None else (
            f"{gen / base['generation_seconds_per_step']:.2f}")
        cells = [f"{r['steps_per_generation']}", f"{r['generate_calls']}",
                 f"{gen:.4f}", f"{r['seconds_per_step']:.4f}",
                 f"{r['tokens_per_second']:.0f}", ratio]
        lines.append(" ".join(map(rjust, cells, widths)))
    return "\n".join(lines)


def plot(rows):
    """Seconds per step against k beside generate() calls against k."""
    rows = sorted(rows, key=lambda r: r["steps_per_generation"])
    ks = [r["steps_per_generation"] for r in rows]
    figure = LiveFigure(figsize=(10, 3.6))
    cost_ax, calls_ax = figure.subplots(1, 2)
    generation = [r["generation_seconds_per_step"] for r in rows]
    cost_ax.plot(ks, generation, "o-", label=label("bench_measured"))
    cost_ax.plot(ks, [r["seconds_per_step"] for r in rows], "s-",
                 label=label("bench_whole"))
    cost_ax.plot(ks, [generation[0] * ks[0] / k for k in ks], "k--",
                 label=label("bench_ideal"))
    cost_ax.set(yscale="log", ylabel=label("bench_seconds"),
                title=label("bench_cost_title"))
    cost_ax.legend(fontsize="small")
    calls = [r["generate_calls"] for r in rows]
    calls_ax.plot(ks, calls, "o-")
    for k, n in zip(ks, calls):
        calls_ax.annotate(str(n), (k, n), (0, 6), textcoords="offset points")
    calls_ax.set(ylim=(0, max(calls) * 1.2),
                 ylabel=label("bench_calls_axis"),
                 title=label("bench_calls_title"))
    for ax in (cost_ax, calls_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(label("bench_xlabel"))
    figure.tight_layout()
    return figure


def main(ks=(1, 2, 4, 8), repeats=5, steps=64, preset=None, as_json=False,
         plot_path="runs/bench/bench.png"):
    """Run the benchmark, print the table (or JSON), save the plot.

    The numbers are printed before the plot is saved: a plot that cannot be
    written costs one line on stderr (exit 1), never the measurements.
    """
    logging.disable_progress_bar()  # no "Loading weights" bar per run
    logging.set_verbosity_error()
    rows = run(ks, repeats, steps, preset)
    print(json.dumps(rows) if as_json else table(rows), flush=True)
    plot_path = Path(plot_path)
    try:
        plot_path.parent.mkdir(parents=True, exist_ok=True)
        plot(rows).savefig(plot_path, dpi=100)
    except OSError as error:
        print(label("bench_not_saved", path=plot_path, error=error),
              file=sys.stderr)
        return 1
    if as_json:
        return 0
    print(label("bench_saved", path=plot_path))
    by_k = {r["steps_per_generation"]: r for r in rows}
    base, top = by_k.get(1, by_k[min(by_k)]), by_k[max(by_k)]
    if top is not base:
        k0, k = base["steps_per_generation"], top["steps_per_generation"]
        ratio = (top["generation_seconds_per_step"]
                 / base["generation_seconds_per_step"])
        print(label("bench_verdict", k=k, k0=k0, ratio=ratio,
                    ideal=k0 / k, calls=top["generate_calls"],
                    base_calls=base["generate_calls"]))
    return 0


# --------------------------------------- dapo's normaliser, kit against TRL
# TRL 1.16 divides a micro-batch's summed token losses by its generation
# batch's active tokens (gathered) / processes x GA / steps_per_generation;
# the kit by the active tokens of exactly this optimizer step's
# micro-batches, all processes together. Equal only when tokens spread
# evenly over the generation's k slices (TRL issue 5619, PR 6024).

def normaliser_comparison(B=8, GA=2, k=4, processes=1, T=16, steps=4,
                          seed=0, out=print):
    """Per optimizer step: the kit's exact count, TRL's rescaled one(s).

    Completion lengths are uneven (uniform in 1..T tokens). Counts are
    global (all processes), as both end up after DDP's average. Returns the
    rows (step, kit count, TRL counts, loss scale TRL / kit).
    """
    generator = torch.Generator().manual_seed(seed)
    micro_steps = steps * GA
    generations = -(-micro_steps // k)  # ceil
    # lengths[g, s, p]: active tokens of slice s of generation g, process p
    lengths = torch.randint(1, T + 1, (generations, k, processes, B),
                            generator=generator).sum(-1)
    rows = []
    out(f"B={B} GA={GA} k={k} processes={processes}, lengths 1..{T}")
    out(f"{'step':>4} {'kit count':>9} {'TRL count':>13} "
        f"{'TRL loss / kit loss':>20}")
    for step in range(steps):
        micro = range(step * GA, (step + 1) * GA)
        kit = sum(int(lengths[i // k, i % k].sum()) for i in micro)
        trl = sorted({int(lengths[i // k].sum()) * GA / k for i in micro})
        scale = [kit / count for count in trl]
        rows.append((step, kit, trl, scale))
        shown = "/".join(f"{count:g}" for count in trl)
        out(f"{step:>4} {kit:>9} {shown:>13} "
            f"{'/'.join(f'{s:.3f}' for s in scale):>20}")
    return rows


if __name__ == "__main__" and sys.argv[1:2] == ["--normaliser"]:
    # python -m kit.bench --normaliser: k != GA, then k < GA, then k == GA
    for B, GA, k in ((8, 2, 4), (4, 4, 2), (8, 2, 2)):
        normaliser_comparison(B=B, GA=GA, k=k)
