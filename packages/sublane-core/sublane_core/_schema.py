"""The shared schema: SQLModel tables every package reads and writes.

Alembic migrations (``sublane_core/migrations``) are the only way these tables are created or
changed (STORE-1); a test checks that the migrated database matches these declarations. Times are
Unix seconds as floats. Runtime tables are designed now so later migrations stay additive.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

# Names for constraints, so that Alembic batch migrations on SQLite can address them later.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

ROLE_ADMIN = "admin"
ROLE_MEMBER = "member"
AUTH_OK = "ok"
AUTH_REAUTH_REQUIRED = "reauth_required"
AFFINITY_SCOPE_AUTO = "auto"
ACCOUNT_WIDE = ""  # the ``model`` of an account-wide cooldown row
DEFAULT_GROUP_NAME = "default"
DEFAULT_MAX_CONCURRENCY = 30
#: A provider's name (up to 32 characters, PAID-1's ``openai-compatible`` has 17). SQLite keeps the
#: ``VARCHAR(16)`` its tables were created with: it enforces no length, and changing a column there
#: means rebuilding ``accounts``, whose rows other tables cascade from (migration 0024).
PROVIDER_NAME = sa.String(32).with_variant(sa.String(16), "sqlite")
MAX_CONCURRENCY_RANGE = (1, 1000)
#: The ``info`` of a column holding values sealed with the credential key (SCALE-8). Whatever
#: changes the key (``import-sqlite``, a restore under another key, bundles) re-seals every column
#: so marked (``sublane_core.sealed_columns``); a test fails on a sealed value in an unmarked column.
SEALED: dict[str, Any] = {"sealed": True}


def _sealed(**kwargs: Any) -> Any:
    """A column of sealed values (AES-GCM, ``CredentialCipher``), marked :data:`SEALED`."""
    return Field(sa_type=sa.LargeBinary, sa_column_kwargs={"info": SEALED}, **kwargs)


def _fk(target: str, *, cascade: bool = True) -> Any:
    return sa.Column(
        sa.Integer, sa.ForeignKey(target, ondelete="CASCADE" if cascade else None), nullable=False
    )


# -- people and access ---------------------------------------------------------------------------


class User(SQLModel, table=True):
    """A signed-in person: role ``admin`` or ``member``."""

    __tablename__ = "users"
    __table_args__ = (sa.UniqueConstraint("oidc_issuer", "oidc_subject", name="uq_users_oidc_identity"),)

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(max_length=64, sa_column_kwargs={"unique": True})
    password_hash: str = Field(max_length=256)
    role: str = Field(max_length=16)
    enabled: bool = True
    member_concurrency: int = Field(default=10, description="ADM-3; 0 = unlimited")
    rpm: int = Field(default=0, description="ADM-4 requests per minute; 0 = unlimited")
    created_at: float
    updated_at: float
    # AUTH-1 TOTP: the secrets sealed with the credential key (recovery codes: ``TotpRecoveryCode``).
    totp_enabled: bool = False
    totp_secret: bytes | None = _sealed(default=None)  # the confirmed secret
    totp_pending: bytes | None = _sealed(default=None)  # set up, not yet confirmed with a code
    totp_last_step: int | None = None  # the newest accepted time step: a code is accepted once
    # AUTH-2: the OpenID provider's identity this user signs in as (issuer + subject, unique).
    oidc_issuer: str | None = Field(default=None, max_length=512)
    oidc_subject: str | None = Field(default=None, max_length=255)
    metered_monthly_usd: float | None = Field(default=None, description="PAID-3 member limit; null = none")


class TotpRecoveryCode(SQLModel, table=True):
    """One unused recovery code of a user's TOTP (AUTH-1), as its SHA-256 digest; spent by deleting it."""

    __tablename__ = "totp_recovery_codes"

    user_id: int = Field(
        sa_column=sa.Column(sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    )
    digest: str = Field(max_length=64, primary_key=True)


class WebSession(SQLModel, table=True):
    """A browser sign-in. Only a digest of the cookie value is stored."""

    __tablename__ = "web_sessions"

    token_digest: str = Field(primary_key=True, max_length=64)
    user_id: int = Field(sa_column=_fk("users.id"))
    created_at: float
    expires_at: float = Field(index=True)


class ResourceGroup(SQLModel, table=True):
    """A set of accounts that a set of members may use; ``model_policy`` limits the models."""

    __tablename__ = "resource_groups"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=64, sa_column_kwargs={"unique": True})
    model_policy: dict[str, Any] | None = Field(default=None, sa_type=sa.JSON)
    #: PAID-2: how the group uses its metered accounts (a ``MeteredRouting`` value), and how long
    #: a call waits for busy subscription accounts before ``overflow`` offers it metered ones.
    metered: str = Field(default="overflow", max_length=16, sa_column_kwargs={"server_default": "overflow"})
    overflow_after_s: float = Field(default=5.0, sa_column_kwargs={"server_default": "5"})
    created_at: float
    updated_at: float
    metered_monthly_usd: float | None = Field(default=None, description="PAID-3: null = no cap")


class GroupMember(SQLModel, table=True):
    """Membership of a user in a resource group."""

    __tablename__ = "group_members"

    group_id: int = Field(
        sa_column=sa.Column(
            sa.Integer, sa.ForeignKey("resource_groups.id", ondelete="CASCADE"), primary_key=True
        )
    )
    user_id: int = Field(
        sa_column=sa.Column(sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    )


class GroupAccount(SQLModel, table=True):
    """An account's place in a resource group."""

    __tablename__ = "group_accounts"

    group_id: int = Field(
        sa_column=sa.Column(
            sa.Integer, sa.ForeignKey("resource_groups.id", ondelete="CASCADE"), primary_key=True
        )
    )
    account_id: int = Field(
        sa_column=sa.Column(
            sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True, index=True
        )
    )


class GroupAlias(SQLModel, table=True):
    """A model alias of a resource group (ALIAS-1): requests for ``alias`` are served as ``model``.

    An empty ``model`` removes a built-in default alias of that name for the group.
    """

    __tablename__ = "group_aliases"

    group_id: int = Field(
        sa_column=sa.Column(
            sa.Integer, sa.ForeignKey("resource_groups.id", ondelete="CASCADE"), primary_key=True
        )
    )
    alias: str = Field(max_length=128, primary_key=True)
    model: str = Field(max_length=128)


class ApiKey(SQLModel, table=True):
    """A member's key, bound to one group for life. Only the SHA-256 digest of the secret is kept."""

    __tablename__ = "api_keys"

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(sa_column=_fk("users.id"))
    group_id: int = Field(sa_column=_fk("resource_groups.id"))
    name: str = Field(max_length=64)
    digest: str = Field(max_length=64, sa_column_kwargs={"unique": True})
    hint: str = Field(max_length=16, description="first and last characters, for recognition")
    enabled: bool = True
    created_at: float
    expires_at: float | None = None
    revoked_at: float | None = None
    #: Client networks the key may be used from (AUTH-3): CIDR texts; ``None`` or empty: any.
    allowed_ips: list[str] | None = Field(default=None, sa_column=sa.Column(sa.JSON, nullable=True))


# -- upstream accounts ---------------------------------------------------------------------------


class Account(SQLModel, table=True):
    """One upstream subscription login, with its credentials encrypted (CRED-9)."""

    __tablename__ = "accounts"

    id: int | None = Field(default=None, primary_key=True)
    provider: str = Field(max_length=32, sa_type=PROVIDER_NAME)
    name: str = Field(max_length=64, sa_column_kwargs={"unique": True})
    enabled: bool = True
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    credentials: bytes = _sealed(description="AES-GCM sealed JSON bundle")
    credentials_expires_at: float | None = Field(default=None, description="access token expiry")
    credentials_rejected_at: float | None = Field(
        default=None, description="CRED-5: the current access token was rejected upstream"
    )
    identity_email: str | None = Field(default=None, max_length=256)
    identity_plan: str | None = Field(default=None, max_length=64)
    identity_subject: str | None = Field(
        default=None, max_length=256, description="upstream account/workspace/project id"
    )
    auth_state: str = Field(default=AUTH_OK, max_length=32)
    auth_error: str | None = Field(default=None, max_length=64, description="sanitized code only")
    lifecycle_revision: int = Field(default=1, description="advanced by enable/disable and re-auth")
    credentials_fence: int = Field(
        default=0,
        sa_type=sa.BigInteger,
        sa_column_kwargs={"server_default": "0"},
        description="SCALE-2: the fencing token of the last refresh stored; older ones are refused",
    )
    proxy_url: bytes | None = _sealed(default=None, description="EGRESS-1: the sealed egress proxy URL")
    proxy_shown: str | None = Field(
        default=None, max_length=2048, description="EGRESS-1: that URL with its password as ***"
    )
    monthly_price_usd: float | None = Field(
        default=None, description="COST-3: what the subscription costs a month, in US dollars"
    )
    created_at: float
    updated_at: float


# -- runtime state (scheduler, quota) -------------------------------------------------------------


class AccountCooldown(SQLModel, table=True):
    """An account-wide (``model == ""``) or model-scoped cooldown (COOL-7, MCOOL, AGL-2)."""

    __tablename__ = "account_cooldowns"

    account_id: int = Field(
        sa_column=sa.Column(sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    )
    model: str = Field(default=ACCOUNT_WIDE, primary_key=True, max_length=128)
    until: float
    reason: str = Field(max_length=32)
    failure_streak: int = 0
    lifecycle_revision: int = 1
    runtime_revision: int = 0
    updated_at: float


class Affinity(SQLModel, table=True):
    """A conversation's bound account (AFF-7), keyed by a digest of (group, conversation key)."""

    __tablename__ = "affinity"

    digest: str = Field(primary_key=True, max_length=64)
    scope: str = Field(default=AFFINITY_SCOPE_AUTO, max_length=16)
    group_id: int = Field(sa_column=_fk("resource_groups.id"))
    account_id: int = Field(
        sa_column=sa.Column(
            sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    model: str | None = Field(default=None, max_length=128)
    user_id: int | None = Field(default=None, description="REVIEW-1: who made the binding")
    created_at: float
    last_used_at: float


class AccountModels(SQLModel, table=True):
    """An account's model catalogue as last discovered (CAT-1)."""

    __tablename__ = "account_models"

    account_id: int = Field(
        sa_column=sa.Column(sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    )
    models: list[str] = Field(default_factory=list, sa_column=sa.Column(sa.JSON, nullable=False))
    served: list[str] = Field(
        default_factory=list, sa_column=sa.Column(sa.JSON, nullable=False), description="with aliases (CAT-2)"
    )
    discovered_at: float = 0.0


class QuotaObservation(SQLModel, table=True):
    """One normalized quota window of an account as last observed (QUOTA-2, QUOTA-8)."""

    __tablename__ = "quota_observations"

    account_id: int = Field(
        sa_column=sa.Column(sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    )
    window: str = Field(primary_key=True, max_length=64)
    model: str = Field(
        default="", primary_key=True, max_length=128, description="the model, for quota kept per model"
    )
    main: bool = Field(default=True, description="QUOTA-4: only main windows may exclude")
    used_percent: float | None = None
    window_seconds: int | None = None
    resets_at: float | None = None
    limit_reached: bool = False
    plan: str | None = Field(default=None, max_length=64)
    observed_at: float
    lifecycle_revision: int = 1


# -- history --------------------------------------------------------------------------------------


class RequestRecord(SQLModel, table=True):
    """Metadata of one model attempt (HIST-2). Never prompts, bodies, headers or secrets."""

    __tablename__ = "request_records"
    __table_args__ = (
        sa.Index("ix_request_records_user_id_id", "user_id", "id"),
        {"sqlite_autoincrement": True},  # HIST-6: IDs are never reused after cleanup
    )

    id: int | None = Field(default=None, primary_key=True)
    request_id: str = Field(max_length=40, sa_column_kwargs={"unique": True})
    started_at: float = Field(index=True)
    duration_ms: int | None = None
    first_token_ms: int | None = None
    user_id: int
    key_id: int | None = None
    group_id: int | None = None
    account_id: int | None = None
    provider: str | None = Field(default=None, max_length=32, sa_type=PROVIDER_NAME)
    model: str = Field(max_length=128)
    protocol: str = Field(max_length=32)
    operation: str = Field(max_length=32)
    outcome: str = Field(max_length=16)
    error_code: str | None = Field(default=None, max_length=64)
    upstream_status: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    routing: dict[str, Any] | None = Field(default=None, sa_type=sa.JSON)
    served_model: str | None = Field(default=None, max_length=128)  # the alias's model (ALIAS-1)
    cache_miss_reason: str | None = Field(default=None, max_length=16)  # COST-4
    cache_write_tokens: int | None = None  # COST-2: input tokens written to the cache
    cost_usd: float | None = Field(
        default=None, description="COST-2: the API-equivalent cost when written; NULL when unpriced"
    )
    timing: dict[str, Any] | None = Field(default=None, sa_type=sa.JSON)  # where time went (OPS-13)


# -- operations -----------------------------------------------------------------------------------


class AuditEntry(SQLModel, table=True):
    """One admin mutation (OPS-10): who did what to which object, and when.

    ``summary`` is a sanitized account of the change (names, flags, limits, IDs), never a secret or
    a request body. ``actor_id`` has no foreign key and ``actor_name`` is a copy, so an entry keeps
    saying who acted after that user is renamed or gone; ``actor_id`` is null for the shell.
    """

    __tablename__ = "audit_log"
    __table_args__ = ({"sqlite_autoincrement": True},)  # IDs are cursors: never reused after cleanup

    id: int | None = Field(default=None, primary_key=True)
    at: float = Field(index=True)
    actor_id: int | None = Field(default=None, index=True)
    actor_name: str = Field(max_length=64)
    action: str = Field(max_length=64, index=True)
    object_type: str = Field(max_length=32)
    object_id: int | None = None
    summary: dict[str, Any] | None = Field(default=None, sa_type=sa.JSON)


# -- alerts (ALERT) --------------------------------------------------------------------------------


class Webhook(SQLModel, table=True):
    """Where alerts go (ALERT-1): a URL, the events it wants (``["*"]``: all), its format, and its
    signing secret sealed with the credential key (shown once, when it is made)."""

    __tablename__ = "webhooks"

    id: int | None = Field(default=None, primary_key=True)
    url: str = Field(max_length=2048)
    events: list[str] = Field(default_factory=list, sa_column=sa.Column(sa.JSON, nullable=False))
    format: str = Field(default="json", max_length=8)
    enabled: bool = True
    secret: bytes = _sealed()
    created_at: float
    updated_at: float


class WebhookDelivery(SQLModel, table=True):
    """One event for one webhook in the durable outbox (ALERT-4), until delivered or given up.

    ``event_id`` is the ``X-SubLane-Delivery`` header: the same on every retry, for de-duplication.
    ``payload`` is the JSON body as sent; it never holds a credential, token, prompt or e-mail.
    """

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        sa.Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(default=None, primary_key=True)
    webhook_id: int = Field(
        sa_column=sa.Column(sa.Integer, sa.ForeignKey("webhooks.id", ondelete="CASCADE"), index=True)
    )
    event_id: str = Field(max_length=40)
    event: str = Field(max_length=64)
    payload: str = Field(sa_type=sa.Text)
    status: str = Field(default="pending", max_length=16)  # pending | delivered | failed
    attempts: int = 0
    last_status: int | None = None
    last_error: str | None = Field(default=None, max_length=64)
    next_attempt_at: float
    created_at: float


class AlertMark(SQLModel, table=True):
    """When an event that is told at most once per period was last raised, by key (ALERT-6):
    ``pool.unavailable`` per group and model. Replicas decide in the database — a raise writes the
    row only when the last one is older than the period — so the bound holds over all of them."""

    __tablename__ = "alert_marks"

    key: str = Field(primary_key=True, max_length=255)
    raised_at: float


class UpstreamChange(SQLModel, table=True):
    """Something an upstream answered that SubLane does not know (CLIENT-7): one row per provider,
    kind and name, shared by every replica on the database.

    The replica whose insert made the row raises ``upstream.changed`` in the same transaction (one
    alert per new name, whatever the number of replicas); ``logged_day`` (days since the epoch,
    UTC) is claimed by an update that only one replica wins, so the name is logged once a day.
    """

    __tablename__ = "upstream_changes"
    __table_args__ = (sa.UniqueConstraint("provider", "kind", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    provider: str = Field(max_length=64)
    kind: str = Field(max_length=32)
    name: str = Field(max_length=200)
    first_seen: float
    last_seen: float
    count: int = Field(default=0, sa_column=sa.Column(sa.BigInteger, nullable=False))
    example_request_id: str | None = Field(default=None, max_length=64)
    logged_day: int | None = None


# -- team controls (TEAM) -------------------------------------------------------------------------

BUDGET_PERIODS = ("day", "month", "5h", "7d")
NO_GROUP = 0  # the ``group_id`` of a usage bucket whose attempt had no group
NO_PROVIDER = ""  # the ``provider`` of a usage bucket whose attempt reached no account


def _tokens_column() -> Any:
    return sa.Column(sa.BigInteger, nullable=True)  # 90 days of a team's tokens outgrow 32 bits


class UsageDay(SQLModel, table=True):
    """One UTC day of one member's calls in one group, to one provider, of one model label (TEAM-3).

    Added to by the history writer in the transaction that stores the records, never recomputed.
    Token sums cover the attempts that reported them and are ``NULL`` while none has;
    ``unknown_usage_requests`` counts the attempts that reached an account and reported no usage.
    """

    __tablename__ = "usage_days"
    __table_args__ = (sa.Index("ix_usage_days_user_id_day", "user_id", "day"),)

    day: int = Field(primary_key=True, description="Unix seconds of the day's UTC midnight")
    user_id: int = Field(primary_key=True)
    group_id: int = Field(primary_key=True, description="NO_GROUP when the attempt had none")
    provider: str = Field(
        primary_key=True, max_length=32, sa_type=PROVIDER_NAME, description="NO_PROVIDER when none"
    )
    model: str = Field(primary_key=True, max_length=128, description="a model label or 'other'")
    requests: int = 0
    success: int = 0
    incomplete: int = 0
    error: int = 0
    canceled: int = 0
    rejected: int = 0
    input_tokens: int | None = Field(default=None, sa_column=_tokens_column())
    output_tokens: int | None = Field(default=None, sa_column=_tokens_column())
    cached_tokens: int | None = Field(default=None, sa_column=_tokens_column())
    unknown_usage_requests: int = 0
    # COST-4: input and cached tokens of the attempts that reported cache figures (the hit rate's
    # denominator and numerator); ``NULL`` while none has.
    hit_input_tokens: int | None = Field(default=None, sa_column=_tokens_column())
    hit_cached_tokens: int | None = Field(default=None, sa_column=_tokens_column())
    cost_usd: float | None = Field(default=None, description="COST-2: the priced attempts' cost")
    unpriced_tokens: int = Field(
        default=0, sa_column=sa.Column(sa.BigInteger, nullable=False, server_default="0")
    )


class UsageCacheAccount(SQLModel, table=True):
    """One UTC day of one member's calls served by one account that reported cache figures (COST-4):
    the token-weighted hit rate per account. No foreign key: an account's rows outlive it, like records."""

    __tablename__ = "usage_cache_accounts"

    day: int = Field(primary_key=True, description="Unix seconds of the day's UTC midnight")
    user_id: int = Field(primary_key=True)
    account_id: int = Field(primary_key=True)
    requests: int = 0
    hit_input_tokens: int = Field(default=0, sa_type=sa.BigInteger)
    hit_cached_tokens: int = Field(default=0, sa_type=sa.BigInteger)


class UsageAccountDay(SQLModel, table=True):
    """One UTC day of one account's served calls (COST-2's breakdown by account, COST-3's value).

    Added to by the history writer with the day buckets; an attempt that reached no account is not
    in it. ``cost_usd`` is ``NULL`` while no priced attempt was added.
    """

    __tablename__ = "usage_account_days"

    day: int = Field(primary_key=True, description="Unix seconds of the day's UTC midnight")
    account_id: int = Field(primary_key=True)
    provider: str = Field(primary_key=True, max_length=32, sa_type=PROVIDER_NAME)
    requests: int = 0
    input_tokens: int | None = Field(default=None, sa_column=_tokens_column())
    output_tokens: int | None = Field(default=None, sa_column=_tokens_column())
    cost_usd: float | None = None
    unpriced_tokens: int = Field(default=0, sa_column=sa.Column(sa.BigInteger, nullable=False))


class ModelPriceOverride(SQLModel, table=True):
    """An admin's price for one model (COST-1), US dollars per million tokens; it replaces the
    built-in price of that model. ``NULL`` where the admin gave none (the input price stands in)."""

    __tablename__ = "model_prices"

    model: str = Field(primary_key=True, max_length=128)
    input: float
    cached_input: float | None = None
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    output: float
    updated_at: float


class UsageHour(SQLModel, table=True):
    """One UTC hour of one member's calls (TEAM-3): the cells of the hour-of-week heatmap, dated so
    that a range can be chosen and old hours expire with the days."""

    __tablename__ = "usage_hours"

    day: int = Field(primary_key=True, description="Unix seconds of the day's UTC midnight")
    hour: int = Field(primary_key=True, description="0-23, UTC")
    user_id: int = Field(primary_key=True)
    requests: int = 0
    tokens: int | None = Field(default=None, sa_column=_tokens_column())


class UsageGroupHour(SQLModel, table=True):
    """One UTC hour of one member's tokens in one group (POOL-1: a member's share of the group's
    tokens in the last hours), added to by the history writer like :class:`UsageHour`; kept
    two days."""

    __tablename__ = "usage_group_hours"

    hour: int = Field(primary_key=True, description="Unix seconds of the hour's start")
    group_id: int = Field(primary_key=True, description="NO_GROUP when the attempt had none")
    user_id: int = Field(primary_key=True)
    tokens: int | None = Field(default=None, sa_column=_tokens_column())


class TokenBudget(SQLModel, table=True):
    """A member's token budget rule (TEAM-4): input + output tokens per UTC day or month, optionally
    only in one group and/or for one model."""

    __tablename__ = "token_budgets"
    __table_args__ = ({"sqlite_autoincrement": True},)  # a rule's ID names it in X-Token-Budget-Id

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(
        sa_column=sa.Column(
            sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    group_id: int | None = Field(
        default=None,
        sa_column=sa.Column(
            sa.Integer, sa.ForeignKey("resource_groups.id", ondelete="CASCADE"), nullable=True
        ),
    )
    model: str | None = Field(default=None, max_length=128)
    period: str = Field(max_length=8, description="'day' or 'month' (UTC), '5h' or '7d' (rolling)")
    token_limit: int = Field(sa_column=sa.Column(sa.BigInteger, nullable=False))
    unit: str = Field(
        default="tokens", max_length=8, sa_column_kwargs={"server_default": "tokens"}, description="COST-5"
    )
    usd_limit: float | None = Field(default=None, description="COST-5: the limit of a 'usd' rule")
    enabled: bool = True
    created_at: float
    updated_at: float


class MeteredSpend(SQLModel, table=True):
    """One UTC month of one member's metered spend in one group (PAID-3): the cost (COST-2) of the
    attempts served by metered accounts, added to by the history writer in the transaction that
    stores their records (``usd = usd + :cost``), never recomputed. ``uncosted`` counts the metered
    attempts whose cost is unknown (an unpriced model, or no usage reported for a served call)."""

    __tablename__ = "metered_spend"

    month: int = Field(primary_key=True, description="Unix seconds of the month's first UTC midnight")
    group_id: int = Field(primary_key=True, description="NO_GROUP when the attempt had none")
    user_id: int = Field(primary_key=True)
    usd: float = 0.0
    calls: int = 0
    uncosted: int = 0


# -- operations (OPS) -----------------------------------------------------------------------------


class KeyCheck(SQLModel, table=True):
    """A value sealed with ``credentials.key`` when the key is first used (OPS-3).

    Start-up opens it: a wrong but well-formed key stops the start instead of serving 500s.
    """

    __tablename__ = "key_checks"

    id: int | None = Field(default=None, primary_key=True)
    sealed: bytes = _sealed()
    created_at: float


# -- clients (CLIENT) -----------------------------------------------------------------------------


class ClientVersion(SQLModel, table=True):
    """A provider's client versions (CLIENT-2): the newest well-formed native client version seen
    in a successful model call (and when it was last seen), and the admin's pin."""

    __tablename__ = "client_versions"

    provider: str = Field(primary_key=True, max_length=64)
    seen_version: str | None = Field(default=None, max_length=17)
    seen_at: float | None = None
    pinned_version: str | None = Field(default=None, max_length=17)
    updated_at: float
