"""SubLane core: what every other package shares.

Settings, the SQLModel schema and its Alembic migrations, the typed signal bus, credential
encryption, the clock, identifiers and the error catalogue.
"""

from sublane_core import _signals as signals
from sublane_core._background import (
    background_steps,
    background_thread_begins,
    lower_background_threads,
)
from sublane_core._clock import Clock, FakeClock, ShiftedClock, SystemClock
from sublane_core._crypto import (
    CredentialCipher,
    CredentialDecryptError,
    CredentialKeyError,
    decode_key,
    load_or_create_key,
)
from sublane_core._db import create_db_engine, is_sqlite
from sublane_core._deadline import TIMER_SLACK_S, MovingDeadline
from sublane_core._errors import ERROR_CATALOGUE, ErrorSpec, SubLaneError
from sublane_core._ids import new_hex_id, new_request_id, new_secret_token, new_uuid, sha256_hex
from sublane_core._immutable import immutable
from sublane_core._json import NotStrictJson
from sublane_core._json import dumps as json_dumps
from sublane_core._json import loads as json_loads
from sublane_core._json import loads_strict as json_loads_strict
from sublane_core._json import loads_text as json_loads_text
from sublane_core._logging import (
    RedactingFilter,
    RequestIdFilter,
    bind_request_id,
    configure_logging,
    current_request_id,
    redact,
)
from sublane_core._migrations import (
    current_revision,
    head_revision,
    known_revisions,
    upgrade_configured_database,
    upgrade_database,
)
from sublane_core._outbox import ALERT_EVENTS, AlertOutbox, account_ref, group_ref
from sublane_core._proxy_url import checked_proxy_url, masked_proxy_url
from sublane_core._schema import (
    ACCOUNT_WIDE,
    AFFINITY_SCOPE_AUTO,
    AUTH_OK,
    AUTH_REAUTH_REQUIRED,
    BUDGET_PERIODS,
    DEFAULT_GROUP_NAME,
    DEFAULT_MAX_CONCURRENCY,
    MAX_CONCURRENCY_RANGE,
    NO_GROUP,
    NO_PROVIDER,
    ROLE_ADMIN,
    ROLE_MEMBER,
    SEALED,
    Account,
    AccountCooldown,
    AccountModels,
    Affinity,
    ApiKey,
    AuditEntry,
    ClientVersion,
    GroupAccount,
    GroupAlias,
    GroupMember,
    KeyCheck,
    ModelPriceOverride,
    QuotaObservation,
    RequestRecord,
    ResourceGroup,
    TokenBudget,
    TotpRecoveryCode,
    UpstreamChange,
    UsageAccountDay,
    UsageDay,
    UsageHour,
    User,
    Webhook,
    WebhookDelivery,
    WebSession,
)
from sublane_core._sealing import reseal_database, reseal_rows, sealed_columns
from sublane_core._settings import Settings, settings_help
from sublane_core._text import MAX_JSON_DEPTH, json_problem, storable_text
from sublane_core._vocabulary import (
    PLAIN_DIALECT,
    Billing,
    Dialect,
    MeteredRouting,
    Outcome,
    UpstreamOperation,
    WireProtocol,
)

__version__ = "0.1.0"

__all__ = [
    # settings
    "Settings",
    "settings_help",
    # storage
    "create_db_engine",
    "is_sqlite",
    "current_revision",
    "head_revision",
    "known_revisions",
    "upgrade_configured_database",
    "upgrade_database",
    # schema
    "ACCOUNT_WIDE",
    "AFFINITY_SCOPE_AUTO",
    "AUTH_OK",
    "AUTH_REAUTH_REQUIRED",
    "DEFAULT_GROUP_NAME",
    "DEFAULT_MAX_CONCURRENCY",
    "MAX_CONCURRENCY_RANGE",
    "ROLE_ADMIN",
    "ROLE_MEMBER",
    "Account",
    "AccountCooldown",
    "Affinity",
    "ApiKey",
    "AuditEntry",
    "GroupAccount",
    "GroupMember",
    "KeyCheck",
    "AccountModels",
    "QuotaObservation",
    "GroupAlias",
    "RequestRecord",
    "ResourceGroup",
    "User",
    "WebSession",
    "Webhook",
    "WebhookDelivery",
    "ClientVersion",
    # schema: team controls
    "BUDGET_PERIODS",
    "NO_GROUP",
    "NO_PROVIDER",
    "TokenBudget",
    "TotpRecoveryCode",
    "UpstreamChange",
    "UsageDay",
    "UsageHour",
    "UsageAccountDay",
    "ModelPriceOverride",
    # credentials
    "CredentialCipher",
    "CredentialDecryptError",
    "CredentialKeyError",
    "decode_key",
    "load_or_create_key",
    "SEALED",
    "sealed_columns",
    "reseal_rows",
    "reseal_database",
    # events
    "signals",
    "checked_proxy_url",
    "masked_proxy_url",
    "ALERT_EVENTS",
    "AlertOutbox",
    "account_ref",
    "group_ref",
    # shared vocabulary
    "Outcome",
    "UpstreamOperation",
    "WireProtocol",
    "Billing",
    "MeteredRouting",
    "Dialect",
    "PLAIN_DIALECT",
    # time, identifiers, errors, logs
    "Clock",
    "FakeClock",
    "ShiftedClock",
    "SystemClock",
    "MovingDeadline",
    "TIMER_SLACK_S",
    "immutable",
    "new_hex_id",
    "new_request_id",
    "new_uuid",
    "new_secret_token",
    "sha256_hex",
    "ERROR_CATALOGUE",
    "ErrorSpec",
    "SubLaneError",
    "RedactingFilter",
    "RequestIdFilter",
    "bind_request_id",
    "configure_logging",
    "current_request_id",
    "redact",
    # text that can be stored and sent (OPS-1)
    "MAX_JSON_DEPTH",
    "json_problem",
    "storable_text",
    # JSON on the hot path: the stdlib's semantics, Rust's speed
    "json_dumps",
    "json_loads",
    "json_loads_strict",
    "NotStrictJson",
    "json_loads_text",
    # background threads below the event loop (issue #49)
    "background_steps",
    "background_thread_begins",
    "lower_background_threads",
]
