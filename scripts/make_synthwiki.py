"""Generate a SynthWiki world: ``python scripts/make_synthwiki.py [--seed 0] [--size 800] [--out DIR]``.

Writes pages.jsonl, questions.jsonl, meta.json and the offline wiki (wiki.sqlite) to ``--out``
(default: the cache folder that ``task=synthwiki`` reads for that seed and size). Deterministic:
the same seed and size give byte-identical files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.envs.wiki.generate import DEFAULT_SEED, DEFAULT_SIZE, ensure_wiki, generate, world_dir, write_world  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="number of people (the world scales with it)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = write_world(generate(args.seed, args.size), args.out or world_dir(args.seed, args.size))
    ensure_wiki(out)
    print((out / "meta.json").read_text(), end="")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
