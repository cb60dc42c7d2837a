"""Chat requests as one prompt for the embedded model, and its prompt-based tool protocol.

Pure functions (no llama-cpp import), tested without a model.

- The prompt is rendered with the model's own chat template (GGUF ``tokenizer.chat_template``,
  through llama-cpp-python's Jinja formatter when it is installed); a model without one
  (Gemma 3 270M is a base model) or ``chat_format="plain"`` gets a plain transcript
  ``User: ... / Assistant: ...`` that stops at the next speaker label.
- Prefill: a conversation that ends with an assistant message is rendered up to the
  generation prompt and the assistant's text is appended, so the model continues it.
- Tools: the specs are listed in the system prompt with the ``<tool_call>{json}</tool_call>``
  convention (see ``local.py`` for why); past calls and results are written back in that
  same form, results as user turns in ``<tool_response>`` tags. Thinking blocks are dropped:
  this model never makes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, assert_never, cast

from react_bench.models.base import ModelRequest, ToolSpec
from react_bench.types import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

TOOL_OPEN, TOOL_CLOSE = "<tool_call>", "</tool_call>"
PLAIN_STOPS = ("\nUser:", "\nAssistant:")


@dataclass(frozen=True)
class ChatPrompt:
    text: str
    stops: tuple[str, ...]  # stops the format needs besides the request's


@dataclass(frozen=True)
class ParsedToolCall:
    name: str
    arguments_json: str  # a JSON object, re-serialised


def tool_instructions(tools: tuple[ToolSpec, ...]) -> str:
    specs = "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.input_schema}) for t in tools
    )
    return (
        "You can call these tools:\n"
        f"{specs}\n"
        f'To call a tool, write {TOOL_OPEN}{{"name": <tool name>, "arguments": <arguments object>}}{TOOL_CLOSE} '
        "and stop. The result comes back in <tool_response> tags. Call one tool at a time."
    )


def chat_messages(request: ModelRequest) -> list[dict[str, str]]:
    """The request as ``[{"role", "content"}]`` with string contents."""
    system = "\n\n".join(
        part for part in (request.system, tool_instructions(request.tools) if request.tools else None) if part
    )
    out = [{"role": "system", "content": system}] if system else []
    names = {b.id: b.name for m in request.messages for b in m.content if isinstance(b, ToolUseBlock)}
    for message in request.messages:
        out.append({"role": message.role, "content": _content(message, names)})
    return out


def _content(message: Message, tool_names: dict[str, str]) -> str:
    parts: list[str] = []
    for block in message.content:
        match block:
            case TextBlock(text=text):
                parts.append(text)
            case ToolUseBlock(name=name, input=arguments):
                parts.append(f"{TOOL_OPEN}{json.dumps({'name': name, 'arguments': dict(arguments)})}{TOOL_CLOSE}")
            case ToolResultBlock(tool_use_id=call_id, content=content, is_error=is_error):
                body = json.dumps({"name": tool_names.get(call_id, ""), "content": content, "is_error": is_error})
                parts.append(f"<tool_response>\n{body}\n</tool_response>")
            case ThinkingBlock() | RedactedThinkingBlock():
                pass
            case _:
                assert_never(block)
    return "\n".join(parts)


def render_chat(request: ModelRequest, template: str | None, chat_format: str | None = None) -> ChatPrompt:
    messages = chat_messages(request)
    prefill = messages.pop()["content"] if messages and messages[-1]["role"] == "assistant" else ""
    if template is None or chat_format == "plain":
        return ChatPrompt(_plain(messages) + (f" {prefill}" if prefill else ""), PLAIN_STOPS)
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    # bos/eos as text: templates that write them expect the strings; tokenized with special=True
    formatter = Jinja2ChatFormatter(template, eos_token="", bos_token="", add_generation_prompt=True)
    return ChatPrompt(formatter(messages=cast(Any, messages)).prompt + prefill, ())


def _plain(messages: list[dict[str, str]]) -> str:
    label = {"system": "", "user": "User: ", "assistant": "Assistant: "}
    lines = [label[m["role"]] + m["content"] for m in messages]
    return "\n".join(lines) + "\nAssistant:"


def parse_tool_call(text: str) -> ParsedToolCall | None:
    """What followed ``<tool_call>``: ``{"name": ..., "arguments": {...}}`` up to ``</tool_call>``."""
    body = text.split(TOOL_CLOSE, 1)[0].strip()
    try:
        data: Any = json.loads(body)
    except json.JSONDecodeError:
        return None
    if isinstance(data, list) and len(data) == 1:  # SmolLM2 was trained on `[{...}]` lists
        data = data[0]
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ParsedToolCall(data["name"], json.dumps(arguments))
