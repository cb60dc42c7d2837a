"""A study folder as one static HTML page: ``report.html``, written by ``studies.write_study``
(``scripts/compare.py`` and every sweep) and opened in any browser with no server.

It holds the Table 1 grid with its legend and notes, the paired comparisons, the plots
(embedded) and the frontier inline, and a section per run whose examples (question, gold,
prediction, right or wrong, failure label) load a page at a time from the side files the study's
scan wrote (``report_files/<run>/``, ``studies.scan``), each trajectory only when it is opened
(``studies.trajectory``: thoughts, actions with their tool names, observations, thinking summaries,
a LATS example's search tree), paged and searchable, so the page stays light whatever the study's
size (2 runs x 10^5 examples: ``results/bench/study.md``). ``report.html#<run>/<id>`` opens one
example. Every text from a run is HTML-escaped or set as text: trajectories hold web pages' text.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from react_bench.studies.scan import SIDE, run_key, scan_runs
from react_bench.studies.statistics import detectable_text
from react_bench.studies.statistics import verdict as pair_verdict
from react_bench.studies.trajectory import trajectory_html  # noqa: F401 (the notebook's import)

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
.right { color: #176317; font-weight: 600; } .wrong { color: #a31515; font-weight: 600; }
pre { white-space: pre-wrap; background: #f7f7f7; padding: .5em; border-radius: 4px; }
details { margin: .2em 0; } summary { cursor: pointer; }
img { max-width: 100%; border: 1px solid #ddd; }
.note { color: #555; font-size: 13px; }
.pager { margin: .5em 0; } .examples td.traj { max-width: 0; }
"""

# The runs' examples, paged and searchable, loaded from the side files (report.js, beside this module).
_SCRIPT = Path(__file__).with_name("report.js").read_text(encoding="utf-8")


def _image(path: Path, alt: str) -> str:
    if not path.is_file():
        return ""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"<figure><img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'></figure>"


def _markdown_table_html(markdown: str) -> str:
    """The table1.md text as HTML: its pipe tables as tables, other lines as paragraphs."""
    e = html.escape
    out: list[str] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            head, *body = rows
            out.append("<table><tr>" + "".join(f"<th>{e(c)}</th>" for c in head) + "</tr>")
            out.extend("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in body)
            out.append("</table>")
            rows.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set(":- ") for c in cells):
                rows.append(cells)
            continue
        flush()
        if line.startswith("# "):
            out.append(f"<h2>{e(line[2:])}</h2>")
        elif line.startswith("## "):
            out.append(f"<h3>{e(line[3:])}</h3>")
        elif line.startswith("- "):
            out.append(f"<p class='note'>{e(line[2:])}</p>")
        elif line.strip():
            out.append(f"<p class='note'>{e(line)}</p>")
    flush()
    return "\n".join(out)


def write_report(
    runs: Any, out: Path, *, table_markdown: str, pairs: list[dict[str, Any]], frontier_markdown: str = ""
) -> Path:
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>react-bench study</title>",
        f"<style>{_STYLE}</style></head><body data-side='{SIDE}'><h1>react-bench study</h1>",
        f"<p class='note'>{len(runs)} run(s); files beside this page: table1.md, paired.md, diff.md "
        f"(diff.csv: every row), failures.md, frontier.md, runs.csv; the examples in {SIDE}/.</p>",
        _markdown_table_html(table_markdown),
    ]
    if pairs:
        parts.append(
            "<h2>Paired comparisons</h2><table><tr><th>task</th><th>A</th><th>B</th><th>n</th>"
            "<th>A - B</th><th>95% CI</th><th>McNemar p</th><th>Holm p</th>"
            "<th>detectable (80% power)</th><th>verdict</th></tr>"
        )
        for r in pairs:
            parts.append(
                f"<tr><td>{e(r['task'])}</td><td>{e(r['a'])}</td><td>{e(r['b'])}</td><td>{r['n']}</td>"
                f"<td>{100 * r['difference']:+.1f}</td><td>[{100 * r['ci_low']:+.1f}, "
                f"{100 * r['ci_high']:+.1f}]</td><td>{r['mcnemar_p']:.3g}</td><td>{r['holm_p']:.3g}</td>"
                f"<td>{detectable_text(r)}</td><td>{e(pair_verdict(r))}</td></tr>"
            )
        parts.append("</table>")
    parts += [
        "<h2>Figures</h2>",
        _image(out / "cot_sc_k_curve.png", "accuracy at k"),
        _image(out / "tokens_per_step.png", "input tokens per step"),
    ]
    if frontier_markdown:
        parts += [_markdown_table_html(frontier_markdown), _image(out / "frontier.png", "cost against accuracy")]
    parts.append(
        "<h2>Runs and their trajectories</h2><p class='note'>Each run's examples load a page at a time from "
        f"{SIDE}/ beside this page, a trajectory when it is opened; search reads the run's index (id, "
        "question, gold, prediction, label). A link to one example: "
        "<code>report.html#&lt;run&gt;/&lt;id&gt;</code>.</p>"
    )
    scans = scan_runs([r.run_dir for r in runs.itertuples()], out) if len(runs) else {}
    for r in runs.sort_values(["task", "mode", "runner", "started"]).itertuples() if len(runs) else ():
        found = scans[Path(r.run_dir).resolve()]
        key = run_key(r.run_dir)
        parts.append(
            f"<details class='run' id='{key}' data-pages='{found.pages}' data-n='{found.records}'><summary>"
            f"<b>{e(r.task)} {e(r.mode)}/{e(r.runner)}</b> {e(r.model)} ({e(r.run_id)}): {found.right} of "
            f"{found.records} right <span class='note'>(run {key})</span></summary>"
            f"<p class='note'>{e(r.run_dir)}</p><div class='pager'><button class='prev'>&larr;</button> "
            "<span class='at'></span> <button class='next'>&rarr;</button> <input class='find' type='search' "
            "placeholder='search id, question, answer, label' size='40'> <span class='said note'></span></div>"
            "<table class='examples'><thead><tr><th>id</th><th>question</th><th>gold</th><th>prediction</th>"
            "<th></th><th>label</th></tr></thead><tbody></tbody></table></details>"
        )
    parts.append(f"<script>{_SCRIPT}</script>")
    parts.append("</body></html>")
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
