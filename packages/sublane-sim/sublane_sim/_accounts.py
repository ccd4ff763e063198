"""Simulated upstream accounts and the book that finds them by any of their secrets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ._catalog import Provider, default_models, default_plan
from ._quota import QuotaWindow, default_windows
from ._tokens import OPENAI_AUTH_CLAIM, TokenMint, encode_unsigned_jwt

__all__ = ["Account", "AccountBook", "AuthProblem", "TokenKind"]

TokenKind = Literal["access", "api_key"]
AuthProblem = Literal["unknown", "expired", "revoked", "wrong_provider"]
RefreshState = Literal["live", "revoked", "expired"]

# Access-token lifetimes (seconds). Codex's is uncertain upstream; 10 days matches observed JWTs.
_ACCESS_TTL: dict[Provider, int] = {
    "codex": 10 * 24 * 3600,
    "claude": 8 * 3600,
    "antigravity": 3599,
    "openai": 3600,  # an API-key provider: its OAuth-shaped tokens are never accepted
}
_CLAUDE_SCOPES = ("user:inference", "user:profile", "user:sessions:claude_code")
_GOOGLE_SCOPES = (
    "https://www.googleapis.com/auth/cloud-platform",
    "https://www.googleapis.com/auth/userinfo.email",
    "https://www.googleapis.com/auth/userinfo.profile",
)


@dataclass(slots=True)
class Account:
    """One upstream subscription login as the simulator knows it.

    Options that tests commonly flip (`require_account_id`, `require_stream`, `quota_cost`,
    `models`, `access_ttl_s`) are plain attributes; change them through the control API.
    """

    id: str
    provider: Provider
    email: str
    plan: str
    user_id: str
    account_id: str
    organization_id: str
    project_id: str
    api_key: str
    models: tuple[str, ...]
    quota: dict[str, QuotaWindow]
    access_ttl_s: int
    quota_cost: float = 0.0
    require_account_id: bool = True
    require_stream: bool = True
    onboarded: bool = True
    onboarding_polls: int = 1
    #: Claude: whether ``GET /v1/models`` answers this account's OAuth token (else 403)
    models_listable: bool = True
    #: an API-key provider: the key was revoked (every request answers 401)
    api_key_revoked: bool = False
    access_tokens: dict[str, float] = field(default_factory=dict)
    revoked_access: set[str] = field(default_factory=set)
    refresh_token: str = ""
    used_refresh_tokens: set[str] = field(default_factory=set)
    refresh_state: RefreshState = "live"
    id_token: str = ""
    last_refresh: float = 0.0

    @property
    def access_token(self) -> str:
        """The most recently issued access token."""
        return next(reversed(self.access_tokens))

    @property
    def access_expires_at(self) -> float:
        return self.access_tokens[self.access_token]

    @property
    def scopes(self) -> tuple[str, ...]:
        if self.provider == "claude":
            return _CLAUDE_SCOPES
        if self.provider == "antigravity":
            return _GOOGLE_SCOPES
        return ("openid", "profile", "email", "offline_access")

    @property
    def rate_limit_tier(self) -> str:
        return {"max": "default_claude_max_20x", "pro": "default_claude_pro"}.get(
            self.plan, "default_claude_ai"
        )

    def summary(self, now: float) -> dict[str, Any]:
        """JSON-ready view for the control API (secrets included: this is a test double)."""
        return {
            "id": self.id,
            "provider": self.provider,
            "email": self.email,
            "plan": self.plan,
            "user_id": self.user_id,
            "account_id": self.account_id,
            "organization_id": self.organization_id,
            "project_id": self.project_id,
            "api_key": self.api_key,
            "models": list(self.models),
            "access_token": self.access_token,
            "access_expires_at": self.access_expires_at,
            "refresh_token": self.refresh_token,
            "refresh_state": self.refresh_state,
            "require_account_id": self.require_account_id,
            "require_stream": self.require_stream,
            "quota_cost": self.quota_cost,
            "onboarded": self.onboarded,
            "quota": {name: window.as_dict(now) for name, window in self.quota.items()},
        }


class AccountBook:
    """All accounts, indexed by id, access token, refresh token and API key."""

    def __init__(self, mint: TokenMint) -> None:
        self._mint = mint
        self._accounts: dict[str, Account] = {}
        self._by_access: dict[str, str] = {}
        self._by_refresh: dict[str, str] = {}
        self._by_api_key: dict[str, str] = {}
        self._counter = 0

    def all(self) -> list[Account]:
        return list(self._accounts.values())

    def get(self, account_id: str) -> Account:
        try:
            return self._accounts[account_id]
        except KeyError:
            raise KeyError(f"unknown sim account {account_id!r}") from None

    def create(
        self,
        provider: Provider,
        now: float,
        *,
        account_id: str | None = None,
        email: str | None = None,
        plan: str | None = None,
        project_id: str | None = None,
        models: tuple[str, ...] | None = None,
        access_ttl_s: int | None = None,
        quota_cost: float = 0.0,
        require_account_id: bool = True,
        require_stream: bool = True,
        onboarded: bool = True,
        models_listable: bool = True,
    ) -> Account:
        self._counter += 1
        sim_id = account_id or f"{provider}-{self._counter}"
        if sim_id in self._accounts:
            raise ValueError(f"sim account {sim_id!r} already exists")
        plan = plan or default_plan(provider)
        models = models or default_models(provider, plan)
        mint = self._mint
        account = Account(
            id=sim_id,
            provider=provider,
            email=email or f"{sim_id}@sim.sublane.test",
            plan=plan,
            user_id=f"user-{mint.text(24)}",
            account_id=mint.uuid() if provider != "antigravity" else mint.digits(21),
            organization_id=mint.uuid(),
            project_id=project_id or f"sim-project-{mint.hex(8)}",
            api_key=f"sk-sim-{provider}-{mint.text(32)}",
            models=models,
            quota=default_windows(provider, plan, models, now),
            access_ttl_s=access_ttl_s or _ACCESS_TTL[provider],
            quota_cost=quota_cost,
            require_account_id=require_account_id,
            require_stream=require_stream,
            onboarded=onboarded,
            models_listable=models_listable,
        )
        self._accounts[sim_id] = account
        self._by_api_key[account.api_key] = sim_id
        self.issue_tokens(account, now, rotate_refresh=True)
        return account

    def remove_all(self) -> None:
        self._accounts.clear()
        self._by_access.clear()
        self._by_refresh.clear()
        self._by_api_key.clear()
        self._counter = 0

    # -- tokens ---------------------------------------------------------------------------------

    def issue_tokens(self, account: Account, now: float, *, rotate_refresh: bool) -> None:
        """Mint a new access token (and id_token); with `rotate_refresh`, a new refresh token too."""
        mint = self._mint
        expires_at = now + account.access_ttl_s
        if account.provider == "codex":
            auth_claim = {
                "chatgpt_account_id": account.account_id,
                "chatgpt_plan_type": account.plan,
                "chatgpt_user_id": account.user_id,
                "user_id": account.user_id,
                "organizations": [
                    {
                        "id": f"org-{account.organization_id}",
                        "is_default": True,
                        "role": "owner",
                        "title": "Personal",
                    }
                ],
            }
            access = encode_unsigned_jwt(
                {
                    "iss": "https://auth.openai.com",
                    "aud": ["https://api.openai.com/v1"],
                    "sub": account.user_id,
                    "iat": int(now),
                    "exp": int(expires_at),
                    "jti": mint.uuid(),
                    OPENAI_AUTH_CLAIM: auth_claim,
                    "https://api.openai.com/profile": {"email": account.email, "email_verified": True},
                }
            )
            account.id_token = encode_unsigned_jwt(
                {
                    "iss": "https://auth.openai.com",
                    "aud": "app_EMoamEEZ73f0CkXaXp7hrann",
                    "sub": account.user_id,
                    "email": account.email,
                    "email_verified": True,
                    "iat": int(now),
                    "exp": int(now + 3600),
                    OPENAI_AUTH_CLAIM: auth_claim,
                }
            )
            refresh = f"rt_sim_{mint.text(40)}"
        elif account.provider == "claude":
            access = f"sk-ant-oat01-sim-{mint.text(48)}"
            refresh = f"sk-ant-ort01-sim-{mint.text(48)}"
        else:
            access = f"ya29.sim-{mint.text(60)}"
            refresh = f"1//0sim-{mint.text(60)}"
        account.access_tokens[access] = expires_at
        self._by_access[access] = account.id
        if rotate_refresh:
            if account.refresh_token:
                account.used_refresh_tokens.add(account.refresh_token)
            account.refresh_token = refresh
            self._by_refresh[refresh] = account.id
        account.last_refresh = now

    def expire_access_tokens(self, account: Account, now: float) -> None:
        for token in account.access_tokens:
            account.access_tokens[token] = min(account.access_tokens[token], now - 1)

    def revoke_access_tokens(self, account: Account) -> None:
        account.revoked_access.update(account.access_tokens)

    def authenticate(self, token: str, now: float) -> tuple[Account | None, TokenKind, AuthProblem | None]:
        """Resolve a presented secret: the account, what kind of secret it was, and what is wrong."""
        sim_id = self._by_api_key.get(token)
        if sim_id is not None:
            return self._accounts[sim_id], "api_key", None
        sim_id = self._by_access.get(token)
        if sim_id is None:
            return None, "access", "unknown"
        account = self._accounts[sim_id]
        if token in account.revoked_access:
            return account, "access", "revoked"
        if account.access_tokens[token] <= now:
            return account, "access", "expired"
        return account, "access", None

    def by_refresh_token(self, token: str) -> Account | None:
        sim_id = self._by_refresh.get(token)
        return None if sim_id is None else self._accounts[sim_id]
