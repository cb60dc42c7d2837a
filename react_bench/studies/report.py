"""A study folder as one static HTML page: ``report.html``, written by ``studies.write_study``
(``scripts/compare.py`` and every sweep) and opened in any browser with no server.

It holds the Table 1 grid with its legend and notes, the paired comparisons, both plots
(embedded), and every run's examples: question, gold, prediction, right or wrong, failure
label, and each trajectory behind a ``<details>`` (thoughts, actions with their tool names,
observations, thinking summaries). Every text from a run is HTML-escaped: trajectories hold
web pages' text. ``trajectory_html`` is also what the trajectory notebook shows; a LATS example's search tree
(``tree_html``) comes with its trajectory.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from react_bench.record import ExampleRecord
from react_bench.results import failure_label, read_records
from react_bench.studies.statistics import detectable_text
from react_bench.studies.statistics import verdict as pair_verdict

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
"""


def trajectory_html(record: ExampleRecord | Mapping[str, Any]) -> str:
    """One example: question, gold, prediction, label, then each episode: what the model saw first,
    its events and turns (a record, or a line's dict as a notebook's row has it)."""
    e = html.escape
    r = ExampleRecord.of(record)
    label = failure_label(r)
    verdict = "right" if r.correct else "wrong"
    parts = [
        f"<h3>{e(r.question)}</h3><p>gold <b>{e(r.gold)}</b>, prediction "
        f"<b>{e(r.prediction)}</b> (<span class='{verdict}'>{verdict}</span>, {e(label)})</p>"
    ]
    for episode in r.trajectory:
        parts.append(f"<h4>episode: {e(episode.route)}</h4>")
        if episode.first_observation is not None:
            parts.append(
                f"<details><summary>first observation</summary><pre>{e(episode.first_observation)}</pre></details>"
            )
        parts.append("<ol>")
        for event in episode.events:
            kind = event.get("type")
            if kind == "tool_called":
                args = ", ".join(f"{k}={v!r}" for k, v in (event.get("arguments") or {}).items())
                parts.append(f"<li><b>{e(str(event.get('name')))}</b>({e(args)})</li>")
            elif kind == "tool_execution_finished":
                what = "error" if event.get("is_error") else "observation"
                parts.append(f"<li><i>{what}</i>: {e(str(event.get('observation')))}</li>")
            elif kind == "parse_error":
                parts.append(f"<li><i>parse error</i>: {e(str(event.get('message')))}</li>")
            elif kind == "episode_finished":
                parts.append(
                    f"<li><i>ends</i>: {e(str(event.get('reason')))}, answer {e(repr(event.get('answer')))}</li>"
                )
        parts.append("</ol>")
        for message in episode.history:
            for block in message.get("content") or []:
                if block.get("type") == "text":
                    parts.append(f"<pre>{e(block['text'])}</pre>")
                elif block.get("type") == "thinking" and block.get("thinking"):
                    parts.append(f"<details><summary>thinking</summary><pre>{e(block['thinking'])}</pre></details>")
    if r.tree is not None:  # mode=lats: the search behind the chosen trajectory
        parts.append(f"<details><summary>search tree</summary>{tree_html(r.tree)}</details>")
    return "".join(parts)


def tree_html(tree: Mapping[str, Any] | None) -> str:
    """A LATS example's search tree (``record.tree``) as nested lists: each node's action, what it
    observed, its value, visits and reward; the chosen trajectory marked; the reflections after.
    Drawn without recursion and each node once, whatever ids a run folder holds."""
    if not tree or not isinstance(tree.get("nodes"), list):
        return ""
    e = html.escape
    nodes = {n.get("id"): n for n in tree["nodes"] if isinstance(n, Mapping) and isinstance(n.get("id"), int | str)}
    chosen = {i for i in tree.get("chosen") or () if isinstance(i, int | str)}
    children: dict[Any, list[Any]] = {}
    for node in nodes.values():
        parent = node.get("parent")
        known = isinstance(parent, int | str) and parent in nodes
        children.setdefault(parent if known else None, []).append(node.get("id"))
    feedback = str(tree.get("feedback") or "")
    said = " (ORACLE FEEDBACK: the gold answer ended the search)" if feedback == "oracle" else ""
    parts = [
        f"<h4>search tree: {len(nodes)} nodes, {e(str(tree.get('iterations')))} iterations, "
        f"feedback {e(feedback)}{e(said)}; the chosen trajectory is marked &#9733;</h4><ul>"
    ]
    seen: set[Any] = set()
    stack: list[Any] = [("node", i) for i in reversed(children.get(None, []))]
    while stack:
        kind, key = stack.pop()
        if kind == "close":
            parts.append("</ul></li>")
            continue
        if key in seen:
            continue
        seen.add(key)
        node = nodes[key]
        mark = "&#9733; " if key in chosen else ""
        action = node.get("action")
        head = "(the opening)" if action is None else f"<b>{e(str(action))}</b>"
        observed = str(node.get("observation") or "")
        figures = f"value {float(node.get('value') or 0):.2f}, visits {e(str(node.get('visits')))}"
        if node.get("terminal"):
            figures += f", terminal, reward {e(str(node.get('reward')))}"
        line = f"<li>{mark}#{e(str(key))} {head}"
        if observed:
            line += f" &rarr; {e(observed[:200])}{'&hellip;' if len(observed) > 200 else ''}"
        line += f" <span class='note'>({figures})</span>"
        below = [i for i in children.get(key, []) if i not in seen]
        if below:
            parts.append(line + "<ul>")
            stack.append(("close", key))
            stack.extend(("node", i) for i in reversed(below))
        else:
            parts.append(line + "</li>")
    parts.append("</ul>")
    reflections = [str(r) for r in tree.get("reflections") or ()]
    if reflections:
        parts.append("<p>reflections:</p><ol>" + "".join(f"<li>{e(r)}</li>" for r in reflections) + "</ol>")
    return "".join(parts)


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
        f"<style>{_STYLE}</style></head><body><h1>react-bench study</h1>",
        f"<p class='note'>{len(runs)} run(s); files beside this page: table1.md, paired.md, diff.md, "
        "failures.md, frontier.md, runs.csv.</p>",
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
    parts.append("<h2>Runs and their trajectories</h2>")
    for r in runs.sort_values(["task", "mode", "runner", "started"]).itertuples() if len(runs) else ():
        records = list(read_records(Path(r.run_dir)))
        right = sum(1 for x in records if x.get("correct"))
        parts.append(
            f"<details class='run'><summary><b>{e(r.task)} {e(r.mode)}/{e(r.runner)}</b> {e(r.model)} "
            f"({e(r.run_id)}): {right} of {len(records)} right</summary>"
            f"<p class='note'>{e(r.run_dir)}</p><table><tr><th>id</th><th>question</th><th>gold</th>"
            "<th>prediction</th><th></th></tr>"
        )
        for x in records:
            verdict = "right" if x.get("correct") else "wrong"
            parts.append(
                f"<tr><td>{e(str(x['id']))}</td><td>{e(str(x.get('question')))}<details><summary>"
                f"trajectory</summary>{trajectory_html(x)}</details></td><td>{e(str(x.get('gold')))}</td>"
                f"<td>{e(str(x.get('prediction')))}</td><td class='{verdict}'>{verdict}</td></tr>"
            )
        parts.append("</table></details>")
    parts.append("</body></html>")
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
