"""The error catalogue: every stable ``code`` SubLane answers with, its HTTP status and message.

Codes are a contract (SPEC §14): clients and scripts branch on them. Add codes, never rename them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    """What a code means on the wire."""

    status: int
    message: str


ERROR_CATALOGUE: Final[dict[str, ErrorSpec]] = {
    # -- request shape ---------------------------------------------------------------------------
    "invalid_json": ErrorSpec(400, "The request body is not valid JSON."),
    "invalid_request": ErrorSpec(400, "The request is not valid."),
    "unsupported_media_type": ErrorSpec(415, "Send the body as application/json."),
    "body_too_large": ErrorSpec(413, "The request body is too large."),
    "body_timeout": ErrorSpec(408, "The request body did not arrive in time."),
    "malformed_http": ErrorSpec(400, "The request is not well-formed HTTP/1.1."),
    "headers_too_large": ErrorSpec(431, "The request's headers are larger than 64 KiB."),
    "cross_origin": ErrorSpec(403, "Cross-origin requests may not change anything."),
    "not_found": ErrorSpec(404, "Not found."),
    "method_not_allowed": ErrorSpec(405, "Method not allowed."),
    "storage_unavailable": ErrorSpec(503, "The database is busy or failing; try again shortly."),
    # -- sign-in and roles -----------------------------------------------------------------------
    "invalid_credentials": ErrorSpec(401, "Wrong username or password."),
    "totp_required": ErrorSpec(401, "Enter the code of your authenticator app."),
    "invalid_totp": ErrorSpec(401, "That code is not valid."),
    "totp_setup_required": ErrorSpec(403, "Turn on two-factor sign-in first (My account)."),
    "totp_not_enabled": ErrorSpec(409, "Two-factor sign-in is not on."),
    "totp_already_enabled": ErrorSpec(409, "Two-factor sign-in is already on."),
    "totp_not_set_up": ErrorSpec(409, "Start the set-up first."),
    "too_many_attempts": ErrorSpec(429, "Too many failed sign-ins; wait before trying again."),
    "unauthenticated": ErrorSpec(401, "Sign in first."),
    "forbidden": ErrorSpec(403, "You may not do that."),
    "setup_not_available": ErrorSpec(409, "Set-up is finished or the link is not valid."),
    "wrong_password": ErrorSpec(400, "The current password is not right."),
    "sso_not_configured": ErrorSpec(409, "Single sign-on is not configured here."),
    "sso_public_url_required": ErrorSpec(
        409, "Single sign-on needs SUBLANE_PUBLIC_URL (or a trusted proxy's forwarded host)."
    ),
    "sso_unavailable": ErrorSpec(502, "The OpenID provider could not be reached."),
    # -- management ------------------------------------------------------------------------------
    "name_taken": ErrorSpec(409, "That name is taken."),
    "last_admin": ErrorSpec(409, "The last enabled admin cannot be demoted or disabled."),
    "key_limit_reached": ErrorSpec(409, "A user may have at most 20 live keys."),
    "not_group_member": ErrorSpec(400, "The key's owner is not a member of that group."),
    "group_in_use": ErrorSpec(409, "The group still has keys."),
    "alias_shadows_model": ErrorSpec(409, "An alias may not name a model an account of the group lists."),
    "alias_chain": ErrorSpec(409, "An alias may not point to another alias."),
    "webhook_limit_reached": ErrorSpec(409, "A workspace has at most 16 webhooks."),
    "invalid_url": ErrorSpec(400, "The webhook cannot be sent to that URL."),
    "bad_bundle": ErrorSpec(400, "The bundle cannot be opened: a wrong passphrase, or a damaged file."),
    "unknown_provider": ErrorSpec(400, "Unknown provider."),
    "invalid_credentials_file": ErrorSpec(400, "The credentials are not a file this provider writes."),
    "oauth_state_unknown": ErrorSpec(400, "This login is unknown, expired or already used; start it again."),
    "oauth_callback_invalid": ErrorSpec(400, "The pasted text holds no authorization code for this login."),
    "oauth_exchange_failed": ErrorSpec(400, "The provider did not accept the authorization code."),
    # -- client API: keys and admission (ADM) ----------------------------------------------------
    "invalid_api_key": ErrorSpec(401, "The API key is missing, wrong, revoked, expired or paused."),
    "workspace_busy": ErrorSpec(429, "SubLane is at capacity; try again shortly."),
    "member_busy": ErrorSpec(429, "You have too many requests running at once."),
    "member_rate_limited": ErrorSpec(429, "You have sent too many requests this minute."),
    "token_budget_exceeded": ErrorSpec(429, "Your token budget for this period is used up."),
    "metered_budget_exhausted": ErrorSpec(
        429, "This month's spending cap on metered (API-key) accounts is reached."
    ),
    # -- client API: routing ---------------------------------------------------------------------
    "model_not_found": ErrorSpec(404, "No account in this key's group serves that model."),
    "model_catalog_unavailable": ErrorSpec(503, "The group's model catalogues are not known yet."),
    "unsupported_for_provider": ErrorSpec(400, "The serving provider cannot do what the request asks."),
    "unpriced_model": ErrorSpec(
        400, "That model has no price, so no metered account serves it until an admin prices it."
    ),
    "model_not_allowed": ErrorSpec(403, "The group's model policy does not allow that model."),
    "ip_not_allowed": ErrorSpec(403, "The API key may not be used from this address."),
    "no_account_available": ErrorSpec(503, "No account in this key's group can serve the request now."),
    "account_queue_full": ErrorSpec(429, "Too many requests are waiting for an account."),
    "account_wait_timeout": ErrorSpec(429, "No account slot became free in time."),
    "account_cooling": ErrorSpec(429, "The account is cooling down after upstream rate limiting."),
    "model_cooling": ErrorSpec(429, "The model is cooling down on this account after failures."),
    "model_rate_limited": ErrorSpec(429, "The provider rate-limited this model on the account."),
    "quota_exhausted": ErrorSpec(403, "The account's subscription quota is used up."),
    "account_refresh_failed": ErrorSpec(503, "The account's credentials could not be refreshed."),
    "reauth_required": ErrorSpec(503, "The account must be signed in again."),
    "upstream_forbidden": ErrorSpec(403, "The provider refused this account's request (HTTP 403)."),
    "upstream_rate_limited": ErrorSpec(429, "The provider rate-limited the account; try again later."),
    "upstream_error": ErrorSpec(502, "The provider failed to answer."),
    "egress_proxy_failed": ErrorSpec(
        502, "The account's egress proxy could not be reached or refused the tunnel."
    ),
    "upstream_stream_error": ErrorSpec(502, "The provider's stream broke off."),
    "upstream_timeout": ErrorSpec(504, "The provider did not answer in time."),
    "request_timeout": ErrorSpec(504, "The request ran past its deadline."),
    "turn_in_progress": ErrorSpec(409, "A response is still running on this connection; wait for it."),
    "shutting_down": ErrorSpec(503, "SubLane is shutting down."),
    "coordination_unavailable": ErrorSpec(
        503, "The replicas' shared limits cannot be reached; try again shortly."
    ),
    "internal_error": ErrorSpec(500, "Something went wrong inside SubLane."),
}


class SubLaneError(Exception):
    """An error with a catalogued code; the web layer renders it in the caller's protocol shape."""

    def __init__(
        self,
        code: str,
        message: str | None = None,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        spec = ERROR_CATALOGUE.get(code)
        if spec is None:
            raise KeyError(f"error code {code!r} is not in the catalogue")
        self.code = code
        self.message = message or spec.message
        self.status = status if status is not None else spec.status
        self.retry_after = retry_after
        # Headers the answer carries besides ``Retry-After`` (e.g. ``X-Token-Budget-Id``), in every
        # protocol's shape; lower-case names. Never a secret.
        self.headers: dict[str, str] = {name.lower(): value for name, value in (headers or {}).items()}
        # The routing explanation of a request refused during routing (HIST-12), for its record.
        self.routing: dict[str, Any] | None = None
        super().__init__(f"{code}: {self.message}")

    def body(self) -> dict[str, dict[str, str]]:
        """The management API's error shape: ``{"error": {"code", "message"}}``."""
        return {"error": {"code": self.code, "message": self.message}}
