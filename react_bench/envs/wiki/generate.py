"""SynthWiki: a generated encyclopedia of a world no model has memorised, and questions over it.

HotpotQA and FEVER are in every current model's training data, so a CoT score on them mixes
reasoning with recall. SynthWiki's answers exist only in its articles: closed-book, a model
can only guess; acting (search, lookup) is the only way to find them.

The world (``generate(seed, size)``, deterministic for a seed and size): people, cities,
companies and films with invented names (syllables, never a real title: checked against the
offline HotpotQA and FEVER titles in the tests), typed attributes (born in, birth year,
occupation; country, population, founding year; founder, headquarters, founding year;
director, release year) and, for every entity, a distractor with a similar name and other
attributes. Each article is one paragraph of seven to nine sentences in encyclopedic prose:
the facts that link entities come first (what ``search`` shows), the numbers come after the
fifth sentence (so ``lookup`` is needed for them).

Questions in HotpotQA's shape, each with its answer, supporting titles and the gold path
(the actions that find the answer): bridge questions of two hops (a film's director's birth
city) and three hops (the population of the birth city of a company's founder), yes/no
comparisons (were two people born in the same city; balanced yes/no) and which-of
comparisons (which company was founded earlier; the answer first or second half the time).
FEVER-style claims over the same world (``type: claim``; SUPPORTS / REFUTES / NOT ENOUGH INFO,
a third each; ``task=synthwiki_claims``). The split is by question: ``train`` (few-shot
exemplar material) and ``test``. Example ids
carry the generator's version and seed (``sw1-s0-...``), so the run's fingerprint does too.

``ensure_world(seed, size)`` writes the world once to the cache (``pages.jsonl``,
``questions.jsonl``); ``scripts/make_synthwiki.py`` writes it anywhere.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VERSION = 1
DEFAULT_SEED = 0
DEFAULT_SIZE = 800  # people; cities, companies and films scale with it (about 3,000 entities in all)

_ONSETS = [
    "b",
    "br",
    "d",
    "dr",
    "f",
    "g",
    "gl",
    "k",
    "kr",
    "l",
    "m",
    "n",
    "p",
    "pr",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "z",
    "th",
    "sh",
    "qu",
]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ia", "ou", "y"]
_CODAS = ["", "n", "r", "l", "s", "th", "k", "nd", "rn", "x"]
_OCCUPATIONS = ["painter", "engineer", "novelist", "cartographer", "chemist", "composer", "sculptor", "architect"]
_FILLERS = [
    "{n} is mentioned in several regional almanacs.",
    "Records about {n} are kept in the provincial archive.",
    "Local historians have written about {n} at length.",
    "{n} appears in a number of travel guides.",
    "A short entry on {n} was added to the national registry.",
    "Visitors often ask about {n} at the information office.",
]


def _name(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)).title()


@dataclass
class Entity:
    kind: str  # person | city | company | film
    title: str
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class World:
    seed: int
    size: int
    entities: dict[str, Entity]
    questions: list[dict[str, Any]]

    def pages(self) -> list[dict[str, str]]:
        return [{"title": e.title, "text": article(e, self.entities)} for e in self.entities.values()]


def _unique(rng: random.Random, taken: set[str], make: Any) -> str:
    while True:
        name = make()
        if name.lower() not in taken:  # titles differ even in case (Wikipedia's "Go" ignores it)
            taken.add(name.lower())
            return name


def generate(seed: int = DEFAULT_SEED, size: int = DEFAULT_SIZE) -> World:
    rng = random.Random(f"synthwiki-{VERSION}-{seed}-{size}")
    taken: set[str] = set()
    entities: dict[str, Entity] = {}

    def add(kind: str, title: str, **facts: Any) -> Entity:
        entities[title] = Entity(kind, title, facts)
        return entities[title]

    countries = [_unique(rng, taken, lambda: _name(rng, 2)) for _ in range(12)]
    cities = []
    for _ in range(max(20, size // 4)):
        city = _unique(rng, taken, lambda: _name(rng, 2) + rng.choice(["ford", "holm", "mere", "stead", "vale"]))
        cities.append(
            add(
                "city",
                city,
                country=rng.choice(countries),
                population=rng.randrange(2_000, 900_000),
                founded=rng.randrange(1200, 1900),
            )
        )
    people = []
    for _ in range(size):
        person = _unique(rng, taken, lambda: f"{_name(rng, 2)} {_name(rng, 2)}")
        people.append(
            add(
                "person",
                person,
                born_in=rng.choice(cities).title,
                born=rng.randrange(1890, 1990),
                occupation=rng.choice(_OCCUPATIONS),
            )
        )
    companies = []
    for _ in range(max(20, size // 2)):
        company = _unique(rng, taken, lambda: _name(rng, 2) + rng.choice([" Works", " Holdings", " & Co.", " Group"]))
        companies.append(
            add(
                "company",
                company,
                founder=rng.choice(people).title,
                hq=rng.choice(cities).title,
                founded=rng.randrange(1900, 2020),
            )
        )
    films = []
    for _ in range(max(20, size // 2)):
        film = _unique(rng, taken, lambda: "The " + _name(rng, 3))
        films.append(add("film", film, director=rng.choice(people).title, released=rng.randrange(1930, 2024)))
    for entity in list(entities.values()):  # a distractor for each: a similar name, other facts
        if entity.kind == "person":
            twin = _unique(rng, taken, lambda e=entity: f"{e.title.split()[0]} {_name(rng, 2)}")
            add(
                "person",
                twin,
                born_in=rng.choice(cities).title,
                born=rng.randrange(1890, 1990),
                occupation=rng.choice(_OCCUPATIONS),
            )
        elif entity.kind == "film":
            twin = _unique(rng, taken, lambda e=entity: f"{e.title} {rng.choice(['II', 'Returns', 'Again'])}")
            add("film", twin, director=rng.choice(people).title, released=rng.randrange(1930, 2024))
    questions = _questions(rng, seed, size, people, companies, films, entities)
    return World(seed, size, entities, questions)


def article(e: Entity, entities: dict[str, Entity]) -> str:
    f, n = e.facts, e.title
    match e.kind:
        case "person":
            city = entities[f["born_in"]]
            lead = [
                f"{n} is a {f['occupation']} who was born in {f['born_in']}.",
                f"{f['born_in']} is a city in {city.facts['country']}.",
            ]
            late = [f"{n} was born in the year {f['born']}."]
        case "city":
            lead = [f"{n} is a city in {f['country']}."]
            late = [f"The population of {n} is {f['population']}.", f"{n} was founded in the year {f['founded']}."]
        case "company":
            lead = [f"{n} is a company founded by {f['founder']}.", f"{n} is headquartered in {f['hq']}."]
            late = [f"{n} was founded in the year {f['founded']}."]
        case _:
            lead = [f"{n} is a film directed by {f['director']}."]
            late = [f"{n} was released in the year {f['released']}."]
    fillers = [t.format(n=n) for t in _FILLERS[: 5 - len(lead)]]
    return " ".join(lead + fillers + late)


def _q(kind: str, question: str, answer: str, titles: list[str], path: list[str]) -> dict[str, Any]:
    return {"type": kind, "question": question, "answer": answer, "supporting_titles": titles, "path": path}


def _questions(rng, seed, size, people, companies, films, entities) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for film in rng.sample(films, min(len(films), size // 4)):
        director = entities[film.facts["director"]]
        path = [f"Search[{film.title}]", f"Search[{director.title}]"]
        question = f"In which city was the director of {film.title} born?"
        out.append(_q("bridge2", question, director.facts["born_in"], [film.title, director.title], path))
    for company in rng.sample(companies, min(len(companies), size // 4)):
        founder = entities[company.facts["founder"]]
        city = entities[founder.facts["born_in"]]
        question = f"What is the population of the city where the founder of {company.title} was born?"
        out.append(
            _q(
                "bridge3",
                question,
                str(city.facts["population"]),
                [company.title, founder.title, city.title],
                [f"Search[{company.title}]", f"Search[{founder.title}]", f"Search[{city.title}]", "Lookup[population]"],
            )
        )
    for k in range(size // 4):
        a = rng.choice(people)
        same = k % 2 == 0  # balanced: half yes, half no
        pool = [p for p in people if (p.facts["born_in"] == a.facts["born_in"]) == same and p is not a]
        if not pool:
            continue
        b = rng.choice(pool)
        path = [f"Search[{a.title}]", f"Search[{b.title}]"]
        question = f"Were {a.title} and {b.title} born in the same city?"
        out.append(_q("comparison_yes_no", question, "yes" if same else "no", [a.title, b.title], path))
    for k in range(size // 4):
        a, b = rng.sample(companies, 2)
        if a.facts["founded"] == b.facts["founded"]:
            continue
        earlier = a if a.facts["founded"] < b.facts["founded"] else b
        first, second = (earlier, b if earlier is a else a) if k % 2 == 0 else (b if earlier is a else a, earlier)
        out.append(
            _q(
                "comparison_which",
                f"Which company was founded earlier, {first.title} or {second.title}?",
                earlier.title,
                [first.title, second.title],
                [f"Search[{first.title}]", "Lookup[founded in]", f"Search[{second.title}]", "Lookup[founded in]"],
            )
        )
    out += _claims(rng, size, people, companies, entities)
    rng.shuffle(out)
    for i, q in enumerate(out):
        q["id"] = f"sw{VERSION}-s{seed}-n{size}-{i:05d}"
        q["split"] = "train" if i % 10 == 0 else "test"
    return out


def _claims(rng, size, people, companies, entities) -> list[dict[str, Any]]:
    """FEVER-style claims over the same world, a third of each label. SUPPORTS and REFUTES are
    decided by an article (the person's or the company's); NOT ENOUGH INFO claims state what no
    article mentions (a sibling's occupation, a company's motto)."""
    out: list[dict[str, Any]] = []
    cities = [e.title for e in entities.values() if e.kind == "city"]
    names = [p.title for p in people]
    subjects = [(rng.choice(people), "was born in", "born_in", cities) for _ in range(size // 4)]
    subjects += [(rng.choice(companies), "was founded by", "founder", names) for _ in range(size // 8)]
    for k, (entity, relation, fact, others) in enumerate(subjects):
        label = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")[k % 3]
        if label == "SUPPORTS":
            claim = f"{entity.title} {relation} {entity.facts[fact]}."
        elif label == "REFUTES":
            claim = f"{entity.title} {relation} {rng.choice([o for o in others if o != entity.facts[fact]])}."
        elif entity.kind == "person":
            claim = f"{entity.title} has a sibling who works as a {rng.choice(_OCCUPATIONS)}."
        else:
            claim = f"The motto of {entity.title} is written in gold letters."
        out.append(
            {
                "type": "claim",
                "question": claim,
                "answer": label,
                "supporting_titles": [entity.title],
                "path": [f"Search[{entity.title}]"],
            }
        )
    return out


def world_dir(seed: int = DEFAULT_SEED, size: int = DEFAULT_SIZE, cache: Path | None = None) -> Path:
    from react_bench.envs.wiki.build import default_cache_dir

    root = cache or default_cache_dir().parent / "synthwiki"
    return root / f"v{VERSION}-seed{seed}-size{size}"


def write_world(world: World, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "pages.jsonl.tmp"
    tmp.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in world.pages()), encoding="utf-8")
    tmp.replace(out / "pages.jsonl")
    tmp = out / "questions.jsonl.tmp"
    tmp.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in world.questions), encoding="utf-8")
    tmp.replace(out / "questions.jsonl")
    meta = {
        "version": VERSION,
        "seed": world.seed,
        "size": world.size,
        "entities": len(world.entities),
        "questions": len(world.questions),
        "kinds": sorted({e.kind for e in world.entities.values()}),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def ensure_world(seed: int = DEFAULT_SEED, size: int = DEFAULT_SIZE) -> Path:
    out = world_dir(seed, size)
    if not (out / "meta.json").exists():
        write_world(generate(seed, size), out)
    return out


def read_questions(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def entity_dict(e: Entity) -> dict[str, Any]:
    return asdict(e)


def ensure_wiki(folder: Path) -> Path:
    """The world's offline wiki (the same SQLite FTS5 corpus the other tasks use)."""
    from react_bench.envs.wiki.build import build_from_jsonl, usable_wiki

    path = folder / "wiki.sqlite"
    if not (path.exists() and usable_wiki(path)):
        build_from_jsonl(folder / "pages.jsonl", path)
    return path


def prompt_file(folder: Path, own: dict[str, Any], label: str = "Question") -> dict[str, Any]:
    """The project's prompt-file layout for SynthWiki: the instructions of ``own`` (HotpotQA's or
    FEVER's prompt file: the same input format and actions), exemplars made from three train
    questions by walking their gold paths through the world's own wiki (so every observation is
    what the environment shows)."""
    from react_bench.envs.wiki.local import LocalWiki

    claims = label == "Claim"
    wiki = LocalWiki(ensure_wiki(folder))
    train = [q for q in read_questions(folder) if q["split"] == "train"]
    if claims:
        chosen = [
            next(q for q in train if q["type"] == "claim" and q["answer"] == a)
            for a in ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
        ]
    else:
        chosen = [next(q for q in train if q["type"] == kind) for kind in ("bridge2", "bridge3", "comparison_yes_no")]
    exemplars = {"react": "", "act": "", "cot": "", "standard": ""}
    for q in chosen:
        steps = oracle_steps(q, wiki)
        exemplars["react"] += f"\n{label}: {q['question']}\n" + "".join(
            f"Thought {i}: {t}\nAction {i}: {a}\n" + (f"Observation {i}: {o}\n" if o is not None else "")
            for i, (t, a, o) in enumerate(steps, start=1)
        )
        exemplars["act"] += f"\n{label}: {q['question']}\n" + "".join(
            f"Action {i}: {a}\n" + (f"Observation {i}: {o}\n" if o is not None else "")
            for i, (_, a, o) in enumerate(steps, start=1)
        )
        reasoning = " ".join(t for t, _, _ in steps[:-1])
        exemplars["cot"] += f"\n{label}: {q['question']}\nThought: {reasoning}\nAnswer: {q['answer']}\n"
        exemplars["standard"] += f"\n{label}: {q['question']}\nAnswer: {q['answer']}\n"
    return {
        "label": label,
        "instructions": own["instructions"],
        "exemplars": {k: v + "\n" for k, v in exemplars.items()},
    }


def oracle_steps(question: dict[str, Any], wiki: Any) -> list[tuple[str, str, str | None]]:
    """(thought, action, observation) along the gold path, then the finish (no observation)."""
    from react_bench.envs.wiki.env import NotFound, PageFound, not_found_observation, page_observation, page_sentences

    steps: list[tuple[str, str, str | None]] = []
    page = None
    for action in question["path"]:
        name, argument = action[:-1].split("[", 1)
        if name == "Search":
            outcome = wiki.search(argument)
            if isinstance(outcome, PageFound):
                page = outcome.page
                observation = page_observation(page.text)
            else:
                assert isinstance(outcome, NotFound)
                observation = not_found_observation(argument, outcome.similar)
            thought = f"I need to search {argument}."
        else:
            hits = [s for s in page_sentences(page.text) if argument.lower() in s.lower()] if page else []
            observation = f"(Result 1 / {len(hits)}) {hits[0]}" if hits else "No more results.\n"
            thought = f"The page does not say it in its first sentences; I look up {argument}."
        steps.append((thought, action, observation))
    steps.append((f"So the answer is {question['answer']}.", f"Finish[{question['answer']}]", None))
    return steps
