"""What the simulator saw: a bounded request log and per-account counters."""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AccountCounters", "CounterBook", "RequestLog", "RequestRecord"]


@dataclass(slots=True)
class RequestRecord:
    """One request as received, plus how the simulator answered it.

    `endpoint` is a stable name such as `codex.responses`, `codex.ws.turn`, `claude.messages`,
    `antigravity.streamGenerateContent`, `openai.token`. `outcome` is `completed`, `incomplete`,
    `error` (HTTP error or in-stream failure), `cut`, `canceled` (client left before the terminal
    event), `rejected` (auth/validation) or `pending` while the response is still running.
    `tool_call_ids` are the ids of the tool calls the simulator answered with, in order.
    """

    seq: int
    at: float
    provider: str
    endpoint: str
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    account_id: str | None = None
    token: str | None = None
    token_kind: str | None = None
    model: str | None = None
    behaviour: str | None = None
    status: int | None = None
    outcome: str = "pending"
    transport: str = "http"
    input_tokens: int | None = None
    cached_tokens: int | None = None
    output_tokens: int | None = None
    response_id: str | None = None
    events: int = 0
    tool_call_ids: list[str] = field(default_factory=list)
    peer: str | None = None  # the address the request came from (a proxy's outgoing one, EGRESS-1)
    raw_body: bytes = field(default=b"", repr=False)  # the body's bytes as received (not in as_dict)

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        del data["raw_body"]
        return data


class RequestLog:
    """The most recent `capacity` requests, oldest dropped first."""

    def __init__(self, capacity: int = 2000) -> None:
        self._records: deque[RequestRecord] = deque(maxlen=capacity)
        self._seq = 0

    def add(
        self,
        *,
        at: float,
        provider: str,
        endpoint: str,
        method: str,
        path: str,
        query: str,
        headers: dict[str, str],
        body: Any,
        transport: str = "http",
        peer: str | None = None,
        raw_body: bytes = b"",
    ) -> RequestRecord:
        self._seq += 1
        record = RequestRecord(
            seq=self._seq,
            at=at,
            provider=provider,
            endpoint=endpoint,
            method=method,
            path=path,
            query=query,
            headers=headers,
            body=body,
            transport=transport,
            peer=peer,
            raw_body=raw_body,
        )
        self._records.append(record)
        return record

    def select(
        self,
        *,
        account_id: str | None = None,
        provider: str | None = None,
        endpoint: str | None = None,
        limit: int | None = None,
    ) -> list[RequestRecord]:
        """Matching records, oldest first; `limit` keeps the newest ones."""
        found = [
            r
            for r in self._records
            if (account_id is None or r.account_id == account_id)
            and (provider is None or r.provider == provider)
            and (endpoint is None or r.endpoint == endpoint)
        ]
        return found[-limit:] if limit else found

    def clear(self) -> None:
        self._records.clear()


@dataclass(slots=True)
class AccountCounters:
    """Per-account traffic counters.

    `requests` counts every request attributed to the account (inference, quota reads, token
    refreshes); `model_requests` only inference calls (HTTP responses/messages/generate,
    compaction, WebSocket turns; prewarms excluded). `current_streams`/`peak_streams` are the
    model requests in progress now / at most at once. `cancellations` are model requests whose
    client went away before the terminal event. `refreshes` counts token-endpoint calls;
    `quota_reads` the quota reads (Codex `wham/usage`, Claude `/api/oauth/usage`, Antigravity
    `:fetchAvailableModels`, which also lists the models).
    """

    requests: int = 0
    model_requests: int = 0
    current_streams: int = 0
    peak_streams: int = 0
    cancellations: int = 0
    completed: int = 0
    refreshes: int = 0
    quota_reads: int = 0
    by_endpoint: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["by_endpoint"] = dict(self.by_endpoint)
        return data


class CounterBook:
    def __init__(self) -> None:
        self._counters: dict[str, AccountCounters] = {}

    def of(self, account_id: str) -> AccountCounters:
        counters = self._counters.get(account_id)
        if counters is None:
            counters = self._counters[account_id] = AccountCounters()
        return counters

    def all(self) -> dict[str, AccountCounters]:
        return dict(self._counters)

    def clear(self) -> None:
        self._counters.clear()
