"""A Responses (hub) request as a Chat Completions request (the Chat Completions upstream side).

What any Chat Completions server takes — OpenAI's own, and the OpenAI-compatible servers (vLLM,
llama.cpp, Ollama, coding-plan endpoints) — not only what OpenAI's newest models take:

| Responses (hub) | Chat Completions |
| --- | --- |
| `instructions`, `system`/`developer` items | one leading `system` message (prelude first); later: in place |
| `user`: `input_text`, `input_image`, `input_file` | a string if all text, else `text`/`image_url`/`file` |
| `assistant` messages (`output_text`, `refusal`) | `assistant` `content` (a string; neighbours joined) |
| `function_call` / `custom_tool_call` | `tool_calls[]` of the assistant message they follow (or a new one) |
| `function_call_output` / `custom_…_output` | a `tool` message (text); its images in a `user` message after |
| `reasoning` items | dropped (XLAT-2: another provider's state) |
| `function` tools | `{"type": "function", "function": {name, description, parameters, strict?}}` |
| `custom` (freeform) tools | function tools taking one string `input` (their grammar in the description) |
| `tool_choice` | `auto` / `none` / `required` / `{"type": "function", "function": {"name"}}` |
| `parallel_tool_calls` | the same (only with tools) |
| `max_output_tokens` | `max_tokens` |
| `temperature`, `top_p`, hub `stop` | the same |
| `reasoning.effort` | `reasoning_effort` |
| `text.format` json_schema / json_object | `response_format` json_schema / json_object |
| `stream: true` | `stream: true`, `stream_options: {"include_usage": true}` |

Freeform tools are described as function tools rather than sent as ``custom`` tools: only OpenAI's
own server knows the ``custom`` tool type, and self-hosted servers answer 400 to it. Their calls
come back as ``custom_tool_call`` items (the events side knows which tools were custom).

``max_tokens`` rather than ``max_completion_tokens``: every compatible server reads the first,
several older ones ignore the second (a cap silently lost).

Refused (``TranslationRefused``, XLAT-3, before any upstream call): ``previous_response_id``,
``conversation``, stored ``prompt`` templates, ``background``, server-side tools, server-state
items, uploaded file ids, file URLs and audio. Dropped: ``store``, ``include``, ``metadata``,
``text.verbosity``, ``reasoning.summary``, ``max_tool_calls``, ``top_logprobs``, ``truncation``,
``service_tier``, ``user``, the prompt-cache and safety fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sublane_protocols._hub import led_by
from sublane_protocols._translators import TranslationRefused

_UNSUPPORTED: Final = "unsupported_for_provider"
MAX_STOP_SEQUENCES: Final = 4
_REFUSED_FIELDS: Final = {
    "previous_response_id": "'previous_response_id' needs server-side state this provider does not keep; "
    "send the whole conversation in 'input'.",
    "conversation": "Stored conversations are not available with this provider; send the whole conversation.",
    "prompt": "Stored prompt templates are not available with this provider.",
}
_TEXT_PARTS: Final = frozenset({"input_text", "output_text", "text", "summary_text"})
_SERVER_STATE_ITEMS: Final = frozenset({"compaction", "compaction_summary", "item_reference"})
_CUSTOM_INPUT: Final = "input"


def refuse(message: str, param: str, *, unsupported: bool = False) -> TranslationRefused:
    return TranslationRefused(message, code=_UNSUPPORTED if unsupported else "invalid_request", param=param)


def _text(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise refuse("Expected a string.", param)
    return value


# --------------------------------------------------------------------------------------------------
# messages
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Messages:
    """The Chat messages being built; images of tool outputs wait for the tool messages to end."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    pending_media: list[dict[str, Any]] = field(default_factory=list)
    call_ids: set[str] = field(default_factory=set)

    def add(self, message: dict[str, Any]) -> None:
        if message.get("role") != "tool":
            self.flush_media()
        self.messages.append(message)

    def flush_media(self) -> None:
        if self.pending_media:
            self.messages.append({"role": "user", "content": list(self.pending_media)})
            self.pending_media.clear()

    def add_assistant_text(self, text: str) -> None:
        """Assistant text joins the assistant message just before it (chat templates want turns to
        alternate), else starts one."""
        self.flush_media()
        last = self.messages[-1] if self.messages else None
        if last is not None and last.get("role") == "assistant":
            last["content"] = (last.get("content") or "") + text
        else:
            self.messages.append({"role": "assistant", "content": text})

    def add_call(self, call: dict[str, Any]) -> None:
        """A tool call joins the assistant message just before it, else starts one."""
        self.flush_media()
        last = self.messages[-1] if self.messages else None
        if last is not None and last.get("role") == "assistant":
            last.setdefault("tool_calls", []).append(call)
        else:
            self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _content_part(part: Any, param: str) -> dict[str, Any] | None:
    """One Responses content part as a Chat content part (``None``: nothing to send)."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, Mapping):
        raise refuse("Each content part must be an object.", param)
    kind = part.get("type")
    if not isinstance(kind, str):  # a list or an object would not even be looked up in a set
        raise refuse("Each content part needs a 'type' string.", f"{param}.type")
    if kind in _TEXT_PARTS:
        return {"type": "text", "text": _text(part.get("text"), f"{param}.text")}
    if kind == "refusal":
        return {"type": "text", "text": _text(part.get("refusal"), f"{param}.refusal")}
    if kind in ("input_image", "input_file") and part.get("file_id"):
        raise refuse(
            "Uploaded file ids are not available with this provider.", f"{param}.file_id", unsupported=True
        )
    if kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            raise refuse("'image_url' must be a data URL or an https URL.", f"{param}.image_url")
        image: dict[str, Any] = {"url": url}
        detail = part.get("detail")
        if detail in ("low", "high"):
            image["detail"] = detail
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        data = part.get("file_data")
        if isinstance(data, str) and data:
            file: dict[str, Any] = {"file_data": data}
            if isinstance(part.get("filename"), str):
                file["filename"] = part["filename"]
            return {"type": "file", "file": file}
        raise refuse(
            "Files are only available inline ('file_data') with this provider.", param, unsupported=True
        )
    if kind == "input_audio":
        raise refuse("Audio input is not supported by this provider.", f"{param}.type", unsupported=True)
    raise refuse(f"Unknown content part type {kind!r}.", f"{param}.type")


def _parts(content: Any, param: str) -> list[dict[str, Any]]:
    raw = [content] if isinstance(content, str) else content
    if not isinstance(raw, list):
        raise refuse("'content' must be a string or a list of content parts.", f"{param}.content")
    return [
        part
        for index, value in enumerate(raw)
        if (part := _content_part(value, f"{param}.content[{index}]")) is not None
    ]


def _joined(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Text-only content as one string (what every server takes), else the parts."""
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


def _message(messages: _Messages, item: Mapping[str, Any], param: str) -> None:
    role = item.get("role")
    parts = _parts(item.get("content"), param)
    if role in ("system", "developer"):
        texts = [part["text"] for part in parts if part["type"] == "text"]
        if texts:
            messages.add({"role": "system", "content": "\n".join(texts)})
    elif role == "user":
        if parts:
            messages.add({"role": "user", "content": _joined(parts)})
    elif role == "assistant":
        texts = [part["text"] for part in parts if part["type"] == "text"]
        if texts:
            messages.add_assistant_text("".join(texts))
    else:
        raise refuse("A message's role must be user, assistant, system or developer.", f"{param}.role")


def _call_id(item: Mapping[str, Any], param: str) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise refuse("'call_id' must be a non-empty string.", f"{param}.call_id")
    return call_id


def _function_call(messages: _Messages, item: Mapping[str, Any], param: str) -> None:
    call_id = _call_id(item, param)
    name = _text(item.get("name"), f"{param}.name")
    if item.get("type") == "custom_tool_call":
        text = _text(item.get("input"), f"{param}.input")
        arguments = json.dumps({_CUSTOM_INPUT: text}, ensure_ascii=False)
    else:
        raw = item.get("arguments")
        arguments = raw if isinstance(raw, str) and raw.strip() else "{}"
    messages.call_ids.add(call_id)
    messages.add_call({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})


def _function_output(messages: _Messages, item: Mapping[str, Any], param: str) -> None:
    call_id = _call_id(item, param)
    if call_id not in messages.call_ids:
        raise refuse(
            f"The tool output for {call_id!r} has no matching tool call earlier in 'input'.",
            f"{param}.call_id",
        )
    output = item.get("output")
    if isinstance(output, str):
        text, media = output, []
    elif isinstance(output, list):
        parts = [
            part
            for index, value in enumerate(output)
            if (part := _content_part(value, f"{param}.output[{index}]")) is not None
        ]
        text = "\n".join(part["text"] for part in parts if part["type"] == "text")
        media = [part for part in parts if part["type"] != "text"]
    else:
        raise refuse("'output' must be a string or a list of content parts.", f"{param}.output")
    messages.add({"role": "tool", "tool_call_id": call_id, "content": text})
    messages.pending_media.extend(media)


def _input_items(messages: _Messages, value: Any) -> None:
    if isinstance(value, str):
        messages.add({"role": "user", "content": value})
        return
    if value is None:
        return
    if not isinstance(value, list):
        raise refuse("'input' must be a string or a list of items.", "input")
    for index, item in enumerate(value):
        param = f"input[{index}]"
        if not isinstance(item, Mapping):
            raise refuse("Each input item must be an object.", param)
        kind = item.get("type", "message" if "role" in item else None)
        if not isinstance(kind, str):  # a list or an object would not even be looked up in a set
            raise refuse("Each input item needs a 'type' string.", f"{param}.type")
        if kind == "message":
            _message(messages, item, param)
        elif kind in ("function_call", "custom_tool_call"):
            _function_call(messages, item, param)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            _function_output(messages, item, param)
        elif kind == "reasoning":
            continue  # XLAT-2: never forwarded to another provider
        elif kind in _SERVER_STATE_ITEMS:
            raise refuse(
                f"Input items of type {kind!r} need the server state of another provider.",
                param,
                unsupported=True,
            )
        elif isinstance(kind, str):
            raise refuse(
                f"Input items of type {kind!r} are not supported by this provider.", param, unsupported=True
            )
        else:
            raise refuse("Each input item needs a 'type'.", f"{param}.type")
    messages.flush_media()


def _with_prelude(messages: list[dict[str, Any]], instructions: Any, prelude: str) -> list[dict[str, Any]]:
    """The messages led by one system message: ``instructions`` and the system messages that open
    the conversation, joined (many models' chat templates take a single system message, first),
    with the dialect's ``prelude`` exactly once at its start."""
    if instructions is not None and not isinstance(instructions, str):
        raise refuse("'instructions' must be a string.", "instructions")
    leading: list[str] = [instructions] if instructions else []
    start = 0
    while start < len(messages) and messages[start]["role"] == "system":
        leading.append(messages[start]["content"])
        start += 1
    rest = messages[start:]
    texts = led_by(prelude, leading)
    if not texts:
        return rest
    return [{"role": "system", "content": "\n\n".join(texts)}, *rest]


# --------------------------------------------------------------------------------------------------
# tools, tool choice, settings
# --------------------------------------------------------------------------------------------------


def _custom_function(tool: Mapping[str, Any], name: str) -> dict[str, Any]:
    description = tool.get("description") if isinstance(tool.get("description"), str) else ""
    fmt = tool.get("format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "grammar" and isinstance(fmt.get("definition"), str):
        syntax = fmt.get("syntax") if isinstance(fmt.get("syntax"), str) else "grammar"
        description = (
            f"{description}\n\nThe input must follow this {syntax} grammar:\n{fmt['definition']}".strip()
        )
    function: dict[str, Any] = {
        "name": name,
        "parameters": {
            "type": "object",
            "properties": {
                _CUSTOM_INPUT: {"type": "string", "description": "The tool's whole input, as free text."}
            },
            "required": [_CUSTOM_INPUT],
        },
    }
    if description:
        function["description"] = description
    return {"type": "function", "function": function}


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise refuse("'tools' must be a list.", "tools")
    tools: list[dict[str, Any]] = []
    for index, tool in enumerate(value):
        param = f"tools[{index}]"
        if not isinstance(tool, Mapping):
            raise refuse("Each tool must be an object.", param)
        kind = tool.get("type")
        if kind not in ("function", "custom"):
            raise refuse(
                f"Tools of type {kind!r} are not available with this provider.", "tools", unsupported=True
            )
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise refuse("Each tool needs a 'name'.", f"{param}.name")
        if kind == "custom":
            tools.append(_custom_function(tool, name))
            continue
        function: dict[str, Any] = {"name": name}
        if isinstance(tool.get("description"), str) and tool["description"]:
            function["description"] = tool["description"]
        parameters = tool.get("parameters")
        function["parameters"] = (
            dict(parameters) if isinstance(parameters, Mapping) else {"type": "object", "properties": {}}
        )
        if tool.get("strict") is True:
            function["strict"] = True
        tools.append({"type": "function", "function": function})
    return tools


def _named(name: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": _text(name, "tool_choice.name")}}


def _tool_choice(choice: Any, tools: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """The Chat ``tool_choice`` for the hub's, and the tools it leaves callable."""
    if choice is None:
        return None, tools
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise refuse("'tool_choice' must be auto, none, required or a named tool.", "tool_choice")
        return choice, tools
    if not isinstance(choice, Mapping):
        raise refuse("'tool_choice' must be a string or an object.", "tool_choice")
    kind = choice.get("type")
    if kind in ("function", "custom"):
        return _named(choice.get("name")), tools
    if kind == "allowed_tools":
        listed = choice.get("tools")
        names = {
            tool["name"]
            for tool in (listed if isinstance(listed, list) else [])
            if isinstance(tool, Mapping) and isinstance(tool.get("name"), str)
        }
        allowed = [tool for tool in tools if tool["function"]["name"] in names] if names else tools
        mode = "required" if choice.get("mode") == "required" else "auto"
        return mode, allowed
    raise refuse(
        f"A 'tool_choice' of type {kind!r} is not available with this provider.",
        "tool_choice",
        unsupported=True,
    )


def _number(body: Mapping[str, Any], key: str) -> float | int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refuse(f"'{key}' must be a number.", key)
    return value


def _stop(value: Any) -> list[str]:
    if value is None:
        return []
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(stop, str) for stop in stops):
        raise refuse("'stop' must be a string or a list of strings.", "stop")
    if len(stops) > MAX_STOP_SEQUENCES:
        raise refuse(
            f"This provider takes at most {MAX_STOP_SEQUENCES} stop sequences.", "stop", unsupported=True
        )
    return [stop for stop in stops if stop]


def _effort(reasoning: Any) -> str | None:
    if reasoning is None:
        return None
    if not isinstance(reasoning, Mapping):
        raise refuse("'reasoning' must be an object.", "reasoning")
    effort = reasoning.get("effort")
    if effort is None:
        return None
    if not isinstance(effort, str) or not effort:
        raise refuse("'reasoning.effort' must be a string.", "reasoning.effort")
    return effort


def _response_format(text: Any) -> dict[str, Any] | None:
    if text is None:
        return None
    if not isinstance(text, Mapping):
        raise refuse("'text' must be an object.", "text")
    fmt = text.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, Mapping):
        raise refuse("'text.format' must be an object.", "text.format")
    kind = fmt.get("type")
    if kind in (None, "text"):
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        schema = fmt.get("schema")
        if not isinstance(schema, Mapping):
            raise refuse("'text.format.schema' must be a JSON Schema object.", "text.format.schema")
        name = fmt.get("name")
        described: dict[str, Any] = {
            "name": name if isinstance(name, str) and name else "response",
            "schema": dict(schema),
        }
        if isinstance(fmt.get("description"), str):
            described["description"] = fmt["description"]
        if isinstance(fmt.get("strict"), bool):
            described["strict"] = fmt["strict"]
        return {"type": "json_schema", "json_schema": described}
    raise refuse(f"Unknown 'text.format.type' {kind!r}.", "text.format.type")


def _settings(body: Mapping[str, Any], request: dict[str, Any]) -> None:
    limit = body.get("max_output_tokens")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise refuse("'max_output_tokens' must be a positive integer.", "max_output_tokens")
        request["max_tokens"] = limit
    for key in ("temperature", "top_p"):
        value = _number(body, key)
        if value is not None:
            request[key] = value
    stops = _stop(body.get("stop"))
    if stops:
        request["stop"] = stops
    effort = _effort(body.get("reasoning"))
    if effort is not None:
        request["reasoning_effort"] = effort
    response_format = _response_format(body.get("text"))
    if response_format is not None:
        request["response_format"] = response_format


# --------------------------------------------------------------------------------------------------
# the request
# --------------------------------------------------------------------------------------------------


def _refuse_server_state(body: Mapping[str, Any]) -> None:
    for name, message in _REFUSED_FIELDS.items():
        if body.get(name) not in (None, "", {}):
            raise refuse(message, name, unsupported=True)
    if body.get("background") is True:
        raise refuse(
            "Background responses are not available with this provider.", "background", unsupported=True
        )


def chat_request(body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
    """The Chat Completions body for a Responses body; raises ``TranslationRefused``.

    ``system_prelude``: a text the upstream requires first in the system message (its dialect)."""
    if not isinstance(body, Mapping):
        raise refuse("The request body must be a JSON object.", "body")
    _refuse_server_state(body)
    built = _Messages()
    _input_items(built, body.get("input"))
    messages = _with_prelude(built.messages, body.get("instructions"), system_prelude)
    if not any(message["role"] != "system" for message in messages):
        raise refuse("'input' holds no user or assistant content to send.", "input")
    request: dict[str, Any] = {}
    model = body.get("model")
    if isinstance(model, str) and model:
        request["model"] = model
    request["messages"] = messages
    tools = _tools(body.get("tools"))
    choice, tools = _tool_choice(body.get("tool_choice"), tools)
    if tools:
        request["tools"] = tools
        if choice is not None:
            request["tool_choice"] = choice
        if isinstance(body.get("parallel_tool_calls"), bool):
            request["parallel_tool_calls"] = body["parallel_tool_calls"]
    _settings(body, request)
    stream = body.get("stream") is True
    request["stream"] = stream
    if stream:
        request["stream_options"] = {"include_usage": True}
    return request
