"""A generated WebShop catalog and its goals: the offline stand-in for WebShop's product data.

Deterministic by seed (``Catalog.generate(seed, products, goals)``). Products belong to a few
dozen categories, each with its product types, attribute pool and option groups (size, colour,
flavour, scent, count, ...); each product has an ASIN, a title, a price, 2-4 attributes, one or
two option groups, a description, feature bullets and reviews. A goal, as WebShop's, names a
product type, some of its attributes, one value of each of its option groups and a price bound,
phrased the way WebShop's instructions are ("i am looking for ... with color: navy, and price
lower than 40.00 dollars"); the price bound is drawn as WebShop draws it (two of the next four
multiples of ten above the price, the larger one). Goal ``i`` is session ``fixed_i``; the goals
of ``train_i`` sessions (a separate stream of the same seed) make the project's own exemplars.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

GENERATOR_VERSION = 1
DEFAULT_PRODUCTS = 2000
DEFAULT_GOALS = 500
SEARCH_RETURN_N = 50  # WebShop's: a search returns the top 50, shown 10 a page
PRODUCT_WINDOW = 10

# category -> (product types, attribute pool, option groups {name: values})
CATEGORIES: dict[str, tuple[tuple[str, ...], tuple[str, ...], dict[str, tuple[str, ...]]]] = {
    "beauty": (
        ("deodorant", "face cream", "body lotion"),
        ("sensitive skin", "paraben free", "long lasting", "cruelty free", "fragrance free", "natural ingredients"),
        {
            "scent": ("bright citrus", "calming lavender", "ginger fresh", "unscented"),
            "size": ("3 ounce (pack of 1)", "3 ounce (pack of 2)", "travel set"),
        },
    ),
    "hair care": (
        ("shampoo", "conditioner", "hair oil"),
        ("sulfate free", "for dry hair", "color safe", "argan oil", "volumizing", "anti dandruff"),
        {"size": ("8 fl oz", "16 fl oz", "32 fl oz"), "scent": ("coconut", "tea tree", "rose")},
    ),
    "coffee": (
        ("ground coffee", "coffee beans", "coffee pods"),
        ("dark roast", "medium roast", "organic", "decaf", "fair trade", "single origin"),
        {"size": ("12 ounce", "2 pound", "5 pound"), "flavor": ("french vanilla", "hazelnut", "original")},
    ),
    "tea": (
        ("green tea", "herbal tea", "black tea"),
        ("caffeine free", "organic", "loose leaf", "non gmo", "individually wrapped"),
        {"count": ("20 count", "50 count", "100 count")},
    ),
    "snacks": (
        ("protein bar", "trail mix", "beef jerky"),
        ("gluten free", "high protein", "low sugar", "keto friendly", "non gmo", "vegan"),
        {
            "flavor": ("chocolate peanut butter", "sea salt", "teriyaki", "honey almond"),
            "count": ("12 count", "24 count"),
        },
    ),
    "men's shirts": (
        ("t-shirt", "polo shirt", "dress shirt"),
        ("machine wash", "slim fit", "short sleeve", "long sleeve", "cotton", "wrinkle free"),
        {"color": ("navy", "black", "heather gray", "white", "olive"), "size": ("small", "medium", "large", "x-large")},
    ),
    "women's dresses": (
        ("maxi dress", "sundress", "cocktail dress"),
        ("machine wash", "v-neck", "pockets", "floral print", "sleeveless", "stretch fabric"),
        {"color": ("black", "burgundy", "floral blue", "ivory"), "size": ("x-small", "small", "medium", "large")},
    ),
    "shoes": (
        ("running shoe", "hiking boot", "slip-on sneaker"),
        ("non slip", "lightweight", "water resistant", "memory foam", "arch support", "breathable mesh"),
        {"color": ("black", "grey", "navy blue", "white"), "size": ("7", "8", "9", "10", "11")},
    ),
    "socks": (
        ("ankle socks", "crew socks", "compression socks"),
        ("moisture wicking", "cushioned", "cotton", "arch support"),
        {"size": ("medium", "large"), "count": ("6 pairs", "12 pairs")},
    ),
    "phone accessories": (
        ("phone case", "screen protector", "charging cable"),
        ("shockproof", "wireless charging", "fast charging", "tempered glass", "anti scratch"),
        {"color": ("clear", "black", "midnight green"), "size": ("6.1 inch", "6.7 inch")},
    ),
    "headphones": (
        ("wireless earbuds", "over-ear headphones", "sports earphones"),
        ("noise cancelling", "bluetooth 5.3", "long battery life", "water resistant", "built-in microphone"),
        {"color": ("black", "white", "blue")},
    ),
    "computer accessories": (
        ("wireless mouse", "mechanical keyboard", "laptop stand"),
        ("ergonomic", "rechargeable", "usb-c", "adjustable height", "backlit"),
        {"color": ("black", "silver", "space gray")},
    ),
    "kitchen": (
        ("chef knife", "cutting board", "mixing bowl set"),
        ("dishwasher safe", "stainless steel", "bpa free", "non slip", "easy to clean"),
        {"size": ("8 inch", "10 inch", "set of 3")},
    ),
    "cookware": (
        ("frying pan", "saucepan", "dutch oven"),
        ("non stick", "oven safe", "induction compatible", "cast iron", "dishwasher safe"),
        {"size": ("8 inch", "10 inch", "12 inch"), "color": ("black", "red", "blue")},
    ),
    "bedding": (
        ("sheet set", "duvet cover", "pillow"),
        ("machine wash", "hypoallergenic", "cooling", "deep pocket", "microfiber", "100% cotton"),
        {"size": ("twin", "full", "queen", "king"), "color": ("white", "light gray", "navy", "sage")},
    ),
    "bath": (
        ("bath towel", "bath mat", "shower curtain"),
        ("quick dry", "absorbent", "non slip", "machine wash", "mildew resistant"),
        {"color": ("white", "beige", "teal", "charcoal")},
    ),
    "furniture": (
        ("office chair", "bookshelf", "side table"),
        ("easy assembly", "solid wood", "adjustable", "space saving", "lumbar support"),
        {"color": ("black", "walnut", "white oak")},
    ),
    "lighting": (
        ("led desk lamp", "floor lamp", "string lights"),
        ("dimmable", "energy efficient", "usb charging port", "warm white", "remote control"),
        {"color": ("black", "white", "brass")},
    ),
    "pet supplies": (
        ("dog food", "cat litter", "dog toy"),
        ("grain free", "natural ingredients", "odor control", "durable", "for small breeds"),
        {"size": ("4 pound", "15 pound", "30 pound"), "flavor": ("chicken", "salmon", "lamb")},
    ),
    "baby": (
        ("baby wipes", "diapers", "baby lotion"),
        ("fragrance free", "hypoallergenic", "sensitive skin", "plant based"),
        {"size": ("size 1", "size 2", "size 3"), "count": ("72 count", "144 count")},
    ),
    "vitamins": (
        ("multivitamin", "vitamin d3", "fish oil"),
        ("gluten free", "non gmo", "easy to swallow", "third party tested", "vegetarian"),
        {"count": ("60 count", "120 count", "240 count")},
    ),
    "fitness": (
        ("yoga mat", "resistance bands", "dumbbell set"),
        ("non slip", "extra thick", "portable", "eco friendly", "adjustable"),
        {"color": ("purple", "black", "teal"), "size": ("small", "large")},
    ),
    "outdoor": (
        ("camping tent", "sleeping bag", "hiking backpack"),
        ("waterproof", "lightweight", "easy setup", "for 4 person", "compact"),
        {"color": ("green", "orange", "gray")},
    ),
    "garden": (
        ("garden hose", "plant pot", "pruning shears"),
        ("heavy duty", "uv resistant", "drainage hole", "rust resistant", "ergonomic"),
        {"size": ("6 inch", "10 inch", "50 ft", "100 ft")},
    ),
    "toys": (
        ("building blocks", "puzzle", "plush toy"),
        ("for ages 3+", "educational", "non toxic", "1000 pieces", "soft"),
        {"color": ("multicolor", "pink", "blue")},
    ),
    "office": (
        ("notebook", "gel pens", "desk organizer"),
        ("acid free paper", "quick dry ink", "refillable", "bamboo", "a5 size"),
        {"color": ("black", "blue", "assorted"), "count": ("pack of 3", "pack of 12")},
    ),
    "jewelry": (
        ("necklace", "earrings", "bracelet"),
        ("sterling silver", "hypoallergenic", "gift box", "adjustable", "gold plated"),
        {"color": ("silver", "gold", "rose gold")},
    ),
    "watches": (
        ("smart watch", "analog watch", "fitness tracker"),
        ("heart rate monitor", "waterproof", "sleep tracking", "stainless steel", "long battery life"),
        {"color": ("black", "silver", "pink")},
    ),
    "car accessories": (
        ("car phone mount", "seat cover", "dash cam"),
        ("universal fit", "easy install", "night vision", "leather", "one-handed operation"),
        {"color": ("black", "beige", "gray")},
    ),
    "cleaning": (
        ("all purpose cleaner", "dish soap", "laundry detergent"),
        ("plant based", "fragrance free", "concentrated", "septic safe", "biodegradable"),
        {"scent": ("lemon", "lavender", "free and clear"), "size": ("32 fl oz", "64 fl oz")},
    ),
}

# The department above each category in a product's breadcrumb (WebShop's are Amazon's).
DEPARTMENTS = {
    "beauty": "Beauty & Personal Care",
    "hair care": "Beauty & Personal Care",
    "coffee": "Grocery & Gourmet Food",
    "tea": "Grocery & Gourmet Food",
    "snacks": "Grocery & Gourmet Food",
    "men's shirts": "Clothing, Shoes & Jewelry",
    "women's dresses": "Clothing, Shoes & Jewelry",
    "shoes": "Clothing, Shoes & Jewelry",
    "socks": "Clothing, Shoes & Jewelry",
    "jewelry": "Clothing, Shoes & Jewelry",
    "watches": "Clothing, Shoes & Jewelry",
    "phone accessories": "Electronics",
    "headphones": "Electronics",
    "computer accessories": "Electronics",
    "kitchen": "Home & Kitchen",
    "cookware": "Home & Kitchen",
    "bedding": "Home & Kitchen",
    "bath": "Home & Kitchen",
    "furniture": "Home & Kitchen",
    "lighting": "Home & Kitchen",
    "cleaning": "Health & Household",
    "vitamins": "Health & Household",
    "pet supplies": "Pet Supplies",
    "baby": "Baby",
    "fitness": "Sports & Outdoors",
    "outdoor": "Sports & Outdoors",
    "garden": "Patio, Lawn & Garden",
    "toys": "Toys & Games",
    "office": "Office Products",
    "car accessories": "Automotive",
}

BRANDS = (
    "Acme",
    "Northwind",
    "Bluebird",
    "Everpeak",
    "Sunhaven",
    "Mapleton",
    "Riverstone",
    "Cobalt",
    "Fairleaf",
    "Hollow Oak",
    "Kestrel",
    "Lumina",
    "Marlow",
    "Novella",
    "Orchard Lane",
    "Pinecrest",
    "Quill",
    "Redwood",
    "Silverline",
    "Tidewater",
    "Umber",
    "Vantage",
    "Willowby",
    "Yarrow",
    "Zenith",
    "Brightwater",
    "Copperleaf",
    "Driftwood",
    "Emberly",
    "Foxglove",
)
OPENINGS = ("i am looking for", "i need", "i want", "i would like", "find me", "i'm looking for")
REVIEW_TITLES = ("Works as described", "Great value", "Not bad", "Exactly what I needed", "Could be better")


@dataclass(frozen=True)
class Product:
    asin: str
    title: str
    category: str
    product_type: str
    price: float
    attributes: tuple[str, ...]
    options: dict[str, tuple[str, ...]] = field(hash=False)
    description: str = ""
    features: tuple[str, ...] = ()
    reviews: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    rating: str = "N.A."

    @property
    def price_text(self) -> str:
        return f"${self.price:.2f}"

    @property
    def query(self) -> str:
        """The search WebShop's scrape found the product by (its ``query`` field): here its type."""
        return self.product_type

    @property
    def product_category(self) -> str:
        """Its breadcrumb, as WebShop's ``product_category`` (``Department › Category › Type``):
        two products of one category share two of its parts, of one department one."""
        return " › ".join((DEPARTMENTS[self.category], self.category.title(), self.product_type.title()))


@dataclass(frozen=True)
class Goal:
    session: str  # "fixed_3"
    asin: str  # the product the goal was drawn from
    product_type: str
    category: str
    attributes: tuple[str, ...]
    options: dict[str, str] = field(hash=False)
    price_upper: float = 1_000_000.0
    instruction: str = ""
    # What WebShop's goal holds of its product, for the type score: its name (title), query, breadcrumb
    name: str = ""
    query: str = ""
    product_category: str = ""


def _asin(rng: random.Random, taken: set[str]) -> str:
    while True:
        asin = "B0" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(8))
        if asin not in taken:
            taken.add(asin)
            return asin


def _product(rng: random.Random, taken: set[str], number: int) -> Product:
    category = rng.choice(sorted(CATEGORIES))
    types, pool, groups = CATEGORIES[category]
    product_type = rng.choice(types)
    attributes = tuple(rng.sample(pool, rng.randint(2, min(4, len(pool)))))
    chosen = rng.sample(sorted(groups), rng.randint(1, len(groups)))
    options = {g: tuple(rng.sample(groups[g], rng.randint(2, len(groups[g])))) for g in sorted(chosen)}
    brand = rng.choice(BRANDS)
    model = f"{rng.choice('ABCDEFGHKLMNPRSTVX')}{rng.randint(10, 999)}"
    title = f"{brand} {product_type.title()} {model} - {', '.join(a.title() for a in attributes)}"
    price = round(rng.uniform(4, 180), 0) - 0.01
    features = tuple(f"{a.capitalize()}: made for everyday use." for a in attributes) + (
        f"What you get: one {product_type} by {brand}.",
    )
    description = (
        f"The {brand} {product_type} {model} is {attributes[0]} and {attributes[-1]}. "
        f"Available in {', '.join(v for values in options.values() for v in values)}."
    )
    reviews = tuple(
        {"title": rng.choice(REVIEW_TITLES), "score": rng.randint(3, 5), "body": f"I use this {product_type} daily."}
        for _ in range(rng.randint(1, 3))
    )
    rating = "N.A." if number % 3 == 0 else f"{rng.randint(35, 50) / 10:.1f}"
    return Product(
        _asin(rng, taken),
        title,
        category,
        product_type,
        price,
        attributes,
        options,
        description,
        features,
        reviews,
        rating,
    )


def _price_upper(rng: random.Random, price: float) -> float:
    """As WebShop draws it: two of the next four multiples of ten above the price, the larger."""
    above = [10.0 * i for i in range(1, 100) if 10.0 * i > price][:4]
    if len(above) < 2:
        return 1_000_000.0
    return max(rng.sample(above, 2))


def _goal(rng: random.Random, session: str, product: Product) -> Goal:
    attributes = tuple(rng.sample(product.attributes, rng.randint(1, min(3, len(product.attributes)))))
    options = {group: rng.choice(values) for group, values in product.options.items()}
    upper = _price_upper(rng, product.price)
    described = " and ".join(attributes)
    text = f"{rng.choice(OPENINGS)} {described} {product.product_type}"
    if options:
        text += " with " + ", and ".join(f"{k}: {v}" for k, v in options.items())
    if upper < 1_000_000:
        text += f", and price lower than {upper:.2f} dollars"
    return Goal(
        session,
        product.asin,
        product.product_type,
        product.category,
        attributes,
        options,
        upper,
        text,
        product.title,
        product.query,
        product.product_category,
    )


_TOKEN = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class Search:
    """The shop's search engine: BM25 (k1 1.2, b 0.75) over each product's title, type, category
    and attributes; ties keep catalog order."""

    def __init__(self, products: tuple[Product, ...]):
        self.products = products
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths: list[int] = []
        for i, p in enumerate(products):
            counts = Counter(_tokens(" ".join((p.title, p.product_type, p.category, *p.attributes))))
            self.lengths.append(sum(counts.values()))
            for term, n in counts.items():
                self.postings[term].append((i, n))
        self.average = sum(self.lengths) / max(1, len(self.lengths))

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[Product]:
        scores: dict[int, float] = defaultdict(float)
        n = len(self.products)
        for term in set(_tokens(query)):
            postings = self.postings.get(term, [])
            idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            for i, tf in postings:
                norm = tf + 1.2 * (1 - 0.75 + 0.75 * self.lengths[i] / self.average)
                scores[i] += idf * tf * 2.2 / norm
        ranked = sorted(scores, key=lambda i: (-scores[i], i))[:k]
        return [self.products[i] for i in ranked]


def goal_query(goal: Goal) -> str:
    """The goal's own words as a search: its attributes and its product type."""
    return f"{' '.join(goal.attributes)} {goal.product_type}"


def oracle_actions(goal: Goal) -> list[str]:
    """The catalog's expert: search the goal's words, open its product, choose its options, buy
    (every generated goal is bought with reward 1 this way; the tests check it)."""
    return [
        f"search[{goal_query(goal)}]",
        f"click[{goal.asin}]",
        *(f"click[{v}]" for v in goal.options.values()),
        "click[Buy Now]",
    ]


@dataclass(frozen=True)
class Catalog:
    seed: int
    products: tuple[Product, ...]
    goals: tuple[Goal, ...]
    train_goals: tuple[Goal, ...]

    @staticmethod
    def generate(seed: int = 0, products: int = DEFAULT_PRODUCTS, goals: int = DEFAULT_GOALS) -> Catalog:
        return _generate(seed, products, goals)

    @functools.cached_property
    def by_asin(self) -> dict[str, Product]:
        return {p.asin: p for p in self.products}

    def goal(self, session: str) -> Goal | None:
        """``fixed_i`` and ``train_i`` are the goals; any other name gets one chosen by its hash
        (WebShop gives an unknown session a random goal)."""
        kind, _, number = session.rpartition("_")
        pool = {"fixed": self.goals, "train": self.train_goals}.get(kind)
        if pool is not None and number.isdigit():
            return pool[int(number)] if int(number) < len(pool) else None
        return self.goals[sum(session.encode()) % len(self.goals)] if self.goals else None


@functools.lru_cache(maxsize=4)
def _generate(seed: int, n_products: int, n_goals: int) -> Catalog:
    if n_products < 1 or n_goals < 0:
        raise ValueError(f"a catalog needs products >= 1 and goals >= 0, got {n_products}, {n_goals}")
    rng = random.Random(f"webshop-{GENERATOR_VERSION}-{seed}")
    taken: set[str] = set()
    products = tuple(_product(rng, taken, i) for i in range(n_products))
    engine = Search(products)
    goals = _goals(random.Random(f"webshop-goals-{GENERATOR_VERSION}-{seed}"), "fixed", n_goals, products, engine)
    train = _goals(random.Random(f"webshop-train-{GENERATOR_VERSION}-{seed}"), "train", 20, products, engine)
    return Catalog(seed, products, goals, train)


def _goals(rng: random.Random, kind: str, n: int, products: tuple[Product, ...], engine: Search) -> tuple[Goal, ...]:
    """``n`` goals, each solvable by searching its own words: its product is on the first page of
    results (as ALFWorld keeps only the games its expert solves). A drawn goal that is not is drawn
    again; a catalog too small to give one raises."""
    goals = []
    for i in range(n):
        for _ in range(200):
            goal = _goal(rng, f"{kind}_{i}", rng.choice(products))
            if goal.asin in {p.asin for p in engine.search(goal_query(goal), PRODUCT_WINDOW)}:
                goals.append(goal)
                break
        else:
            raise ValueError(f"the catalog of {len(products)} products gives no findable goal; use more products")
    return tuple(goals)
