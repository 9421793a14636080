"""Shared fixtures. Every test runs offline, on the toy world."""

import os

# Set before transformers / datasets are imported anywhere.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tokenizer():
    from kit.tasks import make_tokenizer
    return make_tokenizer()


@pytest.fixture(scope="session")
def policy():
    """The shipped starting policy: (model, tokenizer). Do not train it."""
    from kit.models import load_policy
    return load_policy(preset="cpu")
