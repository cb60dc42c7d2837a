"""Serve the project's WebShop-compatible shop over its generated catalog, until killed.

    python scripts/webshop_server.py --port 0 --seed 0     # prints "PORT <n>" first, then serves

Browse it at ``http://127.0.0.1:<n>/fixed_0``, or point a run at it:
``python scripts/eval.py task=webshop webshop.url=http://127.0.0.1:<n>`` (with the same seed,
products and goals it sees the same catalog and goals as the in-process default).
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.envs.webshop.catalog import DEFAULT_GOALS, DEFAULT_PRODUCTS, Catalog  # noqa: E402
from react_bench.envs.webshop.server import WebShopServer  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--products", type=int, default=DEFAULT_PRODUCTS)
    parser.add_argument("--goals", type=int, default=DEFAULT_GOALS)
    args = parser.parse_args(argv)
    server = WebShopServer(Catalog.generate(args.seed, args.products, args.goals), port=args.port, host=args.host)
    print(f"PORT {server.port}", flush=True)
    server.start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
