"""A hub (Responses) body as a Claude Messages body, for a Claude Pro/Max OAuth account.

| Responses (hub) | Messages |
| --- | --- |
| `instructions`, `system`/`developer` messages (in order) | `system` text blocks, led by exactly the |
| | the upstream's required first block, when its dialect has one (`system_prelude`) |
| `user` / `assistant` messages | alternating turns (consecutive same-role turns merged) |
| `input_text` / `output_text` / `refusal` parts | `text` blocks (empty ones dropped: Claude refuses them) |
| `input_image` data URL / http(s) URL | `image` with a `base64` / `url` source |
| `input_file` PDF data URL | `document` with a `base64` source |
| `function_call` items (parallel ones together) | `tool_use` blocks of one assistant turn (id = `call_id`) |
| `function_call_output` items | `tool_result` blocks, first in the next user turn |
| `custom` tools | a tool whose `input_schema` has one string property `input` |
| `custom_tool_call(_output)` | `tool_use` with `{"input": …}` / `tool_result` |
| `reasoning` items | dropped (XLAT-2: another provider's state never crosses) |
| `tools[].parameters` | `input_schema` (`{"type":"object","properties":{}}` when absent); no `strict` |
| `tool_choice` auto / required / none / {function} | `{"type": "auto" / "any" / "none" / "tool"}` |
| `parallel_tool_calls: false` | `tool_choice.disable_parallel_tool_use: true` (only with tools) |
| `max_output_tokens` | `max_tokens` (32000 when absent: Claude requires one) |
| `temperature` (clamped to 0..1), `top_p` | the same, but not `top_p` beside `temperature` (newer Claude |
| | models refuse the two together) and neither with thinking (Claude refuses them) |
| hub `stop` | `stop_sequences` |
| `text.format` json_schema | `output_config.format` `{"type":"json_schema","schema"}` |
| `reasoning.effort` | `thinking: {"type":"enabled","budget_tokens":…}` (table below) |

Thinking budgets: minimal 1024, low 4096, medium 8192, high 16384, xhigh 24576 tokens; a
`reasoning` object without `effort` is medium (the Responses default), `none` or no `reasoning`
leaves thinking off. The budget must stay below `max_tokens`; when the client's
`max_output_tokens` is not above it, `max_tokens` becomes budget + that cap (so the cap still bounds
the visible answer). Thinking is turned OFF, whatever the effort:

- when the last assistant turn of the history holds `tool_use` blocks: with thinking on, Claude
  requires that turn to start with a *signed* thinking block, and signatures never cross providers
  (XLAT-2), so the turn can only be replayed without thinking;
- when `tool_choice` forces a tool (`any` / `tool`): Claude refuses thinking with a forced tool.

`text.format` json_schema → `output_config.format` `{"type":"json_schema","schema"}` (Claude's
structured outputs); `json_object` (no schema) has no Claude counterpart and is refused (XLAT-3).

Dropped because Claude lacks them and they do not change what is asked: `text.verbosity`,
`reasoning.summary`, `store`, `stream`
(the adapter sets it), `include`, `prompt_cache_key`, `metadata`, `service_tier`, `truncation`,
`user`, `safety_identifier`, `client_metadata`, `stream_options`, `prompt_cache_retention`,
`max_tool_calls`, `top_logprobs`.

Refused before any upstream call (XLAT-3, `unsupported_for_provider`): `previous_response_id`,
`conversation`, `prompt` (server-side state), `background: true`, server-tool and compaction input
items, tools other than `function` / `custom`, `allowed_tools` and hosted-tool `tool_choice`,
images and files Claude cannot read (uploaded file ids, non-PDF files, unsupported image types).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sublane_protocols._hub import led_by
from sublane_protocols.messages._shape import (
    data_url,
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

DEFAULT_MAX_TOKENS: Final = 32000
THINKING_BUDGETS: Final = {"minimal": 1024, "low": 4096, "medium": 8192, "high": 16384, "xhigh": 24576}
EMPTY_SCHEMA: Final = {"type": "object", "properties": {}}
IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

# Input items that stand for state or tools only OpenAI has (XLAT-3).
_SERVER_ITEMS: Final = frozenset(
    {
        "compaction",
        "compaction_summary",
        "item_reference",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "tool_search_call",
        "tool_search_output",
    }
)
_STATE_FIELDS: Final = ("previous_response_id", "conversation", "prompt")
_TEXT_PARTS: Final = frozenset({"input_text", "output_text"})


def messages_request(body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
    """The Messages body (without ``stream``) for a hub body; raises ``TranslationRefused``.
    ``system_prelude``: the upstream's required first ``system`` block (its dialect), if any."""
    if not isinstance(body, Mapping):
        refuse("The request body must be a JSON object.", None)
    _refuse_state(body)
    model = require_name(body.get("model"), "model")
    conversation = _Conversation()
    instructions = body.get("instructions")
    if instructions is not None:
        conversation.system.append(require_string(instructions, "instructions"))
    conversation.read_input(body.get("input"))
    messages = conversation.messages()
    if not messages:
        refuse("'input' needs at least one user or assistant item.", "input")
    request: dict[str, Any] = {"model": model, "messages": messages}
    system = system_blocks(conversation.system, system_prelude)
    if system:
        request["system"] = system
    tools = _tools(body.get("tools"))
    choice = _tool_choice(body, bool(tools))
    if tools:
        request["tools"] = tools
    if choice is not None:
        request["tool_choice"] = choice
    _sampling(body, request, forced_tool=choice is not None and choice["type"] in ("any", "tool"))
    return request


def count_request(body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
    """The ``/v1/messages/count_tokens`` body: what is counted, none of the generation options."""
    full = messages_request(body, system_prelude=system_prelude)
    return {key: full[key] for key in ("model", "system", "messages", "tools") if key in full}


def system_blocks(texts: list[str], prelude: str = "") -> list[dict[str, Any]]:
    """The ``system`` blocks, one per text, led by exactly one ``prelude`` block when given."""
    return [{"type": "text", "text": text} for text in led_by(prelude, texts)]


def _refuse_state(body: Mapping[str, Any]) -> None:
    for name in _STATE_FIELDS:
        if body.get(name) not in (None, ""):
            unsupported(f"'{name}' (server-side state) is not supported by this model provider.", name)
    if optional_bool(body.get("background"), "background"):
        unsupported("Background responses are not supported by this model provider.", "background")


# --- conversation -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Turn:
    role: str
    blocks: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class _Conversation:
    """System texts and alternating turns, built item by item."""

    system: list[str] = field(default_factory=list)
    turns: list[_Turn] = field(default_factory=list)

    def add(self, role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if self.turns and self.turns[-1].role == role:
            self.turns[-1].blocks.extend(blocks)
        else:
            self.turns.append(_Turn(role, list(blocks)))

    def messages(self) -> list[dict[str, Any]]:
        out = []
        for turn in self.turns:
            blocks = turn.blocks
            if turn.role == "user":  # Claude wants the tool results first in their user turn
                blocks = sorted(blocks, key=lambda block: block["type"] != "tool_result")
            out.append({"role": turn.role, "content": blocks})
        return out

    def read_input(self, raw: Any) -> None:
        if isinstance(raw, str):
            self.add("user", _text_blocks([raw]))
            return
        for index, item in enumerate(require_list(raw, "input")):
            self._read_item(require_object(item, f"input[{index}]"), f"input[{index}]")

    def _read_item(self, item: Mapping[str, Any], where: str) -> None:
        kind = text_field(item, "type") if "type" in item else "message" if "role" in item else None
        if kind == "message":
            self._read_message(item, where)
        elif kind == "function_call":
            call_id = require_name(item.get("call_id"), f"{where}.call_id")
            name = require_name(item.get("name"), f"{where}.name")
            self.add("assistant", [_tool_use(call_id, name, _arguments(item.get("arguments"), where))])
        elif kind == "custom_tool_call":
            call_id = require_name(item.get("call_id"), f"{where}.call_id")
            name = require_name(item.get("name"), f"{where}.name")
            raw_input = require_string(item.get("input"), f"{where}.input")
            self.add("assistant", [_tool_use(call_id, name, {"input": raw_input})])
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = require_name(item.get("call_id"), f"{where}.call_id")
            content = _tool_result_content(item.get("output"), f"{where}.output")
            self.add("user", [{"type": "tool_result", "tool_use_id": call_id, "content": content}])
        elif kind == "reasoning":
            return  # XLAT-2: reasoning state (encrypted or summarized) never crosses providers
        elif kind in _SERVER_ITEMS:
            unsupported(f"Input items of type {kind!r} are not supported by this model provider.", where)
        else:
            refuse(
                f"Unknown input item type {kind!r}." if kind else "Each input item needs a 'type' string.",
                f"{where}.type",
            )

    def _read_message(self, item: Mapping[str, Any], where: str) -> None:
        role = item.get("role")
        content = item.get("content")
        param = f"{where}.content"
        if role in ("system", "developer"):
            self.system.extend(_system_texts(content, param))
        elif role == "user":
            self.add("user", _user_blocks(content, param))
        elif role == "assistant":
            self.add("assistant", _assistant_blocks(content, param))
        else:
            refuse("A message needs a 'role' of user, assistant, system or developer.", f"{where}.role")


def _text_blocks(texts: list[str]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text} for text in texts if text]


def _parts(content: Any, param: str) -> list[tuple[Mapping[str, Any], str]]:
    """Content parts with their params (a string is one text part)."""
    if isinstance(content, str):
        return [({"type": "input_text", "text": content}, param)]
    parts = require_list(content, param)
    return [
        (require_object(part, f"{param}[{index}]"), f"{param}[{index}]") for index, part in enumerate(parts)
    ]


def _system_texts(content: Any, param: str) -> list[str]:
    texts = []
    for part, where in _parts(content, param):
        if text_field(part, "type") not in _TEXT_PARTS:
            refuse("System and developer messages may only hold text.", f"{where}.type")
        texts.append(require_string(part.get("text"), f"{where}.text"))
    return texts


def _user_blocks(content: Any, param: str) -> list[dict[str, Any]]:
    blocks = []
    for part, where in _parts(content, param):
        block = _content_block(part, where)
        if block is not None:
            blocks.append(block)
    return blocks


def _assistant_blocks(content: Any, param: str) -> list[dict[str, Any]]:
    texts = []
    for part, where in _parts(content, param):
        kind = text_field(part, "type")
        if kind in _TEXT_PARTS:
            texts.append(require_string(part.get("text"), f"{where}.text"))
        elif kind == "refusal":
            texts.append(require_string(part.get("refusal"), f"{where}.refusal"))
        else:
            refuse("Assistant messages may only hold text and refusals.", f"{where}.type")
    return _text_blocks(texts)


def _content_block(part: Mapping[str, Any], where: str) -> dict[str, Any] | None:
    """A text, image or document block for a user (or tool output) part; ``None`` for empty text."""
    kind = text_field(part, "type")
    if kind in _TEXT_PARTS:
        text = require_string(part.get("text"), f"{where}.text")
        return {"type": "text", "text": text} if text else None
    if kind == "input_image":
        return _image_block(part, where)
    if kind == "input_file":
        return _document_block(part, where)
    if kind == "input_audio":
        unsupported("Audio input is not supported by this model provider.", f"{where}.type")
    refuse(
        f"Unknown content part type {kind!r}." if kind else "Each content part needs a 'type' string.",
        f"{where}.type",
    )


def _image_block(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    if part.get("file_id") is not None:
        unsupported("Uploaded file ids are not supported by this model provider.", f"{where}.file_id")
    url = require_name(part.get("image_url"), f"{where}.image_url")
    inline = data_url(url)
    if inline is not None:
        media_type, data = inline
        if media_type not in IMAGE_TYPES:
            unsupported(
                f"Images of type {media_type!r} are not supported by this model provider.",
                f"{where}.image_url",
            )
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    refuse("'image_url' must be a data URL or an http(s) URL.", f"{where}.image_url")


def _document_block(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    for name in ("file_id", "file_url"):
        if part.get(name) is not None:
            unsupported(f"Files by '{name}' are not supported by this model provider.", f"{where}.{name}")
    inline = data_url(require_name(part.get("file_data"), f"{where}.file_data"))
    if inline is None:
        refuse("'file_data' must be a base64 data URL.", f"{where}.file_data")
    media_type, data = inline
    if media_type != "application/pdf":
        unsupported(
            f"Files of type {media_type!r} are not supported by this model provider (PDF only).",
            f"{where}.file_data",
        )
    block: dict[str, Any] = {
        "type": "document",
        "source": {"type": "base64", "media_type": media_type, "data": data},
    }
    filename = part.get("filename")
    if isinstance(filename, str) and filename:
        block["title"] = filename
    return block


def _tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _arguments(raw: Any, where: str) -> dict[str, Any]:
    text = require_string(raw, f"{where}.arguments")
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        refuse(f"The arguments of the function call {where} are not valid JSON.", f"{where}.arguments")
    if not isinstance(value, dict):
        refuse(f"The arguments of the function call {where} must be a JSON object.", f"{where}.arguments")
    return value


def _tool_result_content(output: Any, param: str) -> str | list[dict[str, Any]]:
    if isinstance(output, str):
        return output
    blocks = _user_blocks(require_list(output, param), param)
    return blocks or ""


# --- tools ----------------------------------------------------------------------------------------------


def _tools(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    return [
        _tool(require_object(tool, f"tools[{index}]"), f"tools[{index}]")
        for index, tool in enumerate(require_list(raw, "tools"))
    ]


def _tool(tool: Mapping[str, Any], where: str) -> dict[str, Any]:
    kind = tool.get("type")
    if kind not in ("function", "custom"):
        unsupported(f"Tools of type {kind!r} are not supported by this model provider.", where)
    name = require_name(tool.get("name"), f"{where}.name")
    description = tool.get("description")
    result: dict[str, Any] = {"name": name}
    if description is not None and require_string(description, f"{where}.description"):
        result["description"] = description
    if kind == "function":
        parameters = tool.get("parameters")
        if parameters is None:
            parameters = EMPTY_SCHEMA
        result["input_schema"] = dict(require_object(parameters, f"{where}.parameters"))
        return result
    schema = {
        "type": "object",
        "properties": {"input": {"type": "string", "description": _custom_input_description(tool, where)}},
        "required": ["input"],
    }
    result["input_schema"] = schema
    return result


def _custom_input_description(tool: Mapping[str, Any], where: str) -> str:
    """What the one ``input`` string must be: free text, or text that matches the tool's grammar."""
    fmt = tool.get("format")
    if fmt is None or require_object(fmt, f"{where}.format").get("type") == "text":
        return "The raw input of the tool, as free-form text (not JSON)."
    if fmt.get("type") != "grammar":
        refuse("A custom tool's 'format' must be of type 'text' or 'grammar'.", f"{where}.format.type")
    syntax = require_name(fmt.get("syntax"), f"{where}.format.syntax")
    definition = require_string(fmt.get("definition"), f"{where}.format.definition")
    return f"The raw input of the tool (not JSON). It must match this {syntax} grammar exactly:\n{definition}"


def _tool_choice(body: Mapping[str, Any], has_tools: bool) -> dict[str, Any] | None:
    raw = body.get("tool_choice")
    parallel = optional_bool(body.get("parallel_tool_calls"), "parallel_tool_calls")
    choice = _choice(raw)
    if not has_tools:
        if choice is not None and choice["type"] in ("any", "tool"):
            refuse("'tool_choice' requires at least one tool in 'tools'.", "tool_choice")
        return None
    if choice is None and parallel is False:
        choice = {"type": "auto"}
    if choice is not None and parallel is False and choice["type"] != "none":
        choice["disable_parallel_tool_use"] = True
    return choice


def _choice(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    modes = {"auto": "auto", "required": "any", "none": "none"}
    if isinstance(raw, str):
        if raw not in modes:
            refuse("'tool_choice' must be 'auto', 'required', 'none' or a named tool.", "tool_choice")
        return {"type": modes[raw]}
    choice = require_object(raw, "tool_choice")
    kind = choice.get("type")
    if kind in ("function", "custom"):
        return {"type": "tool", "name": require_name(choice.get("name"), "tool_choice.name")}
    unsupported(f"A 'tool_choice' of type {kind!r} is not supported by this model provider.", "tool_choice")


# --- sampling and thinking -----------------------------------------------------------------------------


def _sampling(body: Mapping[str, Any], request: dict[str, Any], *, forced_tool: bool) -> None:
    max_tokens = optional_positive_int(body.get("max_output_tokens"), "max_output_tokens")
    temperature = optional_number(body.get("temperature"), "temperature")
    top_p = optional_number(body.get("top_p"), "top_p")
    stop = string_list(body.get("stop"), "stop")
    budget = _thinking_budget(body.get("reasoning"))
    if forced_tool or _last_assistant_turn_calls_tools(request["messages"]):
        budget = None
    limit = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    if budget is not None:
        if budget >= limit:
            limit = budget + limit
        request["thinking"] = {"type": "enabled", "budget_tokens": budget}
    else:
        if temperature is not None:
            request["temperature"] = min(max(float(temperature), 0.0), 1.0)
        elif top_p is not None:
            request["top_p"] = top_p
    request["max_tokens"] = limit
    if stop:
        request["stop_sequences"] = stop
    output_format = _text_format(body.get("text"))
    if output_format is not None:
        request["output_config"] = {"format": output_format}


def _thinking_budget(reasoning: Any) -> int | None:
    if reasoning is None:
        return None
    effort = require_object(reasoning, "reasoning").get("effort")
    if effort is None:
        effort = "medium"  # the Responses API's default effort (Codex CLI sends only a summary setting)
    if not isinstance(effort, str):
        refuse("'reasoning.effort' must be a string.", "reasoning.effort")
    if effort == "none":
        return None
    if effort not in THINKING_BUDGETS:
        refuse(
            "'reasoning.effort' must be one of none, minimal, low, medium, high or xhigh.", "reasoning.effort"
        )
    return THINKING_BUDGETS[effort]


def _last_assistant_turn_calls_tools(messages: list[dict[str, Any]]) -> bool:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return any(block["type"] == "tool_use" for block in message["content"])
    return False


def _text_format(text: Any) -> dict[str, Any] | None:
    """XLAT-2/3: the Responses ``text.format`` as Claude's ``output_config.format`` — a JSON Schema
    carries over (Claude's structured outputs); ``json_object`` has no Claude counterpart and
    changes the answer's meaning, so it is refused rather than dropped; ``text`` asks for nothing.
    ``text.verbosity`` is a harmless hint Claude lacks: dropped."""
    if text is None:
        return None
    fmt = require_object(text, "text").get("format")
    if fmt is None:
        return None
    fmt = require_object(fmt, "text.format")
    kind = fmt.get("type")
    if kind == "text":
        return None
    if kind == "json_schema":
        schema = fmt.get("schema")
        if not isinstance(schema, Mapping):
            refuse("'text.format.schema' must be a JSON Schema object.", "text.format.schema")
        return {"type": "json_schema", "schema": dict(schema)}
    if kind == "json_object":
        unsupported(
            "JSON mode without a schema ('text.format' json_object) is not supported by this model"
            " provider; send a JSON Schema ('json_schema') instead.",
            "text.format",
        )
    refuse(f"Unknown 'text.format.type' {kind!r}.", "text.format.type")
