"""Run a benchmark: ``python scripts/eval.py task=hotpotqa mode=react runner=text model=local``.

A thin Hydra entry point: it composes ``configs/eval.yaml`` and its groups (task, mode,
runner, model, wiki), turns the result into a typed ``RunConfig`` and calls ``evaluate``.
Errors in settings or task data (``DataError``: no data folder, requested examples
missing) are printed as one clear line (exit 2), never as a traceback.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.errors import ConfigError  # noqa: E402
from react_bench.evaluate import evaluate  # noqa: E402
from react_bench.models.scripted import ScriptError  # noqa: E402
from react_bench.results import format_table  # noqa: E402
from react_bench.runconfig import RunConfig  # noqa: E402
from react_bench.tasks import DataError  # noqa: E402

LOCAL_NOTE = (
    "note: model=local is a tiny embedded model ({name}) for checking the pipeline end to end; "
    "its scores mean nothing. For real results choose e.g. model=claude-sonnet-5-5 "
    "(needs ANTHROPIC_API_KEY) or model=openai with your own server."
)


@hydra.main(config_path="../configs", config_name="eval", version_base="1.3")
def main(cfg: DictConfig) -> None:
    try:
        run_cfg = RunConfig.from_mapping(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]
        if run_cfg.model.get("provider") == "local":
            print(LOCAL_NOTE.format(name=run_cfg.model_label), flush=True)
        result = asyncio.run(evaluate(run_cfg))
    except (ConfigError, DataError, FileNotFoundError, KeyError, ValueError, ScriptError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    print()
    print(format_table(result.metrics, run_cfg.task.name))
    print(f"\nresults: {result.run_dir}  ({result.n_new} new example(s); examples.jsonl, calls.jsonl, metrics.json)")


if __name__ == "__main__":
    main()
