"""`python -m kit bench`: what batching generation over k steps saves.

The same GRPO workload trains for the same number of optimizer steps with
steps_per_generation = k for each k asked for; the trainer's own counters
(`generation/calls`, `generation/seconds`, `generation/tokens`) give the
cost of generation. Each timing is the median of `repeats` runs.

Why the measured saving is smaller than the ideal 1/k: one generate() call
over k times as many sequences costs more than one call over the base
batch, because the compute of every token step grows with the batch. What
batching saves is the fixed cost of each call and of each token step
(Python, kernel launches), which dominates for small models — on a CPU
with the "cpu" preset most of it, on a GPU even more.
"""

import json
import statistics
import tempfile
import time
from pathlib import Path

from matplotlib.ticker import NullFormatter
from transformers.utils import logging

from kit import recipes
from kit.live import LiveFigure

KEYS = ("steps_per_generation", "generate_calls",
        "generation_seconds_per_step", "seconds_per_step", "tokens_per_second")


def _one_run(k, steps, preset, seed):
    # One prompt x G=8 completions a step keeps each generate() small, as in
    # RL with long completions, where the batch per step is what fits.
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = recipes.grpo_trainer(
            preset, output_dir=output_dir, seed=seed, max_steps=steps,
            steps_per_generation=k, per_device_train_batch_size=8,
            num_generations=8, eval_strategy="no", eval_on_start=False,
            logging_steps=steps, disable_tqdm=True)
        recipes.quiet(trainer)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    generation = trainer._generation
    return {"generate_calls": generation["calls"],
            "generation_seconds": generation["seconds"],
            "tokens": generation["tokens"], "seconds": seconds}


def _median(runs, key):
    return statistics.median(run_[key] for run_ in runs)


def run(ks=(1, 2, 4, 8), repeats=5, steps=64, preset=None, seed=0):
    """One row per k, with the median of `repeats` timed runs."""
    _one_run(1, 2, preset, seed)  # warm-up: first-call costs, untimed
    # Interleave the ks in every repeat, so that a machine slowing down or
    # speeding up mid-benchmark touches every k alike.
    by_k = {k: [] for k in ks}
    for _ in range(repeats):
        for k in ks:
            by_k[k].append(_one_run(k, steps, preset, seed))
    rows = []
    for k, runs in by_k.items():
        for run_ in runs:
            run_["tokens_per_second"] = run_["tokens"] / run_["generation_seconds"]
        rows.append({
            "steps_per_generation": k,
            "generate_calls": runs[0]["generate_calls"],
            "generation_seconds_per_step": _median(runs, "generation_seconds")
            / steps,
            "seconds_per_step": _median(runs, "seconds") / steps,
            "tokens_per_second": _median(runs, "tokens_per_second"),
        })
    return rows


def table(rows):
    """The rows as a plain-text table, with each k's saving against k=1."""
    base = {r["steps_per_generation"]: r for r in rows}.get(1)
    lines = [f"{'k':>3} {'generate calls':>15} {'generation s/step':>18} "
             f"{'total s/step':>13} {'tokens/s':>9} {'gen/step vs k=1':>16}"]
    for r in rows:
        ratio = "-"
        if base:
            saving = (r["generation_seconds_per_step"]
                      / base["generation_seconds_per_step"])
            ratio = f"{saving:.2f}"
        lines.append(
            f"{r['steps_per_generation']:>3} {r['generate_calls']:>15} "
            f"{r['generation_seconds_per_step']:>18.4f} "
            f"{r['seconds_per_step']:>13.4f} {r['tokens_per_second']:>9.0f} "
            f"{ratio:>16}")
    return "\n".join(lines)


def plot(rows):
    """Seconds per step against k, measured, with the ideal 1/k."""
    ks = [r["steps_per_generation"] for r in rows]
    figure = LiveFigure(figsize=(10, 3.6))
    cost_ax, calls_ax = figure.subplots(1, 2)
    generation = [r["generation_seconds_per_step"] for r in rows]
    cost_ax.plot(ks, generation, "o-", label="generation, measured")
    cost_ax.plot(ks, [r["seconds_per_step"] for r in rows], "s-",
                 label="whole step, measured")
    cost_ax.plot(ks, [generation[0] * ks[0] / k for k in ks], "k--",
                 label="generation, ideal 1/k")
    cost_ax.set(xscale="log", yscale="log", xlabel="steps_per_generation k",
                ylabel="seconds per optimizer step",
                title="cost per step (median)")
    calls_ax.bar([str(k) for k in ks], [r["generate_calls"] for r in rows])
    calls_ax.set(xlabel="steps_per_generation k", ylabel="generate() calls",
                 title="generate() calls in the run")
    cost_ax.set_xticks(ks, [str(k) for k in ks])
    cost_ax.xaxis.set_minor_formatter(NullFormatter())
    cost_ax.legend(fontsize="small")
    figure.tight_layout()
    return figure


def main(ks=(1, 2, 4, 8), repeats=5, steps=64, preset=None, as_json=False,
         plot_path="runs/bench/bench.png"):
    logging.disable_progress_bar()  # stdout is the table (or the JSON)
    logging.set_verbosity_error()
    rows = run(ks, repeats, steps, preset)
    plot_path = Path(plot_path)
    plot_path.parent.mkdir(parents=True, exist_ok=True)
    plot(rows).savefig(plot_path, dpi=100)
    if as_json:
        print(json.dumps(rows))
        return 0
    print(table(rows))
    print(f"plot saved to {plot_path}")
    first, last = rows[0], rows[-1]
    if len(rows) > 1:
        ratio = (last["generation_seconds_per_step"]
                 / first["generation_seconds_per_step"])
        ideal = first["steps_per_generation"] / last["steps_per_generation"]
        print(f"generation per step at k={last['steps_per_generation']} is "
              f"{ratio:.2f} of k={first['steps_per_generation']}'s (ideal "
              f"{ideal:.3f}: {last['generate_calls']} calls instead of "
              f"{first['generate_calls']})")
    return 0
