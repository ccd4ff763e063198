"""A Messages client's body (Claude Code, the ``anthropic`` SDK) as a hub (Responses) body.

| Messages | Responses (hub) |
| --- | --- |
| `system` (string or text blocks) | one leading `developer` message, a text part per block |
| `user` text / image / document blocks | `input_text` / `input_image` / `input_file` (PDF) parts; a |
| | plain-text or content document becomes text parts |
| `assistant` text blocks | an `assistant` message with `output_text` parts |
| `tool_use` blocks | `function_call` items (`call_id` = the tool_use id, `arguments` = the input as JSON) |
| `tool_result` blocks | `function_call_output` items (before the turn's other content); text-only |
| | content becomes one string, content with images a list of parts |
| `tools` (client tools, `input_schema`) | `function` tools with `strict: false` |
| `tool_choice` auto / any / tool / none | `auto` / `required` / `{"type":"function","name"}` / `none` |
| `tool_choice.disable_parallel_tool_use` | `parallel_tool_calls: false` |
| `thinking` enabled (budget) / adaptive | `reasoning {effort, summary: "auto"}` (table below) |
| `output_config.format` json_schema | `text.format` json_schema (strict) |
| `max_tokens`, `temperature`, `top_p` | `max_output_tokens`, `temperature`, `top_p` |
| `stop_sequences` | hub `stop` |
| `metadata.user_id` session | `prompt_cache_key` (keeps the conversation on one upstream cache) |
| `stream` | `stream` |

Effort: `output_config.effort` low / medium / high / xhigh / max → low / medium / high / xhigh /
xhigh; else a thinking budget up to 4096 → low, up to 16384 → medium, above → high (never xhigh:
not every model has it); adaptive thinking without an effort → high (Claude's default).
`thinking: disabled` (or no thinking and no effort) sends no `reasoning`: the model's default.

`tool_result.is_error: true` has no Responses counterpart; the output is prefixed with `Error: ` so
the model still reads the result as a failure (the flag itself does not survive a round trip).

Dropped: `thinking` / `redacted_thinking` blocks and their signatures (XLAT-2), `cache_control`
everywhere (prompt caching is the upstream's own business), Claude Code's
`x-anthropic-billing-header` system block (attribution for Anthropic, and it changes per request, which
would defeat the upstream's prompt cache), citations, `top_k`, `metadata`, `context_management`
(context editing only trims what the model sees), `service_tier`, `speed`, `inference_geo`,
`diagnostics`, `thinking.display`.

Refused before any upstream call: server tools (`web_search_*`, `web_fetch_*`, `bash_*`,
`text_editor_*`, `computer_*`, `code_execution_*`, `memory_*`, `tool_search_*`, any typed tool but
`custom`), server-tool blocks in the history, a `container`, non-empty `mcp_servers`, uploaded files
(`file` sources) and documents by URL (`unsupported_for_provider`); a malformed body, or tool results
that do not answer an earlier tool_use (`invalid_request`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sublane_protocols.messages._intent import anthropic_conversation_key
from sublane_protocols.messages._shape import (
    dumps,
    optional_bool,
    optional_number,
    optional_positive_int,
    refuse,
    require_list,
    require_name,
    require_object,
    require_string,
    string_list,
    text_field,
    unsupported,
)

_EFFORTS: Final = {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}
_BILLING_HEADER: Final = "x-anthropic-billing-header:"
_SERVER_BLOCKS: Final = frozenset(
    {
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
ERROR_PREFIX: Final = "Error: "


def responses_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The hub body for a Messages body; raises ``TranslationRefused``."""
    if not isinstance(body, Mapping):
        refuse("The request body must be a JSON object.", None)
    _refuse_server_state(body)
    model = require_name(body.get("model"), "model")
    items = _system_items(body.get("system"))
    items.extend(_History().read(body.get("messages")))
    request: dict[str, Any] = {"model": model, "input": items}
    request.update(_tooling(body))
    reasoning = _reasoning(body.get("thinking"), body.get("output_config"))
    if reasoning is not None:
        request["reasoning"] = reasoning
    text_format = _text_format(body)
    if text_format is not None:
        request["text"] = {"format": text_format}
    max_tokens = optional_positive_int(body.get("max_tokens"), "max_tokens")
    if max_tokens is not None:
        request["max_output_tokens"] = max_tokens
    for name in ("temperature", "top_p"):
        value = optional_number(body.get(name), name)
        if value is not None:
            request[name] = value
    optional_number(body.get("top_k"), "top_k")
    stop = string_list(body.get("stop_sequences"), "stop_sequences")
    if stop:
        request["stop"] = stop
    stream = optional_bool(body.get("stream"), "stream")
    if stream is not None:
        request["stream"] = stream
    key = anthropic_conversation_key({}, body)
    if key is not None:
        request["prompt_cache_key"] = key
    return request


def _refuse_server_state(body: Mapping[str, Any]) -> None:
    if body.get("container") is not None:
        unsupported("Code execution containers are not supported by this model provider.", "container")
    if body.get("mcp_servers") not in (None, []):
        unsupported("MCP servers are not supported by this model provider.", "mcp_servers")


def _system_items(system: Any) -> list[dict[str, Any]]:
    if system is None:
        return []
    if isinstance(system, str):
        texts = [system]
    else:
        texts = []
        for index, raw in enumerate(require_list(system, "system")):
            block = require_object(raw, f"system[{index}]")
            if block.get("type") != "text":
                refuse("System blocks must be of type 'text'.", f"system[{index}].type")
            texts.append(require_string(block.get("text"), f"system[{index}].text"))
    parts = [_input_text(text) for text in texts if text and not text.startswith(_BILLING_HEADER)]
    return [{"type": "message", "role": "developer", "content": parts}] if parts else []


def _input_text(text: str) -> dict[str, Any]:
    return {"type": "input_text", "text": text}


# --- messages -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _History:
    """The hub items of ``messages``, pairing every tool_result with an earlier tool_use."""

    items: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)  # tool_use id → its param
    answered: set[str] = field(default_factory=set)

    def read(self, raw: Any) -> list[dict[str, Any]]:
        messages = require_list(raw, "messages")
        if not messages:
            refuse("'messages' must be a non-empty array.", "messages")
        for index, message in enumerate(messages):
            where = f"messages[{index}]"
            message = require_object(message, where)
            role = message.get("role")
            if role == "user":
                self._user(_blocks(message.get("content"), f"{where}.content"))
            elif role == "assistant":
                self._assistant(_blocks(message.get("content"), f"{where}.content"))
            elif role == "system":  # mid-conversation system messages (Claude Code 2.1, a beta)
                self.items.extend(_system_items(message.get("content")))
            else:
                refuse("Each message needs a 'role' of user, assistant or system.", f"{where}.role")
        for call_id, param in self.calls.items():
            if call_id not in self.answered:
                refuse(f"The tool_use {call_id!r} has no matching tool_result block.", param)
        return self.items

    def _user(self, blocks: list[tuple[Mapping[str, Any], str]]) -> None:
        parts: list[dict[str, Any]] = []
        for block, where in blocks:
            kind = text_field(block, "type")
            if kind == "tool_result":
                self.items.append(self._tool_result(block, where))
            elif kind == "tool_use":
                refuse("A tool_use block belongs to an assistant message.", f"{where}.type")
            else:
                parts.extend(_user_parts(block, where))
        if parts:
            self.items.append({"type": "message", "role": "user", "content": parts})

    def _assistant(self, blocks: list[tuple[Mapping[str, Any], str]]) -> None:
        texts: list[dict[str, Any]] = []
        for block, where in blocks:
            kind = text_field(block, "type")
            if kind == "text":
                text = require_string(block.get("text"), f"{where}.text")
                if text:
                    texts.append({"type": "output_text", "text": text})
            elif kind == "tool_use":
                self._flush_text(texts)
                self.items.append(self._tool_use(block, where))
            elif kind in ("thinking", "redacted_thinking"):
                continue  # XLAT-2: Anthropic's signed thinking never leaves Anthropic
            elif kind in _SERVER_BLOCKS:
                unsupported(
                    f"{kind!r} blocks (a server tool's) are not supported by this model provider.", where
                )
            else:
                refuse(f"Assistant content blocks of type {kind!r} are not supported.", f"{where}.type")
        self._flush_text(texts)

    def _flush_text(self, texts: list[dict[str, Any]]) -> None:
        if texts:
            self.items.append({"type": "message", "role": "assistant", "content": list(texts)})
            texts.clear()

    def _tool_use(self, block: Mapping[str, Any], where: str) -> dict[str, Any]:
        call_id = require_name(block.get("id"), f"{where}.id")
        name = require_name(block.get("name"), f"{where}.name")
        arguments = block.get("input", {})
        if not isinstance(arguments, Mapping):
            refuse("'input' of a tool_use block must be an object.", f"{where}.input")
        self.calls.setdefault(call_id, f"{where}.id")
        return {"type": "function_call", "call_id": call_id, "name": name, "arguments": dumps(arguments)}

    def _tool_result(self, block: Mapping[str, Any], where: str) -> dict[str, Any]:
        call_id = require_name(block.get("tool_use_id"), f"{where}.tool_use_id")
        if call_id not in self.calls:
            refuse(
                f"'tool_use_id' {call_id!r} does not match a tool_use of an earlier assistant message.",
                f"{where}.tool_use_id",
            )
        self.answered.add(call_id)
        output = _tool_output(block.get("content"), f"{where}.content")
        if optional_bool(block.get("is_error"), f"{where}.is_error"):
            output = _as_error(output)
        return {"type": "function_call_output", "call_id": call_id, "output": output}


def _blocks(content: Any, param: str) -> list[tuple[Mapping[str, Any], str]]:
    if isinstance(content, str):
        return [({"type": "text", "text": content}, param)]
    blocks = require_list(content, param)
    return [
        (require_object(block, f"{param}[{index}]"), f"{param}[{index}]")
        for index, block in enumerate(blocks)
    ]


def _user_parts(block: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """The hub parts of a user (or tool result) block: text, image or document."""
    kind = text_field(block, "type")
    if kind == "text":
        text = require_string(block.get("text"), f"{where}.text")
        return [_input_text(text)] if text else []
    if kind == "image":
        return [_image_part(require_object(block.get("source"), f"{where}.source"), f"{where}.source")]
    if kind == "document":
        return _document_parts(block, where)
    if kind in ("thinking", "redacted_thinking"):
        return []
    if kind in _SERVER_BLOCKS:
        unsupported(f"{kind!r} blocks (a server tool's) are not supported by this model provider.", where)
    refuse(f"Content blocks of type {kind!r} are not supported here.", f"{where}.type")


def _image_part(source: Mapping[str, Any], where: str) -> dict[str, Any]:
    kind = source.get("type")
    if kind == "base64":
        media_type = require_name(source.get("media_type"), f"{where}.media_type")
        data = require_name(source.get("data"), f"{where}.data")
        return {"type": "input_image", "image_url": f"data:{media_type};base64,{data}", "detail": "auto"}
    if kind == "url":
        return {
            "type": "input_image",
            "image_url": require_name(source.get("url"), f"{where}.url"),
            "detail": "auto",
        }
    if kind == "file":
        unsupported("Uploaded files are not supported by this model provider.", where)
    refuse("An image 'source' must be of type 'base64' or 'url'.", f"{where}.type")


def _document_parts(block: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    source = require_object(block.get("source"), f"{where}.source")
    kind = source.get("type")
    param = f"{where}.source"
    if kind == "base64":
        media_type = require_name(source.get("media_type"), f"{param}.media_type")
        if media_type != "application/pdf":
            refuse("A base64 document must be a PDF ('application/pdf').", f"{param}.media_type")
        data = require_name(source.get("data"), f"{param}.data")
        title = block.get("title")
        filename = title if isinstance(title, str) and title else "document.pdf"
        return [{"type": "input_file", "file_data": f"data:{media_type};base64,{data}", "filename": filename}]
    if kind == "text":
        text = require_string(source.get("data"), f"{param}.data")
        return [_input_text(text)] if text else []
    if kind == "content":
        content = source.get("content")
        parts: list[dict[str, Any]] = []
        for inner, inner_where in _blocks(content, f"{param}.content"):
            if inner.get("type") not in ("text", "image"):
                refuse("A content document holds only text and image blocks.", f"{inner_where}.type")
            parts.extend(_user_parts(inner, inner_where))
        return parts
    if kind in ("url", "file"):
        unsupported(f"Documents by {kind!r} are not supported by this model provider.", param)
    refuse("A document 'source' must be of type 'base64', 'text' or 'content'.", f"{param}.type")


def _tool_output(content: Any, param: str) -> str | list[dict[str, Any]]:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block, where in _blocks(content, param):
        parts.extend(_user_parts(block, where))
    if all(part["type"] == "input_text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


def _as_error(output: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if isinstance(output, str):
        return ERROR_PREFIX + output
    return [_input_text(ERROR_PREFIX.rstrip()), *output]


# --- tools ----------------------------------------------------------------------------------------------


def _tooling(body: Mapping[str, Any]) -> dict[str, Any]:
    raw = body.get("tools")
    tools = (
        []
        if raw is None
        else [_tool(tool, f"tools[{index}]") for index, tool in enumerate(require_list(raw, "tools"))]
    )
    choice = body.get("tool_choice")
    if not tools:
        if choice is not None and require_object(choice, "tool_choice").get("type") in ("any", "tool"):
            refuse("'tool_choice' requires at least one tool in 'tools'.", "tool_choice")
        return {}
    result: dict[str, Any] = {"tools": tools}
    if choice is not None:
        choice = require_object(choice, "tool_choice")
        result["tool_choice"] = _tool_choice(choice, {tool["name"] for tool in tools})
        if optional_bool(choice.get("disable_parallel_tool_use"), "tool_choice.disable_parallel_tool_use"):
            result["parallel_tool_calls"] = False
    return result


def _tool(raw: Any, where: str) -> dict[str, Any]:
    tool = require_object(raw, where)
    kind = tool.get("type")
    if kind not in (None, "custom"):
        unsupported(
            f"Tools of type {kind!r} (a server tool) are not supported by this model provider.", where
        )
    name = require_name(tool.get("name"), f"{where}.name")
    schema = require_object(tool.get("input_schema"), f"{where}.input_schema")
    result: dict[str, Any] = {"type": "function", "name": name}
    description = tool.get("description")
    if description is not None:
        result["description"] = require_string(description, f"{where}.description")
    result.update(parameters=dict(schema), strict=False)
    return result


def _tool_choice(choice: Mapping[str, Any], names: set[str]) -> str | dict[str, Any]:
    kind = choice.get("type")
    if kind in ("auto", "none"):
        return str(kind)
    if kind == "any":
        return "required"
    if kind == "tool":
        name = require_name(choice.get("name"), "tool_choice.name")
        if name not in names:
            refuse(f"'tool_choice' names {name!r}, which is not in 'tools'.", "tool_choice.name")
        return {"type": "function", "name": name}
    refuse("'tool_choice.type' must be 'auto', 'any', 'tool' or 'none'.", "tool_choice.type")


# --- thinking and output -----------------------------------------------------------------------------------


def _reasoning(thinking: Any, output_config: Any) -> dict[str, Any] | None:
    kind = None
    budget = None
    if thinking is not None:
        thinking = require_object(thinking, "thinking")
        kind = thinking.get("type")
        if kind not in ("enabled", "adaptive", "disabled", "between_tools"):
            refuse("'thinking.type' must be 'enabled', 'adaptive' or 'disabled'.", "thinking.type")
        if kind == "enabled":
            budget = optional_positive_int(thinking.get("budget_tokens"), "thinking.budget_tokens")
            if budget is None:
                refuse(
                    "'thinking.budget_tokens' is required with enabled thinking.", "thinking.budget_tokens"
                )
    effort = None
    if output_config is not None:
        effort = require_object(output_config, "output_config").get("effort")
        if effort is not None and (not isinstance(effort, str) or effort not in _EFFORTS):
            refuse("'output_config.effort' must be low, medium, high, xhigh or max.", "output_config.effort")
    if kind == "disabled" or (kind is None and effort is None):
        return None
    if effort is not None:
        level = _EFFORTS[effort]
    elif budget is not None:
        level = "low" if budget <= 4096 else "medium" if budget <= 16384 else "high"
    else:
        level = "high"  # adaptive thinking's default effort
    return {"effort": level, "summary": "auto"}


def _text_format(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """Structured output: GA ``output_config.format`` or the beta's top-level ``output_format``."""
    output_config = body.get("output_config")
    fmt = require_object(output_config, "output_config").get("format") if output_config is not None else None
    param = "output_config.format"
    if fmt is None and body.get("output_format") is not None:
        fmt, param = body.get("output_format"), "output_format"
    if fmt is None:
        return None
    fmt = require_object(fmt, param)
    if fmt.get("type") != "json_schema":
        refuse("The output format must be of type 'json_schema'.", f"{param}.type")
    schema = require_object(fmt.get("schema"), f"{param}.schema")
    return {"type": "json_schema", "name": "output", "schema": dict(schema), "strict": True}
