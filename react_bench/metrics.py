"""Scores and statistics: pure functions, one shared normaliser.

Decisions a next engineer needs:

- ``normalize_answer`` is the official HotpotQA / SQuAD v1.1 normaliser, character for
  character (the ReAct code uses the same one): lower-case, drop ASCII punctuation
  (``string.punctuation`` only: curly quotes, dashes and other non-ASCII marks stay), drop the
  words a / an / the, fold whitespace (``str.split``: any Unicode whitespace). Accents are NOT
  folded: "Beyoncé" != "Beyonce". Changing any of this changes EM against the paper.
- ``f1_score`` follows the official rule that F1 is 0 when either side normalises to
  yes / no / noanswer and the two differ; two empty answers have EM 1 but F1 0 (no tokens in
  common), exactly as the official script. Scores are floats so they average directly.
- FEVER: an answer counts only if it normalises to one of SUPPORTS / REFUTES / NOT ENOUGH INFO
  (the ReAct code compares normalised strings); anything else is "out of set", counted and
  reported, and wrong.
- Intervals: percentile bootstrap, numpy ``default_rng(seed)``, resampled in chunks so that
  10,000 x 7,405 never sits in memory at once. Same seed, same interval.
- Paired tests between two runs on the same ids: a paired bootstrap of the mean difference
  (two-sided p from the bootstrap distribution shifted to the null, add-one smoothed so it is
  never exactly 0) and McNemar on the discordant pairs: the exact binomial test when there are
  fewer than 25 discordant pairs (the chi-square approximation is poor there), otherwise the
  continuity-corrected chi-square with one degree of freedom. No scipy: the binomial tail is an
  exact sum and the chi-square(1) tail is ``erfc(sqrt(x / 2))``.
- ``protocol_fingerprint`` (here because every run reports it beside its metrics): sha256 of
  canonical JSON (keys sorted, no whitespace, UTF-8) of the ordered example ids, the prompts by
  name and the protocol settings, as ``"sha256:<64 hex>"``. The order of mapping keys never
  matters, the order of the ids does. Values are canonicalised first: tuples and lists alike
  become lists, sets sorted lists, dataclasses their fields, paths and enums their text / value,
  and a float with an integral value its int, so that ``temperature: 0`` (YAML) and ``0.0``
  (code) agree. NaN and unknown types are refused rather than hashed by ``repr``.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal

import numpy as np

FEVER_LABELS: tuple[str, ...] = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
_YES_NO: frozenset[str] = frozenset({"yes", "no", "noanswer"})
_PUNCTUATION: frozenset[str] = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# Exact binomial below this many discordant pairs (the usual textbook threshold).
MCNEMAR_EXACT_BELOW = 25
_CHUNK = 1000


def normalize_answer(text: str) -> str:
    """The official HotpotQA normalisation (see the module docstring for what it keeps)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """Token F1 after normalisation, with the official yes / no / noanswer rule."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _YES_NO or ref in _YES_NO) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred_tokens)
    recall = common / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


_LABEL_BY_NORM = {normalize_answer(label): label for label in FEVER_LABELS}


def map_fever_label(prediction: str) -> str | None:
    """The FEVER label a prediction names (normalised equality), or None when it names none."""
    return _LABEL_BY_NORM.get(normalize_answer(prediction))


def fever_correct(prediction: str, gold: str) -> float:
    label = map_fever_label(prediction)
    return float(label is not None and label == map_fever_label(gold))


@dataclass(frozen=True)
class LabelAccuracy:
    accuracy: float
    correct: int
    total: int
    out_of_set: int  # predictions that named no label (counted wrong)

    @property
    def out_of_set_rate(self) -> float:
        return self.out_of_set / self.total if self.total else 0.0


def label_accuracy(predictions: Sequence[str], golds: Sequence[str]) -> LabelAccuracy:
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold labels")
    correct = sum(int(fever_correct(p, g)) for p, g in zip(predictions, golds))
    out = sum(map_fever_label(p) is None for p in predictions)
    total = len(golds)
    return LabelAccuracy(correct / total if total else 0.0, correct, total, out)


# --- confidence intervals and paired tests -------------------------------------------------


@dataclass(frozen=True)
class ConfidenceInterval:
    mean: float
    low: float
    high: float
    confidence: float
    n: int
    n_resamples: int
    seed: int


def _as_array(values: Iterable[float], what: str) -> np.ndarray:
    array = np.asarray(list(values), dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{what}: need a non-empty sequence of numbers")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what}: values must be finite")
    return array


def _bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Means of ``n_resamples`` resamples (with replacement), drawn chunk by chunk."""
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        idx = rng.integers(0, values.size, size=(size, values.size))
        means[start : start + size] = values[idx].mean(axis=1)
    return means


def _percentiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_ci(
    values: Iterable[float], n_resamples: int = 10_000, seed: int = 0, confidence: float = 0.95
) -> ConfidenceInterval:
    """Percentile bootstrap interval of the mean of per-example scores (e.g. EM 0/1)."""
    array = _as_array(values, "bootstrap_ci")
    low, high = _percentiles(_bootstrap_means(array, n_resamples, seed), confidence)
    return ConfidenceInterval(float(array.mean()), low, high, confidence, array.size, n_resamples, seed)


@dataclass(frozen=True)
class PairedBootstrap:
    mean_diff: float  # mean(a) - mean(b)
    low: float
    high: float
    p_value: float  # two-sided, H0: no difference
    confidence: float
    n: int
    n_resamples: int
    seed: int


def paired_bootstrap(
    a: Iterable[float],
    b: Iterable[float],
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedBootstrap:
    """Paired bootstrap of mean(a) - mean(b) over the same examples in the same order.

    p-value: the share of resampled differences at least as far from the observed one as the
    observed one is from 0 (the bootstrap distribution shifted to the null), add-one
    smoothed. An observed difference of 0 gives p = 1.
    """
    xa, xb = _as_array(a, "paired_bootstrap a"), _as_array(b, "paired_bootstrap b")
    if xa.size != xb.size:
        raise ValueError(f"paired runs differ in length: {xa.size} vs {xb.size}")
    diffs = xa - xb
    observed = float(diffs.mean())
    means = _bootstrap_means(diffs, n_resamples, seed)
    low, high = _percentiles(means, confidence)
    if observed == 0:
        p_value = 1.0
    else:
        extreme = int(np.count_nonzero(np.abs(means - observed) >= abs(observed) - 1e-12))
        p_value = min(1.0, (extreme + 1) / (n_resamples + 1))
    return PairedBootstrap(observed, low, high, p_value, confidence, diffs.size, n_resamples, seed)


@dataclass(frozen=True)
class McNemar:
    a_only: int  # pairs where a is right and b wrong
    b_only: int  # pairs where b is right and a wrong
    statistic: float  # the smaller discordant count (exact) or the chi-square value
    p_value: float
    method: Literal["exact", "chi2"]


def _binomial_two_sided(k: int, n: int) -> float:
    """Two-sided exact binomial p for k successes of n at p = 1/2 (doubling the smaller tail)."""
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2**n
    return min(1.0, 2 * tail)


def mcnemar(a_correct: Sequence[bool], b_correct: Sequence[bool]) -> McNemar:
    """McNemar's test of two runs on the same examples (see the module docstring)."""
    if len(a_correct) != len(b_correct):
        raise ValueError(f"paired runs differ in length: {len(a_correct)} vs {len(b_correct)}")
    a_only = sum(1 for x, y in zip(a_correct, b_correct) if x and not y)
    b_only = sum(1 for x, y in zip(a_correct, b_correct) if y and not x)
    discordant = a_only + b_only
    if discordant < MCNEMAR_EXACT_BELOW:
        k = min(a_only, b_only)
        p = 1.0 if discordant == 0 else _binomial_two_sided(k, discordant)
        return McNemar(a_only, b_only, float(k), p, "exact")
    chi2 = (abs(a_only - b_only) - 1) ** 2 / discordant
    return McNemar(a_only, b_only, chi2, math.erfc(math.sqrt(chi2 / 2)), "chi2")


# --- the protocol fingerprint ----------------------------------------------------------------


def _canonical(value: Any) -> Any:
    match value:
        case None | bool() | str():
            return value
        case int():
            return int(value)
        case float():
            if not math.isfinite(value):
                raise ValueError(f"protocol setting {value!r} is not a finite number")
            return int(value) if value.is_integer() else value
        case enum.Enum():
            return _canonical(value.value)
        case PurePath():
            return str(value)
        case Mapping():
            return {str(k): _canonical(v) for k, v in value.items()}
        case AbstractSet():
            return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
        case Sequence():
            return [_canonical(v) for v in value]
        case _ if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        case _:
            raise TypeError(f"cannot fingerprint a {type(value).__name__}: convert it to plain data")


def protocol_fingerprint(example_ids: Sequence[str], prompts: Mapping[str, str], settings: Mapping[str, Any]) -> str:
    payload = {
        "example_ids": [str(i) for i in example_ids],
        "prompts": _canonical(prompts),
        "settings": _canonical(settings),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
