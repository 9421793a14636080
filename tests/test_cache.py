"""kit.cache: made once a process, and a cached call says what the first
call said."""

import warnings

import pytest

from kit import cache


def made(calls, value="rows", warn=None):
    def make():
        calls.append(value)
        if warn:
            warnings.warn(warn, UserWarning)
        return value
    return make


def test_a_cached_call_gives_the_first_calls_warnings_again():
    table, calls = {}, []
    for _ in range(3):
        with pytest.warns(UserWarning, match="3 rows cut"):
            assert cache.remembered(table, "k", made(calls, warn="3 rows "
                                                            "cut")) == "rows"
    assert calls == ["rows"]  # made once


def test_no_key_is_made_afresh_and_kept_nowhere():
    table, calls = {}, []
    for _ in range(2):
        cache.remembered(table, None, made(calls))
    assert calls == ["rows", "rows"] and table == {}


def test_a_table_keeps_at_most_most_the_oldest_going_first():
    table = {}
    for key in range(6):
        cache.remembered(table, key, made([], key), most=4)
    assert list(table) == [2, 3, 4, 5]


def test_what_raised_is_not_kept_and_its_warnings_are_given():
    table = {}

    def broken():
        warnings.warn("a column is empty", UserWarning)
        raise ValueError("no rows")
    with pytest.warns(UserWarning, match="empty"), \
            pytest.raises(ValueError, match="no rows"):
        cache.remembered(table, "k", broken)
    assert table == {}


def test_a_file_is_loaded_again_once_it_changed(tmp_path):
    path, table, calls = tmp_path / "model.safetensors", {}, []
    path.write_bytes(b"1")
    for _ in range(2):
        cache.per_file(table, path, made(calls, "first"))
    path.write_bytes(b"22")  # another size: changed whatever the clock
    assert cache.per_file(table, path, made(calls, "second")) == "second"
    assert calls == ["first", "second"]


def test_tokenizers_that_encode_alike_share_a_key():
    from kit.tasks import make_tokenizer
    first, second = make_tokenizer(), make_tokenizer()
    assert first is not second
    assert cache.tokenizer_key(first) == cache.tokenizer_key(second)
    second.add_tokens(["<new>"])
    assert cache.tokenizer_key(first) != cache.tokenizer_key(second)
