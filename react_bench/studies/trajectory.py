"""One example's trajectory as HTML: what report.html shows behind each example (written into the
report's side files, ``studies.scan``) and what the trajectory notebook displays. Every text from a
run is HTML-escaped: trajectories hold web pages' text. A LATS example's search tree
(``tree_html``) comes with its trajectory."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from react_bench.record import ExampleRecord
from react_bench.results import failure_label


def trajectory_html(record: ExampleRecord | Mapping[str, Any], label: str | None = None) -> str:
    """One example: question, gold, prediction, label, then each episode: what the model saw first,
    its events and turns (a record, or a line's dict as a notebook's row has it; ``label``: its
    failure label, when the caller has it already)."""
    e = html.escape
    r = ExampleRecord.of(record)
    label = failure_label(r) if label is None else label
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
