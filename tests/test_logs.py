"""Log lines of model calls through the whole gateway (OPS-11): JSON on request, with ``request_id``."""

from __future__ import annotations

import io
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from gateway_pool import Pool

from sublane_core import configure_logging
from sublane_sim import Behaviour

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True, "store": False}


@pytest.fixture
def json_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """What ``SUBLANE_LOG_FORMAT=json`` writes to stderr while the test runs."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging("INFO", "json")
    yield stream
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def _entries(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_ops_11_every_log_line_of_a_model_call_carries_its_request_id(
    make_pool: Callable[..., Pool], json_logs: io.StringIO
) -> None:
    pool = make_pool(accounts=1)
    client = pool.client()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.cut(after_deltas=1))
    cut = client.post("/v1/responses", json=BODY)
    broken = cut.headers["x-request-id"]
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(500), Behaviour.error(500), Behaviour.error(500))
    failed = client.post("/v1/responses", json=BODY)
    assert failed.status_code >= 500
    refused = failed.headers.get("x-request-id") or failed.json()["error"].get("request_id")
    deadline = time.monotonic() + 5
    while not any(broken in entry["msg"] for entry in _entries(json_logs)):
        assert time.monotonic() < deadline, json_logs.getvalue()
        time.sleep(0.05)
    entries = _entries(json_logs)  # every line parsed as one JSON object
    during_calls = [entry for entry in entries if entry["logger"] in ("sublane.relay", "sublane.dispatch")]
    assert during_calls
    assert {entry.get("request_id") for entry in during_calls} <= {broken, refused}
    assert all("request_id" in entry for entry in during_calls)
    mentioned = [entry for entry in entries if broken in entry["msg"]]
    assert mentioned and all(entry["request_id"] == broken for entry in mentioned)
    # Lines outside any call (start-up, management) carry none.
    assert pool.admin.get("/api/accounts").status_code == 200
    assert not any(
        entry.get("request_id") for entry in entries if entry["logger"].startswith("sublane.gateway")
    )
