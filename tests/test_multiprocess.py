"""Two processes on CPU (gloo): DPO and GRPO train together, groups intact.

accelerate 1.16 starts a single process for `--cpu` (several CPU processes
need mpirun there), so we launch with `--multi_gpu`; without a GPU the kit
asks for `use_cpu`, and the processes talk over gloo.
"""

import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kit import tasks
from kit.losses import group_advantages

pytestmark = pytest.mark.multiprocess
ACCELERATE = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
              "--num_processes", "2", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(*args):
    result = subprocess.run([*ACCELERATE, "--main_process_port",
                             str(free_port()), *args], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory):
    """One launch of two processes for every test (GRPO, SFT and DPO)."""
    out = tmp_path_factory.mktemp("runs")
    launch(str(Path(__file__).with_name("multiprocess_trainers.py")), str(out))
    return out


@pytest.fixture(scope="module")
def runs(runs_folder):
    return [json.loads((runs_folder / f"rank{r}.json").read_text())
            for r in (0, 1)]


def test_grpo_runs_in_two_processes(runs):
    assert [run["processes"] for run in runs] == [2, 2]
    # 6 steps, k = 2: three generations in each process
    assert [run["calls"] for run in runs] == [math.ceil(6 / 2)] * 2


def test_each_prompts_completions_stay_in_one_group(runs):
    G = 4
    for run in runs:
        for generation in run["generations"]:
            prompts = generation["prompts"]
            assert len(prompts) == 8 * 2  # per_device batch x k
            for start in range(0, len(prompts), G):
                assert len(set(prompts[start:start + G])) == 1
    for first, second in zip(*(run["generations"] for run in runs)):
        assert not set(first["prompts"]) & set(second["prompts"])


def test_advantages_are_computed_over_whole_groups(runs):
    for first, second in zip(*(run["generations"] for run in runs)):
        rewards = torch.tensor(first["rewards"] + second["rewards"])
        expected = group_advantages(rewards, 4)
        actual = torch.tensor(first["advantages"] + second["advantages"])
        assert torch.allclose(actual, expected, atol=1e-6)


def test_eval_reward_is_the_greedy_accuracy_in_two_processes(runs):
    # 10 prompts in batches of 4 over 2 processes: the last batch is padded
    # with repeated prompts, which must not count
    for run in runs:
        assert run["eval_reward"] == pytest.approx(run["greedy_accuracy"])


def test_causal_lm_trainer_updates_as_the_stock_trainer_does(runs):
    for run in runs:
        norms = run["update_norm"]
        assert norms["CausalLMTrainer"] == pytest.approx(norms["Trainer"],
                                                         rel=1e-4)


def test_dapo_step_gradient_is_the_one_process_gradient(runs):
    # each process serves half of 16 completions of uneven lengths; the
    # count is summed over processes, so DDP's mean is dapo on all 16
    assert [run["dapo_step_distance"] <= 1e-6 for run in runs] == [True] * 2


def test_two_processes_save_and_resume_grpo_exactly(runs):
    # each rank saved its own grpo_state_<rank>.pt, and both load theirs
    assert [run["resumed_exactly"] for run in runs] == [True, True]


def test_dpo_trains_in_two_processes(runs_folder):
    # `kit train dpo --max-steps 4`, run by each process of the same launch
    assert [json.loads((runs_folder / f"dpo_rank{r}.json").read_text())
            for r in (0, 1)] == [{"exit": 0}] * 2
    folder = runs_folder / "dpo"
    history = json.loads((folder / "log_history.json").read_text())
    assert (folder / "model.safetensors").exists()
    # 4 steps of 2 x 64 pairs over the training pairs: twice one process's
    pairs = len(tasks.preference_dataset("train", every_near_miss=True))
    batches_per_epoch = math.ceil(pairs / (2 * 64))
    assert history[-1]["epoch"] == pytest.approx(4 / batches_per_epoch)
    assert "eval_rewards/accuracies" in history[0]


def test_a_resume_refused_on_one_process_stops_both_with_its_line(runs):
    assert [run["refused_resume"] for run in runs] == [
        "cannot resume from CHECKPOINT: grpo_state_1.pt is missing, so the "
        "run would not continue as it was: copy the whole checkpoint "
        "folder, or start a new run"] * 2


def test_a_reward_refused_on_one_process_stops_both(runs):
    # before, the first process waited in the gather for ever
    assert [run["refused_reward"] for run in runs] == [
        "reward function short_on_rank_1 returned 1 values for 16 "
        "completions: return a list with one float per completion"] * 2
