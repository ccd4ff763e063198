"""PKCE authorization-code logins with a pasted-back redirect URL (CRED-9).

SubLane runs on a server, so the provider's redirect (to a localhost port of the admin's machine)
never reaches it: the admin opens the authorize URL, signs in, and pastes the URL the browser ended
on (or, for Claude's manual flow, the ``CODE#STATE`` it shows). This module builds the URL and pulls
the code out of what was pasted.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit


@dataclass(frozen=True, slots=True)
class PkcePair:
    """A code verifier and its S256 challenge."""

    verifier: str
    challenge: str


def new_pkce_pair() -> PkcePair:
    """A fresh verifier (64 url-safe characters) and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
    return PkcePair(verifier=verifier, challenge=challenge)


def authorize_url(base: str, params: dict[str, str]) -> str:
    """``base`` with ``params`` as its query string."""
    return f"{base}?{urlencode(params)}"


class PastedCallbackError(ValueError):
    """What was pasted holds no authorization code for this login.

    ``provider_error`` is the OAuth ``error`` the provider redirected with (``access_denied`` …):
    the login is over and must be started again. Otherwise the paste was just wrong.
    """

    def __init__(self, message: str, *, provider_error: str | None = None) -> None:
        super().__init__(message)
        self.provider_error = provider_error


def code_from_pasted(pasted: str, expected_state: str) -> str:
    """The authorization code from a pasted redirect URL, query string or ``CODE#STATE``.

    The ``state`` must match the login's, so a code from another login is refused.
    """
    text = pasted.strip()
    if not text:
        raise PastedCallbackError("nothing was pasted")
    if "://" in text or text.startswith("?") or "code=" in text or "error=" in text:
        try:
            query = urlsplit(text).query if "://" in text else text.lstrip("?")
        except ValueError:  # OPS-1: "http://[/?code=…" is no address
            raise PastedCallbackError("the pasted text is not a valid address") from None
        values = parse_qs(query)
        if "error" in values:
            error = values["error"][0][:64]
            raise PastedCallbackError(f"the provider answered {error!r}", provider_error=error)
        code = (values.get("code") or [""])[0]
        state = (values.get("state") or [""])[0]
    else:
        code, _, state = text.partition("#")
    if not code:
        raise PastedCallbackError("the pasted text holds no authorization code")
    if not state:
        raise PastedCallbackError("the pasted text holds no state; paste the whole address")
    if not hmac.compare_digest(state.encode(), expected_state.encode()):
        raise PastedCallbackError("the pasted text belongs to another login (state does not match)")
    return code
