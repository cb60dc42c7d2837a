"""``experiment=paper dry_run=true``: every part of the paper priced (calls, tokens, dollars, hours)
without a model call; its calls follow from the parts' runs and the modes' call counts. With
``batch=true`` the batched price and hours stand beside: half the price or less (the prompt cache
written for an hour), hours from each run's rounds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from react_bench.paper import PARTS
from tests.support import DATA, eval_without_a_key


def test_the_whole_paper_is_priced_per_part_before_a_cent_is_spent(
    data_file, reference_text, paper_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for rel in ("prompts/react_hotpotqa_prompts.json", "prompts/react_fever_prompts.json"):
        data_file(rel)  # the paper's prompts (prompt=paper) where they can be had, else skipped, named
    data_file("prompts/react_alfworld_3prompts.json")
    for name in ("react/hotpotqa_instruction", "react/webshop_react", "react/webshop_act"):
        reference_text(name)
    if DATA["kind"] == "generated":  # the paper's 500 index the authors' own files: beside the generated ones
        merged = tmp_path / "data"
        for folder in (DATA["folder"], paper_data):
            for file in (p for p in folder.rglob("*") if p.is_file()):
                (merged / file.relative_to(folder)).parent.mkdir(parents=True, exist_ok=True)
                (merged / file.relative_to(folder)).symlink_to(file.resolve())
        monkeypatch.setenv("REACT_BENCH_DATA_DIR", str(merged))
    # no key: a price sends nothing, so it needs none (and an unreachable server, to be sure)
    done = eval_without_a_key("experiment=paper", "model=claude-haiku-4-5", "dry_run=true", "batch=true")
    assert done.returncode == 0, done.stderr
    assert "Generating" not in done.stderr  # no bars of datasets' own for files read from a folder
    paper_prompts = "Table 1 prompts: the paper's own, ysymyth/ReAct@6bdb3a1:prompts/prompts_naive.json, "
    assert (
        paper_prompts + "ysymyth/ReAct@6bdb3a1:hotpotqa.ipynb, ysymyth/ReAct@6bdb3a1:prompts/fever.json" in done.stdout
    )
    table3 = "Table 3 prompts: the paper's own, ysymyth/ReAct@6bdb3a1:prompts/alfworld_3prompts.json; "
    assert table3 + "the project's own react_bench:alfworld/react_im\n" in done.stdout  # ReAct-IM: none published
    rows = {}
    for line in done.stdout.splitlines():
        cells = line.split() if not line.startswith(" ") else []
        if cells and (cells[0] in ("Table", "Figure", "all")):
            name = " ".join(cells[:2]) if cells[0] != "all" else "all"
            rest = cells[2:] if cells[0] != "all" else cells[1:]
            rows[name] = [float(c.replace(",", "")) for c in rest]
    assert set(rows) == {p.name for p in PARTS} | {"all"}
    # Table 1: 2 tasks x 500 examples x (standard 1 + cot 1 + cot_sc 21 + act 7 + react 7 + react_cot_sc 28
    # + cot_sc_react 28) calls at most; Table 3: 3 modes x 6 orderings x 134 games x 50 steps
    assert rows["Table 1"][:2] == [14, 2 * 500 * 93]
    assert rows["Table 3"][:2] == [18, 18 * 134 * 50]
    assert rows["Table 4"][:2] == [2, 2 * 500 * 15]
    for name, (runs, calls, tokens_in, tokens_out, usd, hours, batch_usd, _) in rows.items():
        if name != "all" and runs:
            assert tokens_in > 0 and tokens_out > 0 and usd > 0 and hours == round(calls / 50 / 60, 1)
            assert 0 < batch_usd <= 0.55 * usd
    totals = [sum(r[i] for n, r in rows.items() if n != "all") for i in range(8)]
    assert rows["all"][:4] == totals[:4] and abs(rows["all"][4] - totals[4]) < 0.05
    assert rows["all"][6] <= 0.55 * rows["all"][4]  # the whole paper batched: at most 0.55x the live price
    # batch hours: every run at once in shared rounds (issue 58; one run after another it was 506 hours),
    # so a part takes its longest run's rounds, and 2 rounds a failed batch result may take, at 30 minutes:
    # Table 1: react_cot_sc and cot_sc_react, 8; Table 4: 15 steps; the paper: Table 3's 50-step episodes
    assert rows["Table 1"][7] == (8 + 2) * 0.5 and rows["Table 4"][7] == (15 + 2) * 0.5
    assert rows["all"][7] == rows["Table 3"][7] == (50 + 2) * 0.5 <= 30
    assert "batch hours are set by Table 3 (task=alfworld mode=react prompt.pair=[0,1]): 52 rounds" in done.stdout
    assert "50 requests/minute (assumed)" in done.stdout and re.search(r"priced in [0-9.]+ s", done.stdout)
    assert "an assumed 30 minutes a round" in done.stdout


def test_the_paper_runs_part_after_part_and_the_command_again_goes_on(tmp_path, monkeypatch, capsys) -> None:
    import json

    import react_bench.paper as paper

    script = tmp_path / "script.json"
    script.write_text(json.dumps([" I recall.\nAnswer: yes", " I recall.\nAnswer: no"] * 2))
    parts = (paper.Part("Table 1", (paper.Job(("task=hotpotqa", "mode=cot"), examples=2),)), paper.Part("Figure 2", ()))
    monkeypatch.setattr(paper, "PARTS", parts)
    model = ["model=scripted", f"model.script={script}"]
    extra = [f"results_dir={tmp_path / 'results'}", "progress=false", "show=none", "prompt=own"]  # ours: no fetch
    assert paper.run_all(model, extra) == 0
    (run_dir,) = (tmp_path / "results").rglob("paper-table1-1")
    assert len((run_dir / "examples.jsonl").read_text().splitlines()) == 2
    run = json.loads((run_dir / "run.json").read_text())
    assert run["prompts"]["cot"]["source"] == "react_bench:hotpotqa/cot"  # prompt=own given: not the paper's
    assert paper._prompt_choice(extra) == [] and paper._prompt_choice([]) == ["prompt=paper"]
    assert paper.run_all(model, extra) == 0  # again: the run is resumed, nothing runs twice
    assert len((run_dir / "examples.jsonl").read_text().splitlines()) == 2
    assert "0 new example(s)" in capsys.readouterr().out
