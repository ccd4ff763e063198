from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
from collections.abc import Callable, Iterator

import pytest

from sublane_core import (
    RedactingFilter,
    Settings,
    bind_request_id,
    configure_logging,
    current_request_id,
    redact,
)
from sublane_core._logging import JsonFormatter

JWT = "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl"


@pytest.mark.parametrize(
    "secret",
    [
        JWT,
        "sk-ant-oat01-AbCdEfGhIjKlMnOpQrStUv",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "ya29.a0AfH6SMBxyzxyzxyz",
        "1//0gAbCdEfGhIjKlMnOpQr",
        "sl_QoB6KI-HtMWsRxrnZGTOog73VWTP6mJfwudJ01qds2I",
    ],
)
def test_store_4_known_secret_shapes_are_redacted(secret: str) -> None:
    assert secret not in redact(f"upstream said {secret} loudly")


def test_store_4_key_value_and_bearer_secrets_are_redacted() -> None:
    text = redact('Authorization: Bearer abcdefgh12345678 refresh_token=rt_abcdef {"password": "hunter22"}')
    assert "abcdefgh12345678" not in text
    assert "rt_abcdef" not in text
    assert "hunter22" not in text
    assert "refresh_token=" in text  # the field name stays, so the line is still useful


def test_store_4_log_records_are_redacted_before_formatting() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("sublane.test.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("refresh failed for token %s", JWT, extra={"detail": f"id_token={JWT}"})
        try:
            raise ValueError(f"bad {JWT}")
        except ValueError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert JWT not in stream.getvalue()
    assert lines[0]["level"] == "warning" and "[redacted]" in lines[0]["msg"]
    assert "exc" in lines[1]


@pytest.fixture
def stderr_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], io.StringIO]]:
    """``configure(fmt)`` → the stream that :func:`configure_logging` now writes to (stderr)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    uvicorn_levels = {name: logging.getLogger(name).level for name in UVICORN_LOGGERS}

    def configure(fmt: str) -> io.StringIO:
        stream = io.StringIO()
        monkeypatch.setattr(sys, "stderr", stream)
        configure_logging("INFO", fmt)
        return stream

    yield configure
    root.handlers[:], _ = saved
    root.setLevel(saved[1])
    for name, level in uvicorn_levels.items():
        logging.getLogger(name).setLevel(level)
    bind_request_id(None)


UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def test_uvicorn_loggers_state_the_root_level_so_a_connection_logs_nothing_below_it(
    stderr_logs: Callable[[str], io.StringIO],
) -> None:
    """uvicorn's HTTP protocol reads its logger's own ``level`` at every connection's opening and
    end; unset (0) it formats and logs a TRACE line each time, which the root then drops."""
    stderr_logs("text")
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        assert logger.level == logging.INFO and logger.propagate and not logger.handlers
    assert not logging.getLogger("uvicorn.error").isEnabledFor(5)  # uvicorn's TRACE
    assert logging.getLogger("uvicorn.error").isEnabledFor(logging.INFO)


def test_ops_11_json_lines_are_one_object_each_with_the_bound_request_id(
    stderr_logs: Callable[[str], io.StringIO],
) -> None:
    stream = stderr_logs("json")
    log = logging.getLogger("sublane.test.ops11")
    log.info("before any call")
    bind_request_id("req_01TEST")
    log.warning("during the call\nwith a second line")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("failed")
    log.info("explicit", extra={"request_id": "req_OTHER"})
    bind_request_id(None)
    log.info("after the call")
    lines = stream.getvalue().splitlines()
    entries = [json.loads(line) for line in lines]  # every line is one JSON object
    assert len(entries) == 5
    assert [entry.get("request_id") for entry in entries] == [
        None,
        "req_01TEST",
        "req_01TEST",
        "req_OTHER",
        None,
    ]
    assert entries[1]["msg"] == "during the call\nwith a second line" and "boom" in entries[2]["exc"]


def test_ops_11_the_default_is_human_readable_text_with_the_request_id(
    stderr_logs: Callable[[str], io.StringIO],
) -> None:
    assert Settings(_env_file=None).log_format == "text"  # type: ignore[call-arg]
    stream = stderr_logs(Settings(_env_file=None).log_format)  # type: ignore[call-arg]
    log = logging.getLogger("sublane.test.ops11")
    log.info("no call here")
    bind_request_id("req_01TEXT")
    log.info("inside a call %s", "sk-proj-abcdefghijklmnopqrstuvwx")
    bind_request_id(None)
    first, second = stream.getvalue().splitlines()
    assert first.endswith("INFO sublane.test.ops11: no call here")
    assert second.endswith("INFO sublane.test.ops11: inside a call [redacted] [req_01TEXT]")
    with pytest.raises(json.JSONDecodeError):
        json.loads(second)


async def test_ops_11_tasks_and_threads_started_by_a_call_inherit_its_request_id() -> None:
    bind_request_id("req_01PARENT")
    seen: list[str | None] = []

    async def child() -> None:
        seen.append(current_request_id())

    await asyncio.create_task(child())
    seen.append(await asyncio.to_thread(current_request_id))

    async def other_call() -> None:
        bind_request_id("req_01OTHER")  # a sibling call binds its own without touching ours

    await asyncio.create_task(other_call())
    seen.append(current_request_id())
    bind_request_id(None)
    assert seen == ["req_01PARENT", "req_01PARENT", "req_01PARENT"]
