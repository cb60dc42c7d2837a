"""Metrics: hand-reasoned golden cases for EM / F1 and FEVER labels; CIs and paired tests on
constructed runs whose answers are known.

Each golden case's EM and F1 were worked out by hand from the official normalisation
(lower-case, drop ASCII punctuation, drop a / an / the, fold whitespace) and token F1 with the
yes / no / noanswer rule; the comment says the reasoning where it is not obvious.
"""

from __future__ import annotations

import pytest

from react_bench.metrics import (
    bootstrap_ci,
    exact_match,
    f1_score,
    normalize_answer,
    protocol_fingerprint,
)
from react_bench.tasks.fever import fever_correct, label_accuracy, map_fever_label

TWO_THIRDS = 2 / 3
GOLDEN: list[tuple[str, str, float, float]] = [
    # identity and case
    ("Paris", "Paris", 1, 1),
    ("paris", "Paris", 1, 1),
    ("PARIS", "paris", 1, 1),
    ("Chief of Protocol", "Chief of Protocol", 1, 1),
    ("BEYONCÉ", "beyoncé", 1, 1),  # str.lower folds non-ASCII capitals too
    # articles
    ("The Beatles", "Beatles", 1, 1),
    ("the beatles", "The Beatles", 1, 1),
    ("a dog", "dog", 1, 1),
    ("an apple", "apple", 1, 1),
    ("an American", "American", 1, 1),
    ("The Lord of the Rings", "Lord of Rings", 1, 1),  # inner articles go too
    ("Alexander the Great", "Alexander Great", 1, 1),
    ("The Theatre", "theatre", 1, 1),  # "theatre" is not the article "the"
    ("Anne", "theanne", 0, 0),  # no word boundary inside "theanne": nothing removed
    ("Thé Beatles", "beatles", 0, TWO_THIRDS),  # "thé" is a word, not "the"; P 1/2, R 1
    ("the", "", 1, 0),  # both normalise to "": equal, but no tokens for F1
    ("a", "an", 1, 0),
    ("", "", 1, 0),  # official: EM 1, F1 0 for two empty answers
    ("", "Paris", 0, 0),
    ("Paris", "", 0, 0),
    # punctuation (ASCII only)
    ("Paris.", "Paris", 1, 1),
    ("U.S.A.", "USA", 1, 1),
    ("U.S. Navy", "US Navy", 1, 1),
    ("A.B.C.", "abc", 1, 1),
    ("O'Neill", "ONeill", 1, 1),
    ("rock-and-roll", "rockandroll", 1, 1),  # the hyphen goes, the words fuse
    ("rock and roll", "rock-and-roll", 0, 0),  # three tokens vs one fused token
    ("Paris, France", "Paris France", 1, 1),
    ("(1992)", "1992", 1, 1),
    ("“Paris”", "Paris", 0, 0),  # curly quotes are not ASCII punctuation: they stay
    ("1990–1995", "1990-1995", 0, 0),  # the en dash stays, the hyphen goes: 1990–1995 vs 19901995
    # whitespace
    ("  Paris  ", "Paris", 1, 1),
    ("New\tYork", "New York", 1, 1),
    ("New\nYork\n", "new york", 1, 1),
    ("New\u00a0York", "New York", 1, 1),  # no-break space is whitespace to str.split
    ("Paris\u3000France", "paris france", 1, 1),  # so is the ideographic space
    ("the  Great   Gatsby", "great gatsby", 1, 1),
    # unicode that is NOT folded
    ("Beyoncé", "Beyonce", 0, 0),
    ("São Paulo", "sao paulo", 0, 0.5),  # "paulo" shared: P 1/2, R 1/2
    ("Ａpple", "apple", 0, 0),  # full-width A lower-cases to full-width a: no NFKC
    # numbers
    ("1990", "1990", 1, 1),
    ("1,000", "1000", 1, 1),
    ("2,000,000", "2000000", 1, 1),
    ("3.14", "314", 1, 1),
    ("$5 million", "5 million", 1, 1),
    ("100%", "100", 1, 1),
    ("42", "forty-two", 0, 0),
    ("7", "seven", 0, 0),
    ("1st", "first", 0, 0),
    ("in 1990", "1990", 0, TWO_THIRDS),  # P 1/2, R 1
    ("1992 film", "1992", 0, TWO_THIRDS),
    # yes / no / noanswer
    ("yes", "yes", 1, 1),
    ("Yes.", "yes", 1, 1),
    ("no", "No", 1, 1),
    ("No.", "no", 1, 1),
    ("yes", "no", 0, 0),
    ("yes it is", "yes", 0, 0),  # gold is "yes" and they differ: 0 (plain F1 would be 0.5)
    ("Yes", "yes, it is", 0, 0),  # prediction is "yes" and they differ: 0
    ("no", "no way", 0, 0),
    ("noanswer", "no answer", 0, 0),
    ("the answer is yes", "yes", 0, 0),
    # partial overlap
    ("Barack Obama", "Obama", 0, TWO_THIRDS),  # P 1/2, R 1
    ("Obama", "Barack Obama", 0, TWO_THIRDS),  # P 1, R 1/2
    ("Barack Hussein Obama", "Barack Obama", 0, 0.8),  # P 2/3, R 1
    ("New York City", "New York", 0, 0.8),
    ("Los Angeles, California", "Los Angeles", 0, 0.8),
    ("York New", "New York", 0, 1),  # F1 ignores order, EM does not
    ("Paris France", "France", 0, TWO_THIRDS),
    # pred: chief of protocol of united states (6); 3 shared: P 1/2, R 1
    ("Chief of Protocol of the United States", "Chief of Protocol", 0, TWO_THIRDS),
    ("of of of", "of", 0, 0.5),  # repeated tokens count once each: P 1/3, R 1
]


def test_there_are_at_least_fifty_golden_cases() -> None:
    assert len(GOLDEN) >= 50


@pytest.mark.parametrize(("prediction", "gold", "em", "f1"), GOLDEN)
def test_golden_em_f1(prediction: str, gold: str, em: float, f1: float) -> None:
    assert exact_match(prediction, gold) == em
    assert f1_score(prediction, gold) == pytest.approx(f1)


def test_scores_are_symmetric_where_the_definitions_are() -> None:
    for prediction, gold, em, f1 in GOLDEN:
        assert exact_match(gold, prediction) == em
        assert f1_score(gold, prediction) == pytest.approx(f1)


def test_normalize_answer_steps() -> None:
    assert normalize_answer("  The  U.S. Navy!  ") == "us navy"
    assert normalize_answer("A  Tale\tof Two\nCities") == "tale of two cities"


@pytest.mark.parametrize(
    ("prediction", "label"),
    [
        ("SUPPORTS", "SUPPORTS"),
        ("supports", "SUPPORTS"),
        ("Supports.", "SUPPORTS"),
        ("  REFUTES ", "REFUTES"),
        ("not enough info", "NOT ENOUGH INFO"),
        ("NOT ENOUGH INFO.", "NOT ENOUGH INFO"),
        ("Not  Enough\tInfo!", "NOT ENOUGH INFO"),
        ("The Supports", "SUPPORTS"),  # the article goes, as in the ReAct comparison
        ("NOT_ENOUGH_INFO", None),  # underscores are punctuation: "notenoughinfo"
        ("SUPPORTED", None),
        ("True", None),
        ("", None),
        ("the claim is supported", None),
    ],
)
def test_map_fever_label(prediction: str, label: str | None) -> None:
    assert map_fever_label(prediction) == label


def test_fever_correct_needs_the_same_label() -> None:
    assert fever_correct("refutes", "REFUTES") == 1.0
    assert fever_correct("supports", "REFUTES") == 0.0
    assert fever_correct("maybe", "REFUTES") == 0.0


def test_label_accuracy_counts_out_of_set_answers() -> None:
    result = label_accuracy(
        ["SUPPORTS", "refutes", "maybe", "NOT ENOUGH INFO", "I cannot tell"],
        ["SUPPORTS", "SUPPORTS", "REFUTES", "NOT ENOUGH INFO", "REFUTES"],
    )
    assert (result.correct, result.total, result.out_of_set) == (2, 5, 2)
    assert result.accuracy == pytest.approx(0.4)
    assert result.out_of_set_rate == pytest.approx(0.4)
    with pytest.raises(ValueError):
        label_accuracy(["SUPPORTS"], [])


# --- bootstrap intervals -----------------------------------------------------------------------


def test_bootstrap_of_a_constant_run_is_a_point() -> None:
    ci = bootstrap_ci([1.0] * 50, n_resamples=500, seed=1)
    assert (ci.mean, ci.low, ci.high, ci.n) == (1.0, 1.0, 1.0, 50)


def test_bootstrap_of_half_right_matches_the_normal_interval() -> None:
    # 200 right of 400: mean 0.5, standard error sqrt(0.25 / 400) = 0.025, 95% +- 0.049.
    ci = bootstrap_ci([1.0] * 200 + [0.0] * 200, n_resamples=10_000, seed=0)
    assert ci.mean == 0.5
    assert ci.low == pytest.approx(0.451, abs=0.01)
    assert ci.high == pytest.approx(0.549, abs=0.01)


def test_bootstrap_is_seeded_and_widens_with_confidence() -> None:
    values = [i / 97 for i in range(97)]
    first = bootstrap_ci(values, n_resamples=2000, seed=7)
    assert bootstrap_ci(values, n_resamples=2000, seed=7) == first
    assert (
        bootstrap_ci(values, n_resamples=2000, seed=8).low,
        bootstrap_ci(values, n_resamples=2000, seed=8).high,
    ) != (
        first.low,
        first.high,
    )
    narrow = bootstrap_ci(values, n_resamples=2000, seed=7, confidence=0.5)
    wide = bootstrap_ci(values, n_resamples=2000, seed=7, confidence=0.99)
    assert wide.low < first.low < narrow.low < narrow.high < first.high < wide.high


def test_bootstrap_rejects_empty_and_bad_settings() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([])
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], confidence=1.0)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, float("nan")])


# --- paired tests on constructed runs ------------------------------------------------------------


def _runs(both: int, a_only: int, b_only: int, neither: int) -> tuple[list[bool], list[bool]]:
    a = [True] * both + [True] * a_only + [False] * b_only + [False] * neither
    b = [True] * both + [False] * a_only + [True] * b_only + [False] * neither
    return a, b


def test_protocol_fingerprint() -> None:
    ids = ["a", "b", "c"]
    prompts = {"react": "Question: ...", "cot": "Thought: ..."}
    settings = {"temperature": 0, "max_steps": 7, "stop": ("\nObservation 1:",)}
    base = protocol_fingerprint(ids, prompts, settings)
    assert base.startswith("sha256:") and len(base) == len("sha256:") + 64
    same = protocol_fingerprint(
        tuple(ids), dict(reversed(prompts.items())), {"stop": ["\nObservation 1:"], "max_steps": 7, "temperature": 0.0}
    )
    assert same == base  # key order, tuple vs list and 0 vs 0.0 do not matter
    assert protocol_fingerprint(["b", "a", "c"], prompts, settings) != base  # id order does
    assert protocol_fingerprint(ids, {**prompts, "cot": "Thought:  ..."}, settings) != base
    assert protocol_fingerprint(ids, prompts, {**settings, "temperature": 0.7}) != base
    with pytest.raises(ValueError):
        protocol_fingerprint(ids, prompts, {"temperature": float("nan")})
    with pytest.raises(TypeError):
        protocol_fingerprint(ids, prompts, {"model": object()})


def test_a_proportion_gets_wilsons_interval_and_a_graded_score_the_bootstrap():
    from statsmodels.stats.proportion import proportion_confint

    from react_bench.metrics import score_ci, wilson_ci

    for k, n in ((0, 3), (3, 3), (1, 3), (17, 40), (500, 500)):
        ci = wilson_ci(k, n)
        assert (ci.low, ci.high) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)
        assert ci.low < ci.high  # never a point, at any n
    assert score_ci([1.0, 1.0, 1.0]).method == "wilson"
    graded = score_ci([0.5, 1.0, 0.25, 0.0])  # F1, WebShop's reward
    assert graded.method == "bootstrap" and graded == bootstrap_ci([0.5, 1.0, 0.25, 0.0], seed=0)
