"""The rule tier (``judge=rules``): a heuristic second reading of a free-text answer that needs
no model. It is labelled a heuristic wherever it shows (``rules``, never "judged").

A prediction is accepted (CORRECT) when, after the official normaliser (``metrics.normalize_answer``):
- it equals the gold (exact match), or does once numbers written as words are digits
  ("two" / "2", "twenty one" / "21");
- one contains the other at a word start ("las vegas" in "las vegas nevada", "house of habsburg"
  in "house of habsburglorraine"), the shorter being at least ``MIN_CHARS`` characters, not yes /
  no, at least ``MIN_SHARE`` of the longer's length, and the longer adding at most
  ``MAX_EXTRA_WORDS`` words: the length guard, so an answer that lists every candidate is not
  credited for holding the gold somewhere, nor one that is a list of candidates with the gold one
  of them (``listing``);
- or its official F1 against the gold is at least ``MIN_F1``.
An empty answer is NOT_ATTEMPTED; anything else INCORRECT. Everything here is linear in its input.
"""

from __future__ import annotations

import re
from typing import Literal

from react_bench.metrics import f1_score, normalize_answer

Verdict = Literal["CORRECT", "INCORRECT", "NOT_ATTEMPTED"]
VERDICTS: tuple[Verdict, ...] = ("CORRECT", "INCORRECT", "NOT_ATTEMPTED")

MIN_CHARS = 4  # the shorter side of a containment, normalised
MIN_SHARE = 0.5  # the shorter side's length over the longer's, at least
MAX_EXTRA_WORDS = 2  # words the longer side of a containment may add ("las vegas" + "nevada")
MIN_F1 = 0.8

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i >= 2}
_NOT_CONTAINED = frozenset({"yes", "no", "noanswer"})
_SEPARATORS = re.compile(r"[,;/&]| and | or ", re.IGNORECASE)


def numbers_as_digits(normalized: str) -> str:
    """Number words (zero to ninety-nine, as the normaliser leaves them: "twenty one") as digits."""
    out: list[str] = []
    words = normalized.split()
    i = 0
    while i < len(words):
        word = words[i]
        if word in _TENS:
            value = _TENS[word]
            if i + 1 < len(words) and words[i + 1] in _UNITS and 0 < _UNITS[words[i + 1]] < 10:
                value += _UNITS[words[i + 1]]
                i += 1
            out.append(str(value))
        elif word in _UNITS:
            out.append(str(_UNITS[word]))
        else:
            out.append(word)
        i += 1
    return " ".join(out)


def contains(longer: str, shorter: str) -> bool:
    """``shorter`` in ``longer`` at a word start, within the length guard (module docstring)."""
    if len(shorter) < MIN_CHARS or shorter in _NOT_CONTAINED or len(shorter) < MIN_SHARE * len(longer):
        return False
    if len(longer.split()) - len(shorter.split()) > MAX_EXTRA_WORDS:
        return False
    return f" {shorter}" in f" {longer}"


def listing(raw: str, gold: str) -> bool:
    """Whether the answer ``raw`` is a list of candidates with the gold one of them: what is left
    once the gold is taken out holds a separator (, ; / & "and" "or") and two words or more, or
    two parts or more ("Annie Morton, Terry Richardson" for "Terry Richardson"; not "Las Vegas,
    Nevada" for "Las Vegas")."""
    at = raw.lower().find(gold.lower()) if gold.strip() else -1
    if at < 0:  # the gold is in it only once normalised: read the parts as they are
        parts = [x for x in (normalize_answer(p) for p in _SEPARATORS.split(raw)) if x]
        return len(parts) >= 3 or (len(parts) == 2 and normalize_answer(gold) in parts)
    rest = raw[:at] + " " + raw[at + len(gold) :]
    if not _SEPARATORS.search(rest):
        return False
    parts = [x for x in (normalize_answer(p) for p in _SEPARATORS.split(rest)) if x]
    return len(normalize_answer(rest).split()) >= 2 or len(parts) >= 2


def rules_verdict(prediction: str, gold: str) -> Verdict:
    p, g = normalize_answer(prediction), normalize_answer(gold)
    if not p:
        return "NOT_ATTEMPTED"
    if not g:
        return "INCORRECT"  # a gold that normalises to nothing credits nothing (the audit lists it)
    if p == g or numbers_as_digits(p) == numbers_as_digits(g):
        return "CORRECT"
    if (contains(p, g) and not listing(prediction, gold)) or contains(g, p):
        return "CORRECT"
    return "CORRECT" if f1_score(prediction, gold) >= MIN_F1 else "INCORRECT"
