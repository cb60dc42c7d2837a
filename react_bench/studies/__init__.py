"""Studies over finished runs: tables, statistics, plots, the frontier, the report, analysis, export
and fine-tuning data.

Reads run folders only (``run.json`` and ``examples.jsonl`` through ``results``, each run's records
once and line by line: ``scan``, so a study of any size fits in memory); nothing in the
run path imports this floor. ``scripts/compare.py``, ``scripts/export.py``, ``scripts/annotate.py``,
``scripts/finetune_data.py`` and the notebooks use it. One module a concern, none over about 400 lines:

| module | what |
| --- | --- |
| ``scan`` | one pass over a run's records for everything a study needs of it (and the report's pages) |
| ``runs`` | find run folders, one row per run (``load_runs``), the labels a run goes by |
| ``tables`` | Table 1, the notes beside it, Table 3, learning curves, context remedies, published figures |
| ``statistics`` | paired tests, the per-question diff, accuracy at k, tokens per step |
| ``frontier`` | cost against accuracy, the Pareto frontier |
| ``plots`` | every figure of a study |
| ``write`` | a study folder, every file of it (``write_study``) |
| ``report`` | report.html, one static page of a study (``report.js``: its examples, paged) |
| ``trajectory`` | one example's trajectory as HTML (the report's pages, the notebook) |
| ``analysis`` | the paper's Table 2 (failure labels, by rule and by a judge) |
| ``export`` | a run as inspect_ai's log, or as a table (parquet, CSV) |
| ``finetune`` | fine-tuning data from successful trajectories (the paper's Figure 3) |

The functions a notebook reaches for are importable from the package itself
(``from react_bench import studies; studies.load_runs(...)``).

Decisions a next engineer needs:
- A *run* is a folder with a ``run.json``; ``find_runs`` accepts run folders or folders that
  hold runs at any depth.
- Table 1: one row per mode, runner and model (a sweep over runners or models shows each),
  one column per task (HotpotQA EM, FEVER accuracy, ...), each cell ``mean [95% CI] (n)``
  (Wilson's interval for a proportion), with the paper's PaLM-540B and GPT-3 figures beside.
  When several runs fill one cell, the newest is shown and every other one is named below the
  table with the reason (``every_run=True``: a row per run). A cell is marked ``*`` for
  ``protocol=custom`` (the paper's figure beside it is not like for like), ``†`` when its
  example ids differ from the other runs of its task, ``‡`` when examples ended in an error
  (scored as wrong), ``§`` when the model did not take a protocol setting. Nothing is mixed.
- Paired comparisons (runs of one task over exactly the same example ids): the difference of
  the primary metric, its 95% paired bootstrap CI (``statistics.paired_bootstrap``, 10,000
  resamples, seeded) and McNemar's exact p (``statsmodels``), from the per-example correctness,
  with Holm's adjustment over all the pairs of the study beside the raw p (many pairs, many
  chances of a small p).
- Per-question diff of two runs over the same ids (``question_diff``): the questions whose
  correctness changed, both answers, the gold, both trajectories' locations.
- Accuracy at k (the paper's Figure 2): CoT-SC with the majority of the first k stored samples
  (empty answers abstain, ties to the earliest); ReAct->CoT-SC uses the ReAct answer where ReAct
  answered and the first-k majority where it backed off (exact); CoT-SC->ReAct backs off to the
  ReAct answer when the first-k majority has fewer than k/2 votes, where that answer is known
  (the run backed off at the full n); elsewhere the first-k majority stands (an approximation,
  said in the figure's caption).
- Reflexion (``mode=reflexion``): its Table 1 cell says after how many trials and whether the gold
  label drove the retries (oracle feedback); Reflexion's published figures are its paper column
  (Table 1 ``... Reflexion paper``; Table 3's last row); ``learning_curves`` and
  ``plot_learning_curves`` give the share right after each trial, with the cost of a trial and of a
  success (``learning_curve.md`` / ``.png`` of a study).
- Tokens per step: the mean input tokens of the turn at each step (uncached, cache writes,
  cache reads stacked), from every episode's ``step_finished`` events.
"""

from __future__ import annotations

from react_bench.studies.frontier import frontier, frontier_markdown
from react_bench.studies.plots import plot_frontier, plot_k_curve, plot_learning_curves, plot_tokens
from react_bench.studies.runs import find_runs, load_runs
from react_bench.studies.statistics import comparable_pairs, k_curve, paired, question_diff, tokens_per_step
from react_bench.studies.tables import (
    context_comparison,
    custom_notes,
    learning_curves,
    published,
    table1,
    table3,
)
from react_bench.studies.write import diff_markdown, failures_markdown, paired_markdown, write_study

__all__ = [
    "comparable_pairs",
    "context_comparison",
    "custom_notes",
    "diff_markdown",
    "failures_markdown",
    "find_runs",
    "frontier",
    "frontier_markdown",
    "k_curve",
    "learning_curves",
    "load_runs",
    "paired",
    "paired_markdown",
    "plot_frontier",
    "plot_k_curve",
    "plot_learning_curves",
    "plot_tokens",
    "published",
    "question_diff",
    "table1",
    "table3",
    "tokens_per_step",
    "write_study",
]
