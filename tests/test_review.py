"""Codex auto-review parents end to end (REVIEW-1…3), from what the real Codex CLI 0.171.0 sends
(``fixtures/codex_auto_review_0.171.0.json``: a parent turn and its guardian review)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gateway_pool import Pool
from sqlmodel import Session

from sublane_core import Affinity
from sublane_gateway.pipeline._review import review_link
from sublane_scheduler import binding_digest

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "codex_auto_review_0.171.0.json").read_text())
PARENT_TURN, GUARDIAN = FIXTURE["requests"]
PARENT = GUARDIAN["headers"]["x-codex-parent-thread-id"]
CHILD = GUARDIAN["headers"]["thread-id"]
BODY = {"model": "gpt-5-codex", "input": "review this action", "stream": True}


def guardian(**changes: str | None) -> tuple[dict[str, str], dict[str, Any]]:
    """The captured guardian request's headers and client metadata, with ``changes`` applied."""
    headers = {k: v for k, v in GUARDIAN["headers"].items() if k not in ("authorization", "content-type")}
    for name, value in changes.items():
        name = name.replace("_", "-")
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    return headers, copy.deepcopy(GUARDIAN["body"])


def test_review_1_the_captured_guardian_request_names_its_parent_and_its_own_thread() -> None:
    headers, body = guardian()
    link = review_link(headers, body)
    assert link is not None and link.kind == "guardian"
    assert link.parent_key == PARENT and link.child_key == CHILD
    assert headers["session-id"] == PARENT  # why the child needs a key of its own (REVIEW-3)
    assert review_link(PARENT_TURN["headers"], PARENT_TURN["body"]) is None  # the parent turn


@pytest.mark.parametrize(
    "changes",
    [
        {"x_codex_parent_thread_id": "0000-another-parent"},  # conflicts with the turn metadata
        {"x_openai_subagent": "review"},  # conflicts with subagent_kind "guardian"
    ],
)
def test_review_3_conflicting_parent_data_offers_no_parent(changes: dict[str, str]) -> None:
    headers, body = guardian(**changes)
    link = review_link(headers, body)
    assert link is not None and link.parent_key is None and link.child_key == CHILD


def test_review_3_a_parent_that_is_the_child_itself_is_ambiguous() -> None:
    headers, body = guardian(thread_id=PARENT)
    metadata = json.loads(headers["x-codex-turn-metadata"])
    metadata["thread_id"] = PARENT
    headers["x-codex-turn-metadata"] = json.dumps(metadata)
    link = review_link(headers, body)
    assert link is not None and link.parent_key is None and link.child_key is None


def test_review_1_the_guardian_prefers_the_parents_account_end_to_end(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=3)
    api = pool.client()
    parent_headers = {"session-id": PARENT, "thread-id": PARENT}
    assert api.post("/v1/responses", json=BODY, headers=parent_headers).status_code == 200
    parent_account = pool.finished[-1].account_id
    headers, metadata = guardian()
    body = {**BODY, "client_metadata": metadata["client_metadata"], "prompt_cache_key": f"guardian:{PARENT}"}
    for _ in range(3):
        answer = api.post("/v1/responses", json=body, headers=headers)
        assert answer.status_code == 200 and pool.finished[-1].account_id == parent_account
    rules = [record.routing["rule"] for record in pool.finished[-3:] if record.routing]
    assert rules == ["parent_preference", "kept_binding", "kept_binding"]  # then the child's own binding
    with Session(pool.gateway.engine) as db:  # what the affinity table holds (AFF-7)
        child, parent = (db.get(Affinity, binding_digest(1, key)) for key in (CHILD, PARENT))
    assert child is not None and parent is not None
    assert child.account_id == parent.account_id == parent_account
    assert child.user_id == parent.user_id == 1  # REVIEW-1 looks up parents of the same user only


def test_review_3_an_exhausted_parent_account_means_normal_selection_and_an_untouched_parent(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    api = pool.client()
    assert api.post("/v1/responses", json=BODY, headers={"session-id": PARENT}).status_code == 200
    parent_account = pool.finished[-1].account_id
    assert parent_account is not None
    pool.sim.set_quota(pool.sim_account_of(parent_account).id, "primary", used_percent=100, reset_in_s=900)
    assert api.post("/v1/responses", json=BODY, headers={"session-id": PARENT}).status_code == 403
    headers, metadata = guardian()
    body = {**BODY, "model": "gpt-5.2", "client_metadata": metadata["client_metadata"]}
    answer = api.post("/v1/responses", json=body, headers=headers)
    assert answer.status_code == 200 and pool.finished[-1].account_id != parent_account
    assert pool.finished[-1].routing is not None and pool.finished[-1].routing["parent"] == "unavailable"
    # The parent conversation still belongs to its account: still 403, never moved by the review.
    refused = api.post("/v1/responses", json=BODY, headers={"session-id": PARENT})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "quota_exhausted"


async def test_review_1_over_the_websocket_too(make_pool: Callable[..., Pool]) -> None:
    import websockets

    pool = make_pool(accounts=3)
    api = pool.client()
    assert api.post("/v1/responses", json=BODY, headers={"session-id": PARENT}).status_code == 200
    parent_account = pool.finished[-1].account_id
    headers, metadata = guardian()
    headers.pop("accept", None)
    url = pool.gateway.url.replace("http://", "ws://") + "/v1/responses"
    extra = {
        "authorization": f"Bearer {pool.key}",
        "openai-beta": "responses_websockets=2026-02-06",
        **headers,
    }
    frame = {"type": "response.create", "model": "gpt-5-codex", "input": "review", "store": False,
             "stream": True, "client_metadata": metadata["client_metadata"]}  # fmt: skip
    async with websockets.connect(url, additional_headers=extra) as ws:
        await ws.send(json.dumps(frame))
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if event["type"] in ("response.completed", "response.failed", "error"):
                break
    assert event["type"] == "response.completed"
    record = pool.finished[-1]
    assert record.account_id == parent_account and record.routing is not None
    assert record.routing["rule"] == "parent_preference"
