"""TOTP as a second sign-in factor (AUTH-1): RFC 6238 through ``pyotp``, the QR code through ``segno``.

SHA-1, 6 digits, 30-second steps, one step of drift either way. A code is accepted at most once:
the user's newest accepted step is stored and only a later step passes, written with a conditional
``UPDATE`` so that two sign-ins racing with one code cannot both pass. Recovery codes are ten
random single-use codes, stored as SHA-256 digests and spent by a conditional ``DELETE`` (they
carry 50 random bits, so a fast digest is enough; they are not passwords a person chose). The
secret is sealed with the credential key, like account credentials, and leaves the gateway once:
in the set-up answer.

``segno`` is imported when a QR code is drawn (a TOTP set-up), not by a default start (issue #49).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import secrets
from typing import Final

import pyotp
import sqlalchemy as sa
from sqlmodel import Session, col, delete, select, update

from sublane_core import CredentialCipher, TotpRecoveryCode, User
from sublane_gateway._digits import is_ascii_number, refuse_foreign_digits

STEP_S: Final = 30
DIGITS: Final = 6
ISSUER: Final = "SubLane"
RECOVERY_CODES: Final = 10
_RECOVERY_ALPHABET: Final = "abcdefghjkmnpqrstuvwxyz23456789"  # no look-alikes (0/o, 1/l/i)


def new_secret() -> str:
    """A new base32 secret (160 bits)."""
    return pyotp.random_base32(32)


def seal(cipher: CredentialCipher, secret: str) -> bytes:
    return cipher.encrypt({"totp_secret": secret})


def unseal(cipher: CredentialCipher, sealed: bytes) -> str:
    return str(cipher.decrypt(sealed)["totp_secret"])


def otpauth_uri(secret: str, username: str) -> str:
    """The ``otpauth://totp/…`` URI authenticator apps read (from the QR code or typed)."""
    return pyotp.TOTP(secret, digits=DIGITS, interval=STEP_S).provisioning_uri(
        name=username, issuer_name=ISSUER
    )


def qr_svg(uri: str) -> str:
    """The URI as an SVG QR code (a standalone document that scales: ``viewBox``, no fixed size),
    drawn here: the secret never goes to a third-party service."""
    import segno

    out = io.BytesIO()
    segno.make(uri, error="m").save(
        out,
        kind="svg",
        xmldecl=False,
        nl=False,
        scale=4,
        border=2,
        omitsize=True,
        title="Authenticator set-up",
    )
    return out.getvalue().decode()


def matching_step(secret: str, code: str, now: float, after: int | None) -> int | None:
    """The time step ``code`` belongs to (now ±1 step), if it is later than ``after``; else ``None``."""
    refuse_foreign_digits(code, "code")  # OPS-1: 400, never a TypeError in compare_digest
    code = code.strip().replace(" ", "")
    if len(code) != DIGITS or not is_ascii_number(code):
        return None
    totp = pyotp.TOTP(secret, digits=DIGITS, interval=STEP_S)
    current = int(now // STEP_S)
    for step in (current - 1, current, current + 1):
        if (after is None or step > after) and hmac.compare_digest(totp.generate_otp(step), code):
            return step
    return None


def new_recovery_codes() -> list[str]:
    """Ten single-use codes, ``xxxxx-xxxxx`` each."""
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = "".join(secrets.choice(_RECOVERY_ALPHABET) for _ in range(10))
        codes.append(f"{raw[:5]}-{raw[5:]}")
    return codes


def recovery_digest(code: str) -> str:
    """The stored form of a recovery code (case, spaces and dashes do not matter)."""
    normal = code.strip().lower().replace("-", "").replace(" ", "")
    return hashlib.sha256(normal.encode()).hexdigest()


def consume_code(db: Session, cipher: CredentialCipher, user_id: int, code: str, now: float) -> str | None:
    """Accept ``code`` for the user once: ``"totp"`` or ``"recovery"`` when it passed (and is spent,
    committed), ``None`` otherwise; 400 for a code in another script's digits (OPS-1)."""
    refuse_foreign_digits(code, "code")
    user = db.exec(select(User).where(col(User.id) == user_id).with_for_update()).one()
    if not user.totp_enabled or user.totp_secret is None:
        return None
    step = matching_step(unseal(cipher, user.totp_secret), code, now, user.totp_last_step)
    if step is not None:
        newer = sa.or_(col(User.totp_last_step).is_(None), col(User.totp_last_step) < step)
        moved = db.exec(update(User).where(col(User.id) == user_id, newer).values(totp_last_step=step))
        db.commit()
        return "totp" if moved.rowcount == 1 else None
    spent = db.exec(
        delete(TotpRecoveryCode).where(
            col(TotpRecoveryCode.user_id) == user_id, col(TotpRecoveryCode.digest) == recovery_digest(code)
        )
    )
    db.commit()
    return "recovery" if spent.rowcount == 1 else None


def clear_totp(db: Session, user: User) -> None:
    """Turn the user's TOTP off: secrets, the newest step and the recovery codes go (the caller commits)."""
    user.totp_enabled, user.totp_secret, user.totp_pending, user.totp_last_step = False, None, None, None
    db.exec(delete(TotpRecoveryCode).where(col(TotpRecoveryCode.user_id) == user.id))
    db.add(user)
