"""Chat Completions ⇄ Responses translation (PROTOCOLS.md §1.3–1.5): Chat clients on Responses upstreams.

The ChatGPT Codex backend speaks only the Responses API, streamed, with `store: false`. SubLane's
`POST /v1/chat/completions` is served by translating in both directions:

**Request** (`chat_to_responses`):

| Chat Completions | Responses |
| --- | --- |
| leading `system`/`developer` messages | `instructions` (joined by blank lines; `""` when none) |
| later `system`/`developer` messages | `{"type":"message","role":"developer"}` input items |
| `user` text / `image_url` / `file` parts | `input_text` / `input_image` / `input_file` parts |
| `assistant` content, `refusal` | `{"type":"message","role":"assistant"}` with `output_text` parts |
| `assistant.tool_calls[]` | one `function_call` item each |
| `tool` messages | `function_call_output` items (content flattened to a string) |
| `tools[].function` | flat function tools; `strict` defaults to `False` as in Chat (Responses: `True`) |
| `tool_choice`, `parallel_tool_calls` | same values (the named form flattened); dropped without tools |
| `reasoning_effort` | `reasoning.effort`, `summary: "auto"`, `include: ["reasoning.encrypted_content"]` |
| `response_format`, `verbosity` | `text.format`, `text.verbosity` |
| `temperature`, `top_p` | the same (XLAT-2) |
| `max_completion_tokens` (else `max_tokens`) | `max_output_tokens` |
| `stop` (a string or up to 4 strings) | hub `stop` (a list) |

`store: false` and `stream: true` are always set (the gateway aggregates for non-stream callers);
`prompt_cache_key` is left to the gateway.

Refused with `ChatRequestError` because ignoring them would silently change the answer: `n > 1`,
`logprobs`/`top_logprobs`, `audio`, audio `modalities`, `web_search_options`, the legacy
`functions`/`function_call`/`function` role, non-function tools, input audio and uploaded file ids.

Sampling, the output cap and stop sequences go into the hub like every client protocol's: what an
upstream cannot take is its own side's business (the Codex backend answers `400 Unsupported
parameter` to `temperature`, `top_p` and `max_output_tokens`, so the Responses upstream side drops
them, and `stop` with them; Claude and Antigravity carry them). Dropped as harmless: `user`,
`metadata`, `seed`,
`store`, `service_tier`, penalties, `logit_bias`, `prediction`, `stream_options` (the gateway reads
`include_usage` itself), the prompt-cache and safety fields and any unknown vendor extension.

**Response**: `ChatStreamTranslator` turns parsed Responses SSE events into `chat.completion.chunk`
objects; `responses_to_chat_completion` turns a final `response` object into a `chat.completion`.
Reasoning summaries are exposed as `reasoning_content`, the widely used extension field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ChatRequestError", "ChatStreamTranslator", "chat_to_responses", "responses_to_chat_completion"]

# Sampling numbers and output caps: type-checked here, carried into the hub (XLAT-2).
_SAMPLING_NUMBERS: Final = ("temperature", "top_p")
_OUTPUT_LIMITS: Final = ("max_completion_tokens", "max_tokens")  # the first one given wins

# Fields whose mere presence (with a non-empty value) asks for behaviour Responses cannot give.
_REFUSED_FIELDS: Final = {
    "audio": "Audio output is not supported by this model provider.",
    "web_search_options": "'web_search_options' is not supported by this model provider.",
    "functions": "The legacy 'functions' parameter is not supported; use 'tools' instead.",
    "function_call": "The legacy 'function_call' parameter is not supported; use 'tool_choice' instead.",
}

_TOOL_CHOICE_MODES: Final = ("auto", "none", "required")
_JOIN_PARTS: Final = "\n"
_JOIN_MESSAGES: Final = "\n\n"


class ChatRequestError(ValueError):
    """A Chat Completions request that cannot be translated for the Codex backend.

    The message is a client-facing sentence, returned as an OpenAI `invalid_request_error`;
    `param` names the offending field (`messages[2].content`) or is `None` for the whole body.
    """

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


# --------------------------------------------------------------------------------------------------
# Request: Chat Completions → Responses
# --------------------------------------------------------------------------------------------------


def chat_to_responses(body: Mapping[str, Any]) -> dict[str, Any]:
    """Translate a Chat Completions request body into a Codex Responses request body.

    Raises:
        ChatRequestError: the body is malformed or asks for something the backend cannot do.
    """
    if not isinstance(body, Mapping):
        raise ChatRequestError("The request body must be a JSON object.")
    _refuse_unsupported(body)
    _check_ignored_fields(body)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ChatRequestError("'model' is required and must be a non-empty string.", "model")
    instructions, items = _translate_messages(body.get("messages"))
    request: dict[str, Any] = {
        "model": model,
        "instructions": instructions,
        "input": items,
        "store": False,
        "stream": True,
    }
    request.update(_translate_tooling(body))
    request.update(_translate_reasoning(body.get("reasoning_effort")))
    request.update(_translate_sampling(body))
    text = _translate_text(body)
    if text:
        request["text"] = text
    return request


def _refuse_unsupported(body: Mapping[str, Any]) -> None:
    for field, message in _REFUSED_FIELDS.items():
        if body.get(field) not in (None, [], {}):
            raise ChatRequestError(message, field)
    n = body.get("n")
    if n is not None and (not _is_int(n) or n != 1):
        raise ChatRequestError("Only one choice per request is supported: 'n' must be 1.", "n")
    if body.get("logprobs") not in (None, False):
        raise ChatRequestError("'logprobs' is not supported by this model provider.", "logprobs")
    if body.get("top_logprobs") not in (None, 0):
        raise ChatRequestError("'top_logprobs' is not supported by this model provider.", "top_logprobs")
    modalities = body.get("modalities")
    if modalities is not None and (not isinstance(modalities, list) or "audio" in modalities):
        raise ChatRequestError("Only the 'text' modality is supported.", "modalities")


def _check_ignored_fields(body: Mapping[str, Any]) -> None:
    for field in _SAMPLING_NUMBERS:
        value = body.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ChatRequestError(f"'{field}' must be a number.", field)
    for field in _OUTPUT_LIMITS:
        value = body.get(field)
        if value is not None and (not _is_int(value) or value < 1):
            raise ChatRequestError(f"'{field}' must be a positive integer.", field)
    if body.get("stream") is not None and not isinstance(body.get("stream"), bool):
        raise ChatRequestError("'stream' must be a boolean.", "stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, Mapping):
        raise ChatRequestError("'stream_options' must be an object.", "stream_options")


def _translate_sampling(body: Mapping[str, Any]) -> dict[str, Any]:
    """``temperature``, ``top_p``, the output cap and stop sequences, in the hub's fields."""
    hub: dict[str, Any] = {name: body[name] for name in _SAMPLING_NUMBERS if body.get(name) is not None}
    limit = next((body[name] for name in _OUTPUT_LIMITS if body.get(name) is not None), None)
    if limit is not None:
        hub["max_output_tokens"] = limit
    stop = body.get("stop")
    if isinstance(stop, str) and stop:
        hub["stop"] = [stop]
    elif isinstance(stop, list) and stop:
        if len(stop) > 4 or not all(isinstance(item, str) and item for item in stop):
            raise ChatRequestError("'stop' must be a string or up to 4 non-empty strings.", "stop")
        hub["stop"] = list(stop)
    elif stop not in (None, "", []):
        raise ChatRequestError("'stop' must be a string or up to 4 non-empty strings.", "stop")
    return hub


# --- messages ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class _CallLedger:
    """Pairs tool calls with tool results: the backend rejects either one without the other."""

    declared: dict[str, str]
    answered: set[str]

    def declare(self, call_id: str, param: str) -> None:
        self.declared.setdefault(call_id, param)

    def answer(self, call_id: str, param: str) -> None:
        if call_id not in self.declared:
            raise ChatRequestError(
                f"'tool_call_id' {call_id!r} does not match any tool call of an earlier assistant message.",
                param,
            )
        self.answered.add(call_id)

    def check_all_answered(self) -> None:
        for call_id, param in self.declared.items():
            if call_id not in self.answered:
                raise ChatRequestError(
                    f"The tool call {call_id!r} has no matching 'tool' message with its result.", param
                )


def _translate_messages(messages: Any) -> tuple[str, list[dict[str, Any]]]:
    if not isinstance(messages, list) or not messages:
        raise ChatRequestError("'messages' must be a non-empty array of message objects.", "messages")
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    ledger = _CallLedger(declared={}, answered=set())
    leading = True
    for index, raw in enumerate(messages):
        where = f"messages[{index}]"
        message = _require_object(raw, where)
        role = message.get("role")
        if role in ("system", "developer"):
            text = _flatten_text(message.get("content"), f"{where}.content")
            if leading:
                instructions.append(text)
            else:
                items.append(_message_item("developer", [_input_text(text)]))
            continue
        leading = False
        if role == "user":
            items.append(_message_item("user", _user_parts(message.get("content"), f"{where}.content")))
        elif role == "assistant":
            items.extend(_assistant_items(message, where, ledger))
        elif role == "tool":
            items.append(_tool_output_item(message, where, ledger))
        elif role == "function":
            raise ChatRequestError(
                "The legacy 'function' role is not supported; reply to 'tool_calls' with 'tool' messages.",
                f"{where}.role",
            )
        else:
            raise ChatRequestError(
                "Each message needs a 'role' of system, developer, user, assistant or tool.", f"{where}.role"
            )
    ledger.check_all_answered()
    return _JOIN_MESSAGES.join(instructions), items


def _message_item(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": content}


def _input_text(text: str) -> dict[str, Any]:
    return {"type": "input_text", "text": text}


def _flatten_text(content: Any, param: str) -> str:
    """A string, or an array of `text` parts joined by newlines (system and tool messages)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise ChatRequestError("Message content must be a string or a non-empty array of text parts.", param)
    texts = []
    for index, raw in enumerate(content):
        part = _require_object(raw, f"{param}[{index}]")
        if part.get("type") != "text":
            raise ChatRequestError("Only 'text' content parts are allowed here.", f"{param}[{index}].type")
        texts.append(_require_string(part.get("text"), f"{param}[{index}].text"))
    return _JOIN_PARTS.join(texts)


def _user_parts(content: Any, param: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [_input_text(content)]
    if not isinstance(content, list) or not content:
        raise ChatRequestError("User content must be a string or a non-empty array of content parts.", param)
    return [_user_part(raw, f"{param}[{index}]") for index, raw in enumerate(content)]


def _user_part(raw: Any, param: str) -> dict[str, Any]:
    part = _require_object(raw, param)
    kind = part.get("type")
    if kind == "text":
        return _input_text(_require_string(part.get("text"), f"{param}.text"))
    if kind == "image_url":
        return _image_part(part.get("image_url"), f"{param}.image_url")
    if kind == "file":
        return _file_part(part.get("file"), f"{param}.file")
    if kind == "input_audio":
        raise ChatRequestError("Audio input is not supported by this model provider.", f"{param}.type")
    raise ChatRequestError("Content parts must be of type 'text', 'image_url' or 'file'.", f"{param}.type")


def _image_part(image: Any, param: str) -> dict[str, Any]:
    if isinstance(image, str):  # some clients send the URL bare instead of {"url": …}
        image = {"url": image}
    image = _require_object(image, param)
    url = image.get("url")
    if not isinstance(url, str) or not url:
        raise ChatRequestError("'image_url.url' must be a non-empty URL or data URL.", f"{param}.url")
    detail = image.get("detail") or "auto"
    if detail not in ("auto", "low", "high"):
        raise ChatRequestError("'image_url.detail' must be 'auto', 'low' or 'high'.", f"{param}.detail")
    return {"type": "input_image", "image_url": url, "detail": detail}


def _file_part(file: Any, param: str) -> dict[str, Any]:
    file = _require_object(file, param)
    if file.get("file_id") is not None:
        raise ChatRequestError(
            "Uploaded file ids are not available through this gateway; send the file inline as 'file_data'.",
            f"{param}.file_id",
        )
    data = file.get("file_data")
    if not isinstance(data, str) or not data:
        raise ChatRequestError("A file part needs 'file_data' (a base64 data URL).", f"{param}.file_data")
    part = {"type": "input_file", "file_data": data}
    if file.get("filename") is not None:
        part["filename"] = _require_string(file.get("filename"), f"{param}.filename")
    return part


def _assistant_items(message: Mapping[str, Any], where: str, ledger: _CallLedger) -> list[dict[str, Any]]:
    if message.get("function_call") is not None:
        raise ChatRequestError(
            "The legacy 'function_call' field is not supported; use 'tool_calls'.", f"{where}.function_call"
        )
    texts = _assistant_texts(message.get("content"), f"{where}.content")
    refusal = message.get("refusal")
    if refusal is not None:
        texts.append(_require_string(refusal, f"{where}.refusal"))
    items: list[dict[str, Any]] = []
    if any(texts):
        parts = [{"type": "output_text", "text": text} for text in texts if text]
        items.append(_message_item("assistant", parts))
    tool_calls = message.get("tool_calls")
    if tool_calls is None:
        return items
    if not isinstance(tool_calls, list):
        raise ChatRequestError("'tool_calls' must be an array.", f"{where}.tool_calls")
    for index, raw in enumerate(tool_calls):
        param = f"{where}.tool_calls[{index}]"
        call = _function_call_item(raw, param)
        ledger.declare(call["call_id"], f"{param}.id")
        items.append(call)
    return items


def _assistant_texts(content: Any, param: str) -> list[str]:
    """Assistant text and refusal parts, in order (a refusal is replayed as what the model said)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        raise ChatRequestError("Assistant content must be a string, an array of parts or null.", param)
    texts = []
    for index, raw in enumerate(content):
        part = _require_object(raw, f"{param}[{index}]")
        kind = part.get("type")
        if kind not in ("text", "refusal"):
            raise ChatRequestError(
                "Assistant content parts must be of type 'text' or 'refusal'.", f"{param}[{index}].type"
            )
        texts.append(_require_string(part.get(kind), f"{param}[{index}].{kind}"))
    return texts


def _function_call_item(raw: Any, param: str) -> dict[str, Any]:
    call = _require_object(raw, param)
    if call.get("type", "function") != "function":
        raise ChatRequestError("Only tool calls of type 'function' are supported.", f"{param}.type")
    call_id = _require_name(call.get("id"), f"{param}.id")
    function = _require_object(call.get("function"), f"{param}.function")
    name = _require_name(function.get("name"), f"{param}.function.name")
    arguments = _require_string(function.get("arguments"), f"{param}.function.arguments")
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def _tool_output_item(message: Mapping[str, Any], where: str, ledger: _CallLedger) -> dict[str, Any]:
    call_id = _require_name(message.get("tool_call_id"), f"{where}.tool_call_id")
    ledger.answer(call_id, f"{where}.tool_call_id")
    output = _flatten_text(message.get("content"), f"{where}.content")
    return {"type": "function_call_output", "call_id": call_id, "output": output}


# --- tools, reasoning, text ----------------------------------------------------------------------------


def _translate_tooling(body: Mapping[str, Any]) -> dict[str, Any]:
    tools = _translate_tools(body.get("tools"))
    choice = body.get("tool_choice")
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise ChatRequestError("'parallel_tool_calls' must be a boolean.", "parallel_tool_calls")
    if not tools:
        if choice is not None and choice not in ("auto", "none"):
            raise ChatRequestError("'tool_choice' requires at least one tool in 'tools'.", "tool_choice")
        return {}
    result: dict[str, Any] = {"tools": tools}
    if choice is not None:
        result["tool_choice"] = _translate_tool_choice(choice, {tool["name"] for tool in tools})
    if parallel is not None:
        result["parallel_tool_calls"] = parallel
    return result


def _translate_tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise ChatRequestError("'tools' must be an array of tool objects.", "tools")
    return [_translate_tool(raw, f"tools[{index}]") for index, raw in enumerate(tools)]


def _translate_tool(raw: Any, param: str) -> dict[str, Any]:
    tool = _require_object(raw, param)
    if tool.get("type") != "function":
        raise ChatRequestError("Only tools of type 'function' are supported.", f"{param}.type")
    function = _require_object(tool.get("function"), f"{param}.function")
    name = _require_name(function.get("name"), f"{param}.function.name")
    parameters = function.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}  # Chat's "no arguments"
    elif not isinstance(parameters, Mapping):
        raise ChatRequestError("'parameters' must be a JSON Schema object.", f"{param}.function.parameters")
    strict = function.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise ChatRequestError("'strict' must be a boolean.", f"{param}.function.strict")
    result: dict[str, Any] = {"type": "function", "name": name}
    description = function.get("description")
    if description is not None:
        result["description"] = _require_string(description, f"{param}.function.description")
    # Responses treats a missing `strict` as true; Chat as false. Say it explicitly.
    result.update(parameters=dict(parameters), strict=bool(strict))
    return result


def _translate_tool_choice(choice: Any, names: set[str]) -> str | dict[str, Any]:
    if isinstance(choice, str):
        if choice not in _TOOL_CHOICE_MODES:
            raise ChatRequestError(
                "'tool_choice' must be 'auto', 'none', 'required' or a function.", "tool_choice"
            )
        return choice
    choice = _require_object(choice, "tool_choice")
    if choice.get("type") != "function":
        raise ChatRequestError("Only a named 'function' tool choice is supported.", "tool_choice.type")
    function = _require_object(choice.get("function"), "tool_choice.function")
    name = _require_name(function.get("name"), "tool_choice.function.name")
    if name not in names:
        raise ChatRequestError(
            f"'tool_choice' names {name!r}, which is not in 'tools'.", "tool_choice.function.name"
        )
    return {"type": "function", "name": name}


def _translate_reasoning(effort: Any) -> dict[str, Any]:
    if effort is None:
        return {}
    if not isinstance(effort, str) or not effort:
        raise ChatRequestError(
            "'reasoning_effort' must be a string such as 'low' or 'high'.", "reasoning_effort"
        )
    if effort == "none":
        return {"reasoning": {"effort": effort}}
    # A summary is what `reasoning_content` carries; the encrypted item is what `store: false` needs.
    return {"reasoning": {"effort": effort, "summary": "auto"}, "include": ["reasoning.encrypted_content"]}


def _translate_text(body: Mapping[str, Any]) -> dict[str, Any]:
    text: dict[str, Any] = {}
    response_format = body.get("response_format")
    if response_format is not None:
        text["format"] = _translate_format(_require_object(response_format, "response_format"))
    verbosity = body.get("verbosity")
    if verbosity is not None:
        if verbosity not in ("low", "medium", "high"):
            raise ChatRequestError("'verbosity' must be 'low', 'medium' or 'high'.", "verbosity")
        text["verbosity"] = verbosity
    return text


def _translate_format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    kind = response_format.get("type")
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind != "json_schema":
        raise ChatRequestError(
            "'response_format.type' must be 'text', 'json_object' or 'json_schema'.", "response_format.type"
        )
    spec = _require_object(response_format.get("json_schema"), "response_format.json_schema")
    result: dict[str, Any] = {
        "type": "json_schema",
        "name": _require_name(spec.get("name"), "response_format.json_schema.name"),
    }
    schema = spec.get("schema")
    if not isinstance(schema, Mapping):
        raise ChatRequestError(
            "'response_format.json_schema.schema' must be a JSON Schema object.",
            "response_format.json_schema.schema",
        )
    result["schema"] = dict(schema)
    if spec.get("description") is not None:
        result["description"] = _require_string(
            spec["description"], "response_format.json_schema.description"
        )
    strict = spec.get("strict")
    if strict is not None:
        if not isinstance(strict, bool):
            raise ChatRequestError("'strict' must be a boolean.", "response_format.json_schema.strict")
        result["strict"] = strict
    return result


# --- shape checks -----------------------------------------------------------------------------------


def _require_object(value: Any, param: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ChatRequestError(f"'{param}' must be an object.", param)
    return value


def _require_string(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise ChatRequestError(f"'{param}' must be a string.", param)
    return value


def _require_name(value: Any, param: str) -> str:
    if not isinstance(value, str) or not value:
        raise ChatRequestError(f"'{param}' must be a non-empty string.", param)
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------------------------------
# Response: Responses → Chat Completions
# --------------------------------------------------------------------------------------------------

_ERROR_TYPES: Final = {
    "context_length_exceeded": "invalid_request_error",
    "invalid_prompt": "invalid_request_error",
    "rate_limit_exceeded": "rate_limit_error",
    "slow_down": "rate_limit_error",
    "insufficient_quota": "insufficient_quota",
    "usage_not_included": "insufficient_quota",
}


def _chat_usage(usage: Any) -> dict[str, Any] | None:
    """Responses `usage` → Chat `usage`; cached and reasoning counts are subsets, as in Chat."""
    if not isinstance(usage, Mapping):
        return None
    prompt = _count(usage.get("input_tokens"))
    completion = _count(usage.get("output_tokens"))
    total = usage.get("total_tokens")
    input_details = usage.get("input_tokens_details")
    output_details = usage.get("output_tokens_details")
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total if _is_int(total) else prompt + completion,
        "prompt_tokens_details": {"cached_tokens": _count(_field(input_details, "cached_tokens"))},
        "completion_tokens_details": {"reasoning_tokens": _count(_field(output_details, "reasoning_tokens"))},
    }


def _finish_reason(response: Mapping[str, Any], called_tools: bool) -> str:
    if response.get("status") == "incomplete":
        reason = _field(response.get("incomplete_details"), "reason")
        # Any other cut-off is still a truncated answer, which Chat calls "length".
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if called_tools else "stop"


def _chat_error(source: Any) -> dict[str, Any]:
    """An OpenAI-style error object from a Responses error (`response.error` or an `error` event)."""
    code = _field(source, "code")
    code = code if isinstance(code, str) else None
    message = _field(source, "message")
    if not isinstance(message, str) or not message:
        message = "The upstream model failed to respond."
    kind = _field(source, "type")
    if not isinstance(kind, str) or not kind or kind == "error":
        kind = _ERROR_TYPES.get(code or "", "server_error")
    return {"message": message, "type": kind, "param": _field(source, "param"), "code": code}


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _count(value: Any) -> int:
    return value if _is_int(value) and value >= 0 else 0


def _text_of(parts: Any, kind: str, key: str) -> list[str]:
    if not isinstance(parts, list):
        return []
    return [
        part[key] for part in parts if _field(part, "type") == kind and isinstance(_field(part, key), str)
    ]


def responses_to_chat_completion(
    response: Mapping[str, Any], *, model: str, completion_id: str, created: int
) -> dict[str, Any]:
    """Build a non-streaming `chat.completion` from a final Responses `response` object.

    Raises:
        ValueError: the response is not `completed` or `incomplete` (a failed turn has no
            completion; report `response.error` instead).
    """
    status = response.get("status")
    if status not in ("completed", "incomplete"):
        raise ValueError(f"expected a completed or incomplete response, got status {status!r}")
    texts: list[str] = []
    refusals: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else []:
        kind = _field(item, "type")
        if kind == "message":
            texts.extend(_text_of(item.get("content"), "output_text", "text"))
            refusals.extend(_text_of(item.get("content"), "refusal", "refusal"))
        elif kind == "reasoning":
            summary = _text_of(item.get("summary"), "summary_text", "text")
            reasoning.extend(summary or _text_of(item.get("content"), "reasoning_text", "text"))
        elif kind == "function_call":
            tool_calls.append(_tool_call(item))
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts or not (tool_calls or refusals) else None,
        "refusal": "".join(refusals) or None,
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning:
        message["reasoning_content"] = _JOIN_MESSAGES.join(reasoning)
    finish_reason = _finish_reason(response, bool(tool_calls))
    completion: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
    }
    usage = _chat_usage(response.get("usage"))
    if usage is not None:
        completion["usage"] = usage
    return completion


def _tool_call(item: Mapping[str, Any]) -> dict[str, Any]:
    arguments = item.get("arguments")
    return {
        "id": str(item.get("call_id") or item.get("id") or ""),
        "type": "function",
        "function": {
            "name": str(item.get("name") or ""),
            "arguments": arguments if isinstance(arguments, str) else "",
        },
    }


@dataclass(slots=True)
class _StreamedCall:
    index: int
    arguments_sent: bool = False


class ChatStreamTranslator:
    """Turns Responses SSE events, one at a time, into `chat.completion.chunk` objects.

    Feed every parsed event in order. The first chunk carries `delta.role`; text, refusal,
    reasoning-summary and function-call deltas follow as they arrive; the terminal event produces
    a chunk with `finish_reason` and, when `include_usage` is set, a final `choices: []` chunk
    with `usage`. A failed turn produces no chunk: `error` holds an OpenAI-style error object for
    the gateway's closing error frame. Events after the terminal one are ignored.
    """

    def __init__(self, *, model: str, completion_id: str, created: int, include_usage: bool) -> None:
        self._model = model
        self._id = completion_id
        self._created = created
        self._include_usage = include_usage
        self._role_sent = False
        self._finished = False
        self._error: dict[str, Any] | None = None
        self._calls: dict[Any, _StreamedCall] = {}
        self._call_count = 0
        self._texts_seen: set[Any] = set()
        self._reasoning_key: tuple[Any, Any] | None = None
        self._handlers: dict[str, Callable[[Mapping[str, Any]], list[dict[str, Any]]]] = {
            "response.created": self._on_created,
            "response.output_text.delta": self._on_text,
            "response.refusal.delta": self._on_refusal,
            "response.reasoning_summary_text.delta": self._on_reasoning,
            "response.reasoning_text.delta": self._on_reasoning,
            "response.output_item.added": self._on_item_added,
            "response.function_call_arguments.delta": self._on_arguments,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.output_item.done": self._on_item_done,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_failed,
            "error": self._on_error,
        }

    @property
    def finished(self) -> bool:
        """Whether a terminal event (completed, incomplete, failed or error) has been seen."""
        return self._finished

    @property
    def error(self) -> dict[str, Any] | None:
        """The `{"message", "type", "param", "code"}` error of a failed turn, else `None`."""
        return self._error

    def feed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Translate one parsed Responses event into zero or more chunks."""
        if self._finished:
            return []
        handler = self._handlers.get(str(event.get("type")))
        return handler(event) if handler is not None else []

    # --- chunk building ---

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
        }
        if self._include_usage:
            chunk["usage"] = None  # as OpenAI does: only the last chunk carries numbers
        return chunk

    def _role_chunks(self) -> list[dict[str, Any]]:
        """The opening `delta.role` chunk, once per stream."""
        if self._role_sent:
            return []
        self._role_sent = True
        return [self._chunk({"role": "assistant", "content": ""})]

    def _with_role(self, delta: dict[str, Any]) -> list[dict[str, Any]]:
        """The chunk for `delta`, preceded by the role chunk if it has not been sent yet."""
        return [*self._role_chunks(), self._chunk(delta)]

    # --- handlers ---

    def _on_created(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self._role_chunks()

    def _on_text(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._texts_seen.add(event.get("item_id"))
        delta = event.get("delta")
        return self._with_role({"content": delta}) if isinstance(delta, str) and delta else []

    def _on_refusal(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._texts_seen.add(event.get("item_id"))
        delta = event.get("delta")
        return self._with_role({"refusal": delta}) if isinstance(delta, str) and delta else []

    def _on_reasoning(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        delta = event.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        key = (event.get("item_id"), event.get("summary_index", event.get("content_index")))
        if self._reasoning_key is not None and key != self._reasoning_key:
            delta = _JOIN_MESSAGES + delta  # a new summary part reads as a new paragraph
        self._reasoning_key = key
        return self._with_role({"reasoning_content": delta})

    def _on_item_added(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        item = event.get("item")
        if not isinstance(item, Mapping) or item.get("type") != "function_call":
            return []
        _, chunks = self._start_call(item, event.get("output_index"))
        return chunks

    def _start_call(
        self, item: Mapping[str, Any], output_index: Any
    ) -> tuple[_StreamedCall, list[dict[str, Any]]]:
        """Number a new function call (Chat indexes tool calls 0, 1, …) and announce it."""
        call = _StreamedCall(index=self._call_count)
        self._call_count += 1
        self._calls[("item", item.get("id"))] = call
        self._calls[("output", output_index)] = call
        tool_call = _tool_call(item)
        tool_call["index"] = call.index
        tool_call["function"]["arguments"] = ""
        return call, self._with_role({"tool_calls": [tool_call]})

    def _call_for(self, item_id: Any, output_index: Any) -> _StreamedCall | None:
        # Argument events name the item by id and by position; either is enough.
        call = self._calls.get(("item", item_id)) if item_id is not None else None
        if call is None and output_index is not None:
            call = self._calls.get(("output", output_index))
        return call

    def _arguments_chunk(self, call: _StreamedCall, arguments: str) -> list[dict[str, Any]]:
        call.arguments_sent = True
        return [self._chunk({"tool_calls": [{"index": call.index, "function": {"arguments": arguments}}]})]

    def _on_arguments(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        call = self._call_for(event.get("item_id"), event.get("output_index"))
        delta = event.get("delta")
        if call is None or not isinstance(delta, str) or not delta:
            return []
        return self._arguments_chunk(call, delta)

    def _on_arguments_done(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        # Only for a stream that skipped the deltas: the done event then carries everything.
        call = self._call_for(event.get("item_id"), event.get("output_index"))
        arguments = event.get("arguments")
        if call is None or call.arguments_sent or not isinstance(arguments, str) or not arguments:
            return []
        return self._arguments_chunk(call, arguments)

    def _on_item_done(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        # Done items are authoritative (PROTOCOLS §1.4): emit whatever their deltas did not carry.
        item = event.get("item")
        if not isinstance(item, Mapping):
            return []
        kind = item.get("type")
        if kind == "message" and not self._texts_seen & {item.get("id"), None}:
            text = "".join(_text_of(item.get("content"), "output_text", "text"))
            return self._with_role({"content": text}) if text else []
        if kind != "function_call":
            return []
        chunks: list[dict[str, Any]] = []
        call = self._call_for(item.get("id"), event.get("output_index"))
        if call is None:
            call, chunks = self._start_call(item, event.get("output_index"))
        arguments = item.get("arguments")
        if not call.arguments_sent and isinstance(arguments, str) and arguments:
            chunks.extend(self._arguments_chunk(call, arguments))
        return chunks

    def _on_terminal(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._finished = True
        response = event.get("response")
        response = response if isinstance(response, Mapping) else {}
        if event.get("type") == "response.incomplete":
            response = dict(response, status="incomplete")
        chunks = self._role_chunks()
        chunks.append(self._chunk({}, _finish_reason(response, self._call_count > 0)))
        usage = _chat_usage(response.get("usage"))
        if self._include_usage and usage is not None:
            final = self._chunk({})
            final.update(choices=[], usage=usage)
            chunks.append(final)
        return chunks

    def _on_failed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._finished = True
        self._error = _chat_error(_field(event.get("response"), "error"))
        return []

    def _on_error(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._finished = True
        nested = event.get("error")
        self._error = _chat_error(nested if isinstance(nested, Mapping) else event)
        return []
