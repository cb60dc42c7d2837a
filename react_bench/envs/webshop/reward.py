"""The WebShop paper's reward of a purchase, on the generated catalog.

``reward = r_type * (attributes matched + options matched + price within the bound) /
(goal attributes + goal options + 1)``, as WebShop's ``get_reward`` computes it:

- an attribute of the goal matches when the product has it, or when it occurs in the
  product's title, features or description (lower-cased), as WebShop also accepts;
- an option of the goal matches when the purchase selected that value (any group);
- the price term is 1 when the price is within the goal's bound;
- ``r_type`` scales it all by how well the product type matches: 1 for the goal's type;
  0.5 for another type of the goal's category; 0.1 when the goal's type shares a word with the
  product's title; else 0.

Deliberate differences from WebShop (whose data are scraped, ours generated): matches are
exact after normalisation (lower case, single spaces) where WebShop uses fuzzy matching
(``thefuzz`` token-set ratio > 85) and colour normalisation, and ``r_type`` reads the catalog's
product type and category where WebShop parses titles with spaCy. On generated data the
attribute and option strings are written the same way everywhere, so the fuzzy steps would
change nothing; the type rule keeps WebShop's levels (1, 0.5, 0.1, 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from react_bench.envs.webshop.catalog import Goal, Product


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class Reward:
    total: float
    r_type: float
    attributes: int
    options: int
    price: bool


def type_reward(product: Product, goal: Goal) -> float:
    if product.product_type == goal.product_type:
        return 1.0
    if product.category == goal.category:
        return 0.5
    title = set(_norm(product.title).split())
    return 0.1 if title & set(_norm(goal.product_type).split()) else 0.0


def reward(product: Product, goal: Goal, options: Mapping[str, str]) -> Reward:
    text = _norm(" ".join((product.title, *product.features, product.description)))
    have = {_norm(a) for a in product.attributes}
    attributes = sum(1 for a in goal.attributes if _norm(a) in have or _norm(a) in text)
    chosen = {_norm(v) for v in options.values()}
    matched_options = sum(1 for v in goal.options.values() if _norm(v) in chosen)
    price = product.price <= goal.price_upper
    r_type = type_reward(product, goal)
    total = r_type * (attributes + matched_options + int(price)) / (len(goal.attributes) + len(goal.options) + 1)
    return Reward(total, r_type, attributes, matched_options, price)
