from __future__ import annotations

import io
import json
import logging

import pytest

from sublane_core import RedactingFilter, redact
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
