"""Model version floors (CLIENT-3): the client version an upstream requires for a model.

The real upstreams gate new models on the client's version: the Codex backend lists a model's
``minimal_client_version`` in ``/codex/models`` and answers 400 "The 'MODEL' model requires a newer
version of Codex. Please upgrade to the latest app or CLI and try again." when the request's
``version`` header (or, without one, the version in its ``user-agent``) is below it; Anthropic
answers 400 ``claude_code_version_too_old`` for a model below a Claude Code floor read from the
``user-agent`` (``claude-cli/<version>``). A request with no readable version is below any floor.
Floors are scripted per provider and model (:meth:`Simulator.set_client_floor`); none by default.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping

__all__ = ["ClientFloors", "below", "claude_code_version", "codex_version"]

_VERSION = re.compile(r"(\d{1,5})\.(\d{1,5})\.(\d{1,5})")
_CODEX_AGENT = re.compile(r"[A-Za-z0-9_.-]{1,64}/(\d{1,5}\.\d{1,5}\.\d{1,5})(?: |$)")
_CLAUDE_AGENT = re.compile(r"claude-cli/(\d{1,5}\.\d{1,5}\.\d{1,5})(?: |$)")


def _parts(version: str | None) -> tuple[int, int, int] | None:
    match = _VERSION.fullmatch(version or "")
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def below(version: str | None, floor: str) -> bool:
    """Whether ``version`` (``None``: unreadable) is under ``floor``."""
    parts = _parts(version)
    return parts is None or parts < (_parts(floor) or (0, 0, 0))


def codex_version(headers: Mapping[str, str]) -> str | None:
    """The Codex client version of a request: its ``version`` header, else its user agent's."""
    version = headers.get("version")
    if version is not None:
        return version.strip()
    match = _CODEX_AGENT.match(headers.get("user-agent", ""))
    return match[1] if match else None


def claude_code_version(headers: Mapping[str, str]) -> str | None:
    match = _CLAUDE_AGENT.match(headers.get("user-agent", ""))
    return match[1] if match else None


class ClientFloors:
    """Scripted floors: ``(provider, model) -> (version, refusal delay in seconds)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._floors: dict[tuple[str, str], tuple[str, float]] = {}

    def set(self, provider: str, model: str, version: str | None, delay_s: float = 0.0) -> None:
        if version is not None and _parts(version) is None:
            raise ValueError(f"not a version: {version!r}")
        with self._lock:
            if version is None:
                self._floors.pop((provider, model), None)
            else:
                self._floors[(provider, model)] = (version, delay_s)

    def get(self, provider: str, model: str) -> tuple[str, float] | None:
        with self._lock:
            return self._floors.get((provider, model))

    def clear(self) -> None:
        with self._lock:
            self._floors.clear()
