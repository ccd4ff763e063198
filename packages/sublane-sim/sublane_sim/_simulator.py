"""The simulator's state and its Python control API."""

from __future__ import annotations

import dataclasses
import json
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._accounts import Account, AccountBook, AuthProblem, TokenKind
from ._cache import CACHE_LIFETIME_S, PromptCache
from ._catalog import PROVIDERS, Provider
from ._clock import SimClock
from ._credentials import credential_file
from ._floors import ClientFloors
from ._logins import LoginDesk
from ._quota import QuotaWindow
from ._records import AccountCounters, CounterBook, RequestLog, RequestRecord
from ._script import Behaviour, QuotaReadOutcome, RefreshOutcome, ScriptBook
from ._tokens import TokenMint
from ._turns import Turn, Usage

if TYPE_CHECKING:
    from ._server import ServerThread

__all__ = ["SimAccount", "Simulator"]

# Request bodies larger than this are logged as a size marker instead of their content.
MAX_LOGGED_BODY = 1 << 20
_UPDATABLE = {
    "require_account_id",
    "require_stream",
    "quota_cost",
    "models",
    "access_ttl_s",
    "onboarded",
    "models_listable",
    "api_key_revoked",
}


@dataclass(frozen=True, slots=True)
class SimAccount:
    """A snapshot of a sim account: identity, current secrets and its importable credential file."""

    id: str
    provider: Provider
    email: str
    plan: str
    account_id: str
    organization_id: str
    project_id: str
    api_key: str
    access_token: str
    access_expires_at: float
    refresh_token: str
    id_token: str
    credentials: dict[str, Any]


class Simulator:
    """Upstream simulator for Codex, Claude and Antigravity, controllable from Python.

    Every method is thread-safe: tests call them from their own thread (or event loop) while the
    server thread serves requests. Start the HTTP/WebSocket server with `start()` (or use it as a
    context manager); the URL properties are valid while it runs.

    Args:
        seed: seeds generated ids, secrets and text, so runs are reproducible.
        clock: the wall clock for token expiry, quota windows and WebSocket connection age.
        log_capacity: how many requests the introspection log keeps.
        ws_max_age_s: Codex WebSocket connection age limit (real backend: 60 minutes), measured on
            the sim clock.
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        clock: SimClock | None = None,
        log_capacity: int = 2000,
        ws_max_age_s: float = 3600.0,
    ) -> None:
        self.clock = clock or SimClock()
        self.seed = seed
        self.ws_max_age_s = ws_max_age_s
        self._initial_ws_max_age_s = ws_max_age_s
        self._lock = threading.RLock()
        self._rng = random.Random(seed)  # noqa: S311 - reproducible test data
        self.mint = TokenMint(self._rng)
        self._accounts = AccountBook(self.mint)
        self._scripts = ScriptBook()
        self._log = RequestLog(log_capacity)
        self._counters = CounterBook()
        self._cache = PromptCache()
        self.logins = LoginDesk()
        self.floors = ClientFloors()
        self._server: ServerThread | None = None
        self._foreground_url: str | None = None

    # == server ==================================================================================

    def start(self, host: str = "127.0.0.1", port: int = 0) -> Simulator:
        """Serve on `host:port` (0 = an ephemeral port) from a background thread."""
        from ._app import build_app
        from ._server import ServerThread

        if self._server is not None:
            raise RuntimeError("simulator already started")
        self._server = ServerThread(build_app(self), host, port)
        self._server.start()
        return self

    def serve(
        self, host: str = "127.0.0.1", port: int = 0, ready: Callable[[str], None] | None = None
    ) -> None:
        """Serve in the foreground until interrupted (the `sublane-sim` command uses this).

        `ready(base_url)` is called once the port is bound, before requests are accepted.
        """
        import uvicorn

        from ._app import build_app
        from ._server import bind_listener, make_config

        listener = bind_listener(host, port)
        bound_port = listener.getsockname()[1]
        shown_host = f"[{host}]" if ":" in host else host
        self._foreground_url = f"http://{shown_host}:{bound_port}"
        if ready is not None:
            ready(self._foreground_url)
        try:
            uvicorn.Server(make_config(build_app(self), backlog=2048)).run(sockets=[listener])
        finally:
            self._foreground_url = None
            listener.close()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Simulator:
        return self.start() if self._server is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`; every provider base URL below is derived from it."""
        if self._server is not None:
            return self._server.base_url
        if self._foreground_url is not None:
            return self._foreground_url
        raise RuntimeError("simulator is not running; call start()")

    @property
    def codex_base_url(self) -> str:
        """Value for `SUBLANE_CODEX_BASE_URL` (the OpenAI SDK's base URL is this + `/codex`)."""
        return f"{self.base_url}/backend-api"

    @property
    def openai_auth_url(self) -> str:
        return self.base_url

    @property
    def claude_base_url(self) -> str:
        return self.base_url

    @property
    def claude_auth_url(self) -> str:
        return self.base_url

    @property
    def antigravity_base_url(self) -> str:
        return self.base_url

    @property
    def google_auth_url(self) -> str:
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        """The OpenAI API as the OpenAI SDK takes it (``/v1`` included), for API-key accounts."""
        return f"{self.base_url}/openai/v1"

    def env(self) -> dict[str, str]:
        """The `SUBLANE_*` upstream URL settings that point a gateway at this simulator."""
        return {
            "SUBLANE_CODEX_BASE_URL": self.codex_base_url,
            "SUBLANE_OPENAI_AUTH_URL": self.openai_auth_url,
            "SUBLANE_CLAUDE_BASE_URL": self.claude_base_url,
            "SUBLANE_CLAUDE_AUTH_URL": self.claude_auth_url,
            "SUBLANE_ANTIGRAVITY_BASE_URL": self.antigravity_base_url,
            "SUBLANE_GOOGLE_AUTH_URL": self.google_auth_url,
            "SUBLANE_GOOGLE_AUTHORIZE_URL": self.google_auth_url + "/o/oauth2/v2/auth",
            "SUBLANE_GOOGLE_USERINFO_URL": self.google_auth_url + "/oauth2/v2/userinfo",
            "SUBLANE_OPENAI_BASE_URL": self.openai_base_url,
        }

    # == accounts ================================================================================

    def create_account(self, provider: Provider, **options: Any) -> SimAccount:
        """Create an account; options: `account_id` (sim id), `email`, `plan`, `project_id`,
        `models`, `access_ttl_s`, `quota_cost`, `require_account_id`, `require_stream`, `onboarded`,
        `models_listable`.
        """
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}; expected one of {PROVIDERS}")
        if "models" in options and options["models"] is not None:
            options["models"] = tuple(options["models"])
        with self._lock:
            account = self._accounts.create(provider, self.clock.now(), **options)
            return self._snapshot(account)

    def account(self, account_id: str) -> SimAccount:
        with self._lock:
            return self._snapshot(self._accounts.get(account_id))

    def accounts(self) -> list[SimAccount]:
        with self._lock:
            return [self._snapshot(a) for a in self._accounts.all()]

    def account_state(self, account_id: str) -> dict[str, Any]:
        """Everything about an account as JSON: identity, secrets, options, quota, counters, script."""
        with self._lock:
            account = self._accounts.get(account_id)
            now = self.clock.now()
            for window in account.quota.values():
                window.roll(now)
            state = account.summary(now)
            state["credentials"] = credential_file(account, now)
            state["counters"] = self._counters.of(account_id).as_dict()
            state["script"] = self._scripts.pending(account_id)
            state["default_behaviour"] = self._scripts.default(account_id).as_dict()
            return state

    def update_account(self, account_id: str, **options: Any) -> SimAccount:
        """Change account options (`require_account_id`, `require_stream`, `quota_cost`, `models`,
        `access_ttl_s`, `onboarded`, `models_listable`)."""
        unknown = set(options) - _UPDATABLE
        if unknown:
            raise ValueError(f"cannot update {sorted(unknown)}; updatable: {sorted(_UPDATABLE)}")
        with self._lock:
            account = self._accounts.get(account_id)
            for name, value in options.items():
                setattr(account, name, tuple(value) if name == "models" else value)
            return self._snapshot(account)

    def credentials(self, account_id: str) -> dict[str, Any]:
        """The account's current credential file (`auth.json`, `.credentials.json` or token JSON)."""
        with self._lock:
            return credential_file(self._accounts.get(account_id), self.clock.now())

    def expire_access_tokens(self, account_id: str) -> None:
        """Make every access token of the account expired now (the next call gets a 401)."""
        with self._lock:
            self._accounts.expire_access_tokens(self._accounts.get(account_id), self.clock.now())

    def revoke_access_tokens(self, account_id: str) -> None:
        with self._lock:
            self._accounts.revoke_access_tokens(self._accounts.get(account_id))

    def revoke_refresh_token(self, account_id: str) -> None:
        """Permanently reject the refresh token (Codex `refresh_token_invalidated`, else `invalid_grant`)."""
        with self._lock:
            self._accounts.get(account_id).refresh_state = "revoked"

    def expire_refresh_token(self, account_id: str) -> None:
        """Permanently reject the refresh token as expired (Codex `refresh_token_expired`)."""
        with self._lock:
            self._accounts.get(account_id).refresh_state = "expired"

    def prepare_login(self, provider: Provider, account_id: str) -> None:
        """The next `/oauth/authorize` for `provider` signs in as this account (FIFO).

        Without a prepared account an authorize request creates a fresh account.
        """
        with self._lock:
            if self._accounts.get(account_id).provider != provider:
                raise ValueError(f"{account_id} is not a {provider} account")
            self.logins.prepare(provider, account_id)

    # == scripting ===============================================================================

    def script(self, account_id: str, *behaviours: Behaviour, model: str | None = None) -> None:
        """Queue behaviours for the account's next model requests (optionally for one model only)."""
        with self._lock:
            self._accounts.get(account_id)
            self._scripts.push(account_id, list(behaviours), model)

    def set_client_floor(
        self, provider: Provider, model: str, version: str | None, *, refusal_delay_s: float = 0.0
    ) -> None:
        """CLIENT-3: the lowest client version ``provider`` serves ``model`` to (``None``: no floor).

        A request below it is refused as the real upstream refuses it (``_floors``), after
        ``refusal_delay_s`` (an upstream's latency, for tests that act while a refusal is on its way).
        """
        self.floors.set(provider, model, version, refusal_delay_s)

    def set_default(self, account_id: str, behaviour: Behaviour) -> None:
        """What the account does when its queues are empty (initially a plain `Behaviour()`)."""
        with self._lock:
            self._accounts.get(account_id)
            self._scripts.set_default(account_id, behaviour)

    def clear_script(self, account_id: str) -> None:
        with self._lock:
            self._scripts.clear(account_id)

    def script_refresh(self, account_id: str, *outcomes: RefreshOutcome) -> None:
        """Queue outcomes for the account's next token-endpoint calls."""
        with self._lock:
            self._accounts.get(account_id)
            self._scripts.push_refresh(account_id, list(outcomes))

    def script_quota_reads(self, account_id: str, *outcomes: QuotaReadOutcome) -> None:
        """Queue outcomes for the account's next quota reads (failed, stale); then normal answers."""
        with self._lock:
            self._accounts.get(account_id)
            self._scripts.push_quota_reads(account_id, list(outcomes))

    def quota_reads(self, account_id: str | None = None) -> int:
        """How many quota reads the account (or every account) received."""
        with self._lock:
            if account_id is not None:
                return self._counters.of(account_id).quota_reads
            return sum(c.quota_reads for c in self._counters.all().values())

    def set_quota(
        self,
        account_id: str,
        window: str,
        *,
        used_percent: float | None = None,
        reset_in_s: float | None = None,
    ) -> dict[str, Any]:
        """Set a usage window: Codex `primary`/`secondary`, Claude `five_hour`/`seven_day`,
        Antigravity a model id. Returns the account's quota state."""
        with self._lock:
            account = self._accounts.get(account_id)
            now = self.clock.now()
            if window not in account.quota:
                raise KeyError(f"{account_id} has no quota window {window!r}; has {sorted(account.quota)}")
            target = account.quota[window]
            target.roll(now)
            if used_percent is not None:
                target.used_percent = max(0.0, min(100.0, used_percent))
            if reset_in_s is not None:
                target.reset_at = now + reset_in_s
            return {name: w.as_dict(now) for name, w in account.quota.items()}

    def quota(self, account_id: str) -> dict[str, Any]:
        with self._lock:
            account = self._accounts.get(account_id)
            now = self.clock.now()
            for window in account.quota.values():
                window.roll(now)
            return {name: w.as_dict(now) for name, w in account.quota.items()}

    def advance_clock(self, seconds: float) -> float:
        return self.clock.advance(seconds)

    # == introspection ===========================================================================

    def counters(self, account_id: str) -> AccountCounters:
        """A copy of the account's counters."""
        with self._lock:
            live = self._counters.of(account_id)
            copy = AccountCounters(**{k: v for k, v in live.as_dict().items() if k != "by_endpoint"})
            copy.by_endpoint.update(live.by_endpoint)
            return copy

    def all_counters(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {account_id: c.as_dict() for account_id, c in self._counters.all().items()}

    def requests(
        self,
        *,
        account_id: str | None = None,
        provider: str | None = None,
        endpoint: str | None = None,
        limit: int | None = None,
    ) -> list[RequestRecord]:
        """Logged requests, oldest first (live records: `outcome` changes when a stream ends)."""
        with self._lock:
            return self._log.select(account_id=account_id, provider=provider, endpoint=endpoint, limit=limit)

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    def reset(self) -> None:
        """Forget all accounts, scripts, logs, counters, cache entries and logins, and put the clock
        and the WebSocket age limit back to their initial settings (real time unless a start time
        was given)."""
        with self._lock:
            self.clock.reset()
            self.ws_max_age_s = self._initial_ws_max_age_s
            self._accounts.remove_all()
            self._scripts.reset()
            self._log.clear()
            self._counters.clear()
            self._cache.clear()
            self.logins.reset()
            self.floors.clear()
            self._rng.seed(self.seed)

    # == used by the protocol handlers ===========================================================

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def record(
        self,
        *,
        provider: str,
        endpoint: str,
        method: str,
        path: str,
        query: str,
        headers: dict[str, str],
        raw_body: bytes,
        transport: str = "http",
        body: Any = None,
        peer: str | None = None,
    ) -> RequestRecord:
        if body is None and raw_body:
            body = _loggable(raw_body)
        with self._lock:
            return self._log.add(
                at=self.clock.now(),
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

    def authenticate(
        self, record: RequestRecord, token: str | None, provider: Provider
    ) -> tuple[Account | None, TokenKind, AuthProblem | None]:
        """Resolve the presented secret and attribute the request to its account."""
        if not token:
            return None, "access", "unknown"
        with self._lock:
            account, kind, problem = self._accounts.authenticate(token, self.clock.now())
            if account is not None and account.provider != provider:
                return None, kind, "wrong_provider"
            if account is not None:
                self.attribute(record, account, token, kind)
            return account, kind, problem

    def attribute(self, record: RequestRecord, account: Account, token: str | None, kind: str) -> None:
        with self._lock:
            record.account_id = account.id
            record.token = token
            record.token_kind = kind
            counters = self._counters.of(account.id)
            counters.requests += 1
            counters.by_endpoint[record.endpoint] += 1
            if record.endpoint.endswith(".token"):
                counters.refreshes += 1

    def quota_read(self, account: Account) -> tuple[QuotaReadOutcome, Account, float]:
        """Count a quota read and take its scripted outcome: ``(outcome, account to report, time)``.

        A `stale` outcome reports a copy of the account whose windows are full and already reset,
        as seen `age_s` ago."""
        with self._lock:
            self._counters.of(account.id).quota_reads += 1
            outcome = self._scripts.take_quota_read(account.id)
            now = self.clock.now()
            if outcome.kind != "stale":
                return outcome, account, now
            stale = {name: QuotaWindow(100.0, w.window_s, now - 1) for name, w in account.quota.items()}
            return outcome, dataclasses.replace(account, quota=stale), now - outcome.age_s

    def counters_of(self, account_id: str) -> AccountCounters:
        return self._counters.of(account_id)

    def find_refresh(self, token: str) -> Account | None:
        with self._lock:
            return self._accounts.by_refresh_token(token)

    def take_refresh_outcome(self, account_id: str) -> RefreshOutcome:
        with self._lock:
            return self._scripts.take_refresh(account_id)

    def rotate_tokens(self, account: Account, *, rotate_refresh: bool) -> None:
        with self._lock:
            self._accounts.issue_tokens(account, self.clock.now(), rotate_refresh=rotate_refresh)

    def create_login_account(self, provider: Provider) -> Account:
        with self._lock:
            return self._accounts.create(provider, self.clock.now())

    def get_account(self, account_id: str) -> Account:
        with self._lock:
            return self._accounts.get(account_id)

    def begin_turn(
        self,
        record: RequestRecord,
        account: Account,
        model: str,
        *,
        prompt_tokens: int,
        cache_key: str | None,
        consume_script: bool = True,
        cache_lifetime_s: float = CACHE_LIFETIME_S,
    ) -> Turn:
        """Pick what this model request does and start counting it.

        Order: the next scripted behaviour; else an exhausted quota window (a 429 in the
        provider's quota shape, `turn.quota_window` names it); else the account default.
        Successful kinds charge `quota_cost` to the windows and consult the cache model.
        """
        with self._lock:
            now = self.clock.now()
            record.model = model
            behaviour = self._scripts.take(account.id, model) if consume_script else None
            quota_window: str | None = None
            if behaviour is None:
                quota_window = self._exhausted_window(account, model, now)
                behaviour = Behaviour.error(429) if quota_window else self._scripts.default(account.id)
            if behaviour.kind != "error":
                self._charge(account, model, now)
            turn = Turn(
                record=record,
                account=account,
                counters=self._counters.of(account.id),
                behaviour=behaviour,
                model=model,
                rng=random.Random(f"{self.seed}:{record.seq}"),  # noqa: S311
                lock=self._lock,
                quota_window=quota_window,
            )
            prompt = behaviour.input_tokens if behaviour.input_tokens is not None else prompt_tokens
            if behaviour.kind == "error":
                cached = 0
            elif behaviour.cached_tokens is not None:
                cached = min(behaviour.cached_tokens, prompt)
            else:
                cached = self._cache.lookup(account.id, cache_key, prompt, now, cache_lifetime_s)
            turn.usage = Usage(
                prompt_tokens=prompt, cached_tokens=cached, output_tokens=0, reasoning_tokens=0
            )
            turn.open()
            return turn

    def _exhausted_window(self, account: Account, model: str, now: float) -> str | None:
        if account.provider == "antigravity":
            window = account.quota.get(model)
            if window is None:
                return None
            window.roll(now)
            return model if window.exhausted else None
        for name, window in account.quota.items():
            window.roll(now)
            if window.exhausted:
                return name
        return None

    def _charge(self, account: Account, model: str, now: float) -> None:
        if account.quota_cost <= 0:
            return
        names = [model] if account.provider == "antigravity" else list(account.quota)
        for name in names:
            window = account.quota.get(name)
            if window is not None:
                window.roll(now)
                window.charge(account.quota_cost)

    def _snapshot(self, account: Account) -> SimAccount:
        return SimAccount(
            id=account.id,
            provider=account.provider,
            email=account.email,
            plan=account.plan,
            account_id=account.account_id,
            organization_id=account.organization_id,
            project_id=account.project_id,
            api_key=account.api_key,
            access_token=account.access_token,
            access_expires_at=account.access_expires_at,
            refresh_token=account.refresh_token,
            id_token=account.id_token,
            credentials=credential_file(account, self.clock.now()),
        )


def _loggable(raw_body: bytes) -> Any:
    if len(raw_body) > MAX_LOGGED_BODY:
        return {"_sim_omitted_bytes": len(raw_body)}
    try:
        return json.loads(raw_body)
    except ValueError:
        return raw_body.decode("utf-8", "replace")
