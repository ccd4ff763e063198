"""Single sign-on with an OpenID Connect provider (AUTH-2), through well-kept libraries.

Authlib's ``AsyncOAuth2Client`` builds the authorization request (authorization code flow with
PKCE S256, ``state`` and ``nonce``) and exchanges the code; ``joserfc`` (by Authlib's author, the
successor of ``authlib.jose``) verifies the ID token: its signature against the provider's JWKS
(with the algorithms the provider announces, never ``none``), issuer, audience, expiry and nonce.
Discovery (``/.well-known/openid-configuration``) and the JWKS are cached for an hour; an ID token
signed by a key not in the cached set reads the set again once (a key rotation).

The pending sign-in (state, nonce, PKCE verifier, when it started) travels in a cookie sealed with
the credential key, so any replica can finish a sign-in another started, and nothing of it can be
read or forged by the browser.

Authlib and joserfc are imported by the functions that use them, on the first sign-in: a gateway
without OIDC never loads them (about 5–12 MB of its idle memory, issue #49).
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from sublane_core import CredentialCipher, CredentialDecryptError, Settings

PENDING_COOKIE: Final = "sublane_oidc"
PENDING_TTL_S: Final = 600  # a sign-in must come back within 10 minutes
CACHE_TTL_S: Final = 3600
LEEWAY_S: Final = 60  # clock difference tolerated on exp/iat
SCOPE: Final = "openid email profile"
_TIMEOUT_S: Final = 10.0

if TYPE_CHECKING:
    from authlib.integrations.httpx_client import AsyncOAuth2Client
    from joserfc.jwk import KeySet


class OidcError(Exception):
    """A sign-in that cannot finish; ``code`` is what the sign-in page is told (never a secret)."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


@dataclass(frozen=True, slots=True)
class Pending:
    """A sign-in in flight, from ``/start`` to ``/callback``."""

    state: str
    nonce: str
    verifier: str
    started: float
    link: int | None = None  # the signed-in user who asked to link SSO (My account), else a sign-in


def seal_pending(cipher: CredentialCipher, pending: Pending) -> str:
    sealed = cipher.encrypt(
        {
            "state": pending.state,
            "nonce": pending.nonce,
            "verifier": pending.verifier,
            "started": pending.started,
            "link": pending.link,
        }
    )
    return base64.urlsafe_b64encode(sealed).decode().rstrip("=")


def open_pending(cipher: CredentialCipher, cookie: str | None, now: float) -> Pending:
    if not cookie:
        raise OidcError("sso_expired", "no sign-in in progress in this browser")
    try:
        data = cipher.decrypt(base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4)))
        link = data.get("link")
        pending = Pending(
            str(data["state"]),
            str(data["nonce"]),
            str(data["verifier"]),
            float(data["started"]),
            link if isinstance(link, int) and not isinstance(link, bool) else None,
        )
    except (CredentialDecryptError, ValueError, KeyError, TypeError):
        raise OidcError("sso_expired", "the sign-in cookie is not ours") from None
    if now - pending.started > PENDING_TTL_S:
        raise OidcError("sso_expired", "the sign-in took too long")
    return pending


def new_pending(now: float, link: int | None = None) -> Pending:
    from authlib.common.security import generate_token

    return Pending(
        state=generate_token(32),
        nonce=generate_token(32),
        verifier=generate_token(64),
        started=now,
        link=link,
    )


class OidcProvider:
    """The configured provider: its discovery document and keys, the authorization URL, the code
    exchange and the ID-token check."""

    def __init__(self, settings: Settings) -> None:
        assert settings.oidc_issuer is not None and settings.oidc_client_id is not None
        self.issuer = settings.oidc_issuer.rstrip("/")
        self.client_id = settings.oidc_client_id
        secret = settings.oidc_client_secret
        self._secret = secret.get_secret_value() if secret is not None else None
        self._config: tuple[float, dict[str, Any]] | None = None
        self._keys: tuple[float, KeySet] | None = None

    @staticmethod
    def configured(settings: Settings) -> bool:
        return bool(settings.oidc_issuer and settings.oidc_client_id)

    def _client(self, redirect_uri: str) -> AsyncOAuth2Client:
        from authlib.integrations.httpx_client import AsyncOAuth2Client

        return AsyncOAuth2Client(
            client_id=self.client_id,
            client_secret=self._secret,
            token_endpoint_auth_method="client_secret_basic" if self._secret else "none",
            scope=SCOPE,
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            timeout=_TIMEOUT_S,
        )

    async def discovery(self) -> dict[str, Any]:
        import httpx  # here, not at import: a default start has no OIDC sign-in (issue #49)

        cached = self._config
        if cached is not None and time.monotonic() - cached[0] < CACHE_TTL_S:
            return cached[1]
        url = f"{self.issuer}/.well-known/openid-configuration"
        try:
            async with httpx.AsyncClient(timeout=_TIMEOUT_S) as http:
                answer = await http.get(url)
                answer.raise_for_status()
                config = answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OidcError("sso_unavailable", f"discovery failed: {type(exc).__name__}") from None
        if not isinstance(config, dict) or config.get("issuer", "").rstrip("/") != self.issuer:
            raise OidcError("sso_unavailable", "the discovery document names another issuer")
        self._config = (time.monotonic(), config)
        return config

    async def authorization_url(self, redirect_uri: str, pending: Pending) -> str:
        config = await self.discovery()
        async with self._client(redirect_uri) as client:
            url, _state = client.create_authorization_url(
                config["authorization_endpoint"],
                state=pending.state,
                code_verifier=pending.verifier,
                nonce=pending.nonce,
            )
        return str(url)

    async def exchange(self, redirect_uri: str, code: str, pending: Pending) -> dict[str, Any]:
        """The verified claims of the ID token the provider gives for ``code``."""
        config = await self.discovery()
        try:
            async with self._client(redirect_uri) as client:
                token = await client.fetch_token(
                    config["token_endpoint"],
                    code=code,
                    code_verifier=pending.verifier,
                    grant_type="authorization_code",
                )
        except Exception as exc:  # Authlib raises its OAuthError or httpx's errors
            raise OidcError("sso_failed", f"the code exchange failed: {type(exc).__name__}") from None
        id_token = token.get("id_token") if isinstance(token, dict) else None
        if not isinstance(id_token, str):
            raise OidcError("sso_failed", "no ID token in the answer")
        return await self.verify(id_token, pending.nonce)

    async def verify(self, id_token: str, nonce: str, now: float | None = None) -> dict[str, Any]:
        from joserfc import jwt
        from joserfc.errors import JoseError

        config = await self.discovery()
        algorithms = [
            alg for alg in config.get("id_token_signing_alg_values_supported", ["RS256"]) if alg != "none"
        ]
        for fresh in (False, True):
            keys = await self._key_set(refresh=fresh)
            try:
                token = jwt.decode(id_token, keys, algorithms=algorithms)
                break
            except JoseError as exc:
                if fresh or "key" not in type(exc).__name__.lower():
                    raise OidcError("sso_invalid_token", type(exc).__name__) from None
        return check_claims(token.claims, self.issuer, self.client_id, nonce, now)

    async def _key_set(self, *, refresh: bool) -> KeySet:
        import httpx  # here, not at import: a default start has no OIDC sign-in (issue #49)
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        cached = self._keys
        if not refresh and cached is not None and time.monotonic() - cached[0] < CACHE_TTL_S:
            return cached[1]
        config = await self.discovery()
        try:
            async with httpx.AsyncClient(timeout=_TIMEOUT_S) as http:
                answer = await http.get(config["jwks_uri"])
                answer.raise_for_status()
                keys = KeySet.import_key_set(answer.json())
        except (httpx.HTTPError, ValueError, KeyError, JoseError) as exc:
            raise OidcError(
                "sso_unavailable", f"the provider's keys could not be read: {type(exc).__name__}"
            ) from None
        self._keys = (time.monotonic(), keys)
        return keys


def check_claims(
    claims: dict[str, Any], issuer: str, client_id: str, nonce: str, now: float | None = None
) -> dict[str, Any]:
    """The ID token's claims when issuer, audience, expiry, subject and nonce hold (OIDC Core 3.1.3.7)."""
    from joserfc import jwt
    from joserfc.errors import JoseError

    registry = jwt.JWTClaimsRegistry(
        now=int(now if now is not None else time.time()),
        leeway=LEEWAY_S,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": client_id},
        exp={"essential": True},
        sub={"essential": True},
        nonce={"essential": True, "value": nonce},
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise OidcError("sso_invalid_token", type(exc).__name__) from None
    audience = claims.get("aud")
    if isinstance(audience, list) and len(audience) > 1 and claims.get("azp") != client_id:
        raise OidcError("sso_invalid_token", "several audiences and we are not the authorized party")
    return claims


def admin_by_claim(claims: dict[str, Any], claim: str, value: str | None) -> bool:
    """Whether the claim (a string or a list of strings) contains the admin value."""
    if value is None:
        return False
    found = claims.get(claim)
    if isinstance(found, str):
        return found == value
    return isinstance(found, list) and value in found
