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
import sys

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


def said(entry, **fields):
    """One entry of a checker's words, `{"en": ..., "ja": ...}`, in the
    current language (English where the Japanese is missing); a line is
    formatted with `fields`, a hint ladder or a mistake's words returned
    as they are."""
    words = entry.get(_current, entry["en"])
    return words.format(**fields) if fields else words


def missing(table, lang="ja"):
    """Keys `table` has in English but not in `lang`."""
    return sorted(set(table["en"]) - set(table.get(lang, {})))


def from_environment(value):
    """KIT_LANG's language, its case ignored ("JA"). One the kit does not
    speak ("fr") is said in one line and English spoken: an unset or odd
    variable must not stop every command, `doctor` included, at import."""
    lang = value.strip().lower()
    if lang in LANGUAGES:
        return lang
    print(f"KIT_LANG={value!r}: the kit speaks "
          f"{', '.join(map(repr, LANGUAGES))}; speaking 'en'",
          file=sys.stderr)
    return "en"


if os.environ.get("KIT_LANG", "").strip():
    set_language(from_environment(os.environ["KIT_LANG"]))
