"""Credential encryption at rest (CRED-9).

Upstream credentials (OAuth access/refresh/id tokens) are stored as AES-256-GCM ciphertext. The key
lives in ``credentials.key`` beside the database, created on first start with mode 0600: a copy of
the database alone reveals no token, and a database without its key file cannot be read.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_VERSION = b"\x01"
_NONCE_BYTES = 12
_ASSOCIATED_DATA = b"sublane/credentials/v1"


class CredentialKeyError(RuntimeError):
    """The key file is missing, unreadable or malformed."""


class CredentialDecryptError(RuntimeError):
    """A ciphertext does not open with this key (wrong key file or tampered data)."""


def load_or_create_key(path: Path, *, create: bool = True) -> bytes:
    """Read the 32-byte key at ``path``; create it (mode 0600, atomically) when absent and allowed."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        if not create:
            raise CredentialKeyError(f"credential key file {path} does not exist") from None
        return _create_key(path)
    except OSError as exc:
        raise CredentialKeyError(f"cannot read credential key file {path}: {exc.strerror}") from None
    return decode_key(text, f"credential key file {path}")


def decode_key(text: str, where: str) -> bytes:
    """A 32-byte key from its base64url text (as ``credentials.key`` holds it); ``where`` names the
    source in the error, never the text."""
    text = text.strip()
    try:
        key = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise CredentialKeyError(f"{where} is not base64") from None
    if len(key) != 32:
        raise CredentialKeyError(f"{where} does not hold a 32-byte key")
    return key


def _create_key(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_bytes(32)
    encoded = base64.urlsafe_b64encode(key).rstrip(b"=") + b"\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        # Another process created it between our read and our create: use theirs.
        return load_or_create_key(path, create=False)
    with os.fdopen(fd, "wb") as handle:
        handle.write(encoded)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(path, 0o600)  # the umask may have narrowed it further; never widened
    return key


class CredentialCipher:
    """Encrypts and decrypts credential bundles (JSON objects) with one key.

    ``cryptography`` is imported by the first value sealed or opened, not with this module: a
    gateway that holds no credential yet never loads it (7 MB of resident memory, issue #49)."""

    __slots__ = ("_aead", "_key")

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise CredentialKeyError("the credential key must be 32 bytes")
        self._key = key
        self._aead: AESGCM | None = None

    def _sealer(self) -> AESGCM:
        aead = self._aead
        if aead is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            aead = self._aead = AESGCM(self._key)  # two threads may both build one: the same
        return aead

    def encrypt(self, bundle: dict[str, Any]) -> bytes:
        """Serialize ``bundle`` and seal it: version byte, nonce, ciphertext with tag."""
        plaintext = json.dumps(bundle, separators=(",", ":"), sort_keys=True).encode("utf-8")
        nonce = secrets.token_bytes(_NONCE_BYTES)
        return _VERSION + nonce + self._sealer().encrypt(nonce, plaintext, _ASSOCIATED_DATA)

    def decrypt(self, sealed: bytes) -> dict[str, Any]:
        """Open a value made by :meth:`encrypt`."""
        if len(sealed) < 1 + _NONCE_BYTES + 16 or sealed[:1] != _VERSION:
            raise CredentialDecryptError("not a SubLane credential ciphertext")
        nonce = sealed[1 : 1 + _NONCE_BYTES]
        aead = self._sealer()
        from cryptography.exceptions import InvalidTag

        try:
            plaintext = aead.decrypt(nonce, sealed[1 + _NONCE_BYTES :], _ASSOCIATED_DATA)
        except InvalidTag:
            raise CredentialDecryptError("credentials do not open with this key") from None
        value = json.loads(plaintext)
        if not isinstance(value, dict):
            raise CredentialDecryptError("credential bundle is not an object")
        return value
