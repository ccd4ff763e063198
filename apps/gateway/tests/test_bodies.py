"""Model-route bodies read straight from the ASGI messages (OPS-1; issue #19)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import Message

from sublane_core import SubLaneError
from sublane_gateway.routes._bodies import read_json_object


def _request(messages: list[Message]) -> Request:
    pending: Iterator[Message] = iter(messages)

    async def receive() -> Message:
        return next(pending)

    scope = {"type": "http", "method": "POST", "path": "/v1/responses", "headers": [], "app": Starlette()}
    return Request(scope, receive)


def test_ops_1_a_body_in_pieces_is_read_whole() -> None:
    request = _request(
        [
            {"type": "http.request", "body": b'{"model":', "more_body": True},
            {"type": "http.request", "body": b"", "more_body": True},
            {"type": "http.request", "body": b' "gpt-5"}', "more_body": False},
        ]
    )

    body, raw = asyncio.run(read_json_object(request, {"content-type": "application/json"}))
    assert body == {"model": "gpt-5"}
    assert raw == b'{"model": "gpt-5"}'


def test_ops_1_a_client_gone_before_its_body_ended_is_invalid_request() -> None:
    request = _request(
        [{"type": "http.request", "body": b'{"model":', "more_body": True}, {"type": "http.disconnect"}]
    )
    with pytest.raises(SubLaneError) as refused:
        asyncio.run(read_json_object(request, {}))
    assert refused.value.code == "invalid_request"
    assert "closed the connection" in refused.value.message
