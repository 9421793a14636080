"""Process-wide caches: what the course builds again and again from equal
inputs, made once a process. The trainers and recipes call these; a learner
reading them needs nothing from here.

Notebook 03 and the tests build several DPO trainers on the same 72k pairs
(checking and tokenising them: ~10 s of CPU each time), notebook 01 five
trainers on the same 9000 sums (2.5 s each), and the checkers ask for the
shipped starting policy hundreds of times (a copy takes 2 ms, a load 17 ms).
Datasets are never changed in place, so trainers can share one.
"""

import warnings

# (dataset fingerprint, its name, max_length, tokenizer) -> (rows, warnings)
TOKENISED = {}
# (split, n, seed, tokenizer) -> encoded rows
SFT_ROWS = {}
# a weights file -> (its size and time, what was loaded from it)
LOADED = {}


def tokenizer_key(tokenizer):
    """Equal for tokenizers that encode alike: the same rules and vocabulary
    (the fast tokenizer's JSON) and the same eos token; else this one."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return (backend.to_str() if backend else id(tokenizer),
            tokenizer.eos_token_id)


def once(table, key, make):
    """make()'s result for `key`, made once a process."""
    if key not in table:
        table[key] = make()
    return table[key]


def remembered(table, key, make, most=None):
    """make()'s result, made once a process for each `key` and kept with
    the warnings it gave, which are given again at every call, as if it
    were made afresh. A key of None: made afresh, kept nowhere. `most`:
    how many results `table` keeps (the oldest goes first)."""
    if key is not None and key in table:
        result, caught = table[key]
        _replay(caught)
        return result
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = make()
    except Exception:  # the warnings still say what else is wrong
        _replay(caught)
        raise
    if key is not None:
        while most is not None and len(table) >= most:
            table.pop(next(iter(table)))
        table[key] = result, caught
    _replay(caught)
    return result


def per_file(table, path, load):
    """load()'s result for the file `path`, loaded again only when the
    file changed on disk (its size or time)."""
    found = path.stat()
    stamp = (found.st_size, found.st_mtime_ns)
    if table.get(path, (None,))[0] != stamp:
        table[path] = (stamp, load())
    return table[path][1]


def _replay(caught):
    # stacklevel 5: the code that built the trainer (through remembered,
    # its caller, and the trainer's __init__)
    for warning in caught:
        warnings.warn(warning.message, warning.category, stacklevel=5)
