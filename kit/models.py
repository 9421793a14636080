"""Tiny models of a preset's size, the starting policy, and asking them.

The presets' sizes, run paths and the device and thread choice live in
`kit.runtime` (light to import: the command line reads PRESETS); their
names are re-exported here, where the course first used them.
"""

import copy
import os
from pathlib import Path

import torch
from transformers import (AutoModelForCausalLM, AutoTokenizer, LlamaConfig,
                          LlamaForCausalLM)

from kit import cache
# The names notebooks import from here (DESIGN.md's kit.models); they are
# defined in kit.runtime, which the CLI reads without waiting for torch.
from kit.runtime import (PRESETS, default_preset,  # noqa: F401
                         pick_device, run_path)
from kit.tasks import make_tokenizer

# The starting policies of both presets ship with the kit: "cpu" (half a MB)
# and "gpu" (8 MB, its weights stored as float16). `kit.recipes` makes them.
SHIPPED_POLICIES = Path(__file__).parent / "policies"


def check_preset(preset):
    """The preset to use; KIT_PRESET wins over what the caller asks for.

    `make gpu-check` sets KIT_PRESET=gpu to run every notebook, its "cpu"
    calls included, on the "gpu" preset.
    """
    forced = os.environ.get("KIT_PRESET")
    preset = forced or preset or default_preset()
    if preset not in PRESETS:
        where = "the environment variable KIT_PRESET" if forced else "preset"
        raise ValueError(f"{where} must be one of {sorted(PRESETS)}, "
                         f"got {preset!r}")
    return preset


def tiny_model(preset=None, seed=0, tokenizer=None):
    """A randomly initialised Llama of the preset's size for our tokenizer."""
    tokenizer = tokenizer or make_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer), max_position_embeddings=64,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True, **PRESETS[check_preset(preset)])
    torch.manual_seed(seed)  # the init draws from torch's global generator
    return LlamaForCausalLM(config)


def policy_path(preset=None):
    """Where the starting policy of a preset ships."""
    return SHIPPED_POLICIES / check_preset(preset)


def _looks_like_a_path(name):
    """'./runs/x', '/abs', '~/m', 'runs/x/' or 'a/b/c': not a Hub id."""
    return (name.startswith((".", "/", "~")) or name.endswith("/")
            or name.count("/") > 1 or os.sep != "/" and os.sep in name)


SAVING = ".saving"  # kit.runs.save's staging folder, inside a run's


def load_policy(name_or_path=None, preset=None):
    """Load a causal LM and its tokenizer -> (model, tokenizer).

    Args:
        name_or_path: a local folder or a Hub id. None means the course's
            starting policy: a tiny model fine-tuned on the addition task
            until it gets roughly half of the held-out sums right.
        preset: which starting policy ("cpu" or "gpu") when name_or_path is
            None; defaults to the one that suits this machine.
    """
    if name_or_path is None:
        preset = check_preset(preset)
        name_or_path = policy_path(preset)
        if not (name_or_path / "config.json").exists():
            # Loading does not train: building is the recipe's job.
            raise FileNotFoundError(
                f"no {preset!r} starting policy in {name_or_path}: build it "
                f"with `python -m kit train sft --preset {preset} "
                f"--output-dir {name_or_path}`")
        return _shipped_copy(name_or_path)
    if not Path(name_or_path).expanduser().exists() and _looks_like_a_path(
            str(name_or_path)):
        raise FileNotFoundError(
            f"load_policy: the folder {name_or_path} does not exist; give "
            f"an existing local folder or a Hub id like 'org/model'")
    staging = Path(name_or_path).expanduser() / SAVING
    if staging.is_dir():  # kit.runs.save was cut short as it moved files
        raise FileNotFoundError(
            f"load_policy: the final save into {name_or_path} was cut short "
            f"while its files moved in ({SAVING}/ still holds "
            f"{', '.join(sorted(p.name for p in staging.iterdir())) or 'none'}"
            "): run the training into it again (or resume from its latest "
            "checkpoint)")
    return _load(name_or_path)


def _shipped_copy(folder):
    """A fresh copy of a shipped starting policy, loaded once a process.

    The checkers ask for it hundreds of times: a copy takes 2 ms, a load
    17 ms. Weights changed on disk are loaded again.
    """
    # "gpu" ships as float16: the course trains in float32
    model, tokenizer = cache.per_file(
        cache.LOADED, folder / "model.safetensors",
        lambda: _load(folder, dtype=torch.float32))
    return copy.deepcopy(model), copy.deepcopy(tokenizer)


def _load(name_or_path, **options):
    model = AutoModelForCausalLM.from_pretrained(name_or_path, **options)
    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    if tokenizer.pad_token is None:
        # Many Hub tokenizers have none; batching needs one, and eos is the
        # usual stand-in (it is masked out of every loss by attention_mask).
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


# ------------------------------------------------- asking a model questions

@torch.no_grad()
def complete(model, tokenizer, prompts, max_new_tokens=4, greedy=True,
             temperature=1.0):
    """Generate one completion per prompt and return them as strings."""
    batch = tokenizer(list(prompts), return_tensors="pt", padding=True,
                      padding_side="left").to(model.device)
    was_training = model.training
    model.eval()
    out = model.generate(
        **batch, max_new_tokens=max_new_tokens, do_sample=not greedy,
        temperature=None if greedy else temperature, top_p=None, top_k=None,
        pad_token_id=tokenizer.pad_token_id)
    model.train(was_training)
    new_tokens = out[:, batch["input_ids"].shape[1]:]
    return tokenizer.batch_decode(new_tokens, skip_special_tokens=True)


def greedy_accuracy(model, tokenizer, dataset, batch_size=256):
    """Share of `dataset` prompts whose greedy completion is the `answer`."""
    right = 0
    for start in range(0, len(dataset), batch_size):
        rows = dataset[start:start + batch_size]
        completions = complete(model, tokenizer, rows["prompt"])
        right += sum(c.strip() == str(a).strip()  # ints match as text
                     for c, a in zip(completions, rows["answer"]))
    return right / len(dataset)
