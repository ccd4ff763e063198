from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sublane_core import CredentialCipher, CredentialDecryptError, CredentialKeyError, load_or_create_key


def test_cred_9_key_file_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "data" / "credentials.key"
    key = load_or_create_key(path)
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(path) == key  # read back, never regenerated


def test_cred_9_key_file_mode_ignores_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "credentials.key"
        load_or_create_key(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_cred_9_missing_key_is_an_error_when_creation_is_not_allowed(tmp_path: Path) -> None:
    with pytest.raises(CredentialKeyError):
        load_or_create_key(tmp_path / "absent.key", create=False)


@pytest.mark.parametrize("content", ["not base64 !!", "c2hvcnQ"])
def test_cred_9_malformed_key_file_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "credentials.key"
    path.write_text(content)
    with pytest.raises(CredentialKeyError):
        load_or_create_key(path)


def test_cred_9_bundles_round_trip_and_hide_their_plaintext(tmp_path: Path) -> None:
    cipher = CredentialCipher(load_or_create_key(tmp_path / "k"))
    bundle = {"access_token": "at-very-secret", "refresh_token": "rt-very-secret", "n": 1}
    sealed = cipher.encrypt(bundle)
    assert b"very-secret" not in sealed
    assert cipher.encrypt(bundle) != sealed  # fresh nonce each time
    assert cipher.decrypt(sealed) == bundle


def test_cred_9_wrong_key_or_tampering_cannot_open_credentials(tmp_path: Path) -> None:
    sealed = CredentialCipher(load_or_create_key(tmp_path / "a")).encrypt({"access_token": "x"})
    with pytest.raises(CredentialDecryptError):
        CredentialCipher(load_or_create_key(tmp_path / "b")).decrypt(sealed)
    cipher = CredentialCipher(load_or_create_key(tmp_path / "a"))
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(CredentialDecryptError):
        cipher.decrypt(tampered)
    with pytest.raises(CredentialDecryptError):
        cipher.decrypt(b"plain")
