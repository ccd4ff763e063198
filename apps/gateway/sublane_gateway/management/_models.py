"""Request bodies of the management API: strict types, and unknown fields refused so typos never pass."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, field_validator

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
Username = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.@+-]+$")
]
Password = Annotated[str, StringConstraints(min_length=8, max_length=128)]  # TEAM-2: 8-128 characters
ModelId = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=128)]
Role = Literal["admin", "member"]
Id = Annotated[int, Field(ge=1, le=2**62)]


def _ascii_digits(value: Any) -> Any:
    """OPS-1 (digits): a path's id is ASCII digits only — "1.0", "+1", " 1" and "1_0", which a
    lax integer parse would take for 1, are refused like "١" and "0x1" are."""
    if isinstance(value, str) and not (value.isascii() and value.isdigit()):
        raise ValueError("an id is ASCII digits only")
    return value


# OPS-1: a row id in a path; anything beyond 64 bits is a 400, never an OverflowError in SQLite.
PathId = Annotated[int, BeforeValidator(_ascii_digits), Path(ge=1, le=2**62)]


class Body(BaseModel):
    """Base of every request body: strict about unknown fields."""

    model_config = ConfigDict(extra="forbid", strict=True)


class LoginBody(Body):
    username: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    password: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    totp_code: Annotated[str, StringConstraints(max_length=64)] | None = None  # AUTH-1


TotpCode = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class TotpEnableBody(Body):
    code: TotpCode


class TotpDisableBody(Body):
    password: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    code: TotpCode


class SetupBody(Body):
    token: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    username: Username
    password: Password


class UserCreate(Body):
    username: Username
    password: Password
    role: Role = "member"
    enabled: bool = True
    member_concurrency: Annotated[int, Field(ge=0, le=1000)] | None = None
    rpm: Annotated[int, Field(ge=0, le=6000)] = 0
    group_ids: list[Id] | None = Field(default=None, max_length=1000)


class UserUpdate(Body):
    username: Username | None = None
    password: Password | None = None
    role: Role | None = None
    enabled: bool | None = None
    member_concurrency: Annotated[int, Field(ge=0, le=1000)] | None = None
    rpm: Annotated[int, Field(ge=0, le=6000)] | None = None


class ModelPolicy(Body):
    allow: list[ModelId] = Field(max_length=1000)

    @field_validator("allow")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


#: PAID-3: a monthly cap on metered spend, US dollars (0: no metered use at all).
MeteredUsd = Annotated[float, Field(ge=0, le=1_000_000_000, allow_inf_nan=False)]


class GroupCreate(Body):
    name: Name
    model_policy: ModelPolicy | None = None


MeteredRoutingName = Literal["overflow", "normal", "off"]
#: PAID-2: how long a call waits for busy subscription accounts before metered ones are offered.
OverflowAfter = Annotated[float, Field(ge=0, le=3600, allow_inf_nan=False)]


class GroupUpdate(Body):
    name: Name | None = None
    model_policy: ModelPolicy | None = None
    metered: MeteredRoutingName | None = None  # PAID-2
    overflow_after_s: OverflowAfter | None = None  # PAID-2
    metered_monthly_usd: MeteredUsd | None = None  # PAID-3: ``null`` removes the cap


class GroupMembers(Body):
    user_ids: list[Id] = Field(max_length=10_000)


class GroupAccounts(Body):
    account_ids: list[Id] = Field(max_length=10_000)


WebhookUrl = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2048)]
EventName = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class WebhookCreate(Body):
    """ALERT-1."""

    url: WebhookUrl
    events: list[EventName] = Field(default_factory=lambda: ["*"], max_length=32)
    format: Literal["json", "slack"] = "json"
    enabled: bool = True


class WebhookUpdate(Body):
    url: WebhookUrl | None = None
    events: list[EventName] | None = Field(default=None, max_length=32)
    format: Literal["json", "slack"] | None = None
    enabled: bool | None = None


class BundleExport(Body):
    """BULK-1: which accounts (``null``: all) and the passphrase (12–256 characters) of the bundle."""

    passphrase: Annotated[str, StringConstraints(min_length=12, max_length=256)]
    account_ids: list[Id] | None = Field(default=None, max_length=10_000)


class AliasEntry(Body):
    alias: ModelId
    model: ModelId


class ClientVersionBody(Body):
    """CLIENT-2: the admin's pin of a provider's client version (``null``: no pin)."""

    version: Annotated[str, StringConstraints(max_length=64)] | None


class GroupAliasesBody(Body):
    """ALIAS-1: the group's whole alias list (at most 256)."""

    aliases: list[AliasEntry] = Field(max_length=256)


def _networks(entries: list[str] | None) -> list[str] | None:
    """AUTH-3: CIDR networks or single addresses, v4 or v6, written canonically (``10.0.0.0/8``)."""
    if entries is None:
        return None
    networks = []
    for entry in entries:
        try:
            networks.append(str(ipaddress.ip_network(entry.strip(), strict=False)))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network") from None
    return networks


AllowedIps = Annotated[
    list[Annotated[str, StringConstraints(min_length=1, max_length=64)]], Field(max_length=32)
]


class KeyCreate(Body):
    name: Name
    group_id: Id
    expires_at: Annotated[float, Field(gt=0, lt=1e11)] | None = None
    allowed_ips: AllowedIps | None = None

    _check_networks = field_validator("allowed_ips")(_networks)


class KeyUpdate(Body):
    """Either or both: pause/resume, and the client networks the key may be used from (AUTH-3)."""

    enabled: bool | None = None
    allowed_ips: AllowedIps | None = None

    _check_networks = field_validator("allowed_ips")(_networks)


class AccountImport(Body):
    provider: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    name: Name
    credentials: dict[str, Any]
    group_ids: list[Id] = Field(default_factory=list, max_length=1000)


class AccountCredentials(Body):
    credentials: dict[str, Any]


class AccountUpdate(Body):
    name: Name | None = None
    enabled: bool | None = None
    #: EGRESS-1: ``http``, ``https``, ``socks5`` or ``socks5h`` URL; ``null`` removes it.
    proxy_url: Annotated[str, StringConstraints(strip_whitespace=True, max_length=2048)] | None = None
    #: COST-3: what the subscription costs a month in US dollars; ``null`` removes it.
    monthly_price_usd: Annotated[float, Field(ge=0, le=1_000_000, allow_inf_nan=False)] | None = None


class AccountLimits(Body):
    max_concurrency: Annotated[int, Field(ge=1, le=1000)]


class OAuthStart(Body):
    provider: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    name: Name | None = None
    group_ids: list[Id] = Field(default_factory=list, max_length=1000)


class OAuthComplete(Body):
    state: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    callback_url: Annotated[str, StringConstraints(min_length=1, max_length=8192)]
    name: Name | None = None


# -- team controls (TEAM) --------------------------------------------------------------------------

MemberConcurrency = Annotated[int, Field(ge=0, le=1000)]
Rpm = Annotated[int, Field(ge=0, le=6000)]


class LimitsUpdate(Body):
    """TEAM-1: either or both limits; 0 = unlimited."""

    rpm: Rpm | None = None
    member_concurrency: MemberConcurrency | None = None
    metered_monthly_usd: MeteredUsd | None = None  # PAID-3: ``null`` removes the limit


class OwnPasswordChange(Body):
    """TEAM-2: the signed-in user's own password."""

    current_password: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    new_password: Password


class PasswordReset(Body):
    """TEAM-2: an admin sets a user's password."""

    new_password: Password


class BudgetRuleBody(Body):
    """TEAM-4: one rule. ``id`` keeps an existing rule (and its ID); without it the rule is new."""

    id: Id | None = None
    group_id: Id | None = None
    model: ModelId | None = None
    period: Literal["day", "month", "5h", "7d"]  # COST-5: 5h and 7d are rolling, ending now
    #: tokens: a whole number 1..10^12; usd (COST-5): dollars, a decimal number > 0
    limit: (
        Annotated[int, Field(ge=1, le=10**12)] | Annotated[float, Field(gt=0, le=10**9, allow_inf_nan=False)]
    )
    unit: Literal["tokens", "usd"] = "tokens"
    enabled: bool = True


class BudgetRules(Body):
    """TEAM-4: every rule of a member (the set replaces the stored one); at most 64."""

    rules: list[BudgetRuleBody] = Field(max_length=64)
