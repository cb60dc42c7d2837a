"""inspect_ai's ``react()`` agent on react-bench's work, for ``bench_peers.py`` (one process per run).

    python bench/peer_inspect.py --base-url URL --n 64 --concurrency 16 --caching on

The same HotpotQA questions as ``eval.py task=hotpotqa n=N`` (the offline split while it has
enough), each asked as ``Question: ...``; the same two wiki tools, with react-bench's own names,
descriptions and parameters, answered by react-bench's ``WikiEnv`` (one per sample, as a run
makes one per example); inspect's ``react()`` with its default prompt and its ``submit()`` tool
for the answer. The model is ``anthropic/claude-sonnet-4-6`` at ``--base-url`` through inspect's
Anthropic provider (the official SDK); the key is read from ``$ANTHROPIC_API_KEY``. Prints one
JSON line: samples, answered, and the accuracy of the submitted answers.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.agent import as_solver, react  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.solver import Generate, Solver, TaskState, solver  # noqa: E402
from inspect_ai.tool import ToolDef  # noqa: E402

from react_bench.console import quiet_console  # noqa: E402
from react_bench.environment import Action, EnvFactory  # noqa: E402
from react_bench.tasks import TaskConfig, load_task  # noqa: E402

MODEL = "anthropic/claude-sonnet-4-6"


def wiki_tools(factory: EnvFactory) -> list[ToolDef]:
    """The environment's actions (not ``finish``: react() answers with ``submit``) as inspect tools
    over one fresh environment."""
    env = factory()
    tools = []
    for spec in env.actions():
        if spec.name == "finish":
            continue
        props = spec.input_schema["properties"]
        (param,) = props

        def make(name: str, param: str) -> Any:
            async def call(*args: str, **kwargs: str) -> str:
                value = args[0] if args else kwargs[param]
                return (await env.step(Action(name, {param: value}))).text

            return call

        fn = make(spec.name, param)
        fn.__annotations__ = {param: str, "return": str}  # inspect reads the parameter from the signature
        fn.__signature__ = inspect.Signature(
            [inspect.Parameter(param, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str)], return_annotation=str
        )
        tools.append(
            ToolDef(
                fn,
                name=spec.name,
                description=spec.description,
                parameters={param: props[param].get("description", param)},
            )
        )
    return tools


@solver
def react_agent(factory: EnvFactory) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return await as_solver(react(tools=wiki_tools(factory)))(state, generate)

    return solve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--split", default="offline")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--caching", choices=("on", "off"), default="on")
    args = parser.parse_args(argv)
    quiet_console()
    task = load_task("hotpotqa")
    config = TaskConfig(name="hotpotqa", n=args.n, split=args.split)
    examples = task.examples(config)
    factory = task.environment(config, task.env_config({}, "paper"))
    samples = [Sample(input=f"Question: {e.question}", target=e.gold, id=e.id) for e in examples]
    with tempfile.TemporaryDirectory() as logs:
        (log,) = eval(
            Task(dataset=samples, solver=react_agent(factory), scorer=includes()),
            model=MODEL,
            model_base_url=args.base_url,
            max_connections=args.concurrency,
            max_samples=args.concurrency,
            max_retries=0,
            cache_prompt=args.caching == "on",
            log_dir=logs,
            display="none",
            log_samples=True,
        )
        scores = [s.scores["includes"].value for s in (log.samples or []) if s.scores]
        error = log.error.message if log.error else None
        accuracy = sum(v == "C" for v in scores) / max(1, len(scores))
        print(
            json.dumps(
                {
                    "status": log.status,
                    "samples": len(log.samples or []),
                    "scored": len(scores),
                    "accuracy": accuracy,
                    "error": error,
                }
            )
        )
    return 0 if log.status == "success" else 1


if __name__ == "__main__":
    raise SystemExit(main())
