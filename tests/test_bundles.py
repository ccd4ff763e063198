"""Account bundles (BULK-1/2): exported, all accounts deleted, imported, used for a model call; a
damaged file or a wrong passphrase imports nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from gateway_pool import Pool

from sublane_gateway._bundles import BadBundle, open_bundle, seal_bundle

PASSPHRASE = "correct horse battery staple"
BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}


def _export(pool: Pool, **body: Any) -> httpx.Response:
    return pool.admin.post("/api/accounts/export", json={"passphrase": PASSPHRASE, **body})


def _import(pool: Pool, data: bytes, passphrase: str = PASSPHRASE, **fields: str) -> httpx.Response:
    return pool.admin.post(
        "/api/accounts/import-bundle",
        files={"file": ("accounts.bundle", data, "application/octet-stream")},
        data={"passphrase": passphrase, **fields},
        headers={"origin": pool.gateway.url},
    )


def _accounts(pool: Pool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = pool.admin.get("/api/accounts").json()["items"]
    return items


def test_bulk_1_2_export_delete_import_and_serve(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    group = pool.admin.post("/api/groups", json={"name": "night-shift"}).json()["id"]
    pool.admin.put(f"/api/groups/{group}/accounts", json={"account_ids": [pool.account_ids[0]]})
    pool.admin.patch(f"/api/accounts/{pool.account_ids[1]}/limits", json={"max_concurrency": 7})
    exported = _export(pool, account_ids=None)
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/octet-stream"
    assert "attachment" in exported.headers["content-disposition"]
    bundle = exported.content
    for account in pool.sim_accounts:  # no token is readable in the file
        for token in (account.access_token, account.refresh_token):
            assert token.encode() not in bundle
    for account_id in pool.account_ids:
        assert pool.admin.delete(f"/api/accounts/{account_id}").status_code == 204
    assert _accounts(pool) == []
    assert pool.client().post("/v1/responses", json=BODY).status_code == 404
    answer = _import(pool, bundle)
    assert answer.status_code == 200, answer.text
    assert [item["name"] for item in answer.json()["imported"]] == ["codex-1", "codex-2"]
    assert answer.json()["skipped"] == []
    accounts = {account["name"]: account for account in _accounts(pool)}
    assert accounts["codex-2"]["max_concurrency"] == 7
    assert sorted(accounts["codex-1"]["group_ids"]) == [1, group]  # groups by name
    pool.settle()
    served = pool.client().post("/v1/responses", json=BODY)
    assert served.status_code == 200, served.text
    assert "response.completed" in served.text
    actions = [entry["action"] for entry in pool.admin.get("/api/audit").json()["items"]]
    assert actions.count("account.import_bundle") == 2 and "account.export" in actions


def test_bulk_2_names_that_exist_get_a_suffix_and_groups_can_be_chosen(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=1)
    group = pool.admin.post("/api/groups", json={"name": "imports"}).json()["id"]
    bundle = _export(pool, account_ids=pool.account_ids).content
    answer = _import(pool, bundle, group_ids=str(group))
    assert answer.status_code == 200, answer.text
    (imported,) = answer.json()["imported"]
    assert imported["name"] == "codex-1-2"
    accounts = {account["name"]: account for account in _accounts(pool)}
    assert accounts["codex-1-2"]["group_ids"] == [group]
    assert _import(pool, bundle, group_ids="999").status_code == 404


def test_bulk_2_a_damaged_file_or_a_wrong_passphrase_imports_nothing(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    bundle = _export(pool).content
    before = len(_accounts(pool))
    for position in (3, len(bundle) // 2, len(bundle) - 1):  # the header, the middle, the tag
        damaged = bytearray(bundle)
        damaged[position] ^= 0x01
        refused = _import(pool, bytes(damaged))
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_bundle"
    wrong = _import(pool, bundle, passphrase="not the passphrase")
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "bad_bundle"
    assert _import(pool, b"not a bundle at all").json()["error"]["code"] == "bad_bundle"
    assert len(_accounts(pool)) == before


def test_bulk_1_passphrase_rules_and_admins_only(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    assert pool.admin.post("/api/accounts/export", json={"passphrase": "short"}).status_code == 400
    assert pool.admin.post("/api/accounts/export", json={"passphrase": "x" * 257}).status_code == 400
    assert _export(pool, account_ids=[999]).status_code == 404
    _member, session = pool.gateway.member(pool.admin, "ned")
    assert session.post("/api/accounts/export", json={"passphrase": PASSPHRASE}).status_code == 403


def test_bulk_2_a_cross_site_form_cannot_post_a_bundle(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    bundle = _export(pool).content
    files = {"file": ("a.bundle", bundle, "application/octet-stream")}
    no_origin = pool.admin.post("/api/accounts/import-bundle", files=files, data={"passphrase": PASSPHRASE})
    assert no_origin.status_code == 415
    foreign = pool.admin.post(
        "/api/accounts/import-bundle",
        files=files,
        data={"passphrase": PASSPHRASE},
        headers={"origin": "https://evil.example"},
    )
    assert foreign.status_code == 403


def test_bulk_1_2_the_passphrase_and_credentials_are_never_logged(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pool = make_pool()
    bundle = _export(pool).content
    _import(pool, bundle)
    _import(pool, bundle, passphrase="wrong wrong wrong")
    account = pool.sim_accounts[0]
    for secret in (PASSPHRASE, account.access_token, account.refresh_token):
        assert secret not in caplog.text
    entries = str(pool.admin.get("/api/audit").json())
    assert PASSPHRASE not in entries and account.refresh_token not in entries


def test_bulk_the_format_refuses_every_changed_byte() -> None:
    sealed = seal_bundle(PASSPHRASE, {"version": 1, "exported_at": 0, "accounts": []})
    assert open_bundle(PASSPHRASE, sealed)["accounts"] == []
    for position in range(0, len(sealed), max(1, len(sealed) // 40)):
        damaged = bytearray(sealed)
        damaged[position] ^= 0x80
        with pytest.raises(BadBundle):
            open_bundle(PASSPHRASE, bytes(damaged))


def _sealed_with_cost(document: dict[str, Any], n: int, r: int = 8, p: int = 1) -> bytes:
    """A bundle made as export makes one, but asking for the scrypt cost ``n``, ``r``, ``p``."""
    import json
    import os
    import struct

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    from sublane_gateway._bundles import MAGIC

    salt, nonce = os.urandom(16), os.urandom(12)
    header = MAGIC + struct.pack(">IHH16s12s", n, r, p, salt, nonce)
    key = Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(PASSPHRASE.encode())
    return header + AESGCM(key).encrypt(nonce, json.dumps(document).encode(), header)


def test_bulk_3_the_uploader_does_not_choose_the_key_derivation_cost(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    document = open_bundle(PASSPHRASE, _export(pool).content)
    before = len(_accounts(pool))
    for n, r, p in ((2**16, 8, 1), (2**15, 16, 1), (2**15, 8, 2)):  # each beyond export's own cost
        refused = _import(pool, _sealed_with_cost(document, n, r, p))
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_bundle", (n, r, p)
    assert len(_accounts(pool)) == before
    assert _import(pool, _sealed_with_cost(document, 2**14)).status_code == 200  # cheaper is fine


def test_bulk_3_a_bundle_as_large_as_export_makes_imports(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    document = open_bundle(PASSPHRASE, _export(pool).content)
    document["notes"] = "x" * (3 << 20)  # a bundle of 3 MiB: many accounts make such files
    bundle = seal_bundle(PASSPHRASE, document)
    assert len(bundle) > 3 << 20
    answer = _import(pool, bundle)
    assert answer.status_code == 200, answer.text
    assert [item["name"] for item in answer.json()["imported"]] == ["codex-1-2"]
    too_large = _import(pool, b"x" * (17 << 20))
    assert too_large.status_code == 413


def test_bulk_3_a_lone_surrogate_in_a_name_is_a_400(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    document = open_bundle(PASSPHRASE, _export(pool).content)
    document["accounts"][0]["name"] = "codex-\ud800"
    answer = _import(pool, seal_bundle(PASSPHRASE, document))
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "bad_bundle", answer.text
    assert len(_accounts(pool)) == 1


def test_bulk_3_bundled_credentials_are_checked_like_an_import(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)
    document = open_bundle(PASSPHRASE, _export(pool).content)
    good = document["accounts"][0]
    broken = [
        {**good, "name": "no-tokens", "credentials": {"note": "not a login"}},
        {**good, "name": "number-token", "credentials": {**good["credentials"], "access_token": 5}},
        {**good, "name": "spaced-token", "credentials": {**good["credentials"], "refresh_token": "a b"}},
    ]
    document["accounts"] = [good, *broken]
    answer = _import(pool, seal_bundle(PASSPHRASE, document))
    assert answer.status_code == 200, answer.text
    assert [item["name"] for item in answer.json()["imported"]] == ["codex-1-2"]
    assert answer.json()["skipped"] == [
        {"name": entry["name"], "reason": "invalid_credentials"} for entry in broken
    ]
    names = {account["name"] for account in _accounts(pool)}
    assert names == {"codex-1", "codex-1-2"}  # nothing broken was imported as ready


@pytest.mark.parametrize("provider", ["claude", "antigravity", "openai"])
def test_bulk_3_every_provider_s_exported_credentials_import_again(
    make_pool: Callable[..., Pool], provider: str
) -> None:
    pool = make_pool(accounts=1, provider=provider)
    answer = _import(pool, _export(pool).content)
    assert answer.status_code == 200, answer.text
    assert answer.json()["skipped"] == []
    (imported,) = answer.json()["imported"]
    check = pool.admin.post(f"/api/accounts/{imported['id']}/check")
    assert check.status_code == 200 and check.json()["ok"] is True, check.text
