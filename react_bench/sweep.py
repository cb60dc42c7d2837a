"""Hydra sweeps (``-m`` or ``experiment=...``) end with one combined table.

``CombinedTable`` is a Hydra callback (``configs/eval.yaml``: ``hydra.callbacks``). Before the
first job it fixes one run id for the whole sweep (``REACT_BENCH_SWEEP_ID``; the jobs' run
folders all get it, whatever their task, mode and runner, and launchers that start worker
processes pass the environment on); after the last job it loads the sweep's runs and writes
the whole study folder (``studies.write_study``: tables, plots, per-question diff, report.html)
to ``results/compare/<sweep id>/`` and prints the Table 1 grid with its notes.
Sweeps write nothing else: ``hydra.sweep.dir`` is the working folder itself, so no empty
``multirun/`` folders are left behind. An in-process sweep reuses a loaded local model (the
model module keeps one per process).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from react_bench.rundir import check_run_id

SWEEP_ENV = "REACT_BENCH_SWEEP_ID"
RAY_LAUNCHER = "hydra_ray_launcher"


def connect_ray_launcher(config: Any) -> None:
    """``hydra/launcher=ray``: connect to the cluster before the launcher does, at ``ray.address``
    (or the launcher's own ``hydra.launcher.ray.init.address``), with the environment the jobs need
    (the sweep id, the request cache's folder, keys and endpoints: ``cluster.worker_env``). The
    launcher then finds Ray connected and sends each job as a Ray task (one CPU each unless
    ``hydra.launcher.ray.remote.num_cpus`` says otherwise); its own start would pass an object-store
    size, which Ray refuses when joining an existing cluster."""
    from react_bench.executors.ray import connect, worker_env

    init = config.hydra.launcher.get("ray", {}).get("init", {}) or {}
    address = init.get("address") or (config.get("ray") or {}).get("address")
    connect(None if address is None else str(address), worker_env())


class CombinedTable(Callback):
    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        os.environ.setdefault(SWEEP_ENV, "sweep-" + dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S"))
        if RAY_LAUNCHER in str(config.hydra.launcher.get("_target_", "")):
            connect_ray_launcher(config)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        from react_bench import studies

        sweep_id = os.environ.get(SWEEP_ENV, "")
        results = Path(str(config.get("results_dir") or "results"))
        named = config.get("run_id")  # the sweep's jobs took the run id given (a study started again resumes)
        runs = [
            p.parent for p in results.glob(f"*/*/*/{check_run_id(str(named)) if named else sweep_id}*/metrics.json")
        ]
        if not runs:
            print(f"sweep {sweep_id}: no finished run to combine")
            return
        frame = studies.load_runs(runs)
        out = results / "compare" / sweep_id
        study = studies.write_study(frame, out)
        if len(study["orderings"]):
            print(f"\nALFWorld, per task type ({out / 'table3.md'}):\n\n{study['orderings'].to_markdown(index=False)}")
        print(f"\ncombined table of sweep {sweep_id} ({len(runs)} runs; {out}):\n")
        print(study["markdown"])
        for line in study["custom"] + study["notes"]:
            print(f"- {line}")
        print(f"\nreport: {out / 'report.html'}")
