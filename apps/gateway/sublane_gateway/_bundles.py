"""Encrypted account bundles (BULK-1/2): accounts moved between installations with one passphrase.

A bundle is ``MAGIC`` · scrypt parameters and salt · AES-256-GCM nonce · ciphertext, all through
``cryptography``'s public primitives. The key is derived from the passphrase with scrypt (n=2**15,
r=8, p=1: about 32 MiB and a tenth of a second, per try; a bundle asking for more is refused,
BULK-3); the header is authenticated as associated data, so a changed byte anywhere — header, nonce
or ciphertext — fails the tag check, the same way a wrong passphrase does: :class:`BadBundle`, and
nothing is imported. ``cryptography`` is imported by the first export or import, not with the app
(issue #49: a default start never loads it). The plaintext is JSON:
``{"version": 1, "exported_at", "accounts": [{"provider", "name", "credentials", …}]}``.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Final

MAGIC: Final = b"SUBLANE-BUNDLE\x001"
SCRYPT_N: Final = 2**15
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
_HEADER: Final = struct.Struct(">IHH16s12s")  # n, r, p, salt, nonce
MAX_BUNDLE_BYTES: Final = 16 << 20
VERSION: Final = 1


class BadBundle(Exception):
    """A wrong passphrase, or a damaged or foreign file (they cannot be told apart, by design)."""


def _key(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    # BULK-3: a bundle may ask for at most the cost export itself uses (memory 128·n·r bytes, time
    # n·r·p): the uploader does not choose how much memory and time an import spends.
    if not (2**10 <= n <= SCRYPT_N and n & (n - 1) == 0 and 1 <= r <= SCRYPT_R and 1 <= p <= SCRYPT_P):
        raise BadBundle("unusual key-derivation parameters")
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode())


def seal_bundle(passphrase: str, document: dict[str, Any]) -> bytes:
    """The bundle file of ``document``."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    salt, nonce = os.urandom(16), os.urandom(12)
    header = MAGIC + _HEADER.pack(SCRYPT_N, SCRYPT_R, SCRYPT_P, salt, nonce)
    plaintext = json.dumps(document, separators=(",", ":")).encode()
    key = _key(passphrase, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return header + AESGCM(key).encrypt(nonce, plaintext, header)


def open_bundle(passphrase: str, data: bytes) -> dict[str, Any]:
    """The document inside a bundle file; :class:`BadBundle` for anything else."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    size = len(MAGIC) + _HEADER.size
    if len(data) > MAX_BUNDLE_BYTES or len(data) < size + 16 or not data.startswith(MAGIC):
        raise BadBundle("not a SubLane bundle")
    header = data[:size]
    n, r, p, salt, nonce = _HEADER.unpack(header[len(MAGIC) :])
    try:
        plaintext = AESGCM(_key(passphrase, salt, n, r, p)).decrypt(nonce, data[size:], header)
        document = json.loads(plaintext)
    except (InvalidTag, ValueError) as exc:
        raise BadBundle(type(exc).__name__) from None
    try:  # BULK-3: JSON may escape a lone surrogate, which no text column or answer can hold
        json.dumps(document, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise BadBundle("text that is not Unicode") from None
    if not isinstance(document, dict) or document.get("version") != VERSION:
        raise BadBundle("an unknown bundle version")
    if not isinstance(document.get("accounts"), list):
        raise BadBundle("no accounts")
    return document
