"""A Responses (hub) request as a Gemini ``generateContent`` request (the Gemini upstream side).

| Responses (hub) | Gemini |
| --- | --- |
| `instructions`, `system`/`developer` messages | `systemInstruction.parts[]`, in order (later ones too) |
| `user` / `assistant` messages | `contents[]`, role `user` / `model`; same-role neighbours merged |
| `input_text`, `output_text`, `refusal` | text parts |
| `input_image` data URL / URL | `inlineData {mimeType, data}` / `fileData {mimeType, fileUri}` |
| `input_file` data URL / `file_url` | `inlineData` / `fileData` |
| `function_call` / `custom_tool_call` | model part `functionCall {name, args, id: call_id}` |
| `function_call_output` / `custom_…_output` | user part `functionResponse {name, id, response: {output}}` |
| `reasoning` items | dropped (XLAT-2: another provider's state) |
| `function` / `custom` tools | `tools[0].functionDeclarations[]`; a custom tool takes one string `input` |
| `tool_choice` | `toolConfig.functionCallingConfig {mode AUTO/NONE/ANY, allowedFunctionNames}` |
| `max_output_tokens`, `temperature`, `top_p` | `generationConfig {maxOutputTokens, temperature, topP}` |
| hub `stop` | `generationConfig.stopSequences` |
| `reasoning.effort` | `generationConfig.thinkingConfig` (table below) |
| `text.format` json_schema / json_object | `responseMimeType: application/json` (+ `responseSchema`) |

A URL's ``mimeType`` comes from its extension (``image/jpeg`` when it names none). The images or
files of a tool output follow its ``functionResponse`` as ``inlineData``/``fileData`` parts; the
name of a ``functionResponse`` is the one of the call with the same ``call_id`` in the history.

Thinking: ``includeThoughts: true`` and ``thinkingBudget`` minimal 512, low 1024, medium 8192,
high 16384, xhigh 24576 tokens (all within every Gemini 2.5/3 model's range: Flash caps at 24576,
Pro needs at least 128). Effort ``none`` asks for no thoughts (``includeThoughts: false``) and sets no
budget: Gemini Pro models cannot turn thinking off and answer a budget of 0 with 400.

Gemini 3 models refuse a history whose function calls lack the ``thoughtSignature`` they issued;
the hub never carries signatures (XLAT-2), so the first ``functionCall`` part of each model turn
gets Google's documented placeholder ``skip_thought_signature_validator`` on models from Gemini 3
on (not on 1.x/2.x Gemini models nor the Claude and GPT-OSS models Antigravity serves). It is a
constant Google defines for replayed history, not anybody's signature.

Refused (``TranslationRefused``, XLAT-3, before any upstream call): ``previous_response_id``,
``conversation``, stored ``prompt`` templates, ``background``, server-tool items and tools,
uploaded file ids, audio input, more than 5 stop sequences. Dropped: ``store``, ``stream``,
``include``, ``parallel_tool_calls`` (Gemini has no switch), ``max_tool_calls``, ``top_logprobs``,
``text.verbosity``, ``reasoning.summary``, the cache/metadata fields and ``truncation``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sublane_protocols._translators import TranslationRefused
from sublane_protocols.gemini._schema import gemini_parameters, to_gemini_schema

SIGNATURE_PLACEHOLDER: Final = "skip_thought_signature_validator"
THINKING_BUDGETS: Final = {"minimal": 512, "low": 1024, "medium": 8192, "high": 16384, "xhigh": 24576}
MAX_STOP_SEQUENCES: Final = 5
_UNSUPPORTED: Final = "unsupported_for_provider"
_REFUSED_FIELDS: Final = {
    "previous_response_id": "'previous_response_id' needs server-side state this provider does not keep; "
    "send the whole conversation in 'input'.",
    "conversation": "Stored conversations are not available with this provider; send the whole conversation.",
    "prompt": "Stored prompt templates are not available with this provider.",
}
_TEXT_PARTS: Final = frozenset({"input_text", "output_text", "text", "summary_text"})
_IMAGE_TYPES: Final = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".heic": "image/heic",
    ".heif": "image/heif",
}
_DATA_URL: Final = re.compile(r"data:(?P<mime>[^;,]*)(?P<params>(;[^;,]*)*),(?P<data>.*)", re.DOTALL)
_GEMINI_MAJOR: Final = re.compile(r"gemini-(\d+)")


def refuse(message: str, param: str, *, unsupported: bool = False) -> TranslationRefused:
    return TranslationRefused(message, code=_UNSUPPORTED if unsupported else "invalid_request", param=param)


def needs_signature_placeholder(model: Any) -> bool:
    """Whether the model is a Gemini model from version 3 on (they check function call signatures)."""
    if not isinstance(model, str):
        return False
    name = model.lower().removeprefix("models/")
    if not name.startswith("gemini-"):
        return False
    major = _GEMINI_MAJOR.match(name)
    return major is None or int(major.group(1)) >= 3


# --------------------------------------------------------------------------------------------------
# contents
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Conversation:
    """The turns being built, and what the history said of each call id."""

    system: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    call_names: dict[str, str] = field(default_factory=dict)

    def add(self, role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if self.turns and self.turns[-1]["role"] == role:
            self.turns[-1]["parts"].extend(parts)
        else:
            self.turns.append({"role": role, "parts": list(parts)})


def _text(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise refuse("Expected a string.", param)
    return value


def _data_url(url: str, param: str) -> dict[str, Any]:
    match = _DATA_URL.fullmatch(url)
    if match is None or ";base64" not in match.group("params"):
        raise refuse("Inline data must be a base64 data URL (data:<type>;base64,…).", param)
    data = match.group("data")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise refuse("The data URL does not hold valid base64.", param) from None
    return {"inlineData": {"mimeType": match.group("mime") or "application/octet-stream", "data": data}}


def _extension_type(url: str, default: str) -> str:
    path = url.split("?", 1)[0].split("#", 1)[0].lower()
    if path.endswith(".pdf"):
        return "application/pdf"
    for extension, mime in _IMAGE_TYPES.items():
        if path.endswith(extension):
            return mime
    return default


def _url_part(url: str, default_type: str, param: str) -> dict[str, Any]:
    if url.startswith("data:"):
        return _data_url(url, param)
    if not re.match(r"(https?|gs)://", url):
        raise refuse("Expected a data URL or an http(s) URL.", param)
    return {"fileData": {"mimeType": _extension_type(url, default_type), "fileUri": url}}


def _content_part(part: Any, param: str) -> dict[str, Any] | None:
    """One Responses content part as a Gemini part (``None``: nothing to send)."""
    if isinstance(part, str):
        return {"text": part}
    if not isinstance(part, Mapping):
        raise refuse("Each content part must be an object.", param)
    kind = part.get("type")
    if not isinstance(kind, str):  # a list or an object would not even be looked up in a set
        raise refuse("Each content part needs a 'type' string.", f"{param}.type")
    if kind in _TEXT_PARTS:
        return {"text": _text(part.get("text"), f"{param}.text")}
    if kind == "refusal":
        return {"text": _text(part.get("refusal"), f"{param}.refusal")}
    if kind in ("input_image", "input_file") and part.get("file_id"):
        raise refuse(
            "Uploaded file ids are not available with this provider.", f"{param}.file_id", unsupported=True
        )
    if kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            raise refuse("'image_url' must be a data URL or an https URL.", f"{param}.image_url")
        return _url_part(url, "image/jpeg", f"{param}.image_url")
    if kind == "input_file":
        data = part.get("file_data")
        if isinstance(data, str) and data:
            if not data.startswith("data:"):
                filename = part.get("filename")
                mime = _extension_type(filename if isinstance(filename, str) else "", "application/pdf")
                data = f"data:{mime};base64,{data}"
            return _data_url(data, f"{param}.file_data")
        url = part.get("file_url")
        if isinstance(url, str) and url:
            return _url_part(url, "application/pdf", f"{param}.file_url")
        raise refuse("A file part needs 'file_data' (a base64 data URL) or 'file_url'.", param)
    if kind == "input_audio":
        raise refuse("Audio input is not supported by this provider.", f"{param}.type", unsupported=True)
    raise refuse(f"Unknown content part type {kind!r}.", f"{param}.type")


def _message(conversation: _Conversation, item: Mapping[str, Any], param: str) -> None:
    role = item.get("role")
    content = item.get("content")
    raw = [content] if isinstance(content, str) else content
    if not isinstance(raw, list):
        raise refuse("'content' must be a string or a list of content parts.", f"{param}.content")
    parts = [
        part
        for index, value in enumerate(raw)
        if (part := _content_part(value, f"{param}.content[{index}]")) is not None
    ]
    if role in ("system", "developer"):
        conversation.system.extend(part for part in parts if "text" in part)
    elif role == "user":
        conversation.add("user", parts)
    elif role == "assistant":
        conversation.add("model", parts)
    else:
        raise refuse("A message's role must be user, assistant, system or developer.", f"{param}.role")


def _call_id(item: Mapping[str, Any], param: str) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise refuse("'call_id' must be a non-empty string.", f"{param}.call_id")
    return call_id


def _function_call(conversation: _Conversation, item: Mapping[str, Any], param: str) -> None:
    call_id = _call_id(item, param)
    name = _text(item.get("name"), f"{param}.name")
    if item.get("type") == "custom_tool_call":
        args: Any = {"input": _text(item.get("input"), f"{param}.input")}
    else:
        arguments = item.get("arguments")
        text = arguments if isinstance(arguments, str) else ""
        try:
            args = json.loads(text) if text.strip() else {}
        except ValueError:
            raise refuse("'arguments' must be a JSON object.", f"{param}.arguments") from None
        if not isinstance(args, dict):
            raise refuse("'arguments' must be a JSON object.", f"{param}.arguments")
    conversation.call_names[call_id] = name
    conversation.add("model", [{"functionCall": {"name": name, "args": args, "id": call_id}}])


def _output_parts(output: Any, param: str) -> tuple[str, list[dict[str, Any]]]:
    """A tool output's text, and the images or files it holds (as extra parts)."""
    if isinstance(output, str):
        return output, []
    if not isinstance(output, list):
        raise refuse("'output' must be a string or a list of content parts.", param)
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    for index, value in enumerate(output):
        part = _content_part(value, f"{param}[{index}]")
        if part is None:
            continue
        if "text" in part:
            texts.append(part["text"])
        else:
            media.append(part)
    return "\n".join(texts), media


def _function_output(conversation: _Conversation, item: Mapping[str, Any], param: str) -> None:
    call_id = _call_id(item, param)
    name = conversation.call_names.get(call_id)
    if name is None:
        raise refuse(
            f"The tool output for {call_id!r} has no matching tool call earlier in 'input'.",
            f"{param}.call_id",
        )
    text, media = _output_parts(item.get("output"), f"{param}.output")
    response = {"functionResponse": {"name": name, "id": call_id, "response": {"output": text}}}
    conversation.add("user", [response, *media])


_SERVER_STATE_ITEMS: Final = frozenset({"compaction", "compaction_summary", "item_reference"})


def _input_items(conversation: _Conversation, value: Any) -> None:
    if isinstance(value, str):
        conversation.add("user", [{"text": value}])
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
            _message(conversation, item, param)
        elif kind in ("function_call", "custom_tool_call"):
            _function_call(conversation, item, param)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            _function_output(conversation, item, param)
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


def _mark_signatures(turns: list[dict[str, Any]]) -> None:
    for turn in turns:
        if turn["role"] != "model":
            continue
        for part in turn["parts"]:
            if "functionCall" in part:
                part["thoughtSignature"] = SIGNATURE_PLACEHOLDER
                break


# --------------------------------------------------------------------------------------------------
# tools, tool choice, generation settings
# --------------------------------------------------------------------------------------------------


def _custom_declaration(tool: Mapping[str, Any], name: str) -> dict[str, Any]:
    description = tool.get("description") if isinstance(tool.get("description"), str) else ""
    fmt = tool.get("format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "grammar" and isinstance(fmt.get("definition"), str):
        syntax = fmt.get("syntax") if isinstance(fmt.get("syntax"), str) else "grammar"
        description = (
            f"{description}\n\nThe input must follow this {syntax} grammar:\n{fmt['definition']}".strip()
        )
    declaration: dict[str, Any] = {
        "name": name,
        "parameters": {
            "type": "OBJECT",
            "properties": {
                "input": {"type": "STRING", "description": "The tool's whole input, as free text."}
            },
            "required": ["input"],
        },
    }
    if description:
        declaration["description"] = description
    return declaration


def _declarations(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise refuse("'tools' must be a list.", "tools")
    declarations: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
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
            declarations.append(_custom_declaration(tool, name))
            continue
        declaration: dict[str, Any] = {"name": name}
        if isinstance(tool.get("description"), str) and tool["description"]:
            declaration["description"] = tool["description"]
        parameters = gemini_parameters(tool.get("parameters"))
        if parameters is not None:
            declaration["parameters"] = parameters
        declarations.append(declaration)
    return declarations


def _tool_config(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    modes = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
    if isinstance(choice, str):
        if choice not in modes:
            raise refuse("'tool_choice' must be auto, none, required or a named tool.", "tool_choice")
        return {"functionCallingConfig": {"mode": modes[choice]}}
    if not isinstance(choice, Mapping):
        raise refuse("'tool_choice' must be a string or an object.", "tool_choice")
    kind = choice.get("type")
    if kind in ("function", "custom"):
        name = _text(choice.get("name"), "tool_choice.name")
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    if kind == "allowed_tools":
        tools = choice.get("tools")
        listed = tools if isinstance(tools, list) else []
        names = [
            tool["name"] for tool in listed if isinstance(tool, Mapping) and isinstance(tool.get("name"), str)
        ]
        if choice.get("mode") == "required":
            config: dict[str, Any] = {"mode": "ANY"}
            if names:
                config["allowedFunctionNames"] = names
            return {"functionCallingConfig": config}
        return {"functionCallingConfig": {"mode": "AUTO"}}
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


def _thinking(reasoning: Any) -> dict[str, Any] | None:
    if reasoning is None:
        return None
    if not isinstance(reasoning, Mapping):
        raise refuse("'reasoning' must be an object.", "reasoning")
    effort = reasoning.get("effort")
    if effort is None:
        return None
    if effort == "none":
        return {"includeThoughts": False}
    if effort not in THINKING_BUDGETS:
        raise refuse(
            "'reasoning.effort' must be none, minimal, low, medium, high or xhigh.", "reasoning.effort"
        )
    return {"includeThoughts": True, "thinkingBudget": THINKING_BUDGETS[effort]}


def _response_format(text: Any) -> dict[str, Any]:
    if text is None:
        return {}
    if not isinstance(text, Mapping):
        raise refuse("'text' must be an object.", "text")
    fmt = text.get("format")
    if fmt is None:
        return {}
    if not isinstance(fmt, Mapping):
        raise refuse("'text.format' must be an object.", "text.format")
    kind = fmt.get("type")
    if kind in (None, "text"):
        return {}
    if kind == "json_object":
        return {"responseMimeType": "application/json"}
    if kind == "json_schema":
        if not isinstance(fmt.get("schema"), Mapping):
            raise refuse("'text.format.schema' must be a JSON Schema object.", "text.format.schema")
        return {"responseMimeType": "application/json", "responseSchema": to_gemini_schema(fmt["schema"])}
    raise refuse(f"Unknown 'text.format.type' {kind!r}.", "text.format.type")


def _generation_config(body: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    limit = body.get("max_output_tokens")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise refuse("'max_output_tokens' must be a positive integer.", "max_output_tokens")
        config["maxOutputTokens"] = limit
    for source, target in (("temperature", "temperature"), ("top_p", "topP")):
        value = _number(body, source)
        if value is not None:
            config[target] = value
    stops = _stop(body.get("stop"))
    if stops:
        config["stopSequences"] = stops
    thinking = _thinking(body.get("reasoning"))
    if thinking is not None:
        config["thinkingConfig"] = thinking
    config.update(_response_format(body.get("text")))
    return config


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


def _conversation(body: Mapping[str, Any]) -> _Conversation:
    conversation = _Conversation()
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        conversation.system.append({"text": instructions})
    elif instructions is not None and not isinstance(instructions, str):
        raise refuse("'instructions' must be a string.", "instructions")
    _input_items(conversation, body.get("input"))
    return conversation


def gemini_request(body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
    """The Gemini ``generateContent`` body for a Responses body; raises ``TranslationRefused``.
    ``system_prelude``: a text the upstream requires first in ``systemInstruction`` (its dialect)."""
    if not isinstance(body, Mapping):
        raise refuse("The request body must be a JSON object.", "body")
    _refuse_server_state(body)
    conversation = _conversation(body)
    if not conversation.turns:
        raise refuse("'input' holds no user or assistant content to send.", "input")
    if needs_signature_placeholder(body.get("model")):
        _mark_signatures(conversation.turns)
    request: dict[str, Any] = {"contents": conversation.turns}
    system = conversation.system
    if system_prelude:
        first = system[0].get("text") if system else None
        if isinstance(first, str) and first.startswith(system_prelude):
            rest = first[len(system_prelude) :].lstrip()
            system = ([{**system[0], "text": rest}] if rest else []) + system[1:]
        system = [{"text": system_prelude}, *system]
    if system:
        request["systemInstruction"] = {"parts": system}
    declarations = _declarations(body.get("tools"))
    if declarations:
        request["tools"] = [{"functionDeclarations": declarations}]
        tool_config = _tool_config(body.get("tool_choice"))
        if tool_config is not None:
            request["toolConfig"] = tool_config
    config = _generation_config(body)
    if config:
        request["generationConfig"] = config
    return request


def gemini_count_request(body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
    """A ``countTokens`` body for a Responses body: ``{"contents": …}`` only.

    Gemini upstreams' count methods are not all known to take more than ``{"request": {"model",
    "contents"}}`` (what the Gemini CLI sends), so the system instruction and the tool declarations
    are counted as a leading user turn holding their text: the count is close, and never refused
    for a field the method may not know.
    """
    request = gemini_request(body, system_prelude=system_prelude)
    preamble: list[dict[str, Any]] = list(request.get("systemInstruction", {}).get("parts", []))
    if "tools" in request:
        preamble.append({"text": json.dumps(request["tools"], ensure_ascii=False, separators=(",", ":"))})
    contents = request["contents"]
    if preamble:
        contents = [{"role": "user", "parts": preamble}, *contents]
    return {"contents": contents}
