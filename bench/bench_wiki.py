"""Benchmark the local wiki: build throughput and search latency, HotpotQA and synthetic 1M.

    python bench/bench_wiki.py                  # writes results/bench/wiki.{md,json}
    python bench/bench_wiki.py --docs 100000    # a smaller synthetic corpus

Targets (issues 3 and 16): search p50 <= 2 ms on the 6.6k-page HotpotQA wiki and <= 20 ms
on 1M documents, for whole-question queries and for all query sets pooled; build >= 20k
documents/s at 1M.

What is measured:
- build: ``build_from_distractor`` (HotpotQA) / ``build_from_jsonl`` (synthetic), wall time
  from reading the source file to the renamed, indexed file; documents/s counts input
  documents. The synthetic JSONL is generated first, its time reported apart.
- search: ``LocalWiki.search`` (exact title, else the Similar list), one thread, wall time
  per query, after a warm-up with other queries of the same kinds. Query sets, from a random sample of pages: ``hit``
  (their titles), ``miss`` (a title with its last word replaced by another title word: no
  such page, Similar list), ``phrase`` (three consecutive words of the page's text, mostly
  misses made of common words), and ``question``: whole questions, long queries full of
  common words (HotpotQA: the dev questions' own text; synthetic: two runs of five words
  from two pages' texts around their titles, as a bridge question reads). ``all`` pools them.

Synthetic corpus: titles of 3 words from a 200k-word name vocabulary (uniform; unique in
practice), texts of 40-136 words (mean 88, as the HotpotQA paragraphs) drawn from a
100k-word vocabulary with Zipf-like frequencies (p ~ 1/rank), the title words in the
first sentence, sentences of about 20 words. Fixed seed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from react_bench.envs.wiki.build import BuildStats, build_from_distractor, build_from_jsonl
from react_bench.envs.wiki.local import LocalWiki

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"p50_ms_6k": 2.0, "p50_ms_1m": 20.0, "build_docs_per_s": 20_000}


def _words(rng: np.random.Generator, n: int, lo: int, hi: int) -> list[str]:
    letters = np.array(list(string.ascii_lowercase))
    lengths = rng.integers(lo, hi + 1, size=n)
    chars = letters[rng.integers(0, 26, size=int(lengths.sum()))]
    out, pos = [], 0
    for length in lengths:
        out.append("".join(chars[pos : pos + length]))
        pos += length
    return list(dict.fromkeys(out))


def generate_synthetic(path: Path, docs: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    names = _words(rng, 200_000, 5, 10)
    vocab = np.array(_words(rng, 100_000, 2, 9), dtype=object)
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    cumulative = np.cumsum(weights / weights.sum())
    chunk = 10_000
    with open(path, "w", encoding="utf-8") as f:
        for start in range(0, docs, chunk):
            n = min(chunk, docs - start)
            title_ids = rng.integers(0, len(names), size=(n, 3))
            lengths = rng.integers(40, 137, size=n)
            ids = np.searchsorted(cumulative, rng.random(int(lengths.sum())))
            words = vocab[np.minimum(ids, len(vocab) - 1)].tolist()
            pos = 0
            lines = []
            for row, length in zip(title_ids.tolist(), lengths.tolist(), strict=True):
                title = " ".join(names[i].capitalize() for i in row)
                body = words[pos : pos + length]
                pos += length
                sentences = [" ".join(body[i : i + 20]) for i in range(0, len(body), 20)]
                text = f"{title} is a {sentences[0]}. " + ". ".join(s.capitalize() for s in sentences[1:]) + "."
                lines.append(json.dumps({"title": title, "text": text}) + "\n")
            f.writelines(lines)


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pick(q):
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "n": len(ordered),
        "p50_ms": round(pick(0.50) * 1e3, 3),
        "p99_ms": round(pick(0.99) * 1e3, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1e3, 3),
        "max_ms": round(ordered[-1] * 1e3, 3),
    }


def time_searches(
    wiki: LocalWiki, query_sets: dict[str, list[str]], warm_up: dict[str, list[str]]
) -> dict[str, dict[str, float]]:
    """Per-set latency percentiles. ``warm_up`` (other queries of the same kinds) runs first:
    the OS page cache and the wiki's token-count cache are warm as in a long run, but no
    timed query has been seen before."""
    for queries in warm_up.values():
        for q in queries:
            wiki.search(q)
    results: dict[str, dict[str, float]] = {}
    pooled: list[float] = []
    for name, queries in query_sets.items():
        samples = []
        for q in queries:
            start = time.perf_counter()
            wiki.search(q)
            samples.append(time.perf_counter() - start)
        results[name] = _percentiles(samples)
        pooled += samples
    results["all"] = _percentiles(pooled)
    return results


def _miss(title: str, rng: random.Random, vocab: list[str]) -> str:
    words = title.split()
    return " ".join(words[:-1] + [rng.choice(vocab)]) if len(words) > 1 else f"{title} {rng.choice(vocab)}"


def _sample_pages(path: Path, n: int, rng: random.Random) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    count = conn.execute("SELECT max(id) FROM pages").fetchone()[0]
    ids = rng.sample(range(1, count + 1), min(n, count))
    pages = [conn.execute("SELECT title, text FROM pages WHERE id = ?", (i,)).fetchone() for i in ids]
    conn.close()
    return pages


def _phrase(text: str, rng: random.Random) -> str:
    """Three consecutive words of a page: what an agent searches after reading them."""
    words = text.split()
    start = rng.randrange(max(1, len(words) - 2))
    return " ".join(words[start : start + 3])


def _question(first: tuple[str, str], second: tuple[str, str], rng: random.Random) -> str:
    """A whole question over two pages, as a bridge question reads: runs of words from each
    page's text (mostly common words) around the two titles; about 15 words."""
    parts = []
    for title, text in (first, second):
        words = text.split()
        start = rng.randrange(max(1, len(words) - 5))
        parts += [" ".join(words[start : start + 5]), title]
    return " ".join(parts) + "?"


def query_sets(pages: list[tuple[str, str]], rng: random.Random) -> dict[str, list[str]]:
    vocab = sorted({w for title, _ in pages for w in title.split()})
    return {
        "hit": [title for title, _ in pages],
        "miss": [_miss(title, rng, vocab) for title, _ in pages],
        "phrase": [_phrase(text, rng) for _, text in pages],
    }


def bench_hotpotqa(data_dir: Path, work: Path, queries: int) -> dict:
    src = data_dir / "hotpotqa" / "hotpot_dev_distractor_685.json"
    builds = [_timed(lambda: build_from_distractor(src, work / "hotpotqa.sqlite")) for _ in range(3)]
    stats, cpu = min(builds, key=lambda b: b[0].seconds)
    rng = random.Random(0)
    pages = _sample_pages(stats.path, 2 * queries, rng)
    sets, warm = query_sets(pages[:queries], rng), query_sets(pages[queries:], rng)
    questions = [q["question"] for q in json.loads(src.read_text())]
    rng.shuffle(questions)
    half = len(questions) // 2
    sets["question"], warm["question"] = questions[:half][:queries], questions[half:]
    wiki = LocalWiki(stats.path)
    return {
        "docs_in": stats.pages + stats.duplicates,
        "pages": stats.pages,
        "build_s": round(stats.seconds, 3),
        "build_cpu_s": round(cpu, 3),
        "build_docs_per_s": round(stats.docs_per_second),
        "build_docs_per_cpu_s": round((stats.pages + stats.duplicates) / cpu),
        "file_mb": round(stats.path.stat().st_size / 1e6, 1),
        "search": time_searches(wiki, sets, warm),
    }


def _timed(build: Callable[[], BuildStats]) -> tuple[BuildStats, float]:
    """A build and its CPU seconds (all threads of this process: SQLite and the reader)."""
    start = time.process_time()
    stats = build()
    return stats, time.process_time() - start


def bench_synthetic(work: Path, docs: int, queries: int) -> dict:
    jsonl = work / "synthetic.jsonl"
    start = time.perf_counter()
    generate_synthetic(jsonl, docs)
    generated = time.perf_counter() - start
    stats, cpu = _timed(lambda: build_from_jsonl(jsonl, work / "synthetic.sqlite", progress=sys.stderr.isatty()))
    jsonl.unlink()
    rng = random.Random(1)
    pages = _sample_pages(stats.path, 2 * queries, rng)
    sets, warm = query_sets(pages[:queries], rng), query_sets(pages[queries:], rng)
    for chosen, half in ((sets, pages[:queries]), (warm, pages[queries:])):
        chosen["question"] = [_question(half[i], half[(i + 1) % len(half)], rng) for i in range(len(half))]
    wiki = LocalWiki(stats.path)
    result = {
        "docs_in": stats.pages + stats.duplicates,
        "pages": stats.pages,
        "generate_s": round(generated, 1),
        "build_s": round(stats.seconds, 1),
        "build_cpu_s": round(cpu, 1),
        "build_docs_per_s": round(stats.docs_per_second),
        "build_docs_per_cpu_s": round((stats.pages + stats.duplicates) / cpu),
        "file_mb": round(stats.path.stat().st_size / 1e6, 1),
        "search": time_searches(wiki, sets, warm),
    }
    wiki.close()
    return result


def _environment() -> dict:
    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d"),
        "load_average_1m_at_start": round(os.getloadavg()[0], 2),
    }


def _checks(result: dict) -> list[dict]:
    """One {name, value, goal, ok} per target, from the measured figures."""
    hp, syn = result["hotpotqa"], result.get("synthetic")
    checks = []
    for name, corpus, goal in (
        ("the 6.6k HotpotQA wiki", hp, TARGETS["p50_ms_6k"]),
        (f"{(syn or {}).get('pages', 0):,} documents", syn, TARGETS["p50_ms_1m"]),
    ):
        if corpus is None:
            continue
        for label, key in (("whole-question", "question"), ("all query sets pooled", "all")):
            if key in corpus["search"]:
                p50 = corpus["search"][key]["p50_ms"]
                checks.append(
                    {
                        "name": f"search p50 on {name} (ms, {label})",
                        "value": p50,
                        "goal": f"<= {goal}",
                        "ok": p50 <= goal,
                    }
                )
    if syn is not None:
        rate, goal = syn["build_docs_per_s"], TARGETS["build_docs_per_s"]
        checks.append(
            {
                "name": f"build rate at {syn['docs_in']:,} documents (docs/s)",
                "value": rate,
                "goal": f">= {goal}",
                "ok": rate >= goal,
            }
        )
    return checks


def render_markdown(result: dict) -> str:
    env = result["environment"]
    lines = [
        "# Local wiki benchmark",
        "",
        (
            f"Written by `bench/bench_wiki.py` on {env['date']}: Python {env['python']}, "
            f"SQLite {env['sqlite']}, {env['cpus']} CPUs ({env['platform']}), shared with other work: "
            f"1-minute load average {env['load_average_1m_at_start']} at the start, "
            f"{env['load_average_1m_at_end']} at the end. Build CPU time counts all threads (SQLite "
            "and the input reader); searches run in one thread (`LocalWiki.search`, wall time)."
        ),
        "",
        "| corpus | docs in | pages | build s (wall) | build s (CPU) | docs/s (wall) | docs/CPU-s | file MB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    corpora = [(name, result[name]) for name in ("hotpotqa", "synthetic") if result.get(name)]
    for name, c in corpora:
        lines.append(
            f"| {name} | {c['docs_in']:,} | {c['pages']:,} | {c['build_s']} | {c['build_cpu_s']} "
            f"| {c['build_docs_per_s']:,} | {c['build_docs_per_cpu_s']:,} | {c['file_mb']} |"
        )
    lines += [
        "",
        "| corpus | queries | n | p50 ms | p99 ms | mean ms | max ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, c in corpora:
        for qset, r in c["search"].items():
            lines.append(
                f"| {name} | {qset} | {r['n']} | {r['p50_ms']} | {r['p99_ms']} | {r['mean_ms']} | {r['max_ms']} |"
            )
    if result.get("synthetic"):
        lines += ["", f"Synthetic JSONL generation (not part of the build): {result['synthetic']['generate_s']} s."]
    lines += ["", "Targets (issues 3 and 16): " + ", ".join(f"{k} = {v}" for k, v in TARGETS.items()) + ".", ""]
    lines += ["| check | value | goal | ok |", "| --- | ---: | --- | --- |"]
    lines += [f"| {c['name']} | {c['value']} | {c['goal']} | {'yes' if c['ok'] else 'NO'} |" for c in result["checks"]]
    over = [
        f"{name}/{qset} ({r['p50_ms']} ms)"
        for name, limit in (("hotpotqa", TARGETS["p50_ms_6k"]), ("synthetic", TARGETS["p50_ms_1m"]))
        if result.get(name)
        for qset, r in result[name]["search"].items()
        if r["p50_ms"] > limit
    ]
    lines += ["", "Query sets whose own p50 is over their corpus's target: " + (", ".join(over) or "none") + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000, help="synthetic corpus size (0: skip)")
    parser.add_argument("--queries", type=int, default=1000, help="queries per query set")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out-dir", type=Path, default=REPO / "results" / "bench")
    parser.add_argument("--work-dir", type=Path, default=None, help="scratch space (default: a temp dir)")
    parser.add_argument("--render", action="store_true", help="only rewrite wiki.md from the measured wiki.json")
    args = parser.parse_args(argv)
    if args.render:
        stored = json.loads((args.out_dir / "wiki.json").read_text())
        stored.pop("verdicts", None)  # (older files) the checks below replace them
        stored["checks"] = _checks(stored)
        (args.out_dir / "wiki.json").write_text(json.dumps(stored, indent=2) + "\n")
        (args.out_dir / "wiki.md").write_text(render_markdown(stored))
        return 0

    from react_bench.tasks.data import resolve_data_dir

    data_dir = args.data_dir or resolve_data_dir(None)
    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
        work = Path(tmp)
        result: dict = {"environment": _environment(), "targets": TARGETS}
        result["hotpotqa"] = bench_hotpotqa(data_dir, work, args.queries)
        print(json.dumps(result["hotpotqa"], indent=1), flush=True)
        result["synthetic"] = bench_synthetic(work, args.docs, args.queries) if args.docs else None
        print(json.dumps(result["synthetic"], indent=1), flush=True)
    result["environment"]["load_average_1m_at_end"] = round(os.getloadavg()[0], 2)
    result["checks"] = _checks(result)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "wiki.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out_dir / "wiki.md").write_text(render_markdown(result))
    print(render_markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
