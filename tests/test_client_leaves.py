"""ADM-6 (amendment, turn 4): a client that leaves ends its call within 1 s, whatever its shape.

Found by probing: a JSON call (no streaming) whose client closed kept its slot and its member's place
48 s, read the upstream to the end and was recorded ``success``. On a real gateway, against a
simulator answer that takes seconds, the client gives up after a moment: the slot, the member's
place and the upstream request must go within a second, and the record must say ``canceled``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour

MESSAGES = {"max_tokens": 64, "messages": [{"role": "user", "content": "say hi"}]}
CALLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "responses": ("codex", "/v1/responses", {"model": "gpt-5-codex", "input": "say hi"}),
    "chat": ("codex", "/v1/chat/completions", {"model": "gpt-5-codex", **MESSAGES}),
    "messages": ("claude", "/v1/messages", {"model": "claude-sonnet-4-6", **MESSAGES}),
    "generate": (
        "antigravity",
        "/v1beta/models/gemini-3-flash:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "say hi"}]}]},
    ),
}
SLOW_BODY = Behaviour.ok(deltas=120, pacing_ms=50)  # 6 s of answer
SLOW_HEAD = Behaviour.ok(header_delay_ms=6000)  # 6 s before the answer's head


def _leave_after(pool: Pool, path: str, body: dict[str, Any], seconds: float) -> float:
    """Send the call, give up after ``seconds`` (the connection closes); when the client left."""
    with pool.client() as client, pytest.raises(httpx.ReadTimeout):
        client.post(path, json=body, timeout=httpx.Timeout(10, read=seconds))
    return time.monotonic()


def _released_within(pool: Pool, since: float, limit_s: float) -> float:
    leases, admission = pool.runtime.leases, pool.runtime.scheduler.admission
    while leases.total_in_flight() or admission.in_use or not pool.finished:
        assert time.monotonic() - since < limit_s + 2, "the call kept its slot"
        time.sleep(0.01)
    return time.monotonic() - since


@pytest.mark.parametrize("shape", sorted(CALLS))
def test_adm_6_a_json_call_whose_client_leaves_ends_within_1_s(
    make_pool: Callable[..., Pool], shape: str
) -> None:
    provider, path, body = CALLS[shape]
    pool = make_pool(provider=provider)
    account = pool.sim_accounts[0].id
    pool.sim.script(account, SLOW_BODY)
    left = _leave_after(pool, path, body, 1.0)
    released = _released_within(pool, left, 1.0)
    assert released < 1.0, released
    leases = pool.runtime.leases
    assert leases.acquired_total == leases.released_total == 1  # once
    assert pool.runtime.scheduler.admission.member_in_use(1) == 0  # the member's place is back
    record = pool.finished[-1]
    assert (record.outcome, record.error_code) == ("canceled", "client_canceled")
    deadline = time.monotonic() + 1
    while pool.sim.counters(account).current_streams and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.sim.counters(account).current_streams == 0  # the upstream request was cancelled


def test_adm_6_a_call_whose_client_leaves_before_the_upstream_answers_ends_within_1_s(
    make_pool: Callable[..., Pool],
) -> None:
    """Waiting for the upstream's head: a stream too (its relay has not begun yet)."""
    pool = make_pool()
    for stream in (False, True):
        pool.finished.clear()
        pool.sim.script(pool.sim_accounts[0].id, SLOW_HEAD)
        body = {"model": "gpt-5-codex", "input": "say hi", "stream": stream}
        left = _leave_after(pool, "/v1/responses", body, 1.0)
        assert _released_within(pool, left, 1.0) < 1.0
        assert pool.finished[-1].outcome == "canceled"
    leases = pool.runtime.leases
    assert leases.acquired_total == leases.released_total == 2


def test_adm_6_a_call_whose_client_leaves_while_waiting_for_a_slot_gives_its_place_back(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}/limits", json={"max_concurrency": 1})
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(deltas=60, pacing_ms=50))
    body = {"model": "gpt-5-codex", "input": "say hi"}
    with pool.client() as busy:
        running = threading.Thread(target=busy.post, args=("/v1/responses",), kwargs={"json": body})
        running.start()
        while not pool.runtime.leases.total_in_flight():
            time.sleep(0.01)
        left = _leave_after(pool, "/v1/responses", body, 0.5)  # waits for the one slot, then leaves
        admission = pool.runtime.scheduler.admission
        while admission.in_use > 1:
            assert time.monotonic() - left < 1.0, "the waiter kept its place"
            time.sleep(0.01)
        assert pool.finished and pool.finished[-1].outcome == "canceled"
        running.join()
    assert pool.finished[-1].outcome == "success"  # the call that stayed was served


def test_adm_6_a_client_that_leaves_during_a_token_refresh_never_loses_the_rotated_tokens(
    make_pool: Callable[..., Pool],
) -> None:
    """The refresh spends the refresh token upstream: the cancellation of a departed client waits
    for its answer, so the rotated tokens are kept (and the next call needs no second refresh)."""
    from sublane_sim import RefreshOutcome

    pool = make_pool()
    account = pool.sim_accounts[0]
    pool.sim.expire_access_tokens(account.id)  # the next call gets a 401, then refreshes
    pool.sim.script_refresh(account.id, RefreshOutcome(delay_ms=1500))
    body = {"model": "gpt-5-codex", "input": "say hi"}
    _leave_after(pool, "/v1/responses", body, 0.5)  # while the refresh runs
    _released_within(pool, time.monotonic(), 3.0)
    assert pool.finished[-1].outcome == "canceled"
    served = pool.client().post("/v1/responses", json=body)
    assert served.status_code == 200, served.text
    assert pool.sim.counters(account.id).refreshes == 1  # the first refresh's tokens were kept
