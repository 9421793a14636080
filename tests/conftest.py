"""Shared fixtures. Every test runs offline, on the toy world."""

import gc
import os

# Set before transformers / datasets are imported anywhere.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


def pytest_collection_finish(session):
    """Every Trainer.train() starts with a full gc.collect() (accelerate's
    free_memory): with torch, transformers and the test modules imported,
    0.2-0.4 s a call, about 30 s a suite. What is alive once the tests are
    collected stays alive; frozen, the collector skips it."""
    gc.freeze()


@pytest.fixture(scope="session")
def tokenizer():
    from kit.tasks import make_tokenizer
    return make_tokenizer()


@pytest.fixture(scope="session")
def policy():
    """The shipped starting policy: (model, tokenizer). Do not train it."""
    from kit.models import load_policy
    return load_policy(preset="cpu")


# ------------------------------------------------------ the checkers' tests

@pytest.fixture
def lenient(monkeypatch):
    """check() reports instead of raising, and every hint ladder starts
    afresh. The checkers' test files use it on every test:
    `pytestmark = pytest.mark.usefixtures("lenient")`."""
    from kit.checks import EXERCISES
    monkeypatch.delenv("KIT_STRICT", raising=False)
    forget(EXERCISES.values())


def forget(exercises):
    """Start these exercises' hint ladders afresh, as a new kernel would."""
    for exercise in exercises:
        exercise.failures, exercise.last_help = 0, None


def status(exercise_id, candidate):
    """The verdict check() gives, as a word ("passed", "failed", ...).
    A plain helper, imported by the tests: `from conftest import status`."""
    from kit import checks
    return checks.check(exercise_id, candidate).status


def missing_japanese():
    """The checkers' message keys with no Japanese text yet: a test of the
    Japanese edition can require `missing_japanese() == []`."""
    from kit.checks.messages import MESSAGES
    from kit.i18n import missing
    return missing(MESSAGES, "ja")
