"""The language the kit speaks: English, or Japanese when a notebook asks.

Every string a learner reads (verdicts, hints, plot labels, report
headings) lives in one table per module family, shaped
`{"en": {key: text}, "ja": {key: text}}`, and is looked up with
`text(TABLE, key, **fields)`. A missing Japanese entry falls back to
English; `missing(TABLE)` lists them, so a test can insist there are none.

    setup_notebook(lang="ja")      # a notebook switches the whole kit
    KIT_LANG=ja python -m kit ...  # so does the environment (grade's kernels)
"""

import os

LANGUAGES = ("en", "ja")
_current = "en"


def set_language(lang):
    """Make the kit speak `lang` ("en" or "ja") from now on."""
    global _current
    if lang not in LANGUAGES:
        raise ValueError(f"lang={lang!r}: the kit speaks "
                         f"{', '.join(map(repr, LANGUAGES))}")
    _current = lang


def language():
    """The language the kit speaks now."""
    return _current


def text(table, key, **fields):
    """`table`'s `key` in the current language, formatted with `fields`."""
    entry = table.get(_current, {}).get(key)
    if entry is None:
        entry = table["en"][key]
    return entry.format(**fields) if fields else entry


def missing(table, lang="ja"):
    """Keys `table` has in English but not in `lang`."""
    return sorted(set(table["en"]) - set(table.get(lang, {})))


if os.environ.get("KIT_LANG"):
    set_language(os.environ["KIT_LANG"])
