"""Run by tests/test_multiprocess.py under `accelerate launch --num_processes 2`.

Trains a few GRPO steps and writes, per process, what each generation saw:
the prompts in order, their rewards and the advantages the trainer computed.
"""

import json
import sys
from pathlib import Path

from kit import recipes, tasks
from kit.trainers import GRPOTrainer

out = Path(sys.argv[1])
seen = []


class Recording(GRPOTrainer):
    def _generate_and_score(self, rows, greedy=False):
        batch = super()._generate_and_score(rows, greedy)
        if not greedy:
            seen[-1]["advantages"] = batch["advantages"].tolist()
        return batch


def recording_reward(prompts, completions, answer, **columns):
    rewards = tasks.correctness_reward(prompts, completions, answer)
    seen.append({"prompts": list(prompts), "rewards": rewards})
    return rewards


trainer = recipes.grpo_trainer(
    "cpu", output_dir=out / "run", max_steps=6, steps_per_generation=2,
    per_device_train_batch_size=8, num_generations=4, eval_strategy="no",
    eval_on_start=False, trainer_class=Recording, disable_tqdm=True,
    reward_funcs=[recording_reward])
trainer.train()
rank = trainer.accelerator.process_index
generations = [s for s in seen if "advantages" in s]  # not the dry run
(out / f"rank{rank}.json").write_text(json.dumps({
    "processes": trainer.accelerator.num_processes,
    "calls": trainer._generation["calls"], "generations": generations}))
