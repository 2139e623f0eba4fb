"""Singular and plural of the report's nouns and units, decided in one place.

Every count ("1 extrapolation point", "57 extrapolation points") and every amount with a unit ("by 1 pupil per
teacher", "by 1 absorbance unit", "by 2 absorbance units") is worded here, so a wording rule holds in every
table, caption, alt text and sentence at once. Nouns and units are written in the plural, as a config writes
them (``observations: districts``, ``units: {ptratio: pupils per teacher}``); the singular is derived.
"""

from __future__ import annotations

from typing import Any

from ..._utils.numfmt import fmt_int

__all__ = ["singular", "count_words", "unit_after", "is_one"]

#: Words after which the head noun of a unit or noun phrase has ended ("pupils per teacher").
_PREPOSITIONS = frozenset(
    {
        "per",
        "of",
        "in",
        "for",
        "at",
        "on",
        "to",
        "from",
        "with",
        "by",
        "inside",
        "outside",
        "left",
        "where",
        "that",
        "whose",
        "kept",
        "already",
    }
)
#: Multipliers that stay plural before "of": "1 thousands of dollars" reads as the config's unit name.
_MULTIPLIERS = frozenset({"tens", "dozens", "hundreds", "thousands", "millions", "billions"})
#: Plural words whose singular is not a suffix rule.
_IRREGULAR = {
    "people": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "data": "data",
    "series": "series",
    "species": "species",
    "indices": "index",
    "matrices": "matrix",
    "analyses": "analysis",
    "axes": "axis",
}


def _singular_word(word: str) -> str:
    """The singular of one lower-case English plural ('units' -> 'unit', 'policies' -> 'policy'); other words
    (symbols, singulars, 'mmHg', 'Celsius') are returned as they are."""
    core = word.split("-")[-1]  # 'policy-years' -> 'years'
    head = word[: len(word) - len(core)]
    if core in _IRREGULAR:
        return head + _IRREGULAR[core]
    if len(core) <= 2 or not core.isalpha() or not core.islower() or not core.endswith("s"):
        return word
    if core.endswith(("ss", "us", "is")):
        return word
    if core.endswith("ies") and len(core) > 4:
        return head + core[:-3] + "y"
    if core.endswith(("ches", "shes", "sses", "xes", "zes")):
        return head + core[:-2]
    return head + core[:-1]


def singular(phrase: str) -> str:
    """The singular of a plural noun phrase or unit: its head noun, the last lower-case word before a
    preposition, loses its plural ('extrapolation points' -> 'extrapolation point', 'pupils per teacher' ->
    'pupil per teacher', 'degrees Celsius' -> 'degree Celsius'); a multiplier before 'of' stays ('thousands of
    dollars'), and a phrase without a plural head ('%', 'mm', 'MEDV') is returned unchanged."""
    words = phrase.split(" ")
    end = len(words)
    for i, w in enumerate(words):
        if i > 0 and w in _PREPOSITIONS:
            end = i
            break
    if end < len(words) and words[end] == "of" and words[end - 1] in _MULTIPLIERS:
        return phrase
    for i in range(end - 1, -1, -1):
        w = words[i]
        if w and (w[0].isupper() or not w[0].isalpha()):  # a proper noun or a symbol: the head is before it
            continue
        words[i] = _singular_word(w)
        break
    return " ".join(words)


def is_one(amount: Any) -> bool:
    """Whether ``amount`` reads as exactly one (1, -1, 1.0, '1'): the singular follows it."""
    try:
        return abs(float(str(amount).replace(",", ""))) == 1.0
    except ValueError:
        return False


def count_words(n: Any, noun: str) -> str:
    """'1 extrapolation point', '1,500 evaluated rows': ``n`` with thousands separators and ``noun`` (plural)
    in the number it takes; a count already formatted (a table cell, '1,500') is kept as it is."""
    shown = n if isinstance(n, str) else fmt_int(n)
    return f"{shown} {singular(noun) if is_one(n) else noun}"


def unit_after(unit: str, amount: Any) -> str:
    """The unit as it reads after ``amount`` ('1 pupil per teacher', '2 pupils per teacher'); '' stays ''."""
    if not unit:
        return unit
    return singular(unit) if is_one(amount) else unit
