"""A Gemini client's ``generateContent`` request as a Responses (hub) request (the Gemini client side).

| Gemini | Responses (hub) |
| --- | --- |
| `systemInstruction` (an object with parts, or a string) | a leading `developer` message |
| `contents[]` role `user` / `model` text parts | `user` `input_text` / `assistant` `output_text` messages |
| `inlineData` image / pdf / `text/*` | `input_image` / `input_file` data URL / `input_text` (decoded) |
| `fileData` image / pdf | `input_image` URL / `input_file` `file_url` |
| `functionCall {name, args, id}` | `function_call {call_id, name, arguments}` |
| `functionResponse {name, response, id, parts}` | `function_call_output {call_id, output}` |
| `thought` parts, `thoughtSignature` | dropped (XLAT-2) |
| `functionDeclarations` (`parameters` or `parametersJsonSchema`) | function tools, `strict: false` |
| `toolConfig.functionCallingConfig` | `tool_choice` (ANY with several names: only those tools, `required`) |
| `maxOutputTokens`, `temperature`, `topP` | `max_output_tokens`, `temperature`, `top_p` |
| `stopSequences` | hub `stop` |
| `responseMimeType: application/json` + schema | `text.format` json_schema (`strict: false`) |
| `responseMimeType: application/json`, no schema | `text.format` json_object |
| `thinkingConfig` | `reasoning` (table below) |

The schema is ``responseJsonSchema`` as it is, or ``responseSchema`` turned into JSON Schema.

Call ids: a ``functionCall`` with an ``id`` keeps it (SubLane always gives the client one, and Gemini
clients echo parts as they got them). One without (an older history, another tool's) gets an id
made from its position and name, ``call_`` + a hash of ``<turn>:<part>:<name>``, so the same history
gives the same ids on every turn. A ``functionResponse`` takes the call id of its ``id`` when that
names a call; otherwise the first unanswered call of the same name in the closest model turn
before it, else that turn's first unanswered call.

Thinking: ``thinkingLevel`` MINIMAL/LOW/MEDIUM/HIGH/XHIGH is the effort of the same name;
``thinkingBudget`` 0 is ``none``, up to 512 ``minimal``, 1024 ``low``, 8192 ``medium``, 16384
``high``, more ``xhigh``, and -1 (dynamic) leaves the effort to the upstream. ``includeThoughts:
true`` also asks for reasoning summaries (``reasoning.summary: "auto"``); without it the model may
still reason but the stream shows no thought parts, as Gemini itself does (see ``_frames``).

Refused with ``unsupported_for_provider`` (XLAT-3): ``cachedContent`` (server state),
``candidateCount`` > 1, ``responseLogprobs``, output modalities other than text, ``speechConfig``,
server tools (``googleSearch``, ``codeExecution``, ``urlContext``, ``retrieval``…), audio and video
input, ``executableCode`` parts, ``text/x.enum`` answers. Dropped: ``safetySettings``, ``topK``,
``seed``, penalties, ``mediaResolution``, ``labels``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sublane_protocols._translators import TranslationRefused
from sublane_protocols.gemini._intent import generate_request
from sublane_protocols.gemini._schema import to_json_schema

_UNSUPPORTED: Final = "unsupported_for_provider"
_LEVELS: Final = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}
_BUDGETS: Final = ((512, "minimal"), (1024, "low"), (8192, "medium"), (16384, "high"))
_FUNCTION_TOOL_KEYS: Final = frozenset({"functionDeclarations", "function_declarations"})
_REFUSED_CONFIG: Final = {
    "speechConfig": "Spoken answers are not available with this provider.",
    "imageConfig": "Image generation is not available with this provider.",
}


def _refuse(message: str, param: str, *, unsupported: bool = False) -> TranslationRefused:
    return TranslationRefused(message, code=_UNSUPPORTED if unsupported else "invalid_request", param=param)


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """A field by its JSON (lowerCamel) name or its proto (snake_case) name, as Google's APIs accept."""
    if camel in obj:
        return obj[camel]
    snake = "".join("_" + char.lower() if char.isupper() else char for char in camel)
    return obj.get(snake)


def stable_call_id(turn: int, part: int, name: str) -> str:
    """The id of a ``functionCall`` that came without one: the same for the same place in the history."""
    digest = hashlib.sha256(f"{turn}:{part}:{name}".encode("utf-8", "surrogatepass")).hexdigest()
    return "call_" + digest[:24]


@dataclass(slots=True)
class _Call:
    call_id: str
    name: str
    answered: bool = False


@dataclass(slots=True)
class _History:
    """The hub items being built and the calls they hold, to pair responses with their calls."""

    items: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, _Call] = field(default_factory=dict)
    last_turn_calls: list[_Call] = field(default_factory=list)

    def call(self, call_id: str, name: str, arguments: str) -> None:
        call = _Call(call_id, name)
        self.calls[call_id] = call
        self.last_turn_calls.append(call)
        self.items.append({"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments})

    def answer(self, response_id: Any, name: Any, param: str) -> str:
        call = self.calls.get(response_id) if isinstance(response_id, str) else None
        if call is None:
            pending = [call for call in self.last_turn_calls if not call.answered]
            named = [call for call in pending if call.name == name]
            candidates = named or pending
            call = candidates[0] if candidates else None
        if call is None:
            raise _refuse("This functionResponse answers no functionCall of the model turn before it.", param)
        call.answered = True
        return call.call_id


# --------------------------------------------------------------------------------------------------
# parts
# --------------------------------------------------------------------------------------------------


def _inline(part: Mapping[str, Any], param: str) -> dict[str, Any]:
    """An ``inlineData`` part as an ``input_image``, ``input_file`` or ``input_text`` part."""
    blob = _get(part, "inlineData")
    if not isinstance(blob, Mapping):
        raise _refuse("'inlineData' must be an object.", param)
    mime = _get(blob, "mimeType")
    data = blob.get("data")
    if not isinstance(mime, str) or not isinstance(data, str):
        raise _refuse("'inlineData' needs 'mimeType' and base64 'data'.", param)
    mime = mime.lower()
    raw = _decoded(data, f"{param}.data")
    if mime.startswith("image/") or mime == "application/pdf":
        url = f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"  # the standard alphabet
        if mime == "application/pdf":
            name = blob.get("displayName") if isinstance(blob.get("displayName"), str) else "document.pdf"
            return {"type": "input_file", "file_data": url, "filename": name}
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if mime.startswith("text/") or mime in ("application/json", "application/xml"):
        return {"type": "input_text", "text": raw.decode("utf-8", "replace")}
    raise _refuse(f"Inline {mime} data is not supported by this provider.", param, unsupported=True)


def _decoded(data: str, param: str) -> bytes:
    """Google's ``bytes`` in JSON: standard or URL-safe base64, padded or not (the ``google-genai``
    SDK sends URL-safe); other upstreams take only the standard alphabet."""
    text = data.strip().replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _refuse("'inlineData.data' is not valid base64.", param) from None


def _file(part: Mapping[str, Any], param: str) -> dict[str, Any]:
    data = _get(part, "fileData")
    if not isinstance(data, Mapping) or not isinstance(_get(data, "fileUri"), str):
        raise _refuse("'fileData' needs a 'fileUri'.", param)
    uri: str = _get(data, "fileUri")
    mime = _get(data, "mimeType")
    mime = mime.lower() if isinstance(mime, str) else ""
    if mime == "application/pdf" or (not mime and uri.lower().endswith(".pdf")):
        return {"type": "input_file", "file_url": uri}
    if mime.startswith("image/") or not mime:
        return {"type": "input_image", "image_url": uri, "detail": "auto"}
    raise _refuse(f"Files of type {mime} are not supported by this provider.", param, unsupported=True)


def _response_output(response: Any, parts: Any, param: str) -> str | list[dict[str, Any]]:
    """A ``functionResponse``'s ``response`` (and multimodal ``parts``) as a tool output."""
    if isinstance(response, Mapping) and len(response) == 1:
        key, value = next(iter(response.items()))
        text = value if key in ("output", "result", "content") and isinstance(value, str) else None
    else:
        text = None
    if text is None:
        text = "" if response is None else json.dumps(response, ensure_ascii=False)
    if not isinstance(parts, list) or not parts:
        return text
    output: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
    for index, part in enumerate(parts):
        if isinstance(part, Mapping) and _get(part, "inlineData") is not None:
            output.append(_inline(part, f"{param}.parts[{index}]"))
        elif isinstance(part, Mapping) and _get(part, "fileData") is not None:
            output.append(_file(part, f"{param}.parts[{index}]"))
    return output


def _arguments(args: Any) -> str:
    return json.dumps(args if isinstance(args, Mapping) else {}, ensure_ascii=False)


def _turn(history: _History, content: Any, turn: int) -> None:
    where = f"contents[{turn}]"
    if not isinstance(content, Mapping) or not isinstance(content.get("parts"), list):
        raise _refuse("Each content must be an object with a 'parts' list.", where)
    role = content.get("role") or "user"
    if role not in ("user", "model", "function"):
        raise _refuse("A content's role must be 'user' or 'model'.", f"{where}.role")
    model = role == "model"
    if model:
        history.last_turn_calls = []
    message: list[dict[str, Any]] = []

    def flush() -> None:
        if message:
            history.items.append(
                {"type": "message", "role": "assistant" if model else "user", "content": list(message)}
            )
            message.clear()

    for index, part in enumerate(content["parts"]):
        param = f"{where}.parts[{index}]"
        if not isinstance(part, Mapping):
            raise _refuse("Each part must be an object.", param)
        if part.get("thought") is True:
            continue  # the client's own (Gemini) thoughts: never sent to another provider
        call = _get(part, "functionCall")
        response = _get(part, "functionResponse")
        if isinstance(call, Mapping):
            flush()
            name = call.get("name")
            if not isinstance(name, str) or not name:
                raise _refuse("A functionCall needs a 'name'.", f"{param}.functionCall.name")
            given = call.get("id")
            call_id = given if isinstance(given, str) and given else stable_call_id(turn, index, name)
            history.call(call_id, name, _arguments(call.get("args")))
        elif isinstance(response, Mapping):
            flush()
            call_id = history.answer(response.get("id"), response.get("name"), f"{param}.functionResponse")
            output = _response_output(
                response.get("response"), response.get("parts"), f"{param}.functionResponse"
            )
            history.items.append({"type": "function_call_output", "call_id": call_id, "output": output})
        elif isinstance(part.get("text"), str):
            if part["text"]:
                message.append({"type": "output_text" if model else "input_text", "text": part["text"]})
        elif _get(part, "inlineData") is not None:
            if not model:  # an image the model made has no place in a Responses assistant message
                message.append(_inline(part, param))
        elif _get(part, "fileData") is not None:
            if not model:
                message.append(_file(part, param))
        elif _get(part, "executableCode") is not None or _get(part, "codeExecutionResult") is not None:
            raise _refuse("Code execution parts are not supported by this provider.", param, unsupported=True)
    flush()


def _system(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        texts = [value]
    elif isinstance(value, Mapping) and isinstance(value.get("parts"), list):
        texts = [
            part["text"]
            for part in value["parts"]
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        ]
    else:
        raise _refuse("'systemInstruction' must be a Content object or a string.", "systemInstruction")
    texts = [text for text in texts if text]
    if not texts:
        return None
    return {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": text} for text in texts],
    }


# --------------------------------------------------------------------------------------------------
# tools and settings
# --------------------------------------------------------------------------------------------------


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _refuse("'tools' must be a list.", "tools")
    tools: list[dict[str, Any]] = []
    for index, tool in enumerate(value):
        if not isinstance(tool, Mapping):
            raise _refuse("Each tool must be an object.", f"tools[{index}]")
        other = [key for key, entry in tool.items() if key not in _FUNCTION_TOOL_KEYS and entry is not None]
        if other:
            raise _refuse(
                f"The tool {other[0]!r} is not available with this provider.", "tools", unsupported=True
            )
        declarations = _get(tool, "functionDeclarations") or []
        if not isinstance(declarations, list):
            raise _refuse("'functionDeclarations' must be a list.", f"tools[{index}].functionDeclarations")
        for number, declaration in enumerate(declarations):
            tools.append(_function_tool(declaration, f"tools[{index}].functionDeclarations[{number}]"))
    return tools


def _function_tool(declaration: Any, param: str) -> dict[str, Any]:
    if not isinstance(declaration, Mapping) or not isinstance(declaration.get("name"), str):
        raise _refuse("Each function declaration needs a 'name'.", param)
    json_schema = _get(declaration, "parametersJsonSchema")
    if isinstance(json_schema, Mapping):
        parameters: dict[str, Any] = dict(json_schema)
    elif isinstance(declaration.get("parameters"), Mapping):
        parameters = to_json_schema(declaration["parameters"])
    else:
        parameters = {"type": "object", "properties": {}}
    tool: dict[str, Any] = {
        "type": "function",
        "name": declaration["name"],
        "parameters": parameters,
        "strict": False,
    }
    if isinstance(declaration.get("description"), str):
        tool["description"] = declaration["description"]
    return tool


def _tool_choice(config: Any, tools: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """The ``tool_choice`` of a ``toolConfig``, and the tools it leaves callable."""
    calling = _get(config, "functionCallingConfig") if isinstance(config, Mapping) else None
    if not isinstance(calling, Mapping):
        return None, tools
    mode = calling.get("mode")
    mode = mode.upper() if isinstance(mode, str) else "AUTO"
    if mode == "NONE":
        return "none", tools
    if mode != "ANY":
        return "auto", tools  # AUTO, VALIDATED, MODE_UNSPECIFIED
    names = _get(calling, "allowedFunctionNames")
    names = [name for name in names if isinstance(name, str)] if isinstance(names, list) else []
    if len(names) == 1:
        return {"type": "function", "name": names[0]}, tools
    if names:
        return "required", [tool for tool in tools if tool["name"] in names]
    return "required", tools


def _effort(thinking: Mapping[str, Any]) -> str | None:
    level = _get(thinking, "thinkingLevel")
    if isinstance(level, str) and level.lower() in _LEVELS:
        return _LEVELS[level.lower()]
    budget = _get(thinking, "thinkingBudget")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        return None  # -1: dynamic, the upstream's own default
    if budget == 0:
        return "none"
    for limit, effort in _BUDGETS:
        if budget <= limit:
            return effort
    return "xhigh"


def _reasoning(config: Mapping[str, Any]) -> dict[str, Any] | None:
    thinking = _get(config, "thinkingConfig")
    if not isinstance(thinking, Mapping):
        return None
    reasoning: dict[str, Any] = {}
    effort = _effort(thinking)
    if effort is not None:
        reasoning["effort"] = effort
    if _get(thinking, "includeThoughts") is True and effort != "none":
        reasoning["summary"] = "auto"
    return reasoning or None


def _text_format(config: Mapping[str, Any]) -> dict[str, Any] | None:
    mime = _get(config, "responseMimeType")
    if not isinstance(mime, str) or mime.lower() in ("", "text/plain"):
        return None
    if mime.lower() != "application/json":
        raise _refuse(
            f"Answers of type {mime} are not available with this provider.",
            "generationConfig.responseMimeType",
            unsupported=True,
        )
    json_schema = _get(config, "responseJsonSchema")
    schema = _get(config, "responseSchema")
    if isinstance(json_schema, Mapping):
        return {"type": "json_schema", "name": "response", "schema": dict(json_schema), "strict": False}
    if isinstance(schema, Mapping):
        return {"type": "json_schema", "name": "response", "schema": to_json_schema(schema), "strict": False}
    return {"type": "json_object"}


def _number(config: Mapping[str, Any], key: str) -> int | float | None:
    value = _get(config, key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refuse(f"'{key}' must be a number.", f"generationConfig.{key}")
    return value


def _generation(config: Any, hub: dict[str, Any]) -> None:
    if config is None:
        return
    if not isinstance(config, Mapping):
        raise _refuse("'generationConfig' must be an object.", "generationConfig")
    count = _get(config, "candidateCount")
    if count is not None and count != 1:
        raise _refuse(
            "Only one candidate per request is available.",
            "generationConfig.candidateCount",
            unsupported=True,
        )
    if _get(config, "responseLogprobs") is True or _get(config, "logprobs") is not None:
        raise _refuse(
            "Log probabilities are not available with this provider.",
            "generationConfig.responseLogprobs",
            unsupported=True,
        )
    modalities = _get(config, "responseModalities")
    if isinstance(modalities, list) and any(str(kind).upper() != "TEXT" for kind in modalities):
        raise _refuse(
            "Only text answers are available.", "generationConfig.responseModalities", unsupported=True
        )
    for key, message in _REFUSED_CONFIG.items():
        if _get(config, key) is not None:
            raise _refuse(message, f"generationConfig.{key}", unsupported=True)
    limit = _get(config, "maxOutputTokens")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise _refuse("'maxOutputTokens' must be a positive integer.", "generationConfig.maxOutputTokens")
        hub["max_output_tokens"] = limit
    for source, target in (("temperature", "temperature"), ("topP", "top_p")):
        value = _number(config, source)
        if value is not None:
            hub[target] = value
    stops = _get(config, "stopSequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(stop, str) for stop in stops):
            raise _refuse("'stopSequences' must be a list of strings.", "generationConfig.stopSequences")
        if stops:
            hub["stop"] = list(stops)
    reasoning = _reasoning(config)
    if reasoning is not None:
        hub["reasoning"] = reasoning
    text_format = _text_format(config)
    if text_format is not None:
        hub["text"] = {"format": text_format}


# --------------------------------------------------------------------------------------------------
# the request
# --------------------------------------------------------------------------------------------------


def responses_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses (hub) body for a Gemini client's body; raises ``TranslationRefused``."""
    if not isinstance(body, Mapping):
        raise _refuse("The request body must be a JSON object.", "body")
    request = generate_request(body)
    if _get(request, "cachedContent"):
        raise _refuse(
            "Cached contents live on Google's servers and are not available with this provider.",
            "cachedContent",
            unsupported=True,
        )
    contents = request.get("contents")
    if not isinstance(contents, list) or not contents:
        raise _refuse("'contents' must be a non-empty list of Content objects.", "contents")
    history = _History()
    system = _system(_get(request, "systemInstruction"))
    if system is not None:
        history.items.append(system)
    for turn, content in enumerate(contents):
        _turn(history, content, turn)
    hub: dict[str, Any] = {"input": history.items, "store": False, "stream": True}
    model = body.get("model")
    if isinstance(model, str) and model:
        hub = {"model": model.removeprefix("models/"), **hub}
    tools = _tools(request.get("tools"))
    choice, tools = _tool_choice(_get(request, "toolConfig"), tools)
    if tools:
        hub["tools"] = tools
        hub["tool_choice"] = choice or "auto"
        hub["parallel_tool_calls"] = True
    _generation(_get(request, "generationConfig"), hub)
    return hub
