"""COST-4 over the Responses WebSocket (as the Codex CLI speaks it): a turn continuing the previous
response (``previous_response_id``, only the new items in its input) extends it by definition."""

from __future__ import annotations

from collections.abc import Callable

import websockets
from gateway_pool import Pool
from test_codex_websocket import CREATE, _headers, _turn, _url

from sublane_sim import Behaviour


async def test_cost_4_websocket_turns_get_miss_reasons(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    headers = _headers(pool, **{"session-id": "ws-thread"})
    async with websockets.connect(_url(pool), additional_headers=headers) as ws:
        first = await _turn(ws, CREATE)
        pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(cached_tokens=0))  # evicted early
        continued = {**CREATE, "input": "and more", "previous_response_id": first[-1]["response"]["id"]}
        await _turn(ws, continued)
    reasons = [record.cache_miss_reason for record in pool.finished]
    assert reasons == ["first_turn", "unknown"]  # not prefix_changed: it continues the response
