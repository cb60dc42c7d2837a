"""A picture of a study's static page, or of any page: ``scripts/screenshot_report.py STUDY_DIR|URL OUT.png``.

Opens ``STUDY_DIR/report.html`` (``scripts/compare.py`` writes it; ``--example RUN/ID`` opens one
example's trajectory, as ``report.html#RUN/ID`` does) in headless Chromium
(Debian's ``chromium``; ``$CHROMIUM`` names another binary) and saves a screenshot; with
``--dom OUT.html`` also the page as the browser parsed it. Exit 2 with one line if Chromium
is missing. A URL (``http://...``) is opened as it is: a trace in Phoenix's view, say
(``tests/test_phoenix.py``, ``docs/traces.png``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote


def chromium() -> str | None:
    for name in filter(None, (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome")):
        found = shutil.which(name)
        if found:
            return found
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", help="a study folder (its report.html is opened) or a page's http(s) URL")
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=1300)
    parser.add_argument("--height", type=int, default=1100)
    parser.add_argument("--dom", type=Path, default=None)
    parser.add_argument("--example", default=None, help="RUN/ID: open this example's trajectory")
    args = parser.parse_args(argv)
    if args.study.startswith(("http://", "https://")):
        page = args.study
    else:
        report = (Path(args.study) / "report.html").resolve()
        if not report.is_file():
            print(f"error: no report.html in {args.study} (scripts/compare.py writes it)", file=sys.stderr)
            return 2
        page = report.as_uri() + ("" if args.example is None else "#" + quote(args.example, safe="/"))
    binary = chromium()
    if binary is None:
        print("error: no Chromium found (apt-get install chromium, or set CHROMIUM)", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        common = [
            binary,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={args.width},{args.height}",
            "--virtual-time-budget=10000",  # until the page's scripts have loaded its first pages of examples
        ]
        subprocess.run(
            [*common, f"--screenshot={args.out.resolve()}", page], check=True, capture_output=True, timeout=120
        )
        if args.dom is not None:
            dom = subprocess.run([*common, "--dump-dom", page], check=True, capture_output=True, timeout=120)
            args.dom.write_bytes(dom.stdout)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
