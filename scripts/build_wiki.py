"""Build an offline wiki file (SQLite + FTS5) for ``wiki=local``.

    python scripts/build_wiki.py --task hotpotqa            # the task's own, into the cache
    python scripts/build_wiki.py --from distractor SRC OUT  # HotpotQA official format (dev or train)
    python scripts/build_wiki.py --from fever SRC OUT       # FEVER wiki-pages JSONL
    python scripts/build_wiki.py --from jsonl SRC OUT       # JSONL {title, text}

A run with ``wiki=local`` and ``wiki.path=null`` builds the task's wiki by itself on first
use; this script is for building ahead of time or from other sources.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from react_bench.envs.wiki.build import BUILDERS
from react_bench.envs.wiki.local import LocalWiki


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--task", choices=["hotpotqa", "fever"], help="build (or find) the task's cached wiki")
    which.add_argument("--from", dest="source_format", choices=sorted(BUILDERS), help="input format")
    parser.add_argument("paths", nargs="*", type=Path, help="SRC OUT (with --from)")
    parser.add_argument("--data-dir", type=Path, default=None, help="with --task: the data folder")
    parser.add_argument("--cache-dir", type=Path, default=None, help="with --task: where cached wikis live")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    if args.task:
        from react_bench.tasks import TaskConfig, load_task
        from react_bench.tasks.wikitask import WikiTask

        task = load_task(args.task)
        assert isinstance(task, WikiTask)
        config = TaskConfig(name=args.task, data_dir=None if args.data_dir is None else str(args.data_dir))
        path = task.local_wiki(config, args.cache_dir)
        print(f"{args.task}: {path} ({len(LocalWiki(path))} pages)")
        return 0
    if len(args.paths) != 2:
        parser.error("--from needs SRC and OUT")
    src, out = args.paths
    stats = BUILDERS[args.source_format](src, out, progress=not args.no_progress)
    print(
        f"{stats.path}: {stats.pages} pages, {stats.duplicates} duplicate titles dropped, "
        f"{stats.seconds:.1f} s ({stats.docs_per_second:,.0f} docs/s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
