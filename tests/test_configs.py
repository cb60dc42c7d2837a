"""Every config group file composes into a valid RunConfig and a valid provider config."""

from __future__ import annotations

from dataclasses import replace

import pytest

from react_bench.envs.webshop import WebShopConfig
from react_bench.envs.wiki import WikiConfig
from react_bench.errors import ConfigError
from react_bench.models import ModelSpec, typed_config
from react_bench.models.stack import provider_config_class
from react_bench.runconfig import RunConfig
from react_bench.tasks.alfworld import AlfworldConfig
from tests.support import CONFIGS, composed


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))


@pytest.mark.parametrize("group", ["task", "mode", "runner", "model", "wiki", "context"])
def test_every_option_of_every_group_composes(group):
    assert options(group), f"configs/{group}/ is empty"
    for option in options(group):
        if group == "mode" and option == "react_im":  # an ALFWorld mode (elsewhere refused in one line)
            with pytest.raises(ConfigError, match="mode=react_im is defined for task=alfworld only"):
                RunConfig.from_mapping(composed("mode=react_im"))
            cfg = composed("mode=react_im", "task=alfworld")
            assert RunConfig.from_mapping(cfg).solve.mode == "react_im"
            continue
        cfg = composed(f"{group}={option}")
        run = RunConfig.from_mapping(cfg)
        typed = {
            "task": (run.task.name, cfg["task"]["name"]),
            "mode": (run.solve.mode, cfg["mode"]["name"]),
            "runner": (run.solve.runner, cfg["runner"]["name"]),
            "model": (run.model, ModelSpec.from_mapping(cfg["model"])),
            "wiki": (getattr(run.env, "backend", None), cfg["wiki"]["backend"]),
            "context": (run.solve.context.name, cfg["context"]["name"]),
        }[group]
        if group == "task" and option == "webshop":  # its environment is the webshop section, not the wiki
            assert run.env == replace(WebShopConfig.from_mapping(cfg["webshop"]), clicks="notebook")  # the paper's
            continue
        if group == "task" and option == "alfworld":  # likewise the alfworld section
            assert run.env == AlfworldConfig.from_mapping(cfg["alfworld"])
            continue
        assert typed[0] == typed[1], (group, option)
        assert replace(run.env, fidelity=None) == replace(WikiConfig.from_mapping(cfg["wiki"]), fidelity=None)


@pytest.mark.parametrize("option", options("model"))
def test_every_model_config_has_only_known_keys(option):
    spec = ModelSpec.from_mapping(composed(f"model={option}")["model"])
    typed_config(provider_config_class(spec.provider), dict(spec.settings))


def test_defaults_are_the_offline_main_job():
    run = RunConfig.from_mapping(composed())
    assert (run.task.name, run.solve.mode, run.solve.runner, run.model.provider, run.env.backend) == (
        "hotpotqa",
        "react",
        "text",
        "local",
        "local",
    )
    assert run.task.n == 5  # the local model's default_n when n is not given
    assert (run.solve.parser, run.solve.loop.max_steps, run.solve.loop.on_limit) == ("paper", 7, "give_up")
    assert (run.solve.temperature, run.solve.max_tokens, run.solve.cot_sc_samples) == (0.0, 100, 21)


def test_paper_protocol_refuses_deviations_and_custom_allows_them():
    with pytest.raises(ConfigError, match="protocol=paper fixes parser"):
        RunConfig.from_mapping(composed("parser=robust"))
    run = RunConfig.from_mapping(composed("protocol=custom", "max_steps=10", "on_limit=wrap_up"))
    assert (run.solve.parser, run.solve.loop.max_steps, run.solve.loop.on_limit) == ("robust", 10, "wrap_up")
    with pytest.raises(ValueError, match="on_limit"):
        RunConfig.from_mapping(composed("protocol=custom", "on_limit=retry"))


def test_on_limit_backoff_is_the_react_cot_sc_mode():
    run = RunConfig.from_mapping(composed("protocol=custom", "on_limit=backoff"))
    assert (run.solve.mode, run.solve.loop.on_limit) == ("react_cot_sc", "give_up")
    with pytest.raises(ConfigError, match="mode=cot has no such backoff"):
        RunConfig.from_mapping(composed("protocol=custom", "on_limit=backoff", "mode=cot"))


def test_task_and_wiki_sections_are_typed_by_their_own_configs():
    run = RunConfig.from_mapping(composed("task=fever", "split=paper500", "n=7", "offset=2", "+wiki.timeout_s=3"))
    assert (run.task.name, run.task.split, run.task.n, run.task.offset) == ("fever", "paper500", 7, 2)
    assert run.env.timeout_s == 3
    with pytest.raises(ConfigError, match="unknown wiki settings"):
        RunConfig.from_mapping(composed("+wiki.timeout=3"))
    with pytest.raises(ConfigError, match="n='abc': expected a whole number"):
        RunConfig.from_mapping(composed("n=abc"))


def test_unknown_model_keys_are_named():
    from react_bench.models.anthropic import AnthropicConfig

    with pytest.raises(ConfigError, match=r"unknown model settings \[.temprature.\]"):
        typed_config(AnthropicConfig, {"name": "claude-sonnet-5-5", "temprature": 0})


def test_cot_sc_settings_are_top_level_and_fixed_by_the_paper_protocol():
    run = RunConfig.from_mapping(composed("protocol=custom", "cot_sc_samples=5", "cot_sc_temperature=0.9"))
    assert (run.solve.cot_sc_samples, run.solve.cot_sc_temperature) == (5, 0.9)
    with pytest.raises(ConfigError, match="cot_sc_samples"):
        RunConfig.from_mapping(composed("cot_sc_samples=5"))


def test_one_settings_table_writes_eval_yaml_and_help_and_gives_the_typed_defaults() -> None:
    """configs/eval.yaml is written from react_bench/settings.py (the file equals what the table
    writes); every setting Hydra composes is in the table and none is missing from it; the typed
    configs' defaults are the table's."""
    from react_bench.envs.webshop import WebShopConfig
    from react_bench.runconfig import RaySettings, RunConfig
    from react_bench.settings import SETTINGS, default, render_yaml
    from react_bench.tasks.alfworld import AlfworldConfig
    from react_bench.tasks.base import TaskConfig
    from tests.support import composed

    assert (CONFIGS / "eval.yaml").read_text(encoding="utf-8") == render_yaml(), (
        "configs/eval.yaml differs from react_bench/settings.py: python -m react_bench.settings > configs/eval.yaml"
    )
    cfg = composed()
    # prompt is a group (own | paper: its ``source``) and a section of settings (file, key, ...) at once
    groups = {p.name for p in CONFIGS.iterdir() if p.is_dir()} - {"prompt"} | {"solve", "hydra"}
    flat = {
        f"{k}.{leaf}" if isinstance(v, dict) else k
        for k, v in cfg.items()
        if k not in groups
        for leaf in (v if isinstance(v, dict) else [None])
    }
    assert flat - {"prompt.source"} == {s.key for s in SETTINGS}
    assert cfg["prompt"]["source"] == "own" and composed("prompt=paper")["prompt"]["source"] == "paper"
    assert all(
        cfg[k] == s.default if "." not in (k := s.key) else cfg[k.split(".")[0]][k.split(".")[1]] == s.default
        for s in SETTINGS
    )
    run = RunConfig.from_mapping(cfg)
    assert (run.concurrency, run.show, run.batch_poll_s, run.request_cache) == (1, "summary", 30.0, "on")
    assert run.ray == RaySettings() and RaySettings().num_cpus == default("ray.num_cpus")
    assert WebShopConfig().products == default("webshop.products") and AlfworldConfig().games == default(
        "alfworld.games"
    )
    assert TaskConfig().split == default("split") and TaskConfig().on_missing == default("on_missing")


def test_the_home_tripwire_names_a_file_the_suite_added(tmp_path):
    """conftest's check at the session's end: a file that appeared under the user's HOME is named
    (Ray's ~/.ray/auth_token was one), one that was there before is not."""
    from tests.conftest import added_to_home, home_files

    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "old").write_text("x")
    before = home_files(tmp_path)
    assert added_to_home(before, tmp_path) == []
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("t")
    (tmp_path / "link").symlink_to(tmp_path / ".cache")
    assert added_to_home(before, tmp_path) == [".ray/auth_token", "link"]
    # and the session itself runs in a HOME of its own, not the user's
    from pathlib import Path

    from tests.conftest import USER_HOME

    assert Path.home() != USER_HOME and Path.home().name.startswith("react-bench-test-home-")


def test_every_mode_file_is_its_methods_node() -> None:
    """A method's settings are declared once, in its settings class: ``configs/mode/<name>.yaml``
    holds exactly its ``Method.mode_node`` (the name, and the class's defaults where the mode group
    keeps them), so the file cannot drift from the class (``mode.k=10`` still composes)."""
    import yaml

    from react_bench.methods.registry import methods

    files = {p.stem: yaml.safe_load(p.read_text()) for p in (CONFIGS / "mode").glob("*.yaml")}
    assert set(files) <= set(methods())
    for name, node in files.items():
        assert node == methods()[name].mode_node(), name
    assert files["best_of_k"]["k"] == 5 and set(files["reflexion"]) == {"name"}
