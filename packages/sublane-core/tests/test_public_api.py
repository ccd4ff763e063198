"""The public surface of sublane-core changes only on purpose: update this list with the change."""

from __future__ import annotations

import sublane_core

EXPECTED = [
    "Settings", "settings_help",
    "create_db_engine", "is_sqlite",
    "current_revision", "head_revision", "known_revisions", "upgrade_configured_database", "upgrade_database",
    "ACCOUNT_WIDE", "AFFINITY_SCOPE_AUTO", "AUTH_OK", "AUTH_REAUTH_REQUIRED", "DEFAULT_GROUP_NAME",
    "DEFAULT_MAX_CONCURRENCY", "MAX_CONCURRENCY_RANGE", "ROLE_ADMIN", "ROLE_MEMBER",
    "Account", "AccountCooldown", "Affinity", "ApiKey", "AuditEntry", "GroupAccount", "GroupMember",
    "KeyCheck", "AccountModels", "QuotaObservation", "GroupAlias", "RequestRecord", "ResourceGroup",
    "User", "WebSession", "Webhook", "WebhookDelivery", "ClientVersion",
    "BUDGET_PERIODS", "NO_GROUP", "NO_PROVIDER", "TokenBudget", "TotpRecoveryCode", "UpstreamChange",
    "UsageDay", "UsageHour", "UsageAccountDay", "ModelPriceOverride",
    "CredentialCipher", "CredentialDecryptError", "CredentialKeyError", "decode_key", "load_or_create_key",
    "SEALED", "sealed_columns", "reseal_rows", "reseal_database",
    "signals", "checked_proxy_url", "masked_proxy_url",
    "ALERT_EVENTS", "AlertOutbox", "account_ref", "group_ref",
    "Outcome", "UpstreamOperation", "WireProtocol", "Billing", "MeteredRouting", "Dialect", "PLAIN_DIALECT",
    "Clock", "FakeClock", "ShiftedClock", "SystemClock", "MovingDeadline", "TIMER_SLACK_S", "immutable",
    "new_hex_id", "new_request_id", "new_uuid", "new_secret_token", "sha256_hex",
    "ERROR_CATALOGUE", "ErrorSpec", "SubLaneError", "RedactingFilter", "RequestIdFilter", "bind_request_id",
    "configure_logging", "current_request_id", "redact",
    "MAX_JSON_DEPTH", "json_problem", "storable_text",
    "json_dumps", "json_loads", "json_loads_strict", "NotStrictJson", "json_loads_text",
    "background_steps", "background_thread_begins", "lower_background_threads",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_core.__all__ == EXPECTED
    for name in EXPECTED:
        assert hasattr(sublane_core, name), name
