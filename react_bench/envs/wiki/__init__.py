"""The Wikipedia environment and its backends; ``make_env_factory`` turns a config into episodes.

Typical use (one backend per run, one ``WikiEnv`` per episode)::

    from react_bench.envs.wiki import WikiConfig, make_env_factory
    factory = make_env_factory(WikiConfig.from_mapping(cfg_wiki), local_wiki=task_wiki_path)
    env = factory()                       # fresh page and lookup cursor, shared backend
    obs = await env.step_text("search[Eiffel Tower]")                  # the text grammar
    obs = await env.step(Action("lookup", {"keyword": "eastern"}))     # an action, as a tool call
    factory.close()                       # at the end of the run

``WikiConfig`` (the Hydra group ``configs/wiki/``, flat keys):
- ``backend``: ``local`` (offline SQLite+FTS5, the default), ``live`` (Wikipedia through the
  ``wikipedia`` package, recording every answer to ``store`` and serving what it already
  holds; ``refresh: true`` asks the network every time and overwrites), ``replay`` (the
  store only; no network; a missing answer is an error).
- ``path``: the local wiki file; ``null``: the task's own (``local_wiki``, built on first use).
- ``store``: the observation store file for live/replay; ``null`` is
  ``<cache>/live_store.sqlite`` under ``$REACT_BENCH_CACHE/wiki`` or ``~/.cache/react-bench/wiki``.
- live only: ``api_url`` (``null``: the package's own), ``user_agent``, ``timeout_s``,
  ``max_attempts``, ``backoff_s``.
- live / replay: ``fidelity``: ``paper`` (the search page's HTML, as the original code read
  it: ``paper.py``) or ``clean`` (exact titles and plain-text extracts: ``live.py``);
  ``null``: ``paper`` under ``protocol=paper``, ``clean`` otherwise.

Imports of the backends are lazy so that the offline path never imports ``wikipedia``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from react_bench.envs.wiki.env import WikiBackend, WikiEnv
from react_bench.errors import ConfigError, settings_of

Backend = Literal["local", "live", "replay"]
BACKENDS: tuple[str, ...] = get_args(Backend)
Fidelity = Literal["paper", "clean"]
FIDELITIES: tuple[str, ...] = get_args(Fidelity)

__all__ = ["BACKENDS", "WikiConfig", "WikiEnv", "WikiEnvFactory", "make_env_factory"]


@dataclass(frozen=True)
class WikiConfig:
    backend: Backend = "local"
    path: str | None = None
    store: str | None = None
    refresh: bool = False
    api_url: str | None = None
    user_agent: str | None = None
    timeout_s: float = 10.0
    max_attempts: int = 4
    backoff_s: float = 1.0
    # live / replay: "paper" reads Wikipedia's search page HTML as the original code did
    # (wiki/paper.py), "clean" asks the API for exact titles (wiki/live.py); None: paper under
    # protocol=paper, else clean (RunConfig decides).
    fidelity: Fidelity | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"wiki.backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.fidelity not in (None, *FIDELITIES):
            raise ConfigError(f"wiki.fidelity must be one of {FIDELITIES}, got {self.fidelity!r}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> WikiConfig:
        """From a plain mapping (e.g. ``OmegaConf.to_container(cfg.wiki)``); unknown keys are errors."""
        return settings_of(cls, values, "wiki")


@dataclass
class WikiEnvFactory:
    """Makes a fresh ``WikiEnv`` per call, all sharing ``backend``."""

    backend: WikiBackend

    def __call__(self) -> WikiEnv:
        return WikiEnv(self.backend)

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()


def make_env_factory(
    config: WikiConfig | Mapping[str, Any],
    *,
    local_wiki: Callable[[], Path] | None = None,
    cache_dir: str | Path | None = None,
) -> WikiEnvFactory:
    """The run's backend from ``config`` (a ``WikiConfig`` or its plain mapping).

    ``local_wiki`` gives the task's own wiki file for ``local`` with ``path: null`` (the task
    builds it from its data on first use); ``cache_dir`` is where the live store lies.
    """
    from react_bench.envs.wiki.build import default_cache_dir

    if not isinstance(config, WikiConfig):
        config = WikiConfig.from_mapping(config)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if config.backend == "local":
        from react_bench.envs.wiki.local import LocalWiki

        if config.path:
            return WikiEnvFactory(LocalWiki(Path(config.path).expanduser()))
        if local_wiki is None:
            raise ConfigError("wiki=local with path: null needs the task's own wiki (or set wiki.path)")
        return WikiEnvFactory(LocalWiki(local_wiki()))
    from react_bench.envs.wiki.live import LiveSettings, LiveWiki
    from react_bench.envs.wiki.paper import PaperWiki
    from react_bench.envs.wiki.store import ObservationStore

    live_class = PaperWiki if config.fidelity == "paper" else LiveWiki
    store_path = Path(config.store).expanduser() if config.store else cache / "live_store.sqlite"
    if config.backend == "replay" and not store_path.is_file():
        raise ConfigError(f"wiki=replay: no observation store at {store_path}; record one with wiki=live")
    settings = LiveSettings(
        api_url=config.api_url,
        timeout_s=config.timeout_s,
        max_attempts=config.max_attempts,
        backoff_s=config.backoff_s,
    )
    if config.user_agent:
        settings = replace(settings, user_agent=config.user_agent)
    if config.backend == "replay":  # the endpoint is part of the key: replay asks for what was recorded from it
        return WikiEnvFactory(live_class("replay", ObservationStore(store_path, read_only=True), settings))
    mode: Literal["live", "record"] = "live" if config.refresh else "record"
    return WikiEnvFactory(live_class(mode, ObservationStore(store_path), settings))
