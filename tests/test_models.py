"""Devices, presets, tiny models and the starting policy."""

import pytest
import torch
from transformers import AutoTokenizer

from kit import models, runtime, tasks


def test_pick_device_prefers_an_accelerator():
    device = models.pick_device()
    expected = "cuda" if torch.cuda.is_available() else (
        "mps" if torch.backends.mps.is_available() else "cpu")
    assert device.type == expected


def test_tiny_model_is_seeded(tokenizer):
    a = models.tiny_model("cpu", seed=1, tokenizer=tokenizer)
    b = models.tiny_model("cpu", seed=1, tokenizer=tokenizer)
    c = models.tiny_model("cpu", seed=2, tokenizer=tokenizer)
    assert torch.equal(a.model.embed_tokens.weight, b.model.embed_tokens.weight)
    assert not torch.equal(a.model.embed_tokens.weight,
                           c.model.embed_tokens.weight)
    assert a.config.vocab_size == len(tokenizer)


def test_gpu_preset_is_larger():
    small = models.tiny_model("cpu").num_parameters()
    large = models.tiny_model("gpu").num_parameters()
    assert large > 10 * small


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="preset must be one of"):
        models.tiny_model("tpu")


def test_starting_policy_loads_offline_and_is_half_trained(policy):
    model, tokenizer = policy
    accuracy = models.greedy_accuracy(model, tokenizer,
                                      tasks.prompt_dataset("test"))
    # Room to improve for DPO and GRPO, yet clearly not random.
    assert 0.3 <= accuracy <= 0.6


def test_load_policy_from_a_local_folder(tmp_path, tokenizer):
    model = models.tiny_model("cpu", seed=5, tokenizer=tokenizer)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded, loaded_tokenizer = models.load_policy(str(tmp_path))
    batch = tokenizer(["12+34="], return_tensors="pt")
    with torch.no_grad():
        expected = model(**batch).logits
        actual = loaded(**batch).logits
    assert torch.allclose(expected, actual)
    assert loaded_tokenizer("1+1=")["input_ids"] == tokenizer("1+1=")["input_ids"]


def test_load_policy_gives_a_pad_token_when_the_tokenizer_has_none(tmp_path):
    tokenizer = tasks.make_tokenizer()
    models.tiny_model("cpu", tokenizer=tokenizer).save_pretrained(tmp_path)
    tokenizer.pad_token = None
    tokenizer.save_pretrained(tmp_path)
    assert AutoTokenizer.from_pretrained(tmp_path).pad_token is None
    _, loaded = models.load_policy(str(tmp_path))
    assert loaded.pad_token == loaded.eos_token


@pytest.mark.parametrize("name", ["./runs/typo", "runs/typo/",
                                  "/no/such/folder"])
def test_load_policy_says_a_missing_folder_does_not_exist(name):
    # once: "Repo id must be in the form 'repo_name' or 'namespace/...'"
    with pytest.raises(FileNotFoundError, match=f"folder {name} does not "
                                                "exist"):
        models.load_policy(name)


def test_loading_does_not_train(monkeypatch, tmp_path):
    """A missing starting policy is an error naming the build, not a build."""
    monkeypatch.setattr(models, "SHIPPED_POLICIES", tmp_path)
    with pytest.raises(FileNotFoundError,
                       match="python -m kit train sft --preset gpu"):
        models.load_policy(preset="gpu")
    assert list(tmp_path.iterdir()) == []


def test_the_gpu_starting_policy_ships_and_sits_in_the_band():
    """The same eval its recipe stops on: all 1000 held-out sums, greedy."""
    from kit.recipes import BAND
    model, tokenizer = models.load_policy(preset="gpu")
    assert model.dtype == torch.float32  # shipped as float16, trained in 32
    assert model.num_parameters() == models.tiny_model("gpu").num_parameters()
    accuracy = models.greedy_accuracy(model, tokenizer,
                                      tasks.prompt_dataset("test"))
    assert BAND[0] <= accuracy <= BAND[1]
    # the run that made it stopped at its first evaluation inside the band
    import json
    history = json.loads((models.policy_path("gpu") / "log_history.json")
                         .read_text())
    evals = [h["held_out_accuracy"] for h in history
             if "held_out_accuracy" in h]
    assert BAND[0] <= evals[-1] <= BAND[1]
    assert all(a < BAND[0] for a in evals[:-1])


def test_complete_returns_one_string_per_prompt(policy):
    model, tokenizer = policy
    completions = models.complete(model, tokenizer, ["01+01=", "10+20="])
    assert len(completions) == 2 and all(isinstance(c, str) for c in completions)


def test_the_starting_policy_is_rebuilt_from_the_repo_on_any_cpu(tmp_path,
                                                                 policy):
    """`python -m kit train sft` is the recipe the shipped policy came from.

    Not bit for bit: PyTorch picks its CPU kernels at run time, so another
    CPU rounds differently, and the sums are learned in a rush near the
    end (one AVX2 machine: 0.386 at step 700, 0.876 with
    ATEN_CPU_CAPABILITY=default). What holds on any CPU: the same model and
    the same first steps, and a stop at the first evaluation in the band.
    """
    import json
    from kit.recipes import BAND
    from kit.runs import build_starting_policy
    path = build_starting_policy("cpu", tmp_path)
    rebuilt, tokenizer = models.load_policy(str(path))
    def config(model):
        return {key: value for key, value in model.config.to_dict().items()
                if key != "_name_or_path"}
    assert config(rebuilt) == config(policy[0])
    history, shipped = (
        json.loads((folder / "log_history.json").read_text())
        for folder in (path, models.policy_path("cpu")))
    # the mean loss of the first 25 steps: same seed, data order and knobs
    first, first_shipped = (next(h for h in log if "loss" in h)
                            for log in (history, shipped))
    assert first["step"] == first_shipped["step"] == 25
    assert first["loss"] == pytest.approx(first_shipped["loss"], rel=1e-3)
    evals = [h["held_out_accuracy"] for h in history
             if "held_out_accuracy" in h]
    assert BAND[0] <= evals[-1] <= BAND[1]
    assert all(a < BAND[0] for a in evals[:-1])
    accuracy = models.greedy_accuracy(rebuilt, tokenizer,
                                      tasks.prompt_dataset("test"))
    assert accuracy == evals[-1]


def test_kit_preset_runs_everything_on_one_preset(monkeypatch):
    monkeypatch.setenv("KIT_PRESET", "gpu")
    assert models.check_preset("cpu") == "gpu"  # what make gpu-check needs
    assert models.default_preset() == "gpu"
    monkeypatch.setenv("KIT_PRESET", "tpu")
    with pytest.raises(ValueError, match="KIT_PRESET must be one of"):
        models.check_preset(None)


def test_notebooks_keep_torch_to_one_thread_on_the_toy_world(
        monkeypatch):
    """Two threads beside a browser on 2 cores: 150 steps in 80 s, not 3."""
    from kit.course import setup_notebook
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setenv("KIT_PRESET", "gpu")  # a real model: leave it be
        runtime.one_cpu_thread()
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("KIT_PRESET", "cpu")
        setup_notebook()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_trainers_share_the_encoded_sums_of_the_same_tokenizer(tmp_path):
    """Notebook 01 builds five trainers: the 9000 sums are encoded once."""
    from kit import recipes
    first, second = (recipes.sft_trainer("cpu", output_dir=tmp_path / name,
                                         max_steps=1)
                     for name in ("first", "second"))
    assert first.train_dataset is second.train_dataset
    other = tasks.make_tokenizer()
    other.add_tokens(["<pad2>"])  # another vocabulary: encoded on its own
    third = recipes.sft_trainer("cpu", output_dir=tmp_path / "third",
                                max_steps=1, tokenizer=other)
    assert third.train_dataset is not first.train_dataset
    assert third.train_dataset["input_ids"] == first.train_dataset["input_ids"]


def test_the_shipped_policy_is_read_once_and_handed_out_as_copies(
        tmp_path, monkeypatch):
    """load_policy() keeps the shipped policy it read and gives copies:
    what one caller trains, the next never sees; weights changed on disk
    are read again."""
    import shutil
    from safetensors.torch import load_file, save_file
    folder = tmp_path / "cpu"
    shutil.copytree(models.policy_path("cpu"), folder)
    monkeypatch.setattr(models, "policy_path", lambda preset=None: folder)

    def weights(model):
        return [p.detach().clone() for p in model.parameters()]
    first, tokenizer = models.load_policy(preset="cpu")
    shipped = weights(first)
    with torch.no_grad():
        for parameter in first.parameters():
            parameter.add_(1.0)  # one caller trains its copy
    tokenizer.pad_token = tokenizer.unk_token
    second, tokenizer2 = models.load_policy(preset="cpu")
    assert second is not first and tokenizer2.pad_token == "<pad>"
    assert all(torch.equal(a, b) for a, b in zip(weights(second), shipped))
    state = load_file(folder / "model.safetensors")
    save_file({k: v * 2 for k, v in state.items()},
              str(folder / "model.safetensors"))
    third, _ = models.load_policy(preset="cpu")
    assert not torch.equal(weights(third)[0], shipped[0])
