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
- FEVER's label scoring, its one user's: ``tasks/fever.py``.
- Intervals: percentile bootstrap, numpy ``default_rng(seed)``, resampled in chunks so that
  10,000 x 7,405 never sits in memory at once. Same seed, same interval.
- Paired comparisons between runs belong to the studies layer, which uses scipy / statsmodels
  rather than hand-written tests.
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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

FEVER_LABELS: tuple[str, ...] = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
_YES_NO: frozenset[str] = frozenset({"yes", "no", "noanswer"})
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)  # removes exactly these characters
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# Exact binomial below this many discordant pairs (the usual textbook threshold).
_CHUNK = 1000
_CHUNK_ELEMENTS = 250_000


def normalize_answer(text: str) -> str:
    """The official HotpotQA normalisation (see the module docstring for what it keeps)."""
    text = text.lower()
    text = text.translate(_NO_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def groundable(gold: str) -> bool:
    """Whether a right answer to this question could be read in a page: not yes / no (a
    comparison question's answer is a judgement, no page says it), not empty."""
    answer = normalize_answer(gold)
    return bool(answer) and answer not in _YES_NO


def grounded(prediction: str, observations: Sequence[str]) -> bool:
    """Whether the (normalised) answer occurs in some (normalised) observation of the episode:
    an answer that can be traced to what the agent saw, rather than only remembered."""
    answer = normalize_answer(prediction)  # whole words: "no" is not found in "known"
    return bool(answer) and any(f" {answer} " in f" {normalize_answer(o)} " for o in observations)


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


# --- repeated attempts (epochs) ------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that some of ``k`` attempts drawn from an example's ``n`` (``c`` right) is right:
    the unbiased estimator ``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all of ``k`` attempts drawn from an example's ``n`` are right: ``C(c, k) /
    C(n, k)`` (pass^k, Yao et al., 2024, tau-bench): how reliably, not how possibly."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return math.comb(c, k) / math.comb(n, k)


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
    method: str = "bootstrap"  # "bootstrap" (percentile) or "wilson" (a proportion's score interval)


def _as_array(values: Iterable[float], what: str) -> np.ndarray:
    import numpy as np  # imported by the summary, not by a run's start (numpy takes ~60 ms)

    array = np.asarray(list(values), dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{what}: need a non-empty sequence of numbers")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what}: values must be finite")
    return array


def _bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Means of ``n_resamples`` resamples (with replacement), drawn chunk by chunk."""
    import numpy as np

    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    # At most about _CHUNK_ELEMENTS indices at once (memory stays flat for any run size); an
    # even count per chunk, so the draws are the same numbers however they are chunked.
    rows = max(2, min(_CHUNK, _CHUNK_ELEMENTS // values.size) // 2 * 2)
    for start in range(0, n_resamples, rows):
        size = min(rows, n_resamples - start)
        idx = rng.integers(0, values.size, size=(size, values.size))
        means[start : start + size] = values[idx].mean(axis=1)
    return means


def _percentiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    import numpy as np  # imported by the summary, not by a run's start (numpy takes ~60 ms)

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


Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson_ci(successes: int, n: int, confidence: float = 0.95) -> ConfidenceInterval:
    """Wilson's score interval of a proportion: never collapses to a point at small n (3 of 3
    right gives [43.9, 100], where the bootstrap gives [100, 100])."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError("wilson_ci: need 0 <= successes <= n and n >= 1")
    if confidence != 0.95:
        from scipy.stats import norm

        z = float(norm.ppf(0.5 + confidence / 2))
    else:
        z = Z95
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return ConfidenceInterval(p, max(0.0, centre - half), min(1.0, centre + half), confidence, n, 0, 0, "wilson")


Z80 = 0.8416212335729143  # the standard normal's 80% quantile (80% power)


def detectable_paired(n: int, discordant: int) -> float | None:
    """The smallest difference in the share right that McNemar's test (two-sided, 5%) detects with
    80% power between two runs over the same ``n`` examples that disagree on ``discordant`` of
    them: Connor's (1987) normal approximation, ``sqrt(n) d = z_a sqrt(p) + z_b sqrt(p - d^2)``
    with ``p`` the share that disagree, solved for ``d``. Two runs that agree everywhere are taken
    to disagree on one example (the least a difference needs). None without examples."""
    if n < 1:
        return None
    share = max(discordant, 1) / n
    d = (Z95 + Z80) * math.sqrt(share / n)
    for _ in range(100):  # a contraction: d shrinks towards the fixed point
        d_next = (Z95 * math.sqrt(share) + Z80 * math.sqrt(max(share - d * d, 0.0))) / math.sqrt(n)
        if abs(d_next - d) < 1e-12:
            break
        d = d_next
    return min(d, 1.0)


def detectable_unpaired(n_a: int, mean_a: float, n_b: int, mean_b: float) -> float | None:
    """The smallest difference in the share right that a two-sided 5% test detects with 80% power
    between two runs over different examples (each share's binomial variance; a share of 0 or 1
    taken as half an example off it, so that a perfect run still has a spread). None without
    examples."""
    if n_a < 1 or n_b < 1:
        return None

    def spread(mean: float, n: int) -> float:
        mean = min(max(mean, 0.5 / n), 1 - 0.5 / n)
        return mean * (1 - mean) / n

    return min((Z95 + Z80) * math.sqrt(spread(mean_a, n_a) + spread(mean_b, n_b)), 1.0)


def paired_n(difference: float, discordance: float) -> int:
    """Examples two runs need for McNemar's test (two-sided, 5%) to detect ``difference`` with 80%
    power, when they disagree on a share ``discordance`` of examples (Connor, 1987)."""
    if not 0 < difference <= discordance <= 1:
        raise ValueError("paired_n: need 0 < difference <= discordance <= 1")
    root = Z95 * math.sqrt(discordance) + Z80 * math.sqrt(discordance - difference * difference)
    return math.ceil((root / difference) ** 2)


def score_ci(values: Iterable[float], seed: int = 0) -> ConfidenceInterval:
    """The interval a table shows for a mean of per-example scores: Wilson's for 0/1 scores (EM,
    accuracy, success), the percentile bootstrap for graded ones (F1, WebShop's reward)."""
    import numpy as np

    array = _as_array(values, "score_ci")
    if np.all((array == 0) | (array == 1)):
        return wilson_ci(int(array.sum()), int(array.size))
    return bootstrap_ci(array, seed=seed)


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
