"""Which model's quota a request spends (QUOTA-4, PROTOCOLS §3.9).

Antigravity reports quota per **native** model id, and its native ids carry their thinking level
(``gemini-3-pro-high``, ``claude-opus-4-6-thinking``). Proxy SDKs add client-side suffixes that are
not upstream ids: ``model(level)`` (``gemini-3-pro(high)``) or a thinking budget
(``claude-sonnet-4-5(16384)``). The request's quota is that of the native id those name; only
that model's window counts, other models of the account stay eligible.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: ``(level)`` suffixes that name a native variant: ``base(high)`` → ``base-high``.
LEVEL_SUFFIXES: Mapping[str, str] = {
    "high": "high",
    "medium": "medium",
    "low": "low",
    "minimal": "low",
    "extra-low": "extra-low",
    "xhigh": "high",
}
_SUFFIX = re.compile(r"^(?P<base>[^()]+)\((?P<value>[^()]*)\)$")


def quota_model(model: str, levels: Mapping[str, str] = LEVEL_SUFFIXES) -> str:
    """The native model id whose quota a request for ``model`` spends.

    ``gemini-3-pro(high)`` → ``gemini-3-pro-high``; ``claude-sonnet-4-5(16384)`` (a budget, not a
    variant) → ``claude-sonnet-4-5``; ``gemini-3-pro(auto)`` and unknown levels → the base id; a
    native id stays as it is.
    """
    match = _SUFFIX.match(model.strip())
    if match is None:
        return model
    base = match.group("base").strip()
    level = levels.get(match.group("value").strip().lower())
    if level is None or base.endswith(f"-{level}"):
        return base
    return f"{base}-{level}"
