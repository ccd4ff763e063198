"""Password hashing with Argon2id (argon2-cffi): a well-kept library, not our own construction."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

_hasher = PasswordHasher()
# Verified when the username is unknown, so that a miss takes as long as a wrong password.
_DUMMY_HASH = _hasher.hash("sublane-timing-equalizer")


def hash_password(password: str) -> str:
    """An Argon2id hash string of ``password``."""
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches; with ``password_hash=None`` it spends the same time and says no."""
    try:
        return _hasher.verify(password_hash or _DUMMY_HASH, password) and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
