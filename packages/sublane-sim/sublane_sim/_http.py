"""Small request helpers shared by the protocol handlers."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.requests import HTTPConnection, Request

from ._records import RequestRecord

if TYPE_CHECKING:
    from ._simulator import Simulator

__all__ = ["bearer_token", "header_dict", "parse_json_object", "record_request", "sim_of"]


def sim_of(connection: HTTPConnection) -> Simulator:
    sim: Simulator = connection.app.state.sim
    return sim


def header_dict(connection: HTTPConnection) -> dict[str, str]:
    """Received headers, lower-cased; repeated headers are joined with `, `."""
    headers: dict[str, str] = {}
    for key, value in connection.headers.items():
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def bearer_token(connection: HTTPConnection) -> str | None:
    value = connection.headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def record_request(request: Request, provider: str, endpoint: str) -> tuple[RequestRecord, bytes]:
    raw = await request.body()
    record = sim_of(request).record(
        provider=provider,
        endpoint=endpoint,
        method=request.method,
        path=request.url.path,
        query=request.url.query,
        headers=header_dict(request),
        raw_body=raw,
        peer=peer_of(request),
    )
    return record, raw


def peer_of(connection: HTTPConnection) -> str | None:
    """The host the connection came from."""
    return connection.client.host if connection.client is not None else None


def parse_json_object(raw: bytes) -> dict[str, Any] | None:
    """The body as a JSON object, or `None` when it is not one."""
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
