"""Notebook 07's "grpo" against "dapo", measured over seeds.

    python tools/lengthbias.py --seeds 0 1 2 [--steps N] [--set key=value]

Trains `recipes.loss_type_comparison` for each arm and seed (one process,
one after another) and prints, per log, the median over seeds of the
reward and `completions/mean_length`, then each seed's means over the last
half of the logs. Besides the trainer's own metrics it records the mean
length of the wrong completions (text characters + <eos>), where Dr.
GRPO's length bias should show first. --set passes recipe keywords
(learning_rate=3e-4, temperature=1.0: the course's own); values are read
as Python literals, a bare word as a reward of kit.tasks;
`--set importance_sampling_level=sequence` measures both arms as GSPO
(notebook 07 quotes both levels).
"""

import argparse
import ast
import statistics
import time

from kit import recipes

ARMS = ("grpo", "dapo")


class WrongLengths:
    """The course's reward, noting each call's mean wrong length."""

    def __init__(self, reward):
        self.reward, self.means = reward, []
        self.__name__ = reward.__name__  # its metric keeps its name

    def __call__(self, prompts, completions, **columns):
        rewards = self.reward(prompts, completions, **columns)
        wrong = [len(c) + 1 for c, r in zip(completions, rewards) if r < 1]
        if wrong:
            self.means.append(sum(wrong) / len(wrong))
        return rewards


def one_arm(loss_type, seed, steps, knobs):
    """-> (logs [(step, reward, mean_length)], wrong lengths, seconds)"""
    reward = knobs.pop("reward", None)
    reward = WrongLengths(reward or recipes.tasks.correctness_reward)
    if steps is not None:  # else the recipe's own
        knobs["max_steps"] = steps
    trainer = recipes.loss_type_comparison(
        loss_type, seed=seed, reward_funcs=(reward,),
        output_dir=f"runs/lengthbias/{loss_type}_{seed}", **knobs)
    recipes.quiet(trainer)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    logs = [(row["step"], row["reward"], row["completions/mean_length"])
            for row in trainer.state.log_history if "reward" in row]
    return logs, reward.means, seconds


def tail_mean(values):
    """Mean of the last half: one number per run, less noisy."""
    tail = values[-max(1, len(values) // 2):]
    return sum(tail) / len(tail)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    options = parser.parse_args(argv)
    knobs = {}
    for item in options.set:
        key, _, value = item.partition("=")
        try:
            knobs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            knobs[key] = value  # a word: a reward function's name
    if isinstance(knobs.get("reward"), str):
        knobs["reward"] = getattr(recipes.tasks, knobs["reward"])
    runs = {(arm, seed): one_arm(arm, seed, options.steps, dict(knobs))
            for seed in options.seeds for arm in ARMS}
    print("step  " + "  ".join(f"{arm}: reward  length" for arm in ARMS))
    steps = [step for step, _, _ in runs[ARMS[0], options.seeds[0]][0]]
    for i, step in enumerate(steps):
        cells = []
        for arm in ARMS:
            logs = [runs[arm, seed][0][i] for seed in options.seeds]
            cells.append(f"{statistics.median(r for _, r, _ in logs):12.3f}"
                         f"{statistics.median(n for _, _, n in logs):8.3f}")
        print(f"{step:4d}  " + "  ".join(cells))
    print("last half:     arm  seed  reward  length  wrong length  seconds")
    for (arm, seed), (logs, wrong, seconds) in runs.items():
        print(f"{arm:>18s} {seed:5d} {tail_mean([r for _, r, _ in logs]):7.3f}"
              f" {tail_mean([n for _, _, n in logs]):7.3f}"
              f" {tail_mean(wrong):13.3f} {seconds:8.1f}")


if __name__ == "__main__":
    main()
