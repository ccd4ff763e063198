"""Start-up configuration: every ``SUBLANE_*`` variable of SPEC §17, read once by pydantic-settings."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from sublane_core._db import is_sqlite
from sublane_core._proxy_url import checked_proxy_url


def _list_of_strings(value: object) -> object:
    """A list variable as written in the docs (``a,b``) or as a JSON list (``["a","b"]``)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            raise ValueError(
                "not a JSON list; write a comma-separated list or a JSON list of strings"
            ) from None
        if not isinstance(parsed, list) or not all(isinstance(item, str) for item in parsed):
            raise ValueError("write a comma-separated list or a JSON list of strings")
        return [item.strip() for item in parsed if item.strip()]
    return [item.strip() for item in text.split(",") if item.strip()]


#: A list setting read from one variable, comma-separated or a JSON list.
StringList = Annotated[list[str], NoDecode]


class Settings(BaseSettings):
    """SubLane's settings. Each field maps to ``SUBLANE_<FIELD>`` (also read from an optional ``.env``)."""

    model_config = SettingsConfigDict(
        env_prefix="SUBLANE_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        frozen=True,
        # A refused value is never echoed: some are secrets (a proxy URL's password, a key).
        hide_input_in_errors=True,
    )

    # -- storage ---------------------------------------------------------------------------------
    data_dir: Path = Field(Path("./data"), description="Holds sublane.db and credentials.key.")
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL (or postgresql://user:pass@host/db); default sqlite:///$SUBLANE_DATA_DIR/sublane.db.",
    )
    credentials_key: SecretStr | None = Field(
        None,
        description="The credential key (base64url of 32 bytes) instead of the data folder's "
        "credentials.key; the same on every replica (SCALE-1).",
    )
    auto_migrate: bool | None = Field(
        None,
        description="Upgrade an old schema at start-up; default true for SQLite, false otherwise (SCALE-1).",
    )

    # -- several replicas (SCALE-2, SCALE-7) ------------------------------------------------------
    redis_url: SecretStr | None = Field(
        None,
        description="redis://[user:pass@]host:port/db shared by every replica: leases, waiting, member "
        "limits, cooldowns and changes hold across replicas (SCALE-2); unset: one process.",
    )
    redis_namespace: str = Field(
        "sublane",
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="Prefix of SubLane's Redis keys: installations sharing one Redis need their own.",
    )
    lease_ttl: float = Field(
        30.0, ge=1.0, le=600.0, description="SCALE-3 seconds a dead replica's leases and waiters live on."
    )
    workers: int = Field(
        1, ge=1, le=64, description="SCALE-7 processes serving one port on this machine (needs Redis)."
    )

    # -- listening -------------------------------------------------------------------------------
    host: str = Field("127.0.0.1", description="Address to listen on.")
    port: int = Field(8080, ge=0, le=65535, description="Port to listen on.")

    # -- first admin -----------------------------------------------------------------------------
    admin_username: str | None = Field(None, description="First admin's name (empty database only).")
    admin_password: SecretStr | None = Field(None, description="First admin's password.")

    # -- admission and waiting (ADM, WAIT) -------------------------------------------------------
    workspace_capacity: int = Field(128, ge=1, le=100_000, description="ADM-2 operations at once.")
    member_concurrency_default: int = Field(
        10, ge=0, le=1000, description="ADM-3 default per member; 0 = unlimited."
    )
    wait_timeout_s: float = Field(30, ge=0, le=3600, description="WAIT-1 longest wait for a slot.")
    wait_queue_max: int = Field(100, ge=0, le=100_000, description="WAIT-1 waiters per resource group.")
    failover_attempts: int = Field(
        2, ge=0, le=16, description="FAIL-1 more accounts an unbound request may move to; 0 = off."
    )

    # -- cooldowns (COOL, MCOOL) -----------------------------------------------------------------
    cooldown_fallback_s: float = Field(
        5, gt=0, le=3600, description="COOL-1 cooldown when Retry-After is absent."
    )
    model_failure_threshold: int = Field(
        3, ge=0, le=1000, description="MCOOL-2 failures that cool a model; 0 disables."
    )
    model_failure_window_s: float = Field(120, gt=0, le=86_400, description="MCOOL-2 counting window.")
    model_cooldown_initial_s: float = Field(10, gt=0, le=3600, description="MCOOL-2 first cooldown.")
    model_cooldown_max_s: float = Field(300, gt=0, le=86_400, description="MCOOL-2 longest cooldown.")

    # -- streaming and timeouts (TIME) -----------------------------------------------------------
    sse_heartbeat_s: float = Field(10, gt=0, le=3600, description="TIME-1 SSE keep-alive period.")
    stream_idle_timeout_s: float = Field(
        0, ge=0, le=86_400, description="TIME-2 upstream idle limit; 0 = off."
    )
    header_timeout_s: float = Field(300, gt=0, le=86_400, description="TIME-3 inference header timeout.")
    metadata_timeout_s: float = Field(30, gt=0, le=3600, description="TIME-3 quota/discovery/token timeout.")
    request_timeout_s: float = Field(1800, gt=0, le=86_400, description="ADM-9/TIME-3 total deadline.")

    # -- limits against bad input and slow clients (OPS-1, OPS-4) --------------------------------
    max_body_mb: int = Field(32, ge=1, le=1024, description="OPS-1 largest model-route body (MiB).")
    management_body_kb: int = Field(
        1024, ge=16, le=65_536, description="OPS-1 largest /api/* and other non-model body (KiB)."
    )
    client_header_timeout_s: float = Field(
        10, gt=0, le=3600, description="OPS-4 time a client has to send a request's headers."
    )
    body_timeout_s: float = Field(
        30,
        gt=0,
        le=3600,
        description="OPS-4 time a client has to send a request's body, from the end of its headers.",
    )
    keep_alive_timeout_s: float = Field(
        5, gt=0, le=3600, description="OPS-4 idle keep-alive connection lifetime."
    )
    login_failures_max: int = Field(
        5, ge=1, le=1000, description="OPS-4 failed sign-ins per user name or address per window."
    )
    login_failure_window_s: float = Field(
        300, gt=0, le=86_400, description="OPS-4 window in which failed sign-ins are counted."
    )
    history_queue_max: int = Field(
        10_000, ge=100, le=10_000_000, description="OPS-2 request records waiting to be written."
    )
    model_starts_per_turn: int = Field(
        8,
        ge=0,
        le=100_000,
        description="Model calls begun per turn of the event loop (a burst waits its turn); 0 = unpaced.",
    )
    require_totp_for_admins: bool = Field(
        False, description="AUTH-1 admins without TOTP may use no admin route until they turn it on."
    )
    trusted_proxies: StringList = Field(
        default_factory=list,
        description="OPS-6 proxy addresses whose X-Forwarded-For/-Proto/-Host headers are believed.",
    )

    # -- quota (QW) and history (HIST) -----------------------------------------------------------
    gateway_quota_weighted: bool = Field(False, description="QW-1 quota-weighted rotation.")
    quota_enabled: bool = Field(
        True, description="QUOTA observation, background reads and exclusion; off only to measure its cost."
    )
    history_enabled: bool = Field(
        True, description="Record every model call (HIST); off only to measure its cost."
    )
    history_max_records: int = Field(5000, ge=1, le=10_000_000, description="HIST-6 records kept.")
    history_days: float = Field(7, gt=0, le=3650, description="HIST-6 days kept.")
    usage_enabled: bool = Field(
        True, description="TEAM-3/4 usage summaries and token budgets; off only to measure their cost."
    )

    # The upstreams' URLs and OAuth clients are each provider's own settings (its distribution's
    # ``ProviderSettings``); ``sublane serve`` composes them with these into one settings object.

    # -- sessions and logs (not in SPEC §17; additive) -------------------------------------------
    session_ttl_s: int = Field(
        7 * 24 * 3600, ge=60, le=365 * 24 * 3600, description="Web sign-in session lifetime."
    )
    allowed_origins: StringList = Field(
        default_factory=list,
        description="Extra Origin values accepted on mutations (e.g. behind a TLS proxy).",
    )

    egress_proxy: SecretStr | None = Field(
        None,
        description=(
            "EGRESS-1 the proxy of accounts without their own: http://, https://, socks5:// or socks5h://"
            " [user:pass@]host:port; unset: the standard proxy variables, else direct."
        ),
    )

    alert_retry_s: float = Field(
        10, gt=0, le=3600, description="ALERT-4 first retry of a webhook delivery; it doubles up to an hour."
    )
    workspace_name: str = Field(
        "SubLane", min_length=1, max_length=64, description="ALERT-2 the workspace alerts name."
    )

    # -- single sign-on with OpenID Connect (AUTH-2) -----------------------------------------------
    oidc_issuer: str | None = Field(
        None, description="AUTH-2 the OpenID provider's issuer URL (discovery from it); unset: no SSO."
    )
    oidc_client_id: str | None = Field(None, description="AUTH-2 SubLane's client id at the provider.")
    oidc_client_secret: SecretStr | None = Field(None, description="AUTH-2 SubLane's client secret.")
    oidc_auto_create: bool = Field(
        False, description="AUTH-2 create an unknown user (a member) on their first SSO sign-in."
    )
    oidc_allowed_domains: StringList = Field(
        default_factory=list, description="AUTH-2 e-mail domains auto-creation accepts; empty: any."
    )
    oidc_link_by_email: bool = Field(
        False,
        description=(
            "AUTH-2 the first SSO sign-in of an existing member whose name is the verified e-mail links"
            " them (never an admin); false: they link SSO from My account."
        ),
    )
    public_url: str | None = Field(
        None,
        description=(
            "AUTH-2 the URL users reach SubLane at (https://host[:port]); the SSO redirect URI and the"
            " clients' set-up texts (CONNECT-1) are made from it. Unset: from the host a trusted proxy"
            " (OPS-6) forwards, never an untrusted Host."
        ),
    )
    oidc_admin_claim: str = Field("groups", description="AUTH-2 the ID-token claim that can make an admin.")
    oidc_admin_value: str | None = Field(
        None, description="AUTH-2 the value of that claim that makes an admin; unset: SSO makes none."
    )

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        url = value.get_secret_value().strip()
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return SecretStr(url)

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError("must be an http:// or https:// URL without query or fragment")
        if parts.username is not None or parts.password is not None:
            raise ValueError("must not hold a user name or password")
        return value.strip().rstrip("/")

    @field_validator("egress_proxy")
    @classmethod
    def _proxy_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        return SecretStr(checked_proxy_url(value.get_secret_value().strip()))

    @field_validator("trusted_proxies", "allowed_origins", "oidc_allowed_domains", mode="before")
    @classmethod
    def _read_list(cls, value: object) -> object:
        return _list_of_strings(value)

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network (CIDR)") from None
        return value

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level.")
    log_format: Literal["json", "text"] = Field(
        "text", description="OPS-11 log lines: text (human-readable) or json (one object per line)."
    )

    # -- operations (OPS) ------------------------------------------------------------------------
    metrics_token: SecretStr | None = Field(
        None, description="OPS-8 bearer token for GET /metrics (an admin session works too)."
    )
    metrics_enabled: bool = Field(
        True, description="OPS-8 count model calls for GET /metrics; off only to measure its cost."
    )

    @property
    def effective_database_url(self) -> str:
        """The database URL, defaulting to the SQLite file inside the data directory."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'sublane.db').as_posix()}"

    @property
    def effective_auto_migrate(self) -> bool:
        """Whether ``serve`` upgrades an old schema itself (SCALE-1): by default only the embedded
        SQLite file; a shared database is upgraded by ``sublane migrate``, once, before replicas."""
        if self.auto_migrate is not None:
            return self.auto_migrate
        return is_sqlite(self.effective_database_url)

    @property
    def credentials_key_path(self) -> Path:
        """Where the credential encryption key lives (CRED-9)."""
        return self.data_dir / "credentials.key"


def settings_help(settings_class: type[BaseSettings] = Settings) -> list[tuple[str, str, str]]:
    """``(variable, default, meaning)`` of every field of ``settings_class`` (``sublane serve --help``)."""
    rows: list[tuple[str, str, str]] = []
    for name, field in settings_class.model_fields.items():
        if field.default_factory is not None:
            default = "[]"
        elif field.default is None:
            default = "unset"
        else:
            default = str(field.default)
        rows.append((f"SUBLANE_{name.upper()}", default, field.description or ""))
    return rows
