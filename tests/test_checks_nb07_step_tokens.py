"""Notebook 07's ★★★ checker, get_batch_samples: the right answer in any
form passes; wrong answers not in the catalogue fail — over GA above, below
and equal to steps_per_generation, and two processes. (Each catalogued
mistake is named: test_checks_core, for every exercise.)"""

import pytest
import torch

from conftest import status
from kit.checks import EXERCISES
from kit.checks.nb07_step_tokens import MyTrainer, _prepared
from kit.trainers import GRPOTrainer

pytestmark = pytest.mark.usefixtures("lenient")

ID = "get_batch_samples"


class Reduced(GRPOTrainer):  # right: reduce instead of gather().sum()
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = torch.stack([b["completion_mask"].sum() for b in batches])
        return batches, self.accelerator.reduce(tokens.sum(), "sum")


class AsInt(GRPOTrainer):  # right: a Python int
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, _ = super().get_batch_samples(epoch_iterator, num_batches,
                                               device)
        batches = [self._prepare_inputs(b) for b in batches]
        tokens = sum(int(b["completion_mask"].sum()) for b in batches)
        return batches, int(self.accelerator.gather(
            torch.tensor(tokens)).sum())


class LastMicroBatch(GRPOTrainer):  # wrong, not in the catalogue
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = batches[-1]["completion_mask"].sum()
        return batches, self.accelerator.gather(tokens).sum()


class TimesGA(GRPOTrainer):  # wrong: one micro-batch's count x GA
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = batches[0]["completion_mask"].sum() * num_batches
        return batches, self.accelerator.gather(tokens).sum()


class Averaged(GRPOTrainer):  # wrong: the mean over processes
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = sum(b["completion_mask"].sum() for b in batches)
        return batches, self.accelerator.gather(tokens).float().mean()


class GeneratesItself(GRPOTrainer):  # wrong: around the buffer
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, _ = super().get_batch_samples(epoch_iterator, num_batches,
                                               device)
        batches = [self._generate_and_score(b) for b in batches]
        tokens = sum(b["completion_mask"].sum() for b in batches)
        return batches, self.accelerator.gather(tokens).sum()


class PreparedTwice(GRPOTrainer):  # wrong: serves two slices per batch
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        for batch in batches:
            self._prepare_inputs(batch)  # a dict passes; nothing is lost
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = sum(b["completion_mask"].sum() for b in batches)
        return batches, self.accelerator.gather(tokens).sum()


class ParentsCount(GRPOTrainer):  # wrong: the parent's count, None here
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, count = super().get_batch_samples(epoch_iterator,
                                                   num_batches, device)
        return [self._prepare_inputs(b) for b in batches], count


class BatchesOnly(GRPOTrainer):  # wrong: no count at all
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        return _prepared(self, epoch_iterator, num_batches, device)


class Stub(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        raise NotImplementedError


@pytest.mark.parametrize("answer", [MyTrainer, Reduced, AsInt])
def test_right_answers_pass(answer):
    assert status(ID, answer) == "passed"


@pytest.mark.parametrize("wrong", [LastMicroBatch, TimesGA, Averaged,
                                   GeneratesItself, PreparedTwice])
def test_wrong_answers_outside_the_catalogue_fail(wrong):
    assert status(ID, wrong) == "failed"


@pytest.mark.parametrize("wrong", [ParentsCount, BatchesOnly])
def test_a_missing_count_is_the_learners_and_says_what_to_return(wrong,
                                                                 capsys):
    assert status(ID, wrong) == "failed"
    out = capsys.readouterr().out
    assert "return (batches, count)" in out and "checker" not in out


def test_the_stub_is_not_attempted():
    assert status(ID, Stub) == "not attempted"


def test_the_kits_own_override_counts_the_same_under_dapo(tmp_path):
    # the checker runs loss_type "grpo", where the kit's override steps
    # aside; under "dapo" the kit's own must be the solution it grades by
    from kit.checks.nb04_grpo_dataloader import _trainer, first_problem
    from kit.checks.nb07_step_tokens import _step_facts
    kit = _trainer(GRPOTrainer, k=4, batch=4, G=2, GA=2, loss_type="dapo")
    solution = _trainer(MyTrainer, k=4, batch=4, G=2, GA=2)
    seen = []
    for trainer in (kit, solution):
        torch.manual_seed(0)
        seen.append(first_problem(_step_facts(trainer, 4, 2, index=1)))
    assert "problem" not in seen[0] and seen[0] == seen[1]


def test_it_is_notebook_07s_third_exercise():
    exercise = EXERCISES[ID]
    assert (exercise.notebook, exercise.number, exercise.stars) == (
        "07_loss_types", 3, 3)


class MeanMask(GRPOTrainer):  # wrong, unnamed: the mask's mean, not sum
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = sum(b["completion_mask"].float().mean() for b in batches)
        return batches, self.accelerator.gather(tokens).sum()


def test_an_unnamed_wrong_count_gets_the_counting_hint_first(capsys):
    # it prepared its batches: "prepare first" would not fit
    assert status(ID, MeanMask) == "failed"
    out = capsys.readouterr().out
    assert "hint 1/4: Count active tokens" in out, out
