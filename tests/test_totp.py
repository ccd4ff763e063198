"""Two-factor sign-in with TOTP (AUTH-1), against a real gateway, with codes computed by ``pyotp`` at
the real clock (the gateway's own clock is the real one too)."""

from __future__ import annotations

import concurrent.futures
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyotp
import pytest
from gateway_pool import Pool, settings_for
from sqlalchemy import text

from sublane_gateway.testing import ADMIN_PASSWORD, ADMIN_USERNAME, MEMBER_PASSWORD, running_gateway
from sublane_sim import Simulator


def _login(pool: Pool, username: str, password: str, code: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {"username": username, "password": password}
    if code is not None:
        body["totp_code"] = code
    return pool.gateway.client().post("/api/auth/login", json=body)


def _code(secret: str, steps: int = 0) -> str:
    """The code of the step ``steps`` away from now."""
    return pyotp.TOTP(secret).at(time.time() + 30 * steps)


def _turn_on(client: httpx.Client) -> tuple[str, list[str]]:
    setup = client.post("/api/me/totp/setup").json()
    enabled = client.post("/api/me/totp/enable", json={"code": _code(setup["secret"])})
    assert enabled.status_code == 200, enabled.text
    return setup["secret"], enabled.json()["recovery_codes"]


def _error(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


def test_auth_1_set_up_confirm_and_sign_in_with_a_code(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _user, member = pool.gateway.member(pool.admin, "ann")
    setup = member.post("/api/me/totp/setup")
    assert setup.status_code == 200
    secret = setup.json()["secret"]
    uri = setup.json()["otpauth_uri"]
    assert (
        uri.startswith("otpauth://totp/SubLane:ann?")
        and f"secret={secret}" in uri
        and "issuer=SubLane" in uri
    )
    assert setup.json()["qr_svg"].startswith("<svg")
    # Pending until confirmed: the password alone still signs in.
    assert _login(pool, "ann", MEMBER_PASSWORD).status_code == 200
    wrong = member.post(
        "/api/me/totp/enable", json={"code": "000000" if _code(secret) != "000000" else "111111"}
    )
    assert wrong.status_code == 400 and _error(wrong) == "invalid_totp"
    first = _code(secret)
    enabled = member.post("/api/me/totp/enable", json={"code": first})
    assert enabled.status_code == 200
    codes = enabled.json()["recovery_codes"]
    assert len(codes) == 10 and len(set(codes)) == 10
    assert member.get("/api/me").json()["user"]["totp_enabled"] is True
    assert member.post("/api/me/totp/setup").status_code == 409  # already on
    # Signing in now takes the code.
    missing = _login(pool, "ann", MEMBER_PASSWORD)
    assert missing.status_code == 401 and _error(missing) == "totp_required"
    assert _error(_login(pool, "ann", "wrong-password", _code(secret))) == "invalid_credentials"
    replay = _login(pool, "ann", MEMBER_PASSWORD, first)  # spent when it turned TOTP on
    assert replay.status_code == 401 and _error(replay) == "invalid_totp"
    ahead = _code(secret, 1)  # one step of drift is allowed
    assert _login(pool, "ann", MEMBER_PASSWORD, ahead).status_code == 200
    again = _login(pool, "ann", MEMBER_PASSWORD, ahead)  # a code is accepted at most once
    assert again.status_code == 401 and _error(again) == "invalid_totp"
    late = _login(pool, "ann", MEMBER_PASSWORD, _code(secret, -1))  # older than the newest accepted
    assert late.status_code == 401
    far = _login(pool, "ann", MEMBER_PASSWORD, _code(secret, 3))  # beyond one step
    assert far.status_code == 401 and _error(far) == "invalid_totp"


def test_auth_1_a_recovery_code_signs_in_once(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _user, member = pool.gateway.member(pool.admin, "ben")
    _secret, codes = _turn_on(member)
    assert _login(pool, "ben", MEMBER_PASSWORD, codes[0].upper()).status_code == 200  # case does not matter
    spent = _login(pool, "ben", MEMBER_PASSWORD, codes[0])
    assert spent.status_code == 401 and _error(spent) == "invalid_totp"
    assert _login(pool, "ben", MEMBER_PASSWORD, codes[1].replace("-", "")).status_code == 200
    actions = [entry["action"] for entry in pool.admin.get("/api/audit").json()["items"]]
    assert actions.count("user.totp_recovery_used") == 2


def test_auth_1_wrong_codes_count_as_failed_sign_ins(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(login_failures_max=3)
    _user, member = pool.gateway.member(pool.admin, "cal")
    secret, _codes = _turn_on(member)
    for _ in range(3):
        assert _error(_login(pool, "cal", MEMBER_PASSWORD, "123456")) in ("invalid_totp", "too_many_attempts")
    throttled = _login(pool, "cal", MEMBER_PASSWORD, _code(secret, 1))
    assert throttled.status_code == 429 and _error(throttled) == "too_many_attempts"


def test_auth_1_one_code_two_sign_ins_at_once_only_one_passes(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _user, member = pool.gateway.member(pool.admin, "dee")
    secret, _codes = _turn_on(member)
    code = _code(secret, 1)
    with concurrent.futures.ThreadPoolExecutor(8) as threads:
        statuses = list(
            threads.map(lambda _: _login(pool, "dee", MEMBER_PASSWORD, code).status_code, range(8))
        )
    assert statuses.count(200) == 1 and statuses.count(401) == 7


def test_auth_1_turning_it_off_takes_the_password_and_a_code(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _user, member = pool.gateway.member(pool.admin, "eve")
    secret, codes = _turn_on(member)
    bad_password = member.post(
        "/api/me/totp/disable", json={"password": "nope-nope", "code": _code(secret, 1)}
    )
    assert bad_password.status_code == 400
    bad_code = member.post("/api/me/totp/disable", json={"password": MEMBER_PASSWORD, "code": "12"})
    assert bad_code.status_code == 400 and _error(bad_code) == "invalid_totp"
    off = member.post("/api/me/totp/disable", json={"password": MEMBER_PASSWORD, "code": codes[3]})
    assert off.status_code == 204
    assert member.get("/api/me").json()["user"]["totp_enabled"] is False
    assert _login(pool, "eve", MEMBER_PASSWORD).status_code == 200
    assert (
        member.post("/api/me/totp/disable", json={"password": MEMBER_PASSWORD, "code": "123456"}).status_code
        == 409
    )


def test_auth_1_an_admin_resets_a_lost_phone(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    user, member = pool.gateway.member(pool.admin, "fay")
    _turn_on(member)
    assert _login(pool, "fay", MEMBER_PASSWORD).status_code == 401
    assert member.delete(f"/api/users/{user['id']}/totp").status_code == 403  # members may not
    assert pool.admin.delete(f"/api/users/{user['id']}/totp").status_code == 204
    assert _login(pool, "fay", MEMBER_PASSWORD).status_code == 200
    assert pool.admin.delete("/api/users/999/totp").status_code == 404
    listed = {u["username"]: u for u in pool.admin.get("/api/users").json()["items"]}
    assert listed["fay"]["totp_enabled"] is False
    reset = pool.admin.get("/api/audit", params={"action": "user.totp_reset"}).json()["items"]
    assert len(reset) == 1


def test_auth_1_admins_must_turn_it_on_when_required(sim: Simulator, tmp_path: Path) -> None:
    with running_gateway(settings_for(sim, tmp_path / "data", require_totp_for_admins=True)) as gateway:
        admin = gateway.admin()
        refused = admin.get("/api/users")
        assert refused.status_code == 403 and _error(refused) == "totp_setup_required"
        assert admin.get("/api/me").status_code == 200  # their own routes stay open
        secret, _codes = _turn_on(admin)
        assert admin.get("/api/users").status_code == 200
        body = {"username": ADMIN_USERNAME, "password": ADMIN_PASSWORD, "totp_code": _code(secret, 1)}
        assert gateway.client().post("/api/auth/login", json=body).status_code == 200


def test_auth_1_the_secret_is_sealed_at_rest_and_never_logged_or_audited(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pool = make_pool()
    _user, member = pool.gateway.member(pool.admin, "gus")
    secret, codes = _turn_on(member)
    with pool.gateway.engine.connect() as connection:
        stored = json.dumps(
            [list(row) for row in connection.execute(text("SELECT * FROM users"))], default=repr
        ) + json.dumps([list(row) for row in connection.execute(text("SELECT * FROM totp_recovery_codes"))])
        audit = json.dumps([list(row) for row in connection.execute(text("SELECT * FROM audit_log"))])
    for secret_text in (secret, *codes, *(code.replace("-", "") for code in codes)):
        assert secret_text not in stored and secret_text not in audit
        assert secret_text not in caplog.text
