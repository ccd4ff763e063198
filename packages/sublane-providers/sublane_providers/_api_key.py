"""What every API-key provider shares (PAID-1): its credentials, their check, its limits' headers.

An API-key account is *metered*: billed per token, no OAuth, nothing to refresh. Its credentials
are ``{"api_key", "base_url"}`` (``base_url`` as the provider's official SDK takes it) and, for a
server that lists no models, ``"models"``. The key is checked by listing models before the account
is stored (:class:`ApiKeyAdapter.check_credentials`). The upstream's own limits arrive in answer
headers — OpenAI's ``x-ratelimit-*`` and Anthropic's ``anthropic-ratelimit-*`` — and are read as
quota windows (PAID-4): a window whose ``remaining`` is 0 is reached until its reset. A 401 has no
refresh to try: :meth:`ApiKeyAdapter.refresh` fails permanently, so the account is marked
``reauth_required`` with the error ``unauthorized`` until an admin gives a new key.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

from sublane_core import json_loads, signals
from sublane_providers._adapter import ProviderAdapter, Quota
from sublane_providers._credentials import (
    AccountIdentity,
    CredentialFormatError,
    CredentialsRefused,
    ImportedCredentials,
    require_token,
)
from sublane_providers._http import MAX_RETRY_AFTER_S, header, parse_retry_after
from sublane_providers._refresh import RefreshedCredentials, RefreshFailed
from sublane_providers._types import RETRYABLE_STATUSES, FailureKind, UpstreamFailure

#: The auth error an API-key account gets when its key is refused (PAID-4).
UNAUTHORIZED_CODE = "unauthorized"
#: What an API-key account's plan reads as in the views.
API_KEY_PLAN = "api_key"
MAX_LISTED_MODELS = 1000
MAX_MODEL_ID_CHARS = 256
MAX_ERROR_MESSAGE_CHARS = 500
#: What a renewal that names only a new key keeps of the stored bundle.
KEPT_ON_RENEWAL = ("base_url", "models")

# Anything shaped like an API key or a bearer token in an upstream's error text (OpenAI's 401 names
# part of the key it refused): never relayed.
_SECRET_LIKE = re.compile(r"\b(?:sk-|sk_|AIza|key-)[A-Za-z0-9_*.\-]{6,}|\bBearer\s+\S+", re.IGNORECASE)


def parse_api_key_credentials(
    provider: str,
    data: Mapping[str, Any],
    *,
    default_base_url: str | None,
    accepts_models: bool = False,
) -> ImportedCredentials:
    """``{"api_key", "base_url"?, "models"?}`` as a sealed bundle; :class:`CredentialFormatError`
    when a field is unusable. ``default_base_url`` ``None``: the base URL is required.
    ``accepts_models``: the server may list no models, so the import may name them."""
    api_key = require_token(data, "api_key", "credentials")
    base_url = _base_url(data.get("base_url"), default_base_url)
    bundle: dict[str, Any] = {"api_key": api_key, "base_url": base_url}
    if accepts_models and data.get("models") is not None:
        bundle["models"] = _model_list(data["models"])
    return ImportedCredentials(
        provider=provider,
        bundle=bundle,
        expires_at=None,
        identity=AccountIdentity(plan=API_KEY_PLAN, subject=key_fingerprint(api_key)),
    )


def key_fingerprint(api_key: str) -> str:
    """A short digest telling two keys apart in the views; it reveals nothing of the key."""
    return "key-" + hashlib.sha256(api_key.encode()).hexdigest()[:12]


def _base_url(value: Any, default: str | None) -> str:
    if value is None or value == "":
        if default is None:
            raise CredentialFormatError("credentials need a 'base_url' (the server's API address)")
        return default.rstrip("/")
    if not isinstance(value, str) or len(value) > 2048:
        raise CredentialFormatError("credentials: 'base_url' must be a URL")
    try:
        parts = urlsplit(value.strip())
        port = parts.port  # a malformed port raises
    except ValueError:
        raise CredentialFormatError("credentials: 'base_url' is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise CredentialFormatError("credentials: 'base_url' must be an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise CredentialFormatError("credentials: 'base_url' may not carry a user or password")
    if parts.query or parts.fragment:
        raise CredentialFormatError("credentials: 'base_url' may not carry a query or fragment")
    import httpx  # here, not at import: a default start imports no httpx (issue #49)

    try:
        httpx.URL(value.strip())  # what the calls will be sent to must be a URL httpx can send to
    except httpx.InvalidURL:
        raise CredentialFormatError("credentials: 'base_url' is not a valid URL") from None
    return value.strip().rstrip("/")


def _model_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not value or len(value) > MAX_LISTED_MODELS:
        raise CredentialFormatError(
            f"credentials: 'models' must be a list of 1 to {MAX_LISTED_MODELS} model ids"
        )
    models: list[str] = []
    for model in value:
        if not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL_ID_CHARS:
            raise CredentialFormatError("credentials: every entry of 'models' must be a model id")
        if model.strip() not in models:
            models.append(model.strip())
    return models


# -- the upstream's limits as quota (PAID-4) --------------------------------------------------------

# family prefix, kind → the window's name
_OPENAI_KINDS = ("requests", "tokens")
_ANTHROPIC_KINDS = ("requests", "tokens", "input-tokens", "output-tokens")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float | None:
    """OpenAI's reset durations (``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1h2m3.5s"``) in seconds."""
    text = text.strip()
    if not text:
        return None
    position, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if position != len(text):
        try:
            return max(float(text), 0.0)  # a bare number of seconds
        except ValueError:
            return None
    return total


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if number == number and number >= 0 else None  # not NaN, not negative


def _window(
    name: str, limit: float | None, remaining: float | None, resets_at: float | None
) -> signals.QuotaWindow:
    used: float | None = None
    if limit is not None and remaining is not None and limit > 0:
        used = max(0.0, min(100.0, 100.0 * (limit - remaining) / limit))
    return signals.QuotaWindow(
        name,
        used,
        None,
        resets_at,
        limit_reached=remaining is not None and remaining <= 0 and (limit is None or limit > 0),
    )


def rate_limit_windows(headers: Mapping[str, str], now: float) -> tuple[signals.QuotaWindow, ...]:
    """The windows an API answer's rate-limit headers report: OpenAI's ``x-ratelimit-{limit,
    remaining,reset}-{requests,tokens}`` (resets as durations) and Anthropic's
    ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``
    (resets as RFC 3339 times). Windows are named ``requests``, ``tokens``, ``input_tokens``,
    ``output_tokens``; each is a main limit (its exhaustion steers new selections, QUOTA-3)."""
    windows: list[signals.QuotaWindow] = []
    for kind in _OPENAI_KINDS:
        limit = _number(header(headers, f"x-ratelimit-limit-{kind}"))
        remaining = _number(header(headers, f"x-ratelimit-remaining-{kind}"))
        if limit is None and remaining is None:
            continue
        reset_text = header(headers, f"x-ratelimit-reset-{kind}")
        reset = parse_duration(reset_text) if reset_text is not None else None
        windows.append(_window(kind, limit, remaining, now + reset if reset is not None else None))
    for kind in _ANTHROPIC_KINDS:
        limit = _number(header(headers, f"anthropic-ratelimit-{kind}-limit"))
        remaining = _number(header(headers, f"anthropic-ratelimit-{kind}-remaining"))
        if limit is None and remaining is None:
            continue
        windows.append(
            _window(
                kind.replace("-", "_"),
                limit,
                remaining,
                _rfc3339(header(headers, f"anthropic-ratelimit-{kind}-reset")),
            )
        )
    return tuple(windows)


def _rfc3339(value: str | None) -> float | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def api_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """How long a refusal asks to wait: ``retry-after-ms`` (OpenAI), else ``Retry-After`` (seconds
    or an HTTP date), within 1 s … 1 h (COOL-1)."""
    millis = _number(header(headers, "retry-after-ms"))
    if millis is not None:
        seconds = millis / 1000
        return min(max(seconds, 1.0), MAX_RETRY_AFTER_S)
    return parse_retry_after(header(headers, "retry-after"), now)


# -- error answers ----------------------------------------------------------------------------------


def api_error_fields(body: bytes) -> tuple[str | None, str | None]:
    """``(code, message)`` of an API error body in any of the three public shapes: OpenAI's
    ``{"error": {"code", "type", "message"}}``, Anthropic's ``{"type": "error", "error": {"type",
    "message"}}``, Google's ``{"error": {"code": 429, "status", "message"}}``; ``None`` where
    absent. The message is cut short and stripped of anything shaped like a key."""
    try:
        payload = json_loads(body)
    except ValueError:
        return None, None
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        payload = payload[0]  # Google's REST errors sometimes come as a one-element array
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return None, None
    code: str | None = None
    for field in ("code", "status", "type"):
        value = error.get(field)
        if isinstance(value, str) and value and len(value) <= 64:
            code = safe_message(value)  # a code is relayed and watched (CLIENT-7) like the message
            break
    message = error.get("message")
    return code, safe_message(message) if isinstance(message, str) else None


def safe_message(text: str) -> str:
    """An upstream's error text as SubLane may relay it: no key-like token, at most 500 characters."""
    return _SECRET_LIKE.sub("***", text)[:MAX_ERROR_MESSAGE_CHARS]


def classify_api_failure(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    now: float,
    *,
    exhausted_codes: frozenset[str] = frozenset(),
) -> UpstreamFailure:
    """What an API-key upstream's error answer means (PAID-4): 401 → ``unauthorized`` (no refresh
    exists), 403 → forbidden, 429 → a rate limit cooling the account for its ``retry-after`` (or
    ``exhausted_codes``, such as OpenAI's ``insufficient_quota``, and any 402 Payment Required:
    the key's credit is used up),
    408/5xx/529 → transient, any other 4xx → the request's own fault, relayed."""
    code, message = api_error_fields(body)
    code = code or f"http_{status}"
    if status == 401:
        return UpstreamFailure(
            FailureKind.UNAUTHORIZED, status, UNAUTHORIZED_CODE, "The provider refused the API key."
        )
    if status == 403:
        return UpstreamFailure(
            FailureKind.FORBIDDEN, status, code, message or "The provider refused this key's request."
        )
    if status == 429 or status == 402:
        retry_after = api_retry_after(headers, now)
        if code in exhausted_codes or status == 402:  # 402 Payment Required: the key's credit
            return UpstreamFailure(
                FailureKind.QUOTA_EXHAUSTED,
                status,
                code,
                message or "The key's credit is used up.",
                retry_after,
            )
        return UpstreamFailure(
            FailureKind.RATE_LIMITED,
            status,
            code,
            message or "The provider rate-limited the key.",
            retry_after,
        )
    if status in RETRYABLE_STATUSES or status >= 500:
        return UpstreamFailure(
            FailureKind.TRANSIENT,
            status,
            code,
            message or "The provider failed to answer.",
            api_retry_after(headers, now),
        )
    return UpstreamFailure(
        FailureKind.CLIENT_ERROR,
        status,
        code,
        message or f"The provider refused the request (HTTP {status}).",
        param=api_error_param(body),
    )


def api_error_param(body: bytes) -> str | None:
    """The request field an OpenAI-shaped error names (``error.param``: ``"client_metadata"`` for
    an ``unknown_parameter``), so that the client's SDK can say which one; ``None`` when none."""
    try:
        payload = json_loads(body)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    return safe_message(param)[:128] if isinstance(param, str) and param else None


class ApiKeyAdapter(ProviderAdapter):
    """The part of a metered provider's adapter every API-key upstream shares.

    A provider supplies its protocol, :meth:`build_request`, :meth:`new_observer` and
    :meth:`list_models` (the key's check); this base gives the rest: no refresh, rate-limit headers
    as quota, the generic classification of error answers, and :meth:`check_credentials` (the
    :class:`~sublane_providers.ChecksCredentials` capability).
    """

    #: 429 error codes meaning the key's credit (not its rate) is used up.
    exhausted_codes: ClassVar[frozenset[str]] = frozenset()
    #: Where a key imported without a ``base_url`` is served (the provider's setting, set by the
    #: adapter); empty: the provider has no public API, so every import must name its server.
    default_base_url: str = ""
    #: Whether an import may name the account's ``models`` (a server that lists none); the web's
    #: add form asks for them only then (``GET /api/providers``: ``api_key.models``).
    names_models: ClassVar[bool] = False

    # -- credentials ------------------------------------------------------------------------------

    @staticmethod
    def api_key(bundle: Mapping[str, Any]) -> str:
        return str(bundle["api_key"])

    def base_url(self, bundle: Mapping[str, Any]) -> str:
        """The key's base URL: the account's own, else the provider's setting
        (:attr:`default_base_url`: a key imported without one follows the setting)."""
        own = bundle.get("base_url")
        return str(own).rstrip("/") if isinstance(own, str) and own else self.default_base_url

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """An API key cannot be refreshed: a refused key stays refused until an admin replaces it."""
        raise RefreshFailed(UNAUTHORIZED_CODE, permanent=True)

    async def check_credentials(self, imported: ImportedCredentials) -> ImportedCredentials:
        """PAID-1: the key must list models before the account is stored; refused keys, unreachable
        servers and answers that are no model list raise :class:`CredentialsRefused`."""
        import httpx  # here, not at import: a default start imports no httpx (issue #49)

        try:
            models = await self.list_models(imported.bundle)
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            if status in (401, 403):
                raise CredentialsRefused(f"The provider refused the API key (HTTP {status}).") from None
            raise CredentialsRefused(f"The provider's model list answered HTTP {status}.") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise CredentialsRefused(f"The provider could not be reached ({type(exc).__name__}).") from None
        except ValueError as exc:
            raise CredentialsRefused(f"The provider's model list could not be read: {exc}") from None
        if not models:
            raise CredentialsRefused("The key lists no model.")
        return imported

    def renewal_credentials(self, stored: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """A new key given alone keeps the account's own ``base_url`` and named ``models`` (the
        :class:`~sublane_providers.RenewsCredentials` capability): an admin replacing a refused key
        must not move the account to the provider's public API or lose its catalogue."""
        renewal = dict(given)
        for field in KEPT_ON_RENEWAL:
            if renewal.get(field) in (None, "") and stored.get(field) is not None:
                renewal[field] = stored[field]
        return renewal

    @abstractmethod
    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """The key's models; raises ``httpx.HTTPStatusError`` for a refused key."""

    # -- answers ----------------------------------------------------------------------------------

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        return classify_api_failure(status, headers, body, now, exhausted_codes=self.exhausted_codes)

    def quota_from_headers(self, headers: Mapping[str, str], now: float) -> Quota:
        return API_KEY_PLAN, rate_limit_windows(headers, now)

    async def read_quota(self, bundle: Mapping[str, Any], now: float) -> Quota:
        """An API has no quota endpoint: its limits are seen only on answers' headers
        (:meth:`quota_from_headers`), which a read with no windows leaves standing."""
        return API_KEY_PLAN, ()
