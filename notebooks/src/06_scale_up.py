# %% [markdown]
# # 06 · Scale up: the GPU preset, a real model, several processes
#
# **You will:** run the trainers you built on a bigger preset (on a GPU,
# if you have one) and on a real instruct model from the Hub (if you are
# online); see how the cost of generation changes; launch several
# processes; meet the errors the kit gives for bad input; and give DPO a
# LoRA policy whose reference costs no second model (★, one method).
#
# **Time:** 15 minutes; the cells run in about 15 seconds on two CPU cores
# (offline), a few minutes on a GPU with the real model.

# %%
import contextlib

from kit import doctor, recipes, tasks
from kit.checks import check, hint, solution
from kit.course import setup_notebook
from kit.labels import say  # a line in the notebook's language
from kit.live import LivePlotCallback
from kit.models import PRESETS, default_preset, load_policy, pick_device
from kit.trainers import DPOConfig, DPOTrainer, GRPOConfig

setup_notebook()
preset = default_preset()
online = doctor.is_online()
print(f"device {pick_device()}, preset {preset!r}, "
      f"{'online' if online else 'offline'}")

# %% [markdown]
# ## Presets
#
# The `"gpu"` preset is the same Llama, about 30 times larger. Its starting
# policy ships with the kit (`kit/policies/gpu`, 8 MB): the course's SFT
# recipe stopped at the first held-out check inside the 0.3-0.6 band.
# `load_policy(preset="gpu")` only loads it; it never trains.

# %%
for name, sizes in PRESETS.items():
    print(f"{name:>4}: {sizes}")

# %% [markdown]
# ## GRPO on this machine's preset
#
# The recipe of notebook 05 on `preset`, generating every 4 steps. On a CPU
# the generation panel shows a few milliseconds per call; on a GPU the
# training step shrinks far more than generation does — token-by-token
# decoding is latency-bound — so the saw-tooth stands out even more, and
# batching generations over steps pays even more.

# %% tags=["train"]
trainer = recipes.grpo_trainer(
    preset, output_dir="runs/06_grpo", max_steps=120, eval_steps=40,
    callbacks=[LivePlotCallback(("reward",), title=f"GRPO, {preset} preset")])
recipes.quiet(trainer)
result = trainer.train()
print(f"global_step={result.global_step}, "
      f"train_runtime={result.metrics['train_runtime']:.0f} s, generation/"
      f"seconds={trainer.state.log_history[-1]['generation/seconds']:.2f}")

# %% [markdown]
# ## A real model from the Hub (online only)
#
# The same `GRPOTrainer` on a small instruct model and grade-school maths
# (GSM8K), mapped to the same `prompt` / `answer` format. The reward reads
# the last number of the completion. A few dozen steps will not make it a
# mathematician — watch the generation panel: real completions are long,
# and generation is now most of each step.

# %% tags=["train"]
if online:
    model, tokenizer = load_policy("HuggingFaceTB/SmolLM2-135M-Instruct")
    gsm8k = tasks.hub_prompt_dataset("openai/gsm8k", n=256,
                                     tokenizer=tokenizer)
    trainer = recipes.grpo_trainer(
        preset, output_dir="runs/06_hub", model=model, tokenizer=tokenizer,
        train_dataset=gsm8k, eval_strategy="no", eval_on_start=False,
        reward_funcs=[tasks.final_number_reward], max_steps=24,
        per_device_train_batch_size=16, num_generations=8,
        steps_per_generation=4, max_prompt_length=256,
        max_completion_length=128, learning_rate=1e-6, logging_steps=1,
        callbacks=[LivePlotCallback(("reward",), title="SmolLM2 · GSM8K")])
    recipes.quiet(trainer)
    trainer.train()
else:
    print(say("offline_hub_run"))

# %% [markdown]
# ## Several processes
#
# The trainers need no change to run data-parallel: each process gets its
# own share of every big batch (a whole number of groups, so advantages
# stay within a prompt's G completions), and rewards are gathered across
# processes. From a terminal:
#
# ```bash
# accelerate launch --multi_gpu --num_processes 2 -m kit train grpo
# accelerate launch --multi_gpu --num_processes 2 -m kit train dpo
# ```
#
# On a machine without a GPU these start two CPU processes that talk over
# gloo (the kit asks for `use_cpu` when there is no accelerator; with
# accelerate 1.16, `--cpu` alone starts only one process). The tests run
# both commands.
#
# ## Nothing is lost
#
# `python -m kit train grpo --save-steps 10` writes checkpoints; `--resume-
# from-checkpoint runs/grpo/checkpoint-10` continues to the same weights and
# the same log history as a run never stopped — GRPO's generation buffer
# and counters are saved with the checkpoint, since a checkpoint can fall
# in the middle of a generation.
#
# ## Bad input gets a clear error
#
# Every mistake is caught before training time is spent, with a message
# that names the field and the fix:

# %%
attempts = {  # what was tried: one generation per prompt, a batch that
    # splits a group, a negative beta, a reward of the wrong length, a
    # dataset without its prompt column
    "num_generations=1": lambda: GRPOConfig(
        "runs/06_bad", num_generations=1),
    "per_device_train_batch_size=12, num_generations=8": lambda: GRPOConfig(
        "runs/06_bad", per_device_train_batch_size=12, num_generations=8),
    "DPOConfig(beta=-0.1)": lambda: DPOConfig("runs/06_bad", beta=-0.1),
    "reward_funcs=[lambda ...: [1.0]]": lambda: recipes.grpo_trainer(
        "cpu", output_dir="runs/06_bad",
        reward_funcs=[lambda prompts, completions, **columns: [1.0]]),
    "train_dataset=tasks.sft_dataset(...)": lambda: recipes.grpo_trainer(
        "cpu", output_dir="runs/06_bad",
        train_dataset=tasks.sft_dataset("train", n=64)),
}
for what, attempt in attempts.items():
    try:
        attempt()
    except ValueError as error:
        print(f"{what}:\n    {error}\n")

# %% [markdown]
# The README lists them all, in a table "What happens when…".
#
# ## How the real trainers extend `Trainer`
#
# The same move as yours — subclass, override a few methods — at scale.
# Read from TRL 1.16.0 (installed) and Axolotl 0.18.0 (commit 067b021c,
# pinned to transformers 5.14.1 and TRL 1.8.0). `_` marks a private
# method, one that may change without notice.
#
# | method | who overrides it | why |
# |---|---|---|
# | `compute_loss` | TRL DPO, TRL GRPO | the loss has no labels |
# | `compute_loss` | Axolotl | ORPO's loss; counts tokens per second |
# | `get_train_dataloader` | TRL GRPO | one big batch per k steps |
# | `_get_train_sampler` | TRL GRPO | each prompt G times, batch reused |
# | `_get_train_sampler` | Axolotl | sample packing (multipack) |
# | `_prepare_inputs` | TRL GRPO | generate, buffer, serve slices |
# | `_set_signature_columns_if_needed` | TRL DPO, TRL GRPO | keep own cols |
# | `_set_signature_columns_if_needed` | Axolotl | packing drops a mask |
# | `prediction_step` | TRL DPO, TRL GRPO | evaluate without labels |
# | `log` | TRL DPO, TRL GRPO, Axolotl | add their own metrics |
# | `training_step` | TRL DPO | activation offloading around it |
# | `training_step` | TRL GRPO | counts steps and step time |
# | `_save_checkpoint` | TRL DPO, TRL GRPO | a model card with each save |
# | `_save_checkpoint` | Axolotl | makes the folder; FSDP2 LoRA saves |
# | `_load_optimizer_and_scheduler` | TRL GRPO | adaptive entropy state |
# | `_load_rng_state` | Axolotl (all) | a resume fix not yet released |
# | `_save_optimizer_and_scheduler` | Axolotl | go on if FSDP can't save |
# | `create_optimizer`, `create_scheduler` | Axolotl (all) | its choices |
#
# Axolotl's DPO and GRPO trainers subclass TRL's and add its mixins
# ("Axolotl (all)"). Its `_save_checkpoint(self, model, trial, **kwargs)`
# takes `**kwargs`: when transformers 4.47 dropped that method's
# `metrics` argument, overrides without them broke (TRL PR 2288 and 3998,
# ms-swift PR 5646). The kit's own private overrides are checked by
# `python -m kit doctor` and its tests (`kit/private_methods.py`).
#
# TRL's `get_train_dataloader` (from the installed package) beside the
# kit's: the same change — a batch `steps_per_generation` times larger.

# %%
from kit.course import show
from kit.trainers import GRPOTrainer

try:
    import trl
except ImportError:
    print(say("trl_missing"))
else:
    print(f"TRL {trl.__version__}:")
    show(trl.GRPOTrainer.get_train_dataloader)
print("kit:")
show(GRPOTrainer.get_train_dataloader)

# %% [markdown]
# ## DPO with a LoRA policy: the reference for free
#
# On one GPU or on Colab, DPO usually trains a LoRA policy (peft): the
# base weights stay frozen and only small adapter matrices learn. Then DPO
# needs no second model. The reference, the policy as it started, is the
# same model with its adapter off. The two setups, on the toy model:

# %%
import copy
import subprocess
import sys

if "google.colab" in sys.modules:  # peft is the kit's [peft] extra
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "peft"])
try:
    import peft
except ImportError:
    peft = None
    print(say("peft_missing"))


def size(model):
    """(parameters, bytes) of a model's weights."""
    return (sum(w.numel() for w in model.parameters()),
            sum(w.numel() * w.element_size() for w in model.parameters()))


if peft is not None:
    base, _ = load_policy(preset="cpu")
    lora = peft.get_peft_model(copy.deepcopy(base), peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    count, nbytes = size(base)
    print(say("two_models", count=2 * count, megabytes=2 * nbytes / 1e6))
    count, nbytes = size(lora)
    trained = sum(w.numel() for w in lora.parameters() if w.requires_grad)
    print(say("lora_model", count=count, trained=trained,
              megabytes=nbytes / 1e6))

# %% [markdown]
# ## ★ Exercise: the reference with the adapter off
#
# `DPOTrainer.compute_loss` takes the reference log-probs with
# `with torch.no_grad(), self.reference(model) as reference:`. Write
# `reference(self, model)`, a context manager that yields the model to run
# for them: this LoRA policy with its adapter off. peft's model has one
# for that, `model.disable_adapter()`: inside it the adapter is off, and on
# again when the block ends. Left on, the reference is the policy itself:
# every log-ratio is 0 and the loss stays at log 2. Stuck?
# `hint("lora_reference", 1)` (levels 1 to 3).

# %%
class MyLoRADPOTrainer(DPOTrainer):
    @contextlib.contextmanager
    def reference(self, model):
        """The model to run for the reference: this policy, adapter off."""
        ### BEGIN SOLUTION
        with self.accelerator.unwrap_model(model).disable_adapter():
            yield model
        ### END SOLUTION


check("lora_reference", MyLoRADPOTrainer)

# %% [markdown]
# ## What you learned
#
# - Presets change sizes, not code: the trainers run as they are on a GPU,
#   on a Hub model, in several processes.
# - On a GPU generation dominates even more; `steps_per_generation` is the
#   lever.
# - Checkpoints carry everything a trainer keeps between steps.
# - A LoRA policy is its own DPO reference with its adapter off: one
#   `with model.disable_adapter():`, and no second model in memory.
