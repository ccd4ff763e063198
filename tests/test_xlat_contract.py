"""The translation contract (XLAT-1…5): every client protocol on every upstream, the same scenarios.

Twelve cells — OpenAI Responses, Chat Completions, Anthropic Messages and Gemini clients × Codex,
Claude and Antigravity upstreams, the three pass-through diagonals included — through one real
gateway on loopback against the real simulator. The client side is checked with each protocol's
official SDK over HTTP (``openai``, ``anthropic``, ``google-genai``); the upstream side from what
the simulator received. One gateway per module: its group holds one account per provider, and each
cell's model is one only that provider's catalogue lists, which pins the cell's upstream.
"""

from __future__ import annotations

import base64
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from gateway_pool import Pool, settings_for, store_catalogue

from sublane_core import Outcome, signals
from sublane_gateway.testing import running_gateway
from sublane_sim import Behaviour, Provider, RequestRecord, Simulator

genai = pytest.importorskip("google.genai", reason="google-genai is installed with sublane-sim[test]")
from google.genai import errors as genai_errors  # noqa: E402
from google.genai import types as genai_types  # noqa: E402

pytestmark = pytest.mark.e2e

CLIENTS = ("responses", "chat", "messages", "gemini")
PROVIDERS: tuple[Provider, ...] = ("codex", "claude", "antigravity", "gemini")
UPSTREAMS: tuple[str, ...] = PROVIDERS
#: A model only that provider's catalogue lists: it pins the cell's upstream.
MODELS = {
    "codex": "gpt-5-codex",
    "claude": "claude-haiku-4-5-20251001",
    "antigravity": "gemini-3-flash",
    "gemini": "gemini-2.5-flash",  # a metered Gemini API key (PAID-1)
}
RECORD_PROTOCOL = {
    "responses": "responses",
    "chat": "chat_completions",
    "messages": "messages",
    "gemini": "gemini",
}
#: The client protocols whose own provider an upstream is: those cells pass through untouched.
PASS_THROUGH = {
    ("responses", "codex"),
    ("messages", "claude"),
    ("gemini", "antigravity"),
    ("gemini", "gemini"),
}
#: The client's stop reason for a finished text answer, and for an answer that asks for tools.
STOP_TEXT = {"responses": "completed", "chat": "stop", "messages": "end_turn", "gemini": "STOP"}
STOP_TOOLS = {"responses": "completed", "chat": "tool_calls", "messages": "tool_use", "gemini": "STOP"}
#: How each simulated provider's reasoning signatures begin (Codex encrypted content, Claude
#: thinking signatures, Antigravity thought signatures, base64 on the wire).
SIGNATURE_PREFIX = {
    "codex": "gAAAAsim",
    "claude": "EqSim",
    "antigravity": "c2ltLXRob3VnaHQt",
    "gemini": base64.b64encode(b"sim-gemini-thought").decode(),  # the Gemini API's own (PAID-1)
}
#: A signature an earlier turn of the client's own provider issued (what a client replays).
EARLIER_SIGNATURE = {
    "responses": "gAAAAsimEarlierTurn0000",
    "messages": "EqSimEarlierTurn0000",
    "gemini": base64.b64encode(b"sim-thought-earlier-turn").decode(),
}

ANSWER = "Hello from the pool"
SYSTEM = "Answer in one short sentence."
TOOL_NAMES = ("read_file", "list_dir")
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
RECORD_WAIT_S = 10.0


@dataclass(frozen=True, slots=True)
class Cell:
    client: str
    upstream: str

    @property
    def id(self) -> str:
        return f"{self.client}-on-{self.upstream}"

    @property
    def model(self) -> str:
        return MODELS[self.upstream]

    @property
    def passes_through(self) -> bool:
        return (self.client, self.upstream) in PASS_THROUGH


CELLS = [Cell(client, upstream) for client in CLIENTS for upstream in UPSTREAMS]


# -- a conversation, in neutral terms; each driver renders it in its client's shape --------------


@dataclass(frozen=True, slots=True)
class User:
    text: str
    image_b64: str | None = None


@dataclass(frozen=True, slots=True)
class Assistant:
    text: str


@dataclass(frozen=True, slots=True)
class SignedEarlierTurn:
    """An earlier assistant turn whose reasoning carries the client's own provider's signature."""


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Answer:
    """What the client's SDK gave, in neutral terms; ``replay`` is its assistant turn as the
    client sends it back. ``ending``: ``clean`` (the protocol's normal end), ``error`` (its error
    ending) or ``none`` (the stream just stopped)."""

    text: str = ""
    stop: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    calls: list[Call] = field(default_factory=list)
    reasoning: str = ""
    signatures: list[str] = field(default_factory=list)
    replay: Any = None
    ending: str = "none"


@dataclass(frozen=True, slots=True)
class Replay:
    answer: Answer


@dataclass(frozen=True, slots=True)
class Results:
    calls: tuple[Call, ...]


Turn = User | Assistant | SignedEarlierTurn | Replay | Results


def result_of(call: Call) -> str:
    return f"result of {call.name}"


@dataclass(frozen=True, slots=True)
class Seen:
    """An error answer as the client's SDK raised it."""

    status: int
    retry_after: str | None
    code: str


class Driver(ABC):
    """One client protocol, spoken through its official SDK."""

    @abstractmethod
    def ask(
        self,
        model: str,
        turns: list[Turn],
        *,
        stream: bool,
        system: str | None = None,
        tools: bool = False,
        reasoning: bool = False,
    ) -> Answer: ...

    @abstractmethod
    def refused(self, model: str, *, stream: bool) -> Seen:
        """Ask once, expecting the SDK to raise its API error; what it saw."""

    @abstractmethod
    def close(self) -> None:
        """Release the SDK's connections."""


class ResponsesDriver(Driver):
    def __init__(self, url: str, key: str) -> None:
        self.sdk = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=30)

    def _input(self, turns: list[Turn]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for turn in turns:
            if isinstance(turn, User):
                content: list[dict[str, Any]] = [{"type": "input_text", "text": turn.text}]
                if turn.image_b64:
                    url = f"data:image/png;base64,{turn.image_b64}"
                    content.append({"type": "input_image", "image_url": url, "detail": "auto"})
                items.append({"type": "message", "role": "user", "content": content})
            elif isinstance(turn, Assistant):
                items.append(_responses_assistant(turn.text))
            elif isinstance(turn, SignedEarlierTurn):
                summary = [{"type": "summary_text", "text": "Earlier thought."}]
                items.append(
                    {"type": "reasoning", "id": "rs_earlier", "summary": summary,
                     "encrypted_content": EARLIER_SIGNATURE["responses"]}
                )  # fmt: skip
                items.append(_responses_assistant("Earlier answer."))
            elif isinstance(turn, Replay):
                items.extend(turn.answer.replay)
            else:
                items.extend(
                    {"type": "function_call_output", "call_id": call.id, "output": result_of(call)}
                    for call in turn.calls
                )
        return items

    def _options(
        self, model: str, turns: list[Turn], system: str | None, tools: bool, reasoning: bool
    ) -> Any:
        options: dict[str, Any] = {"model": model, "input": self._input(turns)}
        if system:
            options["instructions"] = system
        if tools:
            options["tools"] = [
                {"type": "function", "name": name, "description": f"{name} a path", "parameters": SCHEMA,
                 "strict": False}
                for name in TOOL_NAMES
            ]  # fmt: skip
        if reasoning:
            options["reasoning"] = {"effort": "medium", "summary": "auto"}
            options["include"] = ["reasoning.encrypted_content"]
        return options

    def ask(
        self,
        model: str,
        turns: list[Turn],
        *,
        stream: bool,
        system: str | None = None,
        tools: bool = False,
        reasoning: bool = False,
    ) -> Answer:
        options = self._options(model, turns, system, tools, reasoning)
        if not stream:
            return self._answer(self.sdk.responses.create(**options), Answer(ending="clean"))
        seen = Answer()
        final = None
        try:
            for event in self.sdk.responses.create(stream=True, **options):
                if event.type == "response.output_text.delta":
                    seen.text += event.delta
                elif event.type in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                    seen.reasoning += event.delta
                elif event.type in ("response.completed", "response.incomplete"):
                    final, seen.ending = event.response, "clean"
                elif event.type in ("response.failed", "error"):
                    seen.ending = "error"
        except openai.APIError:
            seen.ending = "error"
        if final is None:
            return seen
        streamed = seen.text
        answer = self._answer(final, seen)
        assert answer.text == streamed  # the deltas add up to the final output
        return answer

    def _answer(self, final: Any, answer: Answer) -> Answer:
        answer.text = final.output_text
        answer.stop = final.status
        if final.usage is not None:
            answer.input_tokens, answer.output_tokens = final.usage.input_tokens, final.usage.output_tokens
        reasoning = ""
        for item in final.output:
            if item.type == "function_call":
                answer.calls.append(Call(item.call_id, item.name, json.loads(item.arguments)))
            elif item.type == "reasoning":
                reasoning += "".join(part.text for part in item.summary)
                if item.encrypted_content:
                    answer.signatures.append(item.encrypted_content)
        answer.reasoning = answer.reasoning or reasoning
        answer.replay = [item.model_dump(exclude_none=True) for item in final.output]
        return answer

    def refused(self, model: str, *, stream: bool) -> Seen:
        options = self._options(model, [User("hi")], None, False, False)
        with pytest.raises(openai.APIStatusError) as raised:
            list(self.sdk.responses.create(stream=True, **options)) if stream else self.sdk.responses.create(
                **options
            )
        return _openai_seen(raised.value)

    def close(self) -> None:
        self.sdk.close()


def _responses_assistant(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def _openai_seen(error: openai.APIStatusError) -> Seen:
    assert isinstance(error.body, dict), error.body
    return Seen(error.status_code, error.response.headers.get("retry-after"), str(error.body.get("code")))


class ChatDriver(Driver):
    def __init__(self, url: str, key: str) -> None:
        self.sdk = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=30)

    def _messages(self, turns: list[Turn], system: str | None) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        for turn in turns:
            if isinstance(turn, User):
                content: Any = turn.text
                if turn.image_b64:
                    content = [
                        {"type": "text", "text": turn.text},
                        {
                            "type": "image_url",
                            "image_url": {"url": f"data:image/png;base64,{turn.image_b64}"},
                        },
                    ]
                messages.append({"role": "user", "content": content})
            elif isinstance(turn, Assistant):
                messages.append({"role": "assistant", "content": turn.text})
            elif isinstance(turn, SignedEarlierTurn):
                # Chat Completions has no field for signed reasoning: the turn is its text only.
                messages.append({"role": "assistant", "content": "Earlier answer."})
            elif isinstance(turn, Replay):
                messages.append(turn.answer.replay)
            else:
                messages.extend(
                    {"role": "tool", "tool_call_id": call.id, "content": result_of(call)}
                    for call in turn.calls
                )
        return messages

    def _options(
        self, model: str, turns: list[Turn], system: str | None, tools: bool, reasoning: bool
    ) -> Any:
        options: dict[str, Any] = {"model": model, "messages": self._messages(turns, system)}
        if tools:
            options["tools"] = [
                {"type": "function",
                 "function": {"name": name, "description": f"{name} a path", "parameters": SCHEMA}}
                for name in TOOL_NAMES
            ]  # fmt: skip
        if reasoning:
            options["reasoning_effort"] = "medium"
        return options

    def ask(
        self,
        model: str,
        turns: list[Turn],
        *,
        stream: bool,
        system: str | None = None,
        tools: bool = False,
        reasoning: bool = False,
    ) -> Answer:
        options = self._options(model, turns, system, tools, reasoning)
        answer = Answer()
        if not stream:
            completion = self.sdk.chat.completions.create(**options)
            choice = completion.choices[0]
            message = choice.message
            answer.text, answer.stop, answer.ending = message.content or "", choice.finish_reason, "clean"
            answer.reasoning = getattr(message, "reasoning_content", None) or ""
            answer.calls = [
                Call(call.id, call.function.name, json.loads(call.function.arguments))
                for call in message.tool_calls or []
                if call.type == "function"
            ]
            if completion.usage is not None:
                answer.input_tokens = completion.usage.prompt_tokens
                answer.output_tokens = completion.usage.completion_tokens
            answer.replay = _chat_replay(answer)
            return answer
        calls: dict[int, dict[str, str]] = {}
        try:
            for chunk in self.sdk.chat.completions.create(
                stream=True, stream_options={"include_usage": True}, **options
            ):
                if chunk.usage is not None:
                    answer.input_tokens = chunk.usage.prompt_tokens
                    answer.output_tokens = chunk.usage.completion_tokens
                for choice in chunk.choices:
                    delta = choice.delta
                    answer.text += delta.content or ""
                    answer.reasoning += getattr(delta, "reasoning_content", None) or ""
                    for piece in delta.tool_calls or []:
                        call = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] += piece.id or ""
                        if piece.function is not None:
                            call["name"] += piece.function.name or ""
                            call["arguments"] += piece.function.arguments or ""
                    if choice.finish_reason is not None:
                        answer.stop, answer.ending = choice.finish_reason, "clean"
        except openai.APIError:
            answer.ending = "error"
        answer.calls = [
            Call(call["id"], call["name"], json.loads(call["arguments"])) for _, call in sorted(calls.items())
        ]
        answer.replay = _chat_replay(answer)
        return answer

    def refused(self, model: str, *, stream: bool) -> Seen:
        options = self._options(model, [User("hi")], None, False, False)
        create = self.sdk.chat.completions.create
        with pytest.raises(openai.APIStatusError) as raised:
            list(create(stream=True, **options)) if stream else create(**options)
        return _openai_seen(raised.value)

    def close(self) -> None:
        self.sdk.close()


def _chat_replay(answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}
            for call in answer.calls
        ]  # fmt: skip
    return message


class MessagesDriver(Driver):
    def __init__(self, url: str, key: str) -> None:
        self.sdk = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0, timeout=30)

    def _messages(self, turns: list[Turn]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        for turn in turns:
            if isinstance(turn, User):
                blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}]
                if turn.image_b64:
                    source = {"type": "base64", "media_type": "image/png", "data": turn.image_b64}
                    blocks.append({"type": "image", "source": source})
                messages.append({"role": "user", "content": blocks})
            elif isinstance(turn, Assistant):
                messages.append({"role": "assistant", "content": turn.text})
            elif isinstance(turn, SignedEarlierTurn):
                thinking = {"type": "thinking", "thinking": "Earlier thought.",
                            "signature": EARLIER_SIGNATURE["messages"]}  # fmt: skip
                messages.append(
                    {"role": "assistant", "content": [thinking, {"type": "text", "text": "Earlier answer."}]}
                )
            elif isinstance(turn, Replay):
                messages.append({"role": "assistant", "content": turn.answer.replay})
            else:
                results = [
                    {"type": "tool_result", "tool_use_id": call.id, "content": result_of(call)}
                    for call in turn.calls
                ]
                messages.append({"role": "user", "content": results})
        return messages

    def _options(
        self, model: str, turns: list[Turn], system: str | None, tools: bool, reasoning: bool
    ) -> Any:
        options: dict[str, Any] = {"model": model, "max_tokens": 2048, "messages": self._messages(turns)}
        if system:
            options["system"] = system
        if tools:
            options["tools"] = [
                {"name": name, "description": f"{name} a path", "input_schema": SCHEMA} for name in TOOL_NAMES
            ]
        if reasoning:
            options["thinking"] = {"type": "enabled", "budget_tokens": 1024}
        return options

    def ask(
        self,
        model: str,
        turns: list[Turn],
        *,
        stream: bool,
        system: str | None = None,
        tools: bool = False,
        reasoning: bool = False,
    ) -> Answer:
        options = self._options(model, turns, system, tools, reasoning)
        if not stream:
            message = self.sdk.messages.create(**options)
            return self._answer(message.content, message.stop_reason, message.usage, Answer(ending="clean"))
        answer = Answer()
        blocks: dict[int, dict[str, Any]] = {}
        json_parts: dict[int, str] = {}
        stop = usage = None
        input_tokens = None
        try:
            for event in self.sdk.messages.create(stream=True, **options):
                if event.type == "message_start":
                    input_tokens = event.message.usage.input_tokens
                elif event.type == "content_block_start":
                    blocks[event.index] = event.content_block.model_dump(exclude_none=True)
                elif event.type == "content_block_delta":
                    block, delta = blocks[event.index], event.delta
                    if delta.type == "text_delta":
                        block["text"] = block.get("text", "") + delta.text
                    elif delta.type == "thinking_delta":
                        block["thinking"] = block.get("thinking", "") + delta.thinking
                    elif delta.type == "signature_delta":
                        block["signature"] = block.get("signature", "") + delta.signature
                    elif delta.type == "input_json_delta":
                        json_parts[event.index] = json_parts.get(event.index, "") + delta.partial_json
                elif event.type == "message_delta":
                    stop, usage = event.delta.stop_reason, event.usage
                elif event.type == "message_stop":
                    answer.ending = "clean"
        except anthropic.APIError:
            answer.ending = "error"
        for index, text in json_parts.items():
            blocks[index]["input"] = json.loads(text)
        self._answer([blocks[index] for index in sorted(blocks)], stop, usage, answer)
        answer.input_tokens = answer.input_tokens or input_tokens
        return answer

    @staticmethod
    def _answer(content: list[Any], stop: Any, usage: Any, answer: Answer) -> Answer:
        blocks = [
            block if isinstance(block, dict) else block.model_dump(exclude_none=True) for block in content
        ]
        for block in blocks:
            if block["type"] == "text":
                answer.text += block["text"]
            elif block["type"] == "thinking":
                answer.reasoning += block["thinking"]
                if block.get("signature"):
                    answer.signatures.append(block["signature"])
            elif block["type"] == "tool_use":
                answer.calls.append(Call(block["id"], block["name"], block["input"]))
        answer.stop = stop
        if usage is not None:
            answer.input_tokens = getattr(usage, "input_tokens", None)
            answer.output_tokens = usage.output_tokens
        answer.replay = [
            {key: value for key, value in block.items() if key not in ("citations",)} for block in blocks
        ]
        return answer

    def refused(self, model: str, *, stream: bool) -> Seen:
        options = self._options(model, [User("hi")], None, False, False)
        with pytest.raises(anthropic.APIStatusError) as raised:
            list(self.sdk.messages.create(stream=True, **options)) if stream else self.sdk.messages.create(
                **options
            )
        error = raised.value
        body = error.body
        assert isinstance(body, dict) and body["type"] == "error", body
        return Seen(error.status_code, error.response.headers.get("retry-after"), body["error"]["code"])

    def close(self) -> None:
        self.sdk.close()


class GeminiDriver(Driver):
    def __init__(self, url: str, key: str) -> None:
        self.sdk = genai.Client(api_key=key, http_options=genai_types.HttpOptions(base_url=url))

    def _contents(self, turns: list[Turn]) -> list[genai_types.Content]:
        contents: list[genai_types.Content] = []
        for turn in turns:
            if isinstance(turn, User):
                parts = [genai_types.Part(text=turn.text)]
                if turn.image_b64:
                    parts.append(
                        genai_types.Part.from_bytes(
                            data=base64.b64decode(turn.image_b64), mime_type="image/png"
                        )
                    )
                contents.append(genai_types.Content(role="user", parts=parts))
            elif isinstance(turn, Assistant):
                contents.append(genai_types.Content(role="model", parts=[genai_types.Part(text=turn.text)]))
            elif isinstance(turn, SignedEarlierTurn):
                signature = base64.b64decode(EARLIER_SIGNATURE["gemini"])
                thought = genai_types.Part(text="Earlier thought.", thought=True, thought_signature=signature)
                contents.append(
                    genai_types.Content(
                        role="model", parts=[thought, genai_types.Part(text="Earlier answer.")]
                    )
                )
            elif isinstance(turn, Replay):
                contents.append(turn.answer.replay)
            else:
                responses = [
                    genai_types.Part(
                        function_response=genai_types.FunctionResponse(
                            id=call.id, name=call.name, response={"result": result_of(call)}
                        )
                    )
                    for call in turn.calls
                ]
                contents.append(genai_types.Content(role="user", parts=responses))
        return contents

    def _config(self, system: str | None, tools: bool, reasoning: bool) -> genai_types.GenerateContentConfig:
        config = genai_types.GenerateContentConfig(system_instruction=system)
        if tools:
            declarations = [
                genai_types.FunctionDeclaration(
                    name=name, description=f"{name} a path", parameters_json_schema=SCHEMA
                )
                for name in TOOL_NAMES
            ]
            config.tools = [genai_types.Tool(function_declarations=declarations)]
            config.automatic_function_calling = genai_types.AutomaticFunctionCallingConfig(disable=True)
        if reasoning:
            config.thinking_config = genai_types.ThinkingConfig(include_thoughts=True, thinking_budget=1024)
        return config

    def ask(
        self,
        model: str,
        turns: list[Turn],
        *,
        stream: bool,
        system: str | None = None,
        tools: bool = False,
        reasoning: bool = False,
    ) -> Answer:
        contents: Any = self._contents(turns)
        config = self._config(system, tools, reasoning)
        answer = Answer()
        if not stream:
            response = self.sdk.models.generate_content(model=model, contents=contents, config=config)
            answer.ending = "clean"
            return self._answer([response], answer)
        chunks: list[genai_types.GenerateContentResponse] = []
        try:
            chunks.extend(
                self.sdk.models.generate_content_stream(model=model, contents=contents, config=config)
            )
        except genai_errors.APIError:
            answer.ending = "error"
        self._answer(chunks, answer)
        return answer

    @staticmethod
    def _answer(chunks: list[genai_types.GenerateContentResponse], answer: Answer) -> Answer:
        thought = genai_types.Part(text="", thought=True)
        text = genai_types.Part(text="")
        calls: list[genai_types.Part] = []
        for chunk in chunks:
            if chunk.usage_metadata is not None:
                answer.input_tokens = chunk.usage_metadata.prompt_token_count
                answer.output_tokens = chunk.usage_metadata.candidates_token_count
            for candidate in chunk.candidates or []:
                if candidate.finish_reason is not None:
                    answer.stop = candidate.finish_reason.value
                    if answer.ending == "none":
                        answer.ending = "clean"
                for part in candidate.content.parts or [] if candidate.content else []:
                    if part.function_call is not None:
                        call = part.function_call
                        calls.append(part)
                        answer.calls.append(Call(call.id or "", call.name or "", dict(call.args or {})))
                    elif part.thought:
                        thought.text = (thought.text or "") + (part.text or "")
                        if part.thought_signature:
                            thought.thought_signature = part.thought_signature
                    elif part.text:
                        text.text = (text.text or "") + part.text
        answer.text, answer.reasoning = text.text or "", thought.text or ""
        if thought.thought_signature:
            # as the SDK writes it back: URL-safe base64
            answer.signatures.append(base64.urlsafe_b64encode(thought.thought_signature).decode())
        parts = ([thought] if thought.text else []) + ([text] if text.text else []) + calls
        answer.replay = genai_types.Content(role="model", parts=parts)
        return answer

    def refused(self, model: str, *, stream: bool) -> Seen:
        config = self._config(None, False, False)
        models = self.sdk.models
        call = models.generate_content_stream if stream else models.generate_content
        with pytest.raises(genai_errors.APIError) as raised:
            list(call(model=model, contents="hi", config=config))
        error = raised.value
        headers = getattr(error.response, "headers", None) or {}
        details = error.details["error"]["details"] if isinstance(error.details, dict) else []
        reasons = [detail.get("reason") for detail in details if isinstance(detail, dict)]
        return Seen(error.code, headers.get("retry-after"), str(reasons[0] if reasons else None))

    def close(self) -> None:
        self.sdk.close()


DRIVERS: dict[str, Callable[[str, str], Driver]] = {
    "responses": ResponsesDriver,
    "chat": ChatDriver,
    "messages": MessagesDriver,
    "gemini": GeminiDriver,
}


# -- the gateway, once per module ------------------------------------------------------------------


@dataclass
class Contract:
    pool: Pool
    accounts: dict[str, int]  # provider → gateway account id
    sim_ids: dict[str, str]  # provider → simulator account id
    drivers: dict[str, Driver]


@pytest.fixture(scope="module")
def contract(sublane_sim_server: Simulator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Contract]:
    """One gateway whose default group holds one account per provider, and a driver per client."""
    sim = sublane_sim_server
    sim.reset()
    data_dir: Path = tmp_path_factory.mktemp("xlat-contract")
    with running_gateway(settings_for(sim, data_dir)) as gateway:
        admin = gateway.admin()
        key = admin.post("/api/users/1/keys", json={"name": "contract", "group_id": 1}).json()["secret"]
        pool = Pool(gateway, sim, admin, key, [], [])
        for provider in PROVIDERS:
            store_catalogue(gateway, [pool.add_account(provider, provider)], [MODELS[provider]])
        disconnect = signals.request_finished.connect(pool.finished.append, sender=pool.runtime)
        drivers = {client: DRIVERS[client](gateway.url, key) for client in CLIENTS}
        try:
            yield Contract(
                pool,
                dict(zip(UPSTREAMS, pool.account_ids, strict=True)),
                {account.provider: account.id for account in pool.sim_accounts},
                drivers,
            )
        finally:
            disconnect()
            for driver in drivers.values():
                driver.close()
            sim.reset()


@dataclass
class Run:
    """One test's view of the contract: its cell, its driver, and what happened since it began."""

    contract: Contract
    cell: Cell
    since_seq: int
    since_record: int

    @property
    def sim(self) -> Simulator:
        return self.contract.pool.sim

    @property
    def sim_account(self) -> str:
        return self.contract.sim_ids[self.cell.upstream]

    @property
    def driver(self) -> Driver:
        return self.contract.drivers[self.cell.client]

    def ask(self, turns: list[Turn], *, stream: bool, **options: Any) -> Answer:
        return self.driver.ask(self.cell.model, turns, stream=stream, **options)

    def script(self, *behaviours: Behaviour) -> None:
        self.sim.script(self.sim_account, *behaviours)

    def upstream(self) -> list[RequestRecord]:
        """The model requests the cell's upstream account received during this test."""
        return [
            record
            for record in self.sim.requests(account_id=self.sim_account)
            if record.seq > self.since_seq and record.model is not None
        ]

    def records(self, count: int) -> list[signals.RequestFinished]:
        """This test's gateway records, once ``count`` are written (XLAT-5 checked on each)."""
        finished = self.contract.pool.finished
        deadline = time.monotonic() + RECORD_WAIT_S
        while len(finished) - self.since_record < count:
            assert time.monotonic() < deadline, f"{len(finished) - self.since_record} of {count} records"
            time.sleep(0.01)
        records = finished[self.since_record :]
        assert len(records) == count, [(r.protocol, r.outcome, r.error_code) for r in records]
        for record in records:
            assert record.protocol == RECORD_PROTOCOL[self.cell.client]  # XLAT-5: the client's
            assert record.provider == self.cell.upstream  # XLAT-5: the account's
            assert record.account_id == self.contract.accounts[self.cell.upstream]
        return records


@pytest.fixture(params=CELLS, ids=lambda cell: cell.id)
def run(request: pytest.FixtureRequest, contract: Contract) -> Iterator[Run]:
    """A clean start for one test of one cell; scripts, cooldowns and failure streaks it left are cleared."""
    cell: Cell = request.param
    sim = contract.pool.sim
    for sim_id in contract.sim_ids.values():
        sim.set_default(sim_id, Behaviour.ok(text=ANSWER, deltas=4))
    log = sim.requests()
    yield Run(contract, cell, log[-1].seq if log else 0, len(contract.pool.finished))
    for sim_id in contract.sim_ids.values():
        sim.clear_script(sim_id)
    for account_id in contract.accounts.values():  # COOL-6: an upstream 429 cooled the account
        response = contract.pool.admin.post(f"/api/accounts/{account_id}/resume")
        assert response.status_code == 200, response.text
    leases, deadline = contract.pool.runtime.leases, time.monotonic() + RECORD_WAIT_S
    while leases.total_in_flight():  # a slot is released just after its record is sent
        assert time.monotonic() < deadline, "a slot was never released"
        time.sleep(0.01)


# -- the upstream side, read from what the simulator received -------------------------------------


def _texts(content: Any, kinds: tuple[str, ...] = ("text", "input_text", "output_text")) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if part.get("type") in kinds)


def _gemini_request(body: dict[str, Any]) -> dict[str, Any]:
    """The Gemini request in an upstream body: inside Antigravity's envelope, or the body itself."""
    inner = body.get("request")
    return inner if isinstance(inner, dict) else body


def upstream_history(provider: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """The conversation's (role, text) turns as the upstream got them, in order."""
    if provider == "codex":
        return [
            (item["role"], _texts(item.get("content")))
            for item in body["input"]
            if item.get("type", "message") == "message" and item["role"] in ("user", "assistant")
        ]
    if provider == "claude":
        return [(message["role"], _texts(message["content"])) for message in body["messages"]]
    return [
        ("assistant" if content["role"] == "model" else content["role"],
         "".join(part.get("text", "") for part in content["parts"] if not part.get("thought")))
        for content in _gemini_request(body)["contents"]
    ]  # fmt: skip


def upstream_system(provider: str, body: dict[str, Any]) -> str:
    if provider == "codex":
        developer = [
            _texts(item.get("content"))
            for item in body["input"]
            if item.get("type", "message") == "message" and item["role"] in ("system", "developer")
        ]
        return "\n".join([body.get("instructions") or "", *developer])
    if provider == "claude":
        return _texts(body.get("system"))
    instruction = _gemini_request(body).get("systemInstruction") or {}
    return "".join(part.get("text", "") for part in instruction.get("parts", []))


def upstream_tool_turns(provider: str, body: dict[str, Any]) -> list[tuple[list[str], list[str]]]:
    """Per turn of the history that holds tool calls or results, as the upstream got it: the
    ids of its calls and of its results (Codex: a run of ``function_call`` items, or of outputs)."""
    turns: list[tuple[list[str], list[str]]] = []
    if provider == "codex":
        previous = None
        for item in body["input"]:
            kind = item.get("type")
            if kind not in ("function_call", "function_call_output"):
                previous = None
                continue
            if kind != previous:
                turns.append(([], []))
            turns[-1][0 if kind == "function_call" else 1].append(item["call_id"])
            previous = kind
        return turns
    if provider == "claude":
        for message in body["messages"]:
            blocks = message["content"] if isinstance(message["content"], list) else []
            calls = [block["id"] for block in blocks if block["type"] == "tool_use"]
            results = [block["tool_use_id"] for block in blocks if block["type"] == "tool_result"]
            if calls or results:
                turns.append((calls, results))
        return turns
    for content in _gemini_request(body)["contents"]:
        parts = content["parts"]
        calls = [part["functionCall"]["id"] for part in parts if "functionCall" in part]
        results = [part["functionResponse"]["id"] for part in parts if "functionResponse" in part]
        if calls or results:
            turns.append((calls, results))
    return turns


def upstream_images(provider: str, body: dict[str, Any]) -> list[str]:
    """The inline images the upstream got, as base64 (each in the upstream's own image shape)."""
    if provider == "codex":
        return [
            part["image_url"].removeprefix("data:image/png;base64,")
            for item in body["input"]
            if item.get("type", "message") == "message" and isinstance(item.get("content"), list)
            for part in item["content"]
            if part.get("type") == "input_image" and part["image_url"].startswith("data:image/png;base64,")
        ]
    if provider == "claude":
        return [
            block["source"]["data"]
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block["type"] == "image" and block["source"]["type"] == "base64"
            and block["source"]["media_type"] == "image/png"
        ]  # fmt: skip
    # Google's JSON takes proto names in either spelling and bytes in either base64 alphabet
    # (google-genai sends URL-safe): a pass-through request keeps what the SDK wrote.
    blobs = [
        part.get("inlineData") or part["inline_data"]
        for content in _gemini_request(body)["contents"]
        for part in content["parts"]
        if "inlineData" in part or "inline_data" in part
    ]
    return [
        base64.b64encode(base64.urlsafe_b64decode(blob["data"].replace("+", "-").replace("/", "_"))).decode()
        for blob in blobs
        if (blob.get("mimeType") or blob.get("mime_type")) == "image/png"
    ]


# -- the scenarios ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_xlat_1_plain_text(run: Run, stream: bool) -> None:
    answer = run.ask([User("Say hi")], stream=stream)
    assert answer.ending == "clean"
    assert answer.text == ANSWER
    assert answer.stop == STOP_TEXT[run.cell.client]
    assert answer.input_tokens and answer.output_tokens
    (record,) = run.records(1)
    assert record.outcome == Outcome.SUCCESS and record.input_tokens and record.output_tokens
    if stream:
        assert record.first_token_ms is not None  # XLAT-5: measured on the translated stream
    assert len(run.upstream()) == 1


def test_xlat_2_multi_turn_history_reaches_the_upstream_in_its_shape(run: Run) -> None:
    turns: list[Turn] = [User("What is 2+2?"), Assistant("It is 4."), User("And 3+3?")]
    answer = run.ask(turns, stream=True, system=SYSTEM)
    assert answer.text == ANSWER and answer.ending == "clean"
    (request,) = run.upstream()
    provider = run.cell.upstream
    assert upstream_history(provider, request.body) == [
        ("user", "What is 2+2?"),
        ("assistant", "It is 4."),
        ("user", "And 3+3?"),
    ]
    assert SYSTEM in upstream_system(provider, request.body)
    run.records(1)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_xlat_2_two_parallel_tool_calls_keep_their_ids_across_turns(run: Run, stream: bool) -> None:
    run.script(Behaviour.ok(text="Looking.", deltas=2, tool_call=True, tool_calls=2))
    question = User("Read a.txt and list b/")
    first = run.ask([question], stream=stream, tools=True)
    assert first.ending == "clean" and first.stop == STOP_TOOLS[run.cell.client]
    assert [call.name for call in first.calls] == list(TOOL_NAMES)
    assert [call.arguments for call in first.calls] == [{"path": "sim"}] * 2
    ids = [call.id for call in first.calls]
    assert len(set(ids)) == 2 and all(ids)
    second = run.ask([question, Replay(first), Results(tuple(first.calls))], stream=stream, tools=True)
    assert second.text == ANSWER and second.stop == STOP_TEXT[run.cell.client]
    asked, answered = run.upstream()
    issued = asked.tool_call_ids
    assert ids == issued  # the client sees the upstream's ids
    # Both calls in one assistant turn, both results in the next, each with the upstream's own id.
    assert upstream_tool_turns(run.cell.upstream, answered.body) == [(issued, []), ([], issued)]
    records = run.records(2)
    assert all(record.outcome == Outcome.SUCCESS for record in records)


def test_xlat_2_an_inline_image_reaches_the_upstream_in_its_image_shape(run: Run) -> None:
    answer = run.ask([User("What is in this picture?", image_b64=PNG_B64)], stream=True)
    assert answer.text == ANSWER
    (request,) = run.upstream()
    assert upstream_images(run.cell.upstream, request.body) == [PNG_B64]
    run.records(1)


def test_xlat_2_reasoning_shows_in_client_events_and_signatures_stay_with_their_provider(run: Run) -> None:
    history: list[Turn] = [User("Think first: 2+2?")]
    if run.cell.client != "chat":
        history = [User("Earlier question"), SignedEarlierTurn(), *history]
    first = run.ask(history, stream=True, reasoning=True)
    assert first.ending == "clean" and first.text == ANSWER
    assert first.reasoning.strip()  # the upstream's thinking, in the client's own events
    own = SIGNATURE_PREFIX[run.cell.upstream]
    if run.cell.passes_through:
        assert first.signatures and all(sig.startswith(own) for sig in first.signatures)
    else:  # dropped on the way out (XLAT-2)
        assert first.signatures == []
    second = run.ask([*history, Replay(first), User("And 3+3?")], stream=True, reasoning=True)
    assert second.text == ANSWER
    asked, answered = run.upstream()
    sent = json.dumps(answered.body)
    earlier = EARLIER_SIGNATURE.get(run.cell.client)
    # passed through, the client's own earlier turn goes back as it came, whoever signed it
    foreign = sent.replace(earlier, "") if run.cell.passes_through and earlier else sent
    for provider, prefix in SIGNATURE_PREFIX.items():
        if provider != run.cell.upstream:
            assert prefix not in foreign, f"a {provider} signature reached {run.cell.upstream}"
    if run.cell.passes_through:  # the provider's own signatures go back to it, untouched
        assert earlier is not None and earlier in sent and all(sig in sent for sig in first.signatures)
    elif earlier is not None:
        assert earlier not in sent and earlier not in json.dumps(asked.body)
    run.records(2)


def test_xlat_5_a_cut_stream_ends_in_the_client_protocol_error_ending(run: Run) -> None:
    run.script(Behaviour.cut(after_deltas=2))
    answer = run.ask([User("Say hi")], stream=True)
    assert answer.text and answer.text != ANSWER  # some output, then the cut
    # Passed through too: the bytes stay untouched, and the protocol's error ending follows.
    assert answer.ending == "error"
    (record,) = run.records(1)
    assert record.outcome == Outcome.ERROR and record.error_code
    assert record.first_token_ms is not None


def test_xlat_5_a_cut_json_answer_is_an_error_in_the_client_shape(run: Run) -> None:
    run.script(Behaviour.cut(after_deltas=2))
    seen = run.driver.refused(run.cell.model, stream=False)
    assert seen.status == 502 and seen.code == "upstream_stream_error"
    (record,) = run.records(1)
    assert record.outcome == Outcome.ERROR


RATE_LIMITS = {
    "codex": Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="7"),
    "claude": Behaviour.error(429, error_code="rate_limit_error", retry_after="7"),
    "antigravity": Behaviour.error(429, error_code="RATE_LIMIT_EXCEEDED", retry_delay="7s"),
    "gemini": Behaviour.error(429, retry_delay="7s"),  # RetryInfo, no Retry-After header
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_xlat_1_an_upstream_429_is_answered_in_the_client_shape_with_retry_after(
    run: Run, stream: bool
) -> None:
    run.script(RATE_LIMITS[run.cell.upstream])
    seen = run.driver.refused(run.cell.model, stream=stream)
    assert seen.status == 429 and seen.retry_after == "7"
    assert seen.code in ("upstream_rate_limited", "model_rate_limited")
    (record,) = run.records(1)
    assert record.outcome == Outcome.ERROR and record.upstream_status == 429
    assert record.first_token_ms is None and len(run.upstream()) == 1  # RETRY-4: not replayed


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_xlat_1_an_upstream_5xx_is_answered_in_the_client_shape(run: Run, stream: bool) -> None:
    run.script(*[Behaviour.error(500)] * 3)  # RETRY-1: the first try and two retries
    seen = run.driver.refused(run.cell.model, stream=stream)
    assert seen.status == 502 and seen.code == "upstream_error"
    (record,) = run.records(1)
    assert record.outcome == Outcome.ERROR and record.upstream_status == 500
    assert record.first_token_ms is None and len(run.upstream()) == 3
