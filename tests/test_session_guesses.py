"""OPS-4 (guesses): passwords and codes checked through a signed-in session — the password change,
turning TOTP off with a code or a recovery code — are throttled like sign-in: after
``SUBLANE_LOGIN_FAILURES_MAX`` wrong ones, 429 ``too_many_attempts`` with ``Retry-After``, before
any Argon2 hash, against a real gateway."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pyotp
from gateway_pool import Pool

from sublane_gateway.testing import MEMBER_PASSWORD

TRIES = 15
LIMIT = 5
CHANGE = {"current_password": MEMBER_PASSWORD, "new_password": "y" * 12}


def _statuses(answers: list[httpx.Response]) -> list[int]:
    return [answer.status_code for answer in answers]


def _throttled(answer: httpx.Response) -> bool:
    return (
        answer.status_code == 429
        and answer.json()["error"]["code"] == "too_many_attempts"
        and int(answer.headers["retry-after"]) >= 1
    )


def test_ops_4_wrong_current_passwords_through_a_session_are_throttled_like_sign_in(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(login_failures_max=LIMIT)
    _user, member = pool.gateway.member(pool.admin, "gus")
    answers = [
        member.post("/api/me/password", json={"current_password": f"guess-{n:04d}", "new_password": "x" * 12})
        for n in range(TRIES)
    ]
    assert _statuses(answers) == [400] * LIMIT + [429] * (TRIES - LIMIT)  # 5 hashes, not 15
    assert all(_throttled(answer) for answer in answers[LIMIT:])
    # Like sign-in: the right password waits out the window too, and so does signing in by name.
    right = member.post("/api/me/password", json=CHANGE)
    assert _throttled(right)
    signing_in = pool.gateway.client().post(
        "/api/auth/login", json={"username": "gus", "password": MEMBER_PASSWORD}
    )
    assert _throttled(signing_in)
    pool.gateway.clock.advance(301)  # the window (SUBLANE_LOGIN_FAILURE_WINDOW_S) has passed
    right = member.post("/api/me/password", json=CHANGE)
    assert right.status_code == 204, right.text


def test_ops_4_totp_disable_guesses_of_password_code_or_recovery_code_are_throttled(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(login_failures_max=LIMIT)
    _user, member = pool.gateway.member(pool.admin, "tia")
    secret = member.post("/api/me/totp/setup").json()["secret"]
    assert member.post("/api/me/totp/enable", json={"code": pyotp.TOTP(secret).now()}).status_code == 200
    wrong_password = {"password": "not-the-password", "code": "123456"}
    wrong_recovery = {"password": MEMBER_PASSWORD, "code": "aaaa-bbbb-cccc"}
    answers = [
        member.post("/api/me/totp/disable", json=wrong_password if n % 2 else wrong_recovery)
        for n in range(TRIES)
    ]
    assert _statuses(answers) == [400] * LIMIT + [429] * (TRIES - LIMIT)
    assert all(_throttled(answer) for answer in answers[LIMIT:])
    assert member.get("/api/me").json()["user"]["totp_enabled"] is True
