"""``task=webshop``: buy the product an instruction describes (Yao et al., 2022, WebShop), as the
ReAct paper's notebook ran it (github:ysymyth/ReAct, WebShop.ipynb).

- Examples are WebShop sessions: ``fixed_0`` ... (``ids=[fixed_3]`` picks one); the input shown in
  results is the session's instruction, read from its instruction page (offline: from the
  generated catalog, the same text the server shows). ``split=offline`` / ``all``: every goal of
  the server (``webshop.goals`` for the project's own); ``paper500``: ``fixed_0`` ... ``fixed_499``,
  the paper's 500 test goals.
- The environment is ``envs/webshop``: WebShop's own server at ``webshop.url``, or the project's
  own server, started in process for the run on a free port (``webshop.url: null``, the default).
- Protocol (``protocol=paper``): 15 steps, stop ``\\n``, greedy decoding, 100 tokens per step, the
  trajectory cut to the last ``6400 - len(prompt)`` characters before each call (``context=window``,
  the notebook's own remedy). As the notebook's loop: 15 model calls, of which the first 14
  actions are executed; the 15th is asked for and never executed (its 15 iterations began with
  the reset), so an episode that has not bought by then scores 0, and a click the instruction
  page or a sub-page does not offer shows that page again (the notebook's server did). Under
  ``protocol=custom``: the 15th action is executed, and such a click is ``Invalid action!``
  (docs/decisions.md).
- Scores: ``score`` (the reward, in [0, 1]; the paper's "score" is its mean x 100) and ``success``
  (reward 1). The paper's Table 4 (PaLM-540B, one-shot): ReAct 66.6 / 40.0, Act 62.3 / 30.1; IL
  59.9 / 29.1, IL+RL 62.4 / 28.7, human experts 82.1 / 59.6.
- Modes: ``react`` and ``act`` (no reference answers: the others are refused). The paper's
  prompts by path: ``prompt.file=../shared/data/prompts/react_webshop_prompts.json prompt.key=react``
  (``act`` for Act); the project's own exemplar is walked on the generated catalog
  (``envs/webshop/exemplars.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

import httpx2

from react_bench.environment import Example
from react_bench.envs.webshop import WebShopConfig, start_server, webshop_format
from react_bench.envs.webshop.catalog import Catalog
from react_bench.envs.webshop.env import WebShopFactory
from react_bench.envs.webshop.render import render
from react_bench.errors import ConfigError
from react_bench.prompts import OneGroupPrompts, PaperPrompts
from react_bench.runners.formats import LineFormat
from react_bench.tasks.base import Coverage, DataError, Pool, TaskConfig, TaskInfo, select

PAPER_GOALS = 500
TABLE4 = (
    "Yao et al. (2022), Table 4 (PaLM-540B, one-shot); IL 59.9 / 29.1, IL+RL 62.4 / 28.7, human experts 82.1 / 59.6"
)
INSTRUCTIONS = {
    "react": "",  # the notebook sends its one example and the task, with no instruction before them
    "act": "",
    "tool_use": (
        "You are shopping on a web shop for the product an instruction describes. Use search from the "
        "instruction page, then click the buttons the pages show in [brackets] (a result's ASIN, option "
        "values, Description, Features, Reviews, < Prev, Back to Search); click Buy Now when the product and "
        "its options match. Think briefly before each action."
    ),
    "tool_use_act": (
        "You are shopping on a web shop for the product an instruction describes. Use search from the "
        "instruction page, then click the buttons the pages show in [brackets]; click Buy Now when the "
        "product and its options match. Call one tool per turn and write no text."
    ),
}


class WebShopTask(OneGroupPrompts):
    info: ClassVar[TaskInfo] = TaskInfo(
        name="webshop",
        title="WebShop",
        metrics=("score", "success"),
        primary_metric="score",
        column="WebShop score",
        paper={"PaLM-540B": {"react": 66.6, "act": 62.3}, "PaLM-540B success": {"react": 40.0, "act": 30.1}},
        paper_table=TABLE4,
        answers=False,
        groups=("category",),
        protocol={"max_steps": 15, "context": "window", "act_at_cap": False},
        # WebShop.ipynb: prompt1 (ReAct) and prompt1_actonly (Act), no instruction before them
        paper_prompts=PaperPrompts(texts={"react": "react/webshop_react", "act": "react/webshop_act"}),
    )
    env_group: ClassVar[str | None] = "webshop"

    def __init__(self) -> None:
        self.coverage: Coverage | None = None

    def env_config(self, values: Mapping[str, Any], protocol: str) -> WebShopConfig:
        """``webshop.clicks`` as the protocol has it: the notebook's under ``protocol=paper``."""
        config = WebShopConfig.from_mapping(values)
        if protocol == "paper" and config.clicks not in (None, "notebook"):
            raise ConfigError(
                f"protocol=paper fixes webshop.clicks=notebook for task=webshop; you asked for "
                f"webshop.clicks={config.clicks}. Add protocol=custom to run outside the paper's protocol."
            )
        return replace(config, clicks=config.clicks or ("notebook" if protocol == "paper" else "strict"))

    def examples(self, config: TaskConfig, env_config: WebShopConfig | None = None) -> list[Example]:
        env = env_config if env_config is not None else WebShopConfig()
        if config.split == "lats100":
            raise ConfigError("split=lats100 is HotpotQA's (LATS's 100 train questions); task=webshop has none")
        catalog = Catalog.generate(env.seed, env.products, env.goals) if env.url is None else None
        # WebShop's own server holds thousands of goals; the paper's are its first 500
        available = PAPER_GOALS if env.url is not None else env.goals
        wanted = min(available, PAPER_GOALS) if config.split == "paper500" else available
        sessions = [Example(f"fixed_{i}", "", "") for i in range(wanted)]
        source = env.url or f"the generated catalog (seed {env.seed}, {env.goals} goals)"
        chosen, self.coverage = select(Pool.of(source, sessions), replace(config, split="all"))
        return [self._described(e.id, catalog, env) for e in chosen]

    def _described(self, session: str, catalog: Catalog | None, env: WebShopConfig) -> Example:
        if catalog is not None:
            goal = catalog.goal(session)
            if goal is None:
                raise ConfigError(f"webshop: no goal {session} in the generated catalog of {env.goals} goals")
            return Example(session, goal.instruction, "", {"category": goal.category, "asin": goal.asin})
        assert env.url is not None
        try:
            response = httpx2.get(f"{env.url.rstrip('/')}/{session}", timeout=env.timeout_s)
        except httpx2.HTTPError as exc:
            raise DataError(
                f"webshop: the server at {env.url} cannot be reached ({type(exc).__name__}: {exc})"
            ) from None
        if response.status_code != 200:
            raise DataError(f"webshop: the server at {env.url} answered {response.status_code} for session {session}")
        try:
            text = render(response.text, env.url, first_page=True).text
        except (ValueError, TypeError, AttributeError):
            text = ""  # a page the server cannot have meant: its episode ends in an error at reset, re-runnable
        lines = [line.strip() for line in text.splitlines()]
        instruction = next((lines[i + 1] for i, line in enumerate(lines[:-1]) if line.startswith("Instruction:")), "")
        return Example(session, instruction, "")

    def data_notes(self, config: TaskConfig, env_config: Any, examples: list[Example]) -> list[str]:
        return []  # the games (the shop) serve every example they list

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]:
        value = reward or 0.0
        return {"score": value, "success": float(value == 1.0)}

    def text_format(self) -> LineFormat:
        return webshop_format()

    def own_prompts(self) -> dict[str, Any]:
        from react_bench.envs.webshop.exemplars import own_exemplars

        exemplars = own_exemplars(Catalog.generate(), webshop_format())
        return {"instructions": INSTRUCTIONS, "exemplars": exemplars}

    def environment(self, config: TaskConfig, env_config: WebShopConfig) -> WebShopFactory:
        if env_config.url is not None:
            return WebShopFactory(env_config.url, env_config.timeout_s, notebook_clicks=env_config.clicks == "notebook")
        server = start_server(env_config)
        return WebShopFactory(
            server.url, env_config.timeout_s, server=server, notebook_clicks=env_config.clicks == "notebook"
        )


TASKS = (WebShopTask,)  # the registry's (``react_bench.tasks.TASKS``)
