"""Run by tests/test_multiprocess.py under `accelerate launch --num_processes 2`.

Writes, per process, to OUT/rank<r>.json:
- GRPO: what each generation saw (the prompts in order, their rewards and
  the advantages the trainer computed), then the held-out `eval_reward` on
  10 prompts in batches of 4 (the processes pad the last batch) beside the
  greedy accuracy of the same model;
- SFT: the size of one SGD update with the stock Trainer and with
  CausalLMTrainer, from the same weights on the same batches;
- GRPO "dapo": one optimizer step's gradient (GA 2, k 2, uneven lengths),
  averaged over the processes as DDP does, and the one-process gradient of
  dapo on all the processes' completions together: their relative distance;
- GRPO saved and resumed as `kit train grpo` does, in two processes: whether the
  resumed run ends with the weights of the run that went on;
- DPO: `kit train dpo --max-steps 4` into OUT/dpo, through the command
  line's own entry point (in this launch: a second one would cost three
  more processes importing torch).
Also runs in one process (`python tests/multiprocess_trainers.py OUT`).
"""

import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import (DataCollatorForSeq2Seq, Trainer,
                          TrainingArguments)

from kit import cli, recipes, runs, tasks
from kit.losses import dapo_loss
from kit.models import greedy_accuracy, tiny_model
from kit.trainers import CausalLMTrainer, GRPOTrainer

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
    per_device_eval_batch_size=4, reward_funcs=[recording_reward])
trainer.train()
rank = trainer.accelerator.process_index
generations = [s for s in seen if "advantages" in s]  # not the dry run
held_out = tasks.prompt_dataset("test", n=10)
eval_reward = trainer.evaluate(held_out)["eval_reward"]
accuracy = greedy_accuracy(trainer.model, trainer.processing_class, held_out)


def update_norm(trainer_class):
    """How far one SGD step (lr 1, no clipping) moves the weights."""
    tokenizer = tasks.make_tokenizer()
    model = tiny_model("cpu", seed=0, tokenizer=tokenizer)
    data = tasks.sft_dataset("train", n=64).map(
        recipes.sft_features(tokenizer), remove_columns=["prompt",
                                                         "completion"])
    args = TrainingArguments(**recipes.common_args(
        out / "sft", seed=0, max_steps=1, optim="sgd", learning_rate=1.0,
        max_grad_norm=0.0, per_device_train_batch_size=8, disable_tqdm=True))
    before = [p.detach().clone() for p in model.parameters()]
    trainer_class(model=model, args=args, train_dataset=data,
                  processing_class=tokenizer,
                  data_collator=DataCollatorForSeq2Seq(tokenizer)).train()
    return torch.cat([(p.detach() - b).flatten() for p, b in
                      zip(model.parameters(), before)]).norm().item()


def dapo_step_distance():
    """dapo's step gradient over processes against one process on all."""
    acc = trainer.accelerator
    step = recipes.grpo_trainer(
        "cpu", output_dir=out / "dapo", loss_type="dapo", max_steps=1,
        per_device_train_batch_size=4, num_generations=4,
        gradient_accumulation_steps=2, steps_per_generation=2,
        eval_strategy="no", eval_on_start=False, disable_tqdm=True)
    model = step.model.train()
    rows = [row for row in tasks.prompt_dataset("train", n=4).to_list()
            for _ in range(4)]  # 16 completions, the same on every rank
    torch.manual_seed(0)
    whole = step._generate_and_score(rows)
    T = whole["completion_ids"].shape[1]
    lengths = torch.arange(16) % T + 1  # uneven: 1 .. T tokens
    whole["completion_mask"] = (torch.arange(T) < lengths[:, None]).long()
    whole["advantages"] = torch.randn(16, generator=torch.Generator()
                                      .manual_seed(1))
    used = 8 * acc.num_processes  # this launch's completions, all ranks
    whole = {key: None if v is None else v[:used] for key, v in whole.items()}
    mine = slice(8 * acc.process_index, 8 * acc.process_index + 8)
    step._generate_and_score = lambda rows, greedy=False: {
        key: None if v is None else v[mine] for key, v in whole.items()}
    batches, count = step.get_batch_samples(
        iter([[{}] * 8] * 2), 2, step.args.device)
    step.current_gradient_accumulation_steps = 2
    for batch in batches:
        step.training_step(model, batch, count)
    grad = torch.cat([p.grad.flatten() for p in model.parameters()
                      if p.grad is not None])
    grad = acc.reduce(grad, reduction="mean")  # what DDP applies
    model.zero_grad()
    logps = step._completion_logps(model, whole)
    mask = whole["completion_mask"]
    dapo_loss(logps, logps.detach(), whole["advantages"], mask,
              num_items_in_batch=mask.sum()).backward()
    one = torch.cat([p.grad.flatten() for p in model.parameters()
                     if p.grad is not None])
    return ((grad - one).norm() / one.norm()).item()


def resumed_exactly():
    """The GRPO recipe saves at step 2 (mid-generation: k = 4), then
    resumes from it, each process from its own buffer file: the weights at
    step 4 are those of the run that went on."""
    saved, resumed = out / "grpo_saved", out / "grpo_resumed"
    # what `kit train` runs (it ends the process group: not twice in one)
    runs.run("grpo", saved, max_steps=4, save_steps=2, disable_tqdm=True)
    try:
        runs.run("grpo", resumed, max_steps=4, disable_tqdm=True,
                 resume_from_checkpoint=str(saved / "checkpoint-2"))
    except ValueError as refused:
        return str(refused)
    trainer.accelerator.wait_for_everyone()  # rank 0 writes the weights
    first, second = (load_file(folder / "model.safetensors")
                     for folder in (saved, resumed))
    return first.keys() == second.keys() and all(
        torch.equal(first[key], second[key]) for key in first)


def refused_resume():
    """A two-process checkpoint with the second process's buffer file gone:
    both processes stop with the one line that names it (before, the first
    went on into its collectives, and its traceback ended the launch)."""
    checkpoint = out / "grpo_one_state" / "checkpoint-2"
    if rank == 0:
        shutil.copytree(out / "grpo_saved" / "checkpoint-2", checkpoint)
        (checkpoint / "grpo_state_1.pt").unlink()
    trainer.accelerator.wait_for_everyone()
    try:
        runs.run("grpo", out / "grpo_refused", max_steps=4,
                 disable_tqdm=True, resume_from_checkpoint=str(checkpoint))
    except ValueError as refused:
        return str(refused).replace(str(checkpoint), "CHECKPOINT")
    return "resumed"


def refused_reward():
    """A reward of the wrong length at run time, on the second process
    only (TRL issue 6533's trap): both processes stop with its line."""
    def short_on_rank_1(prompts, completions, answer, **columns):
        rewards = tasks.correctness_reward(prompts, completions, answer)
        return rewards[:1] if rank == 1 and len(rewards) > 2 else rewards
    short_on_rank_1.__name__ = "short_on_rank_1"
    refusing = recipes.grpo_trainer(
        "cpu", output_dir=out / "short", max_steps=1,
        per_device_train_batch_size=4, num_generations=4,
        eval_strategy="no", eval_on_start=False, disable_tqdm=True,
        reward_funcs=[short_on_rank_1])
    try:
        refusing.train()
    except ValueError as refused:
        return str(refused)
    return "trained"


(out / f"rank{rank}.json").write_text(json.dumps({
    "processes": trainer.accelerator.num_processes,
    "calls": trainer._generation["calls"], "generations": generations,
    "eval_reward": eval_reward, "greedy_accuracy": accuracy,
    "dapo_step_distance": dapo_step_distance(),
    "resumed_exactly": resumed_exactly(),
    "refused_resume": refused_resume(),
    "refused_reward": refused_reward(),
    "update_norm": {"Trainer": update_norm(Trainer),
                    "CausalLMTrainer": update_norm(CausalLMTrainer)}}))
dpo = cli.main(["train", "dpo", "--max-steps", "4", "--output-dir",
                str(out / "dpo")])
(out / f"dpo_rank{rank}.json").write_text(json.dumps({"exit": dpo}))
# Take the process group down before exiting, as accelerate asks: left to
# interpreter exit, one rank once aborted ("terminate called without an
# active exception") under load.
trainer.accelerator.end_training()
