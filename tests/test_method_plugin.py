"""A method installed from outside the package: a distribution on the path whose entry point in the
group ``react_bench.methods`` names it (``methods/registry.py``), run from the command line.

The distribution is a folder outside ``react_bench/`` with a module and its ``.dist-info``
(``METADATA`` and ``entry_points.txt``), as ``pip install`` leaves one; ``PYTHONPATH`` puts it on
the path of ``scripts/eval.py`` alone, so the suite's own process never sees it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support import eval_py, records, run_dir_of

PLUGIN = '''
from dataclasses import dataclass

from react_bench.methods.core import Method, ModeSpec


@dataclass(frozen=True)
class CountedReact(Method):
    """ReAct as the base runs it, and a summary of its own."""

    def summarize(self, records, solve):
        return {"plugin": self.name, "answered": sum(bool(r.prediction) for r in records)}


METHOD = CountedReact("react_plugin", ModeSpec("react"), "ReAct, from a plugin", mode_defaults={"note": "hi"})
'''


def _install(site: Path, entry: str) -> dict[str, str]:
    (site / "react_plugin_pkg").mkdir(parents=True)
    (site / "react_plugin_pkg" / "__init__.py").write_text(PLUGIN)
    info = site / "react_plugin_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: react-plugin-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[react_bench.methods]\nreact_plugin = {entry}\n")
    return {**os.environ, "PYTHONPATH": str(site)}


def test_a_method_from_an_entry_point_runs_from_the_command_line(tmp_path: Path) -> None:
    env = _install(tmp_path / "site", "react_plugin_pkg:METHOD")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" I know it.\nAction 1: Finish[yes]"]))
    common = ["task=hotpotqa", "model=scripted", f"model.script={script}", "n=1", f"results_dir={tmp_path / 'r'}"]
    ran = eval_py(*common, "mode=react_plugin", env=env)
    assert ran.returncode == 0, ran.stderr
    run_dir = run_dir_of(ran.stdout)
    (record,) = records(run_dir)
    assert record["prediction"] == "yes" and record["route"] == "react"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["mode"] == "react_plugin" and metrics["method"] == {"plugin": "react_plugin", "answered": 1}
    assert json.loads((run_dir / "run.json").read_text())["composed"]["mode"] == {"name": "react_plugin", "note": "hi"}
    # without the distribution on the path the mode is unknown, in one line naming the choices
    unknown = eval_py(*common, "mode=react_plugin")
    assert unknown.returncode == 2 and "mode=react_plugin: no such mode" in unknown.stderr


def test_an_entry_point_that_does_not_load_is_one_line(tmp_path: Path) -> None:
    env = _install(tmp_path / "site", "react_plugin_pkg:NO_SUCH_NAME")
    ran = eval_py("task=hotpotqa", "mode=react_plugin", "model=scripted", "n=1", env=env)
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        "error: react_bench.methods: entry point react_plugin = react_plugin_pkg:NO_SUCH_NAME does not load: "
        "AttributeError: module 'react_plugin_pkg' has no attribute 'NO_SUCH_NAME'"
    ]
