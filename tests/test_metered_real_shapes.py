"""Metered accounts (PAID-1, PAID-4) against an upstream that is *not* SubLane's simulator: a small
independent server written here from the public API documentation (OpenAI's Responses API
reference and Anthropic's Messages API reference, their streamed examples), refusing a request
field the API does not document as its SDK types it (``openai.types.responses.ResponseCreateParams``,
``anthropic.types.MessageCreateParams``), as the real APIs answer 400 to unknown parameters.

Each test runs one real gateway against that server and a real client end to end."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import message_count_tokens_params, message_create_params
from gateway_pool import Pool
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sublane_gateway.testing import serve_in_thread

OPENAI_KEY = "sk-proj-RealShapeKey0123456789abcdefABCDEF"
ANTHROPIC_KEY = "sk-ant-api03-RealShapeKey0123456789abcdefABCDEF-xyzAA"

OPENAI_FIELDS = frozenset(response_create_params.ResponseCreateParamsBase.__annotations__) | {"stream"}
ANTHROPIC_FIELDS = frozenset(message_create_params.MessageCreateParamsBase.__annotations__) | {
    "stream",
    "temperature",
    "top_p",
    "top_k",
}

COUNT_FIELDS = frozenset(message_count_tokens_params.MessageCountTokensParams.__annotations__)


@dataclass
class FakeApi:
    """What the fake upstream saw: each request's path, headers and JSON body."""

    url: str = ""
    seen: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    #: Answers to give before serving, first first: ``(status, body, headers)``.
    refusals: list[tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)

    def bodies(self, path: str) -> list[Any]:
        return [body for seen_path, _headers, body in self.seen if seen_path == path]


def _sse(events: list[tuple[str, dict[str, Any]]]) -> AsyncIterator[bytes]:
    async def frames() -> AsyncIterator[bytes]:
        for name, data in events:
            yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    return frames()


# -- OpenAI, as https://platform.openai.com/docs/api-reference/responses shows it --------------------

OPENAI_MODELS: dict[str, Any] = {
    "object": "list",
    "data": [
        {"id": "gpt-4.1", "object": "model", "created": 1744316542, "owned_by": "system"},
        {"id": "gpt-5", "object": "model", "created": 1754425777, "owned_by": "system"},
    ],
}


def _openai_response(model: str, text: str, status: str) -> dict[str, Any]:
    message = {
        "type": "message",
        "id": "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c7b3bf27",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}] if text else [],
    }
    return {
        "id": "resp_67ccd3a9da748190baa7f1570fe91ac604becb25c7b3bf27",
        "object": "response",
        "created_at": 1741476777,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": [message] if status == "completed" else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 328,
            "input_tokens_details": {"cached_tokens": 128},
            "output_tokens": 52,
            "output_tokens_details": {"reasoning_tokens": 12},
            "total_tokens": 380,
        }
        if status == "completed"
        else None,
        "user": None,
        "metadata": {},
    }


def _openai_stream(model: str, text: str) -> list[tuple[str, dict[str, Any]]]:
    created = _openai_response(model, "", "in_progress")
    item = {
        "id": "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c7b3bf27",
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    part = {"type": "output_text", "text": "", "annotations": []}
    done_part = {**part, "text": text}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": created}),
        ("response.in_progress", {"type": "response.in_progress", "response": created}),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
        (
            "response.content_part.added",
            {
                "type": "response.content_part.added",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "part": part,
            },
        ),
    ]
    for word in text.split(" "):
        delta = word if not events[-1][0].endswith("delta") else " " + word
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": delta,
                },
            )
        )
    events += [
        (
            "response.output_text.done",
            {
                "type": "response.output_text.done",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "text": text,
            },
        ),
        (
            "response.content_part.done",
            {
                "type": "response.content_part.done",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "part": done_part,
            },
        ),
        (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {**item, "status": "completed", "content": [done_part]},
            },
        ),
        (
            "response.completed",
            {"type": "response.completed", "response": _openai_response(model, text, "completed")},
        ),
    ]
    return [(name, {**data, "sequence_number": index}) for index, (name, data) in enumerate(events)]


def _openai_error(
    status: int, message: str, kind: str, code: str | None, param: str | None = None
) -> Response:
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}, status_code=status
    )


def openai_app(api: FakeApi, text: str) -> Starlette:
    def refused(request: Request) -> Response | None:
        if request.headers.get("authorization") != f"Bearer {OPENAI_KEY}":
            shown = request.headers.get("authorization", "")[7:]
            return _openai_error(
                401,
                f"Incorrect API key provided: {shown[:8]}{'*' * 20}{shown[-4:]}. You can find your key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            )
        return None

    async def models(request: Request) -> Response:
        api.seen.append((request.url.path, dict(request.headers), None))
        return refused(request) or JSONResponse(OPENAI_MODELS)

    async def responses(request: Request) -> Response:
        body = await request.json()
        api.seen.append((request.url.path, dict(request.headers), body))
        if (answer := refused(request)) is not None:
            return answer
        if api.refusals:
            status, payload, refusal_headers = api.refusals.pop(0)
            return JSONResponse(payload, status_code=status, headers=refusal_headers)
        for name in body:
            if name not in OPENAI_FIELDS:
                return _openai_error(
                    400, f"Unknown parameter: '{name}'.", "invalid_request_error", "unknown_parameter", name
                )
        cap = body.get("max_output_tokens")
        if isinstance(cap, int) and cap < 16:
            return _openai_error(
                400,
                "Invalid 'max_output_tokens': integer below minimum value. "
                f"Expected a value >= 16, but got {cap} instead.",
                "invalid_request_error",
                "integer_below_min_value",
                "max_output_tokens",
            )
        if body.get("model") not in {model["id"] for model in OPENAI_MODELS["data"]}:
            return _openai_error(
                404,
                f"The model `{body.get('model')}` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            )
        headers = {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "120ms",
            "x-ratelimit-limit-tokens": "30000",
            "x-ratelimit-remaining-tokens": "29600",
            "x-ratelimit-reset-tokens": "800ms",
            "x-request-id": "req_0123456789abcdef",
        }
        if body.get("stream"):
            return StreamingResponse(
                _sse(_openai_stream(body["model"], text)), media_type="text/event-stream", headers=headers
            )
        return JSONResponse(_openai_response(body["model"], text, "completed"), headers=headers)

    return Starlette(
        routes=[Route("/v1/models", models), Route("/v1/responses", responses, methods=["POST"])]
    )


# -- Anthropic, as https://docs.anthropic.com/en/api/messages and .../messages-streaming show it ---

ANTHROPIC_MODELS = {
    "data": [
        {
            "type": "model",
            "id": "claude-sonnet-4-6",
            "display_name": "Claude Sonnet 4.6",
            "created_at": "2025-09-29T00:00:00Z",
        }
    ],
    "has_more": False,
    "first_id": "claude-sonnet-4-6",
    "last_id": "claude-sonnet-4-6",
}

ANTHROPIC_USAGE = {
    "input_tokens": 25,
    "cache_creation_input_tokens": 100,
    "cache_read_input_tokens": 300,
    "output_tokens": 15,
}


def _anthropic_stream(model: str, text: str) -> list[tuple[str, dict[str, Any]]]:
    message: dict[str, Any] = {
        "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**ANTHROPIC_USAGE, "output_tokens": 1},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        ("ping", {"type": "ping"}),
    ]
    for index, word in enumerate(text.split(" ")):
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": word if index == 0 else " " + word},
                },
            )
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 15},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _anthropic_error(status: int, kind: str, message: str) -> Response:
    return JSONResponse(
        {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
        },
        status_code=status,
    )


def anthropic_app(api: FakeApi, text: str) -> Starlette:
    def refused(request: Request) -> Response | None:
        if request.headers.get("x-api-key") != ANTHROPIC_KEY:
            return _anthropic_error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return _anthropic_error(400, "invalid_request_error", "anthropic-version: header is required")
        return None

    async def models(request: Request) -> Response:
        api.seen.append((request.url.path, dict(request.headers), None))
        return refused(request) or JSONResponse(ANTHROPIC_MODELS)

    async def messages(request: Request) -> Response:
        body = await request.json()
        api.seen.append((request.url.path, dict(request.headers), body))
        if (answer := refused(request)) is not None:
            return answer
        if api.refusals:
            status, payload, refusal_headers = api.refusals.pop(0)
            return JSONResponse(payload, status_code=status, headers=refusal_headers)
        for name in body:
            if name not in ANTHROPIC_FIELDS:
                return _anthropic_error(
                    400, "invalid_request_error", f"{name}: Extra inputs are not permitted"
                )
        if "max_tokens" not in body:
            return _anthropic_error(400, "invalid_request_error", "max_tokens: Field required")
        model = body["model"]
        if model not in ("claude-sonnet-4-6",):
            return _anthropic_error(404, "not_found_error", f"model: {model}")
        headers = {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "49",
            "anthropic-ratelimit-requests-reset": "2026-12-04T23:59:00Z",
            "request-id": "req_011CSHoEeqs5C35K2UUqR7Fy",
        }
        if body.get("stream"):
            return StreamingResponse(
                _sse(_anthropic_stream(model, text)), media_type="text/event-stream", headers=headers
            )
        return JSONResponse(
            {
                "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": ANTHROPIC_USAGE,
            },
            headers=headers,
        )

    async def count_tokens(request: Request) -> Response:
        body = await request.json()
        api.seen.append((request.url.path, dict(request.headers), body))
        if (answer := refused(request)) is not None:
            return answer
        for name in body:
            if name not in COUNT_FIELDS:
                return _anthropic_error(
                    400, "invalid_request_error", f"{name}: Extra inputs are not permitted"
                )
        return JSONResponse({"input_tokens": 2095})

    return Starlette(
        routes=[
            Route("/v1/models", models),
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
        ]
    )


@contextmanager
def fake_api(build: Callable[[FakeApi, str], Starlette], text: str) -> Iterator[FakeApi]:
    api = FakeApi()
    with serve_in_thread(build(api, text)) as url:
        api.url = url
        yield api


def _import(pool: Pool, provider: str, credentials: dict[str, Any]) -> Any:
    body = {"provider": provider, "name": f"{provider}-real", "credentials": credentials, "group_ids": [1]}
    return pool.admin.post("/api/accounts/import", json=body)


ANSWER = "Hi there from the real shape"

#: A Responses body as the Codex CLI writes one (its fields, not its sizes), to translate.
CODEX_LIKE = {
    "instructions": "You are a coding agent.",
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]}],
    "tools": [
        {
            "type": "function",
            "name": "shell",
            "description": "Run a command.",
            "strict": False,
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "reasoning": {"effort": "high", "summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "01a2283c-fe10-78d1-9925-517e047c31b5",
    "text": {"verbosity": "medium"},
    "safety_identifier": "member-1",
    "service_tier": "auto",
    "metadata": {"session": "s-1"},
    "max_output_tokens": 4000,
}


def _codex_like(pool: Pool, model: str) -> list[str]:
    """A Codex-shaped Responses request through the hub; the event names answered."""
    with (
        pool.client() as client,
        client.stream("POST", "/v1/responses", json={**CODEX_LIKE, "model": model}) as answer,
    ):
        assert answer.status_code == 200, answer.read()
        return [line[7:] for line in answer.iter_lines() if line.startswith("event: ")]


def test_paid_1_openai_key_serves_clients_against_a_documented_openai_api(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with fake_api(openai_app, ANSWER) as api:
        pool = make_pool(accounts=0, provider="openai")
        wrong = _import(
            pool, "openai", {"api_key": "sk-proj-WrongKey987654321zzzz", "base_url": api.url + "/v1"}
        )
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_credentials"
        imported = _import(pool, "openai", {"api_key": OPENAI_KEY, "base_url": api.url + "/v1/"})
        assert imported.status_code == 201, imported.text
        pool.settle()
        client = openai.OpenAI(base_url=pool.gateway.url + "/v1", api_key=pool.key, max_retries=0, timeout=30)
        with client:
            streamed = client.responses.create(model="gpt-4.1", input="say hi", stream=True)
            events = [event.type for event in streamed]
            whole = client.responses.create(model="gpt-4.1", input="say hi")
            chat = client.chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "say hi"}], max_tokens=1
            )
            chat_stream = client.chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "say hi"}], stream=True
            )
            chat_text = "".join(
                chunk.choices[0].delta.content or "" for chunk in chat_stream if chunk.choices
            )
        with (
            anthropic.Anthropic(
                base_url=pool.gateway.url, api_key=pool.key, max_retries=0, timeout=30
            ) as claude,
            claude.messages.stream(
                model="gpt-4.1", max_tokens=8, messages=[{"role": "user", "content": "say hi"}]
            ) as stream,
        ):
            messages_text = "".join(stream.text_stream)
        assert messages_text == ANSWER
        assert events[0] == "response.created" and events[-1] == "response.completed"
        assert whole.output_text == ANSWER
        assert chat.choices[0].message.content == ANSWER and chat_text == ANSWER
        assert chat.usage is not None and chat.usage.prompt_tokens == 328
        for body in api.bodies("/v1/responses"):
            assert set(body) <= OPENAI_FIELDS and body["model"] == "gpt-4.1"
        records = [record for record in pool.finished if record.account_id == imported.json()["id"]]
        assert len(records) == 5 and all(r.input_tokens == 328 and r.cached_tokens == 128 for r in records)
        texts = [pool.admin.get(path).text for path in ("/api/accounts", "/api/requests", "/api/audit")]
        for text in [*texts, caplog.text]:
            assert OPENAI_KEY not in text and OPENAI_KEY[8:30] not in text


def test_paid_1_anthropic_key_serves_clients_against_a_documented_anthropic_api(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with fake_api(anthropic_app, ANSWER) as api:
        pool = make_pool(accounts=0, provider="anthropic")
        imported = _import(pool, "anthropic", {"api_key": ANTHROPIC_KEY, "base_url": api.url})
        assert imported.status_code == 201, imported.text
        pool.settle()
        with anthropic.Anthropic(
            base_url=pool.gateway.url, api_key=pool.key, max_retries=0, timeout=30
        ) as client:
            with client.messages.stream(
                model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "say hi"}]
            ) as stream:
                text = "".join(stream.text_stream)
            whole = client.messages.create(
                model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "say hi"}]
            )
        chat = openai.OpenAI(base_url=pool.gateway.url + "/v1", api_key=pool.key, max_retries=0, timeout=30)
        with chat:
            answered = chat.chat.completions.create(
                model="claude-sonnet-4-6", messages=[{"role": "user", "content": "say hi"}]
            )
            streamed = chat.chat.completions.create(
                model="claude-sonnet-4-6", messages=[{"role": "user", "content": "say hi"}], stream=True
            )
            chat_text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
            responses_stream = chat.responses.create(model="claude-sonnet-4-6", input="say hi", stream=True)
            response_events = [event.type for event in responses_stream]
        assert response_events[-1] == "response.completed"
        assert _codex_like(pool, "claude-sonnet-4-6")[-1] == "response.completed"
        with anthropic.Anthropic(
            base_url=pool.gateway.url, api_key=pool.key, max_retries=0, timeout=30
        ) as client:
            counted = client.messages.count_tokens(
                model="claude-sonnet-4-6", messages=[{"role": "user", "content": "say hi"}]
            )
        assert counted.input_tokens == 2095
        from google import genai
        from google.genai import types

        gemini = genai.Client(api_key=pool.key, http_options=types.HttpOptions(base_url=pool.gateway.url))
        assert gemini.models.count_tokens(model="claude-sonnet-4-6", contents="say hi").total_tokens == 2095
        assert text == ANSWER and whole.content[0].type == "text" and whole.content[0].text == ANSWER
        assert answered.choices[0].message.content == ANSWER and chat_text == ANSWER
        for body in api.bodies("/v1/messages"):
            assert set(body) <= ANTHROPIC_FIELDS
        records = [
            record
            for record in pool.finished
            if record.account_id == imported.json()["id"] and record.operation != "count_tokens"
        ]
        assert len(records) == 6
        assert all(
            r.input_tokens == 425 and r.cached_tokens == 300 and r.cache_write_tokens == 100 for r in records
        )
        texts = [pool.admin.get(path).text for path in ("/api/accounts", "/api/requests", "/api/audit")]
        for logged in [*texts, caplog.text]:
            assert ANTHROPIC_KEY not in logged


WEIRD_CREDENTIALS: list[tuple[str, Any]] = [
    ("openai", ["sk-proj-not-an-object"]),
    ("anthropic", ["sk-ant-not-an-object"]),
    ("gemini", "AIza-a-string"),
    ("openai-compatible", 42),
    ("openai", {"api_key": "sk-" + "k" * 100_000}),
    ("openai", {"api_key": 1234567890}),
    ("openai", {"api_key": "sk-ключ-не-ascii-123"}),
    ("openai", {"api_key": "sk-abc\x00def\x7f"}),
    ("anthropic", {"api_key": "sk-ant-api03-x", "base_url": "http://a b.example/v1"}),
    ("anthropic", {"api_key": "sk-ant-api03-x", "base_url": "http://[::1/"}),
    ("anthropic", {"api_key": "sk-ant-api03-x", "base_url": "http://127.0.0.1:99999"}),
    ("openai", {"api_key": "sk-x", "base_url": "http://exa\u00a0mple.com/v1"}),
    ("openai", {"api_key": "sk-x", "base_url": ["http://127.0.0.1/v1"]}),
    ("openai-compatible", {"api_key": "k", "base_url": "http://127.0.0.1:9/v1", "models": [1, 2]}),
    ("openai-compatible", {"api_key": "k", "base_url": "http://127.0.0.1:9/v1", "models": "qwen"}),
    ("openai-compatible", {"api_key": "k", "base_url": "http://127.0.0.1:9/v1", "models": [{"id": "q"}]}),
    ("openai-compatible", {"api_key": "k", "base_url": "http://127.0.0.1:9/v1", "models": ["x" * 300]}),
    ("openai-compatible", {"api_key": "k", "models": ["qwen"]}),
]


CLEAR_CODES = ("invalid_credentials", "invalid_credentials_file", "invalid_request")


def test_paid_1_weird_metered_credentials_are_refused_with_a_clear_400(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=0, provider="openai", openai_base_url="http://127.0.0.1:9/v1")
    wrong = []
    for provider, credentials in WEIRD_CREDENTIALS:
        answer = _import(pool, provider, credentials)
        if answer.status_code != 400 or answer.json()["error"]["code"] not in CLEAR_CODES:
            wrong.append((provider, str(credentials)[:80], answer.status_code, answer.text[:300]))
    assert wrong == []
    assert pool.admin.get("/api/accounts").json()["items"] == []


# -- an OpenAI-compatible server, as OpenAI's Chat Completions reference shows a streamed answer ---

CHAT_FIELDS = frozenset(completion_create_params.CompletionCreateParamsBase.__annotations__) | {"stream"}
COMPAT_KEY = "local-server-token-0123456789"
CHAT_USAGE = {
    "prompt_tokens": 19,
    "completion_tokens": 10,
    "total_tokens": 29,
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}


def _chat_chunks(model: str, text: str, usage: bool) -> AsyncIterator[bytes]:
    base = {"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190, "model": model}
    chunks: list[dict[str, Any]] = [
        {
            **base,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
        }
    ]
    for index, word in enumerate(text.split(" ")):
        content = word if index == 0 else " " + word
        chunks.append(
            {**base, "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}
        )
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage:
        chunks.append({**base, "choices": [], "usage": CHAT_USAGE})

    async def frames() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    return frames()


def compat_app(api: FakeApi, text: str) -> Starlette:
    """A self-hosted server: no model list (404), a bearer key, Chat Completions only."""

    async def completions(request: Request) -> Response:
        body = await request.json()
        api.seen.append((request.url.path, dict(request.headers), body))
        if request.headers.get("authorization") != f"Bearer {COMPAT_KEY}":
            return _openai_error(401, "Invalid API key", "authentication_error", None)
        if body.get("model") == "echo-model":  # a server whose error text repeats the key it was given
            return _openai_error(
                400,
                f"model echo-model is not enabled for token {COMPAT_KEY}",
                "invalid_request_error",
                COMPAT_KEY,
            )
        for name in body:
            if name not in CHAT_FIELDS:
                return _openai_error(
                    400, f"Unrecognized request argument supplied: {name}", "invalid_request_error", None
                )
        usage = isinstance(body.get("stream_options"), dict) and body["stream_options"].get("include_usage")
        if body.get("stream"):
            return StreamingResponse(
                _chat_chunks(body["model"], text, bool(usage)), media_type="text/event-stream"
            )
        return JSONResponse(
            {
                "id": "chatcmpl-123",
                "object": "chat.completion",
                "created": 1677652288,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": CHAT_USAGE,
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def test_paid_1_openai_compatible_key_serves_clients_against_a_documented_chat_server(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with fake_api(compat_app, ANSWER) as api:
        pool = make_pool(accounts=0, provider="openai")
        credentials = {"api_key": COMPAT_KEY, "base_url": api.url + "/v1", "models": ["gpt-4o-mini"]}
        imported = _import(pool, "openai-compatible", credentials)
        assert imported.status_code == 201, imported.text
        pool.settle()
        client = openai.OpenAI(base_url=pool.gateway.url + "/v1", api_key=pool.key, max_retries=0, timeout=30)
        with client:
            chat = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "say hi"}]
            )
            streamed = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "say hi"}], stream=True
            )
            chat_text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
            response = client.responses.create(model="gpt-4o-mini", input="say hi", max_output_tokens=64)
        with anthropic.Anthropic(
            base_url=pool.gateway.url, api_key=pool.key, max_retries=0, timeout=30
        ) as claude:
            message = claude.messages.create(
                model="gpt-4o-mini", max_tokens=64, messages=[{"role": "user", "content": "say hi"}]
            )
        assert chat.choices[0].message.content == ANSWER and chat_text == ANSWER
        assert response.output_text == ANSWER
        assert message.content[0].type == "text" and message.content[0].text == ANSWER
        assert _codex_like(pool, "gpt-4o-mini")[-1] == "response.completed"
        for body in api.bodies("/v1/chat/completions"):
            assert set(body) <= CHAT_FIELDS
        records = [record for record in pool.finished if record.account_id == imported.json()["id"]]
        assert len(records) == 5 and all(r.input_tokens == 19 and r.output_tokens == 10 for r in records)
        texts = [pool.admin.get(path).text for path in ("/api/accounts", "/api/requests", "/api/audit")]
        for logged in [*texts, caplog.text]:
            assert COMPAT_KEY not in logged


def test_paid_1_a_key_an_upstream_error_echoes_never_reaches_client_records_or_watch(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    """A self-hosted server's key has no recognisable shape: when its error answer repeats the key
    (in the message or as the code), the client, the records, the upstream-change watch (CLIENT-7)
    and the logs see it masked."""
    caplog.set_level(logging.DEBUG)
    with fake_api(compat_app, ANSWER) as api:
        pool = make_pool(accounts=0, provider="openai")
        credentials = {"api_key": COMPAT_KEY, "base_url": api.url + "/v1", "models": ["echo-model"]}
        assert _import(pool, "openai-compatible", credentials).status_code == 201
        pool.settle()
        # echo-model has no built-in price: price it so the metered account may serve it (PAID-3)
        price = {"input": 1, "cached_input": 0.1, "cache_write_5m": 1, "cache_write_1h": 1, "output": 2}
        assert pool.admin.put("/api/prices/echo-model", json=price).status_code < 300
        time.sleep(0.2)
        with pool.client() as client:
            answers = [
                client.post(
                    "/v1/chat/completions",
                    json={"model": "echo-model", "messages": [{"role": "user", "content": "hi"}], **extra},
                )
                for extra in ({}, {"stream": True})
            ]
        assert [answer.status_code for answer in answers] == [400, 400]
        time.sleep(1.0)  # the upstream-change watch writes every half second
        seen = [
            *(answer.text for answer in answers),
            pool.admin.get("/api/requests").text,
            pool.admin.get("/api/upstream-changes").text,
            pool.gateway.client().get("/metrics").text,
            repr(pool.finished),
            caplog.text,
        ]
        for text in seen:
            assert COMPAT_KEY not in text


def test_paid_4_openai_key_cools_on_a_documented_429_and_is_unauthorized_on_a_401(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    """OpenAI's 429 as its rate-limit guide shows it (no ``retry-after``; the reached window's
    ``x-ratelimit-reset-*``), then its 401 ``invalid_api_key`` naming part of the key."""
    caplog.set_level(logging.DEBUG)
    with fake_api(openai_app, ANSWER) as api:
        pool = make_pool(accounts=0, provider="openai", failover_attempts=0)
        imported = _import(pool, "openai", {"api_key": OPENAI_KEY, "base_url": api.url + "/v1"})
        assert imported.status_code == 201, imported.text
        account_id = imported.json()["id"]
        pool.settle()
        limited = {
            "error": {
                "message": "Rate limit reached for gpt-4.1 in organization org-abc123 on requests per min "
                "(RPM): Limit 500, Used 500, Requested 1. Please try again in 20s.",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
        headers = {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "20s",
            "x-ratelimit-limit-tokens": "30000",
            "x-ratelimit-remaining-tokens": "29000",
            "x-ratelimit-reset-tokens": "2s",
        }
        shown = OPENAI_KEY[:8] + "*" * 20 + OPENAI_KEY[-4:]
        unauthorized = {
            "error": {
                "message": f"Incorrect API key provided: {shown}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        }
        api.refusals = [(429, limited, headers), (401, unauthorized, {})]
        body = {"model": "gpt-4.1", "input": "hi"}
        with pool.client() as client:
            before = time.time()
            refused = client.post("/v1/responses", json=body)
            assert refused.status_code == 429, refused.text
            assert 15 <= int(refused.headers["retry-after"]) <= 21  # the window's reset, for the client
            state = {item["id"]: item for item in pool.admin.get("/api/accounts/runtime").json()["accounts"]}
            assert state[account_id]["state"] == "cooling"
            assert before + 15 <= state[account_id]["cooldown_until"] <= time.time() + 25
            pool.gateway.clock.advance(30)
            refused = client.post("/v1/responses", json=body)
            assert refused.status_code == 503, refused.text
        account = pool.admin.get(f"/api/accounts/{account_id}").json()
        assert (account["auth_state"], account["auth_error"]) == ("reauth_required", "unauthorized")
        # an admin gives a new key, and only the key: the account stays on its own server
        renewed = pool.admin.post(
            f"/api/accounts/{account_id}/credentials", json={"credentials": {"api_key": OPENAI_KEY}}
        )
        assert renewed.status_code == 200, renewed.text
        with pool.client() as client:
            assert client.post("/v1/responses", json=body).status_code == 200
        assert pool.admin.get(f"/api/accounts/{account_id}").json()["auth_state"] == "ok"
        for text in (refused.text, caplog.text, pool.admin.get("/api/requests").text):
            assert shown not in text and OPENAI_KEY not in text


# -- Gemini, as https://ai.google.dev/api/generate-content shows it (its SSE frames end "\r\n\r\n") --

GEMINI_KEY = "AIzaSyRealShapeKey0123456789abcdefABCD"
GEMINI_USAGE = {
    "promptTokenCount": 1200,
    "cachedContentTokenCount": 1024,
    "candidatesTokenCount": 9,
    "thoughtsTokenCount": 20,
    "totalTokenCount": 1229,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1200}],
}


def _gemini_chunk(text: str, finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    chunk: dict[str, Any] = {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 1200, "totalTokenCount": 1200},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mBfXaKHOLPKKz7IPlIOvgA4",
    }
    if finish:
        candidate["finishReason"] = "STOP"
        chunk["usageMetadata"] = GEMINI_USAGE
    return chunk


def gemini_app(api: FakeApi, text: str) -> Starlette:
    def refused(request: Request) -> Response | None:
        if request.headers.get("x-goog-api-key") == GEMINI_KEY:
            return None
        error = {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"},
                }
            ],
        }
        return JSONResponse({"error": error}, status_code=400)

    async def models(request: Request) -> Response:
        api.seen.append((request.url.path, dict(request.headers), None))
        model = {
            "name": "models/gemini-2.5-flash",
            "version": "001",
            "displayName": "Gemini 2.5 Flash",
            "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": ["generateContent", "countTokens", "createCachedContent"],
        }
        embedding = {"name": "models/gemini-embedding-001", "supportedGenerationMethods": ["embedContent"]}
        return refused(request) or JSONResponse({"models": [model, embedding]})

    async def generate(request: Request) -> Response:
        body = await request.json()
        api.seen.append((request.url.path + "?" + request.url.query, dict(request.headers), body))
        if (answer := refused(request)) is not None:
            return answer
        name, _, method = request.path_params["call"].partition(":")
        if name != "gemini-2.5-flash":
            error = {"code": 404, "message": f"models/{name} is not found", "status": "NOT_FOUND"}
            return JSONResponse({"error": error}, status_code=404)
        if method == "streamGenerateContent":
            words = text.split(" ")
            pieces = [word if index == 0 else " " + word for index, word in enumerate(words)]

            async def frames() -> AsyncIterator[bytes]:
                for index, piece in enumerate(pieces):
                    chunk = _gemini_chunk(piece, index == len(pieces) - 1)
                    yield f"data: {json.dumps(chunk)}\r\n\r\n".encode()

            return StreamingResponse(frames(), media_type="text/event-stream")
        return JSONResponse(_gemini_chunk(text, True))

    return Starlette(
        routes=[
            Route("/v1beta/models", models),
            Route("/v1beta/models/{call:path}", generate, methods=["POST"]),
        ]
    )


def test_paid_1_gemini_key_serves_clients_against_a_documented_gemini_api(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    from google import genai
    from google.genai import types

    caplog.set_level(logging.DEBUG)
    with fake_api(gemini_app, ANSWER) as api:
        pool = make_pool(accounts=0, provider="openai")
        wrong = _import(pool, "gemini", {"api_key": "AIzaSyWrongWrongWrong000", "base_url": api.url})
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_credentials"
        imported = _import(pool, "gemini", {"api_key": GEMINI_KEY, "base_url": api.url + "/"})
        assert imported.status_code == 201, imported.text
        pool.settle()
        client = genai.Client(api_key=pool.key, http_options=types.HttpOptions(base_url=pool.gateway.url))
        answer = client.models.generate_content(model="gemini-2.5-flash", contents="say hi")
        chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="say hi"))
        with openai.OpenAI(base_url=pool.gateway.url + "/v1", api_key=pool.key, max_retries=0) as chat:
            streamed = chat.chat.completions.create(
                model="gemini-2.5-flash", messages=[{"role": "user", "content": "say hi"}], stream=True
            )
            chat_text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
        assert answer.text == ANSWER
        assert "".join(chunk.text or "" for chunk in chunks) == ANSWER
        assert chunks[-1].candidates and chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
        assert chat_text == ANSWER
        records = [record for record in pool.finished if record.account_id == imported.json()["id"]]
        assert [record.outcome for record in records] == ["success"] * 3
        assert all(r.input_tokens == 1200 and r.cached_tokens == 1024 for r in records)
        assert all(r.output_tokens == 29 for r in records)  # thoughts are output (COST-1)
        texts = [pool.admin.get(path).text for path in ("/api/accounts", "/api/requests", "/api/audit")]
        for logged in [*texts, caplog.text]:
            assert GEMINI_KEY not in logged


def test_paid_4_anthropic_key_without_credit_is_spent_and_the_client_is_not_told_its_request_is_wrong(
    make_pool: Callable[..., Pool],
) -> None:
    """Anthropic answers a key with no credit left with a 400 ``invalid_request_error``: SubLane
    takes it as the key's quota used up (QUOTA-7), not as the client's fault."""
    with fake_api(anthropic_app, ANSWER) as api:
        pool = make_pool(accounts=0, provider="anthropic", failover_attempts=0)
        imported = _import(pool, "anthropic", {"api_key": ANTHROPIC_KEY, "base_url": api.url})
        assert imported.status_code == 201, imported.text
        account_id = imported.json()["id"]
        pool.settle()
        no_credit = {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "Your credit balance is too low to access the Anthropic API. "
                "Please go to Plans & Billing to upgrade or purchase credits.",
            },
            "request_id": "req_011CbrFTcXhtiMzr3s6EocF7",
        }
        api.refusals = [(400, no_credit, {})]
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 32,
            "messages": [{"role": "user", "content": "hi"}],
        }
        with pool.client() as client:
            refused = client.post("/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
        # SubLane's refusal for a spent account (403 quota_exhausted), not the client's own 400
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "quota_exhausted"
        record = next(r for r in pool.finished if r.account_id == account_id)
        assert record.error_code == "credit_balance_too_low"
        state = {item["id"]: item for item in pool.admin.get("/api/accounts/runtime").json()["accounts"]}
        assert state[account_id]["state"] == "quota_exhausted"  # new calls go to other accounts
