"""The parrot upstream — a small real HTTP server speaking OpenAI Responses — and a gateway pool of its
accounts, for the parrot provider's tests (needs the ``test`` extra: Starlette and the gateway).

It answers ``POST /v1/responses`` with ``parrot: <the last user text>`` (a stream of the documented
Responses events, or one ``response`` object), calls a function when asked to (``call:NAME {json}``
with that function among the tools) and answers a function's output with ``parrot: tool said …``.
Tokens are checked and rotate on refresh; faults are scripted per account for the next call, as
the shared contract kit asks (:class:`~sublane_providers.testing.ContractUpstream`). Every request
it receives is kept, so tests can see what went upstream.
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sublane_gateway.testing import Gateway

MODELS = ("parrot-1", "parrot-1-mini")
UNSUPPORTED = ("temperature", "top_p", "stop")
_ids = itertools.count(1)


@dataclass
class Fault:
    """What the next model call of an account does instead of answering."""

    kind: str  # "error", "cut" or "overload"
    status: int = 0
    retry_after: str | None = None
    after_events: int = 0


@dataclass
class ParrotAccount:
    """An account of the parrot upstream and the credential file it hands out."""

    id: str
    email: str
    access_token: str
    refresh_token: str
    used_percent: float = 12.5
    faults: deque[Fault] = field(default_factory=deque)
    refresh_faults: deque[tuple[int, str | None]] = field(default_factory=deque)

    @property
    def credentials(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "refresh_token": self.refresh_token,
            "expires_at": int(time.time()) + 3600,
            "email": self.email,
            "plan": "team",
        }


@dataclass
class Seen:
    """One model request as the upstream received it."""

    account: str
    headers: dict[str, str]
    body: dict[str, Any]


def _error(status: int, code: str, message: str, retry_after: str | None = None) -> JSONResponse:
    headers = {"retry-after": retry_after} if retry_after else None
    return JSONResponse({"error": {"code": code, "message": message}}, status, headers=headers)


class ParrotUpstream:
    """The upstream's state and its ASGI app (:attr:`app`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_access: dict[str, ParrotAccount] = {}
        self._by_refresh: dict[str, ParrotAccount] = {}
        self.accounts: list[ParrotAccount] = []
        self.seen: list[Seen] = []
        self.refreshes = 0
        self.app = Starlette(
            routes=[
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/oauth/token", self._token, methods=["POST"]),
                Route("/v1/usage", self._usage, methods=["GET"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    # -- accounts and faults (ContractUpstream) ---------------------------------------------------

    def new_account(self) -> ParrotAccount:
        number = next(_ids)
        account = ParrotAccount(
            id=f"parrot-{number}",
            email=f"member{number}@parrot.test",
            access_token=f"parrot-at-{secrets.token_hex(8)}",
            refresh_token=f"parrot-rt-{secrets.token_hex(8)}",
        )
        with self._lock:
            self.accounts.append(account)
            self._by_access[account.access_token] = account
            self._by_refresh[account.refresh_token] = account
        return account

    def fail_next(self, account: Any, status: int, retry_after: str | None = None) -> None:
        self._account(account).faults.append(Fault("error", status, retry_after))

    def cut_next(self, account: Any, after_events: int) -> None:
        self._account(account).faults.append(Fault("cut", after_events=after_events))

    def overload_next(self, account: Any) -> None:
        self._account(account).faults.append(Fault("overload"))

    def revoke_refresh_token(self, account: Any) -> None:
        with self._lock:
            self._by_refresh.pop(self._account(account).refresh_token, None)

    def fail_next_refresh(self, account: Any, status: int, retry_after: str | None = None) -> None:
        self._account(account).refresh_faults.append((status, retry_after))

    def expire_access_token(self, account: Any) -> None:
        """The account's access token stops working (the next model call answers 401)."""
        with self._lock:
            self._by_access.pop(self._account(account).access_token, None)

    def _account(self, account: Any) -> ParrotAccount:
        return next(item for item in self.accounts if item.id == account.id)

    # -- routes -----------------------------------------------------------------------------------

    def _bearer(self, request: Request) -> ParrotAccount | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        with self._lock:
            return self._by_access.get(token) if scheme.lower() == "bearer" else None

    async def _responses(self, request: Request) -> Response:
        account = self._bearer(request)
        if account is None:
            return _error(401, "invalid_token", "The access token is not valid.")
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "invalid_json", "The body is not JSON.")
        if not isinstance(body, dict):
            return _error(400, "invalid_request", "The body must be an object.")
        with self._lock:
            self.seen.append(Seen(account.id, dict(request.headers), body))
            fault = account.faults.popleft() if account.faults else None
        for name in UNSUPPORTED:
            if name in body:
                return _error(400, "unsupported_parameter", f"Unsupported parameter: {name}")
        if body.get("model") not in MODELS:
            return _error(400, "model_not_found", f"The model {body.get('model')!r} does not exist.")
        if fault is not None and fault.kind == "error":
            return _error(fault.status, f"scripted_{fault.status}", "A scripted failure.", fault.retry_after)
        answer = Answer(body)
        headers = {"x-parrot-quota-used-percent": str(account.used_percent)}
        if not body.get("stream"):
            return JSONResponse(answer.response("completed"), headers=headers)
        events = answer.events()
        if fault is not None and fault.kind == "cut":
            events = events[: fault.after_events]
        elif fault is not None and fault.kind == "overload":
            failed = answer.response("failed")
            failed["error"] = {"code": "server_is_overloaded", "message": "The parrot is overloaded."}
            events = [events[0], ("response.failed", {"type": "response.failed", "response": failed})]
        return StreamingResponse(_sse(events), media_type="text/event-stream", headers=headers)

    async def _token(self, request: Request) -> Response:
        try:
            form = json.loads(await request.body())
        except ValueError:
            form = {}
        token = form.get("refresh_token") if isinstance(form, dict) else None
        with self._lock:
            account = self._by_refresh.get(token) if isinstance(token, str) else None
            if account is None:
                return JSONResponse({"error": "invalid_grant"}, 400)
            if account.refresh_faults:
                status, retry_after = account.refresh_faults.popleft()
                headers = {"retry-after": retry_after} if retry_after else None
                return JSONResponse({"error": "temporarily_unavailable"}, status, headers=headers)
            del self._by_refresh[account.refresh_token]
            self._by_access.pop(account.access_token, None)
            account.access_token = f"parrot-at-{secrets.token_hex(8)}"
            account.refresh_token = f"parrot-rt-{secrets.token_hex(8)}"
            self._by_access[account.access_token] = account
            self._by_refresh[account.refresh_token] = account
            self.refreshes += 1
        return JSONResponse(
            {"access_token": account.access_token, "refresh_token": account.refresh_token, "expires_in": 3600}
        )

    async def _usage(self, request: Request) -> Response:
        account = self._bearer(request)
        if account is None:
            return _error(401, "invalid_token", "The access token is not valid.")
        resets = int(time.time()) + 3600
        return JSONResponse(
            {
                "plan": "team",
                "windows": [
                    {
                        "name": "5h",
                        "used_percent": account.used_percent,
                        "window_seconds": 18000,
                        "resets_at": resets,
                    },
                    {
                        "name": "week",
                        "used_percent": 3.0,
                        "window_seconds": 604800,
                        "resets_at": resets + 86400,
                    },
                ],
            }
        )

    async def _models(self, request: Request) -> Response:
        if self._bearer(request) is None:
            return _error(401, "invalid_token", "The access token is not valid.")
        return JSONResponse(
            {"object": "list", "data": [{"id": model, "object": "model"} for model in MODELS]}
        )


async def _sse(events: list[tuple[str, dict[str, Any]]]) -> AsyncIterator[bytes]:
    for number, (name, payload) in enumerate(events):
        payload["sequence_number"] = number
        yield f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def _parts_of(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(part["text"]) for part in content if isinstance(part, dict) and "text" in part]
    return []


def _text_of(content: Any) -> str:
    return " ".join(_parts_of(content))


def _user_turn(items: list[Any]) -> list[str]:
    """The texts of the user's last turn: the user messages at the end of the input, in order
    (instructions between them, developer or system messages, are not the user's)."""
    turn: list[str] = []
    for item in reversed(items):
        role = item.get("role") if isinstance(item, dict) else None
        if role in ("developer", "system"):
            continue
        if role != "user":
            break
        turn[:0] = _parts_of(item.get("content"))
    return turn


class Answer:
    """What the parrot says to one request: text, or a function call."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.model = str(body["model"])
        self.id = f"resp_{secrets.token_hex(8)}"
        self.item_id = f"msg_{secrets.token_hex(6)}"
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items or []
        last = items[-1] if items and isinstance(items[-1], dict) else {}
        tools = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
        self.call: tuple[str, str] | None = None
        if last.get("type") == "function_call_output":
            self.text = f"parrot: tool said {_text_of(last.get('output'))}"
        else:
            parts = _user_turn(items)  # a client may send its turn as several items or parts
            for part in parts:
                name, _, arguments = part.strip().removeprefix("call:").partition(" ")
                if part.strip().startswith("call:") and name in tools:
                    self.call = (name, arguments.strip() or "{}")
                    break
            self.text = f"parrot: {' '.join(parts)}"
        words = sum(len(_text_of(item.get("content")).split()) for item in items if isinstance(item, dict))
        self.usage = {
            "input_tokens": max(words, 1),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": len(self.text.split()),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": max(words, 1) + len(self.text.split()),
        }

    def item(self, status: str = "completed") -> dict[str, Any]:
        if self.call is not None:
            name, arguments = self.call
            return {
                "id": self.item_id,
                "type": "function_call",
                "status": status,
                "call_id": f"call_{self.item_id[4:]}",
                "name": name,
                "arguments": arguments if status == "completed" else "",
            }
        content = [{"type": "output_text", "text": self.text, "annotations": []}]
        return {
            "id": self.item_id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": content if status == "completed" else [],
        }

    def response(self, status: str) -> dict[str, Any]:
        done = status != "in_progress"
        return {
            "id": self.id,
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "model": self.model,
            "output": [self.item()] if status == "completed" else [],
            "usage": self.usage if done else None,
            "error": None,
        }

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        created = self.response("in_progress")
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"type": "response.created", "response": created}),
            ("response.in_progress", {"type": "response.in_progress", "response": created}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": self.item("in_progress")},
            ),
        ]
        where = {"item_id": self.item_id, "output_index": 0}
        if self.call is not None:
            arguments = self.call[1]
            for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                events.append(
                    (
                        "response.function_call_arguments.delta",
                        {"type": "response.function_call_arguments.delta", **where, "delta": piece},
                    )
                )
            events.append(
                (
                    "response.function_call_arguments.done",
                    {"type": "response.function_call_arguments.done", **where, "arguments": arguments},
                )
            )
        else:
            part = {**where, "content_index": 0}
            events.append(
                (
                    "response.content_part.added",
                    {
                        "type": "response.content_part.added",
                        **part,
                        "part": {"type": "output_text", "text": "", "annotations": []},
                    },
                )
            )
            for word in self.text.split(" "):
                delta = word if events[-1][0] != "response.output_text.delta" else f" {word}"
                events.append(
                    (
                        "response.output_text.delta",
                        {"type": "response.output_text.delta", **part, "delta": delta},
                    )
                )
            events.append(
                (
                    "response.output_text.done",
                    {"type": "response.output_text.done", **part, "text": self.text},
                )
            )
            events.append(
                (
                    "response.content_part.done",
                    {
                        "type": "response.content_part.done",
                        **part,
                        "part": {"type": "output_text", "text": self.text, "annotations": []},
                    },
                )
            )
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": self.item()},
            )
        )
        events.append(
            ("response.completed", {"type": "response.completed", "response": self.response("completed")})
        )
        return events


@dataclass
class ParrotPool:
    """A running gateway whose default group holds parrot accounts, and a key for it."""

    gateway: Gateway
    upstream: ParrotUpstream
    admin: httpx.Client
    key: str
    accounts: list[ParrotAccount]
    account_ids: list[int]

    @property
    def url(self) -> str:
        return self.gateway.url

    def client(self) -> httpx.Client:
        client = self.gateway.client()
        client.headers["authorization"] = f"Bearer {self.key}"
        return client

    def seen_since(self, count: int) -> list[Any]:
        """The model requests the upstream received after the first ``count``, of this pool's accounts."""
        mine = {account.id for account in self.accounts}
        return [seen for seen in self.upstream.seen[count:] if seen.account in mine]

    def settle(self, timeout_s: float = 10.0) -> None:
        """Wait for the background work of the imports (the catalogue reads, CAT-1) to end."""
        runtime = self.gateway.app.state.client
        deadline = time.monotonic() + timeout_s
        while runtime.background_work:
            assert time.monotonic() < deadline, "background work did not end"
            time.sleep(0.005)
