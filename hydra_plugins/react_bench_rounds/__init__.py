"""Hydra's launcher ``rounds`` (``hydra/launcher=rounds``): a sweep's jobs run at once, their batch
requests in shared rounds (``react_bench/shared_rounds.py``). ``scripts/eval.py`` chooses it for a
sweep with ``batch=true`` (``experiment=paper_table1 batch=true``, ``-m ... batch=true``) unless
another launcher is given.

First pass: each job goes through Hydra as with the basic launcher (its config composed, the task
function called), but the task function hands its resolved settings to ``shared_rounds.collect`` instead
of running. Second pass: the runs together (``shared_rounds.run_together``). Hydra's callbacks then see
the jobs' returns as usual (the combined table of ``react_bench.sweep``)."""

# (no ``from __future__ import annotations``: Hydra loads plugins without registering their module,
# and a dataclass with string annotations looks its module up)

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, configure_log, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from omegaconf import open_dict


@dataclass
class RoundsLauncherConf:
    _target_: str = "hydra_plugins.react_bench_rounds.RoundsLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="rounds", node=RoundsLauncherConf, provider="react_bench")


class RoundsLauncher(Launcher):
    def __init__(self) -> None:
        super().__init__()
        self.config: Any = None
        self.task_function: Any = None
        self.hydra_context: Any = None

    def setup(self, *, hydra_context: Any, task_function: Any, config: Any) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from react_bench.shared_rounds import collecting, resumable, run_together

        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        returns: list[JobReturn] = []
        with collecting() as jobs:
            for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
                sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
                with open_dict(sweep_config):
                    sweep_config.hydra.job.id = idx
                    sweep_config.hydra.job.num = idx
                returns.append(
                    run_job(
                        hydra_context=self.hydra_context,
                        task_function=self.task_function,
                        config=sweep_config,
                        job_dir_key="hydra.sweep.dir",
                        job_subdir_key="hydra.sweep.subdir",
                    )
                )
        cfgs = [resumable(cfg) for cfg in jobs]
        budget = next((cfg.max_cost_usd for cfg in cfgs if cfg.max_cost_usd is not None), None)
        asyncio.run(run_together(cfgs, sys.stdout, max_cost_usd=budget))
        return returns
