"""One example's trajectory as HTML: what report.html shows behind each example (written into the
report's side files, ``studies.scan``) and what the trajectory notebook displays. Every text from a
run is HTML-escaped: trajectories hold web pages' text. A LATS example's search tree
(``Method.record_html``: LATS's tree) comes with its trajectory."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from react_bench.methods.registry import find_method
from react_bench.record import ExampleRecord
from react_bench.results import failure_label


def trajectory_html(
    record: ExampleRecord | Mapping[str, Any], label: str | None = None, mode: str | None = None
) -> str:
    """One example: question, gold, prediction, label, then each episode: what the model saw first,
    its events and turns (a record, or a line's dict as a notebook's row has it; ``label``: its
    failure label, when the caller has it already); then what the run's method (``mode``) shows of
    the record beside them (``Method.record_html``: LATS's search tree)."""
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
    method = find_method(mode) if mode is not None and r.method is not None else None
    if method is not None and r.method is not None:  # what the method adds (LATS: the search behind them)
        parts.append(method.record_html(r.method))
    return "".join(parts)
