"""WebShop (Yao et al., 2022): shopping for a goal on a web shop, the paper's fourth benchmark.

- ``env.py``: the client (``WebShopEnv``), acting as the paper's notebook did, over any server
  that speaks WebShop's HTTP interface; ``render.py``: a page as the notebook read it.
- ``catalog.py`` / ``reward.py``: the generated catalog and goals, and the reward formula, that
  the project's own server (``envs/webshop/server.py``) serves offline.

``WebShopConfig`` is the ``webshop`` section of ``configs/eval.yaml``: ``url`` (a WebShop server,
e.g. ``http://localhost:3000``; ``null``: the project's own, started in process on a free port
for the run), ``seed`` / ``products`` / ``goals`` (the generated catalog), ``timeout_s`` (per page).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from react_bench.errors import ConfigError, settings_of
from react_bench.models.base import OPERATIONAL
from react_bench.runners.formats import LineFormat
from react_bench.settings import default

__all__ = ["WebShopConfig", "start_server", "webshop_format"]


CLICKS = ("notebook", "strict")  # what a click the page does not offer gets (webshop.clicks)


@dataclass(frozen=True)
class WebShopConfig:
    url: str | None = default("webshop.url")  # the defaults: react_bench/settings.py
    seed: int = default("webshop.seed")
    products: int = default("webshop.products")
    goals: int = default("webshop.goals")
    timeout_s: float = field(default=float(default("webshop.timeout_s")), metadata=OPERATIONAL)
    clicks: str | None = default("webshop.clicks")  # notebook | strict; None: the protocol's (task's env_config)

    def __post_init__(self) -> None:
        if self.products < 1 or self.goals < 1:
            raise ConfigError(
                f"webshop.products and webshop.goals must be at least 1, got {self.products}, {self.goals}"
            )
        if self.timeout_s <= 0:
            raise ConfigError(f"webshop.timeout_s={self.timeout_s}: must be more than 0")
        if self.clicks not in (None, *CLICKS):
            raise ConfigError(f"webshop.clicks={self.clicks!r}: choose one of {', '.join(CLICKS)}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> WebShopConfig:
        return settings_of(cls, values, "webshop")


def start_server(config: WebShopConfig) -> Any:
    """The project's own WebShop server over the generated catalog, running (stop it when done)."""
    from react_bench.envs.webshop.catalog import Catalog
    from react_bench.envs.webshop.server import WebShopServer

    return WebShopServer(Catalog.generate(config.seed, config.products, config.goals)).start()


def webshop_format() -> LineFormat:
    """The notebook's prompt: the instruction page, then ``Action: {action}\\nObservation: {text}``
    per step with a blank line after each, the prompt ending in ``Action:``; stop ``\\n``; the
    completion keeps all but its leading spaces (the notebook's ``lstrip(' ')``)."""
    from react_bench.envs.webshop.env import webshop_action

    return LineFormat(
        webshop_action,
        "Action:",
        "{observation}\n\n",
        observation_label="Observation: ",
        step_gap="\n",
        strip="leading_spaces",
    )
