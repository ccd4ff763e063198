"""Scripted behaviours: what the next model requests and token refreshes of an account do."""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal, get_args

__all__ = ["Behaviour", "BehaviourKind", "CutMode", "RefreshKind", "RefreshOutcome", "ScriptBook"]

BehaviourKind = Literal["ok", "error", "cut", "stall", "overload", "incomplete"]
CutMode = Literal["abort", "eof"]
RefreshKind = Literal[
    "ok",
    "error",
    "invalid_grant",
    "refresh_token_reused",
    "refresh_token_invalidated",
    "refresh_token_expired",
]


@dataclass(frozen=True, slots=True)
class Behaviour:
    """What one model request does on the wire.

    `kind` picks the outcome; the other fields tune it and are ignored where they do not apply.

    - `ok`: a complete response of `deltas` text deltas, `pacing_ms` apart; the first delta waits
      `first_delta_delay_ms`. Token counts default to the request size and the cache model.
    - `error`: HTTP `status` with the provider's error body; `error_code` picks the variant
      (Codex `usage_limit_reached` / `usage_not_included` / `rate_limit_exceeded` /
      `server_is_overloaded`; Claude error type; Antigravity `ErrorInfo.reason`, `""` for a
      detail-free 429); `retry_after` is the raw `Retry-After` value (`None` omits it).
    - `cut`: after `after_deltas` deltas the connection ends without a terminal event:
      `cut_mode="abort"` drops the TCP connection mid-body, `"eof"` ends the body cleanly.
      On a WebSocket the server sends a Close frame (1011).
    - `stall`: after `after_deltas` deltas no bytes are sent for `stall_ms` (then the stream
      resumes), or until the client disconnects when `stall_ms` is `None`.
    - `overload`: a 200 stream that fails after `after_deltas` deltas (Codex `response.failed`,
      or a top-level `error` event with `top_level_error`; Claude `event: error`
      `overloaded_error`; Antigravity an in-stream error object).
    - `incomplete`: Codex `response.incomplete` (`max_output_tokens`), Claude `max_tokens`
      stop reason, Antigravity `MAX_TOKENS` finish reason.

    `tool_call` ends a successful turn with `tool_calls` function calls in one turn (parallel
    calls), the i-th for the i-th function tool of the request (cycling), each with its own id;
    `tool_name` calls the request's tool of that name instead (when the request offers it), as a
    model told to use that tool would — inside a Responses ``namespace`` tool too.
    `header_delay_ms` delays the response headers for every kind.
    `safeguard_results` (Claude): the verdicts a Messages request that carries a ``safeguards``
    field gets back, as the API returns them — top-level in a JSON message, in the
    ``message_delta`` event's ``delta`` when streamed; a request without the field gets none.

    Upstream changes (CLIENT-7), as a newer upstream would send them: `extra_event` sends one more
    named SSE event of that type (`{"type": extra_event}`) before the terminal event; `extra_field`
    adds that top-level field (value `true`) to the terminal event and to a JSON answer.
    """

    kind: BehaviourKind = "ok"
    deltas: int = 8
    pacing_ms: float = 0.0
    header_delay_ms: float = 0.0
    first_delta_delay_ms: float = 0.0
    text: str | None = None
    reasoning_deltas: int | None = None
    tool_call: bool = False
    tool_calls: int = 1
    tool_name: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    after_deltas: int = 0
    stall_ms: float | None = None
    cut_mode: CutMode = "abort"
    status: int = 500
    retry_after: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    top_level_error: bool = False
    resets_in_s: int | None = None
    retry_delay: str | None = None
    error_model: str | None = None
    error_domain: str | None = None
    safeguard_results: list[Any] | None = None
    extra_event: str | None = None
    extra_field: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in get_args(BehaviourKind):
            raise ValueError(f"unknown behaviour kind {self.kind!r}")
        if self.cut_mode not in get_args(CutMode):
            raise ValueError(f"unknown cut_mode {self.cut_mode!r}")
        if self.deltas < 1 or self.after_deltas < 0:
            raise ValueError("deltas must be >= 1 and after_deltas >= 0")
        if self.tool_calls < 1:
            raise ValueError("tool_calls must be >= 1")
        if self.kind == "error" and not 400 <= self.status <= 599:
            raise ValueError("an error behaviour needs a 4xx/5xx status")

    # -- convenience constructors ---------------------------------------------------------------

    @classmethod
    def ok(cls, **options: Any) -> Behaviour:
        return cls(kind="ok", **options)

    @classmethod
    def error(cls, status: int, **options: Any) -> Behaviour:
        return cls(kind="error", status=status, **options)

    @classmethod
    def cut(cls, after_deltas: int, **options: Any) -> Behaviour:
        return cls(kind="cut", after_deltas=after_deltas, **options)

    @classmethod
    def stall(cls, after_deltas: int, stall_ms: float | None = None, **options: Any) -> Behaviour:
        return cls(kind="stall", after_deltas=after_deltas, stall_ms=stall_ms, **options)

    @classmethod
    def overload(cls, after_deltas: int = 0, **options: Any) -> Behaviour:
        return cls(kind="overload", after_deltas=after_deltas, **options)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Behaviour:
        """Build from control-API JSON; unknown keys are an error, not silently dropped."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown behaviour fields: {sorted(unknown)}")
        return cls(**_with_retry_after_text(data))

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class RefreshOutcome:
    """What one refresh-token request does.

    - `ok`: normal success (tokens rotate for Codex and Claude); `omit_id_token` /
      `omit_refresh_token` leave those fields out of the response (the presented refresh token then
      stays valid when `omit_refresh_token`).
    - `error`: HTTP `status` (e.g. transient 500, or 429 with `retry_after`).
    - `invalid_grant`, `refresh_token_reused`, `refresh_token_invalidated`, `refresh_token_expired`:
      that rejection, once (use `revoke_refresh_token` for a permanent one).

    `delay_ms` holds the response back, to exercise token-endpoint timeouts.
    """

    kind: RefreshKind = "ok"
    status: int = 500
    retry_after: str | None = None
    delay_ms: float = 0.0
    omit_id_token: bool = False
    omit_refresh_token: bool = False

    def __post_init__(self) -> None:
        if self.kind not in get_args(RefreshKind):
            raise ValueError(f"unknown refresh outcome {self.kind!r}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RefreshOutcome:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown refresh outcome fields: {sorted(unknown)}")
        return cls(**_with_retry_after_text(data))

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class ScriptBook:
    """FIFO queues of behaviours per account (and optionally per model), plus defaults.

    A model request takes the head of its (account, model) queue, else of the account-wide queue;
    with both empty it gets the account's default behaviour (which is not consumed).
    """

    def __init__(self) -> None:
        self._queues: dict[tuple[str, str | None], deque[Behaviour]] = {}
        self._defaults: dict[str, Behaviour] = {}
        self._refresh: dict[str, deque[RefreshOutcome]] = {}
        self._quota_reads: dict[str, deque[QuotaReadOutcome]] = {}

    def push(self, account_id: str, behaviours: list[Behaviour], model: str | None = None) -> None:
        self._queues.setdefault((account_id, model), deque()).extend(behaviours)

    def set_default(self, account_id: str, behaviour: Behaviour) -> None:
        self._defaults[account_id] = behaviour

    def default(self, account_id: str) -> Behaviour:
        return self._defaults.get(account_id, _DEFAULT)

    def take(self, account_id: str, model: str | None) -> Behaviour | None:
        """Pop the next scripted behaviour, or `None` when nothing is queued."""
        for key in ((account_id, model), (account_id, None)):
            queue = self._queues.get(key)
            if queue:
                return queue.popleft()
        return None

    def pending(self, account_id: str) -> dict[str, list[dict[str, Any]]]:
        return {
            (model or "*"): [b.as_dict() for b in queue]
            for (owner, model), queue in self._queues.items()
            if owner == account_id and queue
        }

    def clear(self, account_id: str) -> None:
        for key in [key for key in self._queues if key[0] == account_id]:
            del self._queues[key]
        self._refresh.pop(account_id, None)
        self._quota_reads.pop(account_id, None)

    def push_quota_reads(self, account_id: str, outcomes: list[QuotaReadOutcome]) -> None:
        self._quota_reads.setdefault(account_id, deque()).extend(outcomes)

    def take_quota_read(self, account_id: str) -> QuotaReadOutcome:
        queue = self._quota_reads.get(account_id)
        return queue.popleft() if queue else _QUOTA_READ_OK

    def push_refresh(self, account_id: str, outcomes: list[RefreshOutcome]) -> None:
        self._refresh.setdefault(account_id, deque()).extend(outcomes)

    def take_refresh(self, account_id: str) -> RefreshOutcome:
        queue = self._refresh.get(account_id)
        return queue.popleft() if queue else _REFRESH_OK

    def reset(self) -> None:
        self._queues.clear()
        self._defaults.clear()
        self._refresh.clear()


QuotaReadKind = Literal["ok", "error", "stale"]


@dataclass(frozen=True, slots=True)
class QuotaReadOutcome:
    """What one quota read (Codex `wham/usage`, Claude `/api/oauth/usage`, Antigravity
    `:fetchAvailableModels`) answers.

    - `ok`: the account's windows as they are now.
    - `error`: HTTP `status` (a failed read: the gateway keeps its last good observation).
    - `stale`: a cached snapshot from `age_s` ago: every window 100 % used with a reset that has
      already passed (data that must never mean zero quota).
    """

    kind: QuotaReadKind = "ok"
    status: int = 500
    age_s: float = 3600.0

    def __post_init__(self) -> None:
        if self.kind not in get_args(QuotaReadKind):
            raise ValueError(f"unknown quota read outcome {self.kind!r}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuotaReadOutcome:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown quota read outcome fields: {sorted(unknown)}")
        return cls(**data)


def _with_retry_after_text(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with a JSON number ``retry_after`` as the header text it stands for (``300`` →
    ``"300"``); anything but text, a number or ``None`` is a ``ValueError`` (a 400 of the control
    API), never a header the simulator cannot send."""
    value = data.get("retry_after")
    if value is None or isinstance(value, str):
        return data
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("'retry_after' must be a header value: text or a number of seconds")
    return {**data, "retry_after": str(value)}


_DEFAULT = Behaviour()
_REFRESH_OK = RefreshOutcome()
_QUOTA_READ_OK = QuotaReadOutcome()
