"""Structured, sanitized logs: secrets never reach a log line (STORE-4, CRED-9).

Lines are human-readable text by default, or one JSON object each (``SUBLANE_LOG_FORMAT=json``,
OPS-11). Every line written while a model call runs carries that call's ``request_id``: the call
binds it to its task with :func:`bind_request_id`, and tasks and worker threads it starts inherit it
(``contextvars``), so nothing has to pass the ID down to the code that logs.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from contextvars import ContextVar
from typing import Any

# Shapes of secrets SubLane handles: JWTs, provider tokens, our keys, bearer values, key=value pairs.
_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),  # JWT
    re.compile(r"sk-ant-[a-z]{2,4}\d{2}-[A-Za-z0-9_-]{8,}"),  # Claude OAuth / API tokens
    re.compile(r"sk-[A-Za-z0-9_-]{16,}"),  # OpenAI-style keys
    re.compile(r"ya29\.[A-Za-z0-9_.-]{8,}"),  # Google access tokens
    re.compile(r"1//[A-Za-z0-9_-]{16,}"),  # Google refresh tokens
    re.compile(r"sl_[A-Za-z0-9_-]{20,}"),  # SubLane keys
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(
        r"(?i)((?:access_token|refresh_token|id_token|password|secret|api_key|code_verifier|code)"
        r"[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,}]{4,}"
    ),
)
REDACTED = "[redacted]"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_request_id: ContextVar[str | None] = ContextVar("sublane_request_id", default=None)


def bind_request_id(request_id: str | None) -> None:
    """Tag the log lines of the current task, and of the tasks and threads it starts, with ``request_id``."""
    _request_id.set(request_id)


def current_request_id() -> str | None:
    """The request ID bound to the current task, if any."""
    return _request_id.get()


def redact(text: str) -> str:
    """``text`` with anything shaped like a secret replaced by ``[redacted]``."""
    for pattern in _SECRET_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites every record's message (arguments merged) and exception text through :func:`redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the line
            message = str(record.msg)
        record.msg = redact(message)
        record.args = None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


class RequestIdFilter(logging.Filter):
    """Adds the bound request ID (:func:`bind_request_id`) to every record as ``request_id``.

    A ``request_id`` passed explicitly in ``extra`` is kept.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if "request_id" not in record.__dict__:
            request_id = _request_id.get()
            if request_id is not None:
                record.request_id = request_id
        return True


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message [req_…]`` in UTC; the request ID only where there is one."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)
        self.converter = time.gmtime

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        request_id = record.__dict__.get("request_id")
        return f"{line} [{request_id}]" if request_id else line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, exception and ``extra`` fields."""

    _RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
        "message",
        "asctime",
        "color_message",  # uvicorn's ANSI-coloured copy of msg
    }

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in self._RESERVED and not key.startswith("_"):
                entry[key] = redact(value) if isinstance(value, str) else value
        if record.exc_text:
            entry["exc"] = record.exc_text
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Send every log line to stderr, redacted and tagged with its request ID, as text or JSON."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter())
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
        # The root's level, stated on the logger itself: uvicorn's HTTP protocol compares its
        # logger's own ``level`` (0 while unset) with its TRACE level on every connection's opening
        # and end, and while it is unset formats the peer's address and calls the logger twice a
        # connection to print nothing (issue #49: a burst of new connections).
        logger.setLevel(root.level)
    logging.getLogger("alembic").setLevel(max(logging.WARNING, root.level))
