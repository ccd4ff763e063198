"""The prompt prefix of a call, digested, to tell whether a turn extends the previous one (COST-4).

An upstream's prompt cache holds a prefix of what it was sent: the instructions and tools (the
*head*), then the conversation's items in order. A turn extends the previous turn of its
conversation when its head and its first *N* items are those of the previous turn (*N* = the
previous turn's item count). Only digests are kept: a BLAKE2b of the canonical bytes of the head
and of the items up to a point — never the prompt.

The head and the items are serialised by orjson (in C), the items as one list: the digest of the
list of the first *N* items is the one to compare, the digest of the list of all items the one the
next turn compares with — two serialisations of the items and a constant number of Python calls,
whatever the length of the conversation (a call per item cost more than the serialising itself).
Anthropic's ``cache_control`` markers are left out of the bytes: Claude Code moves its breakpoints
to the newest messages every turn, which does not change the prefix the upstream caches.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

from sublane_core import WireProtocol, json_dumps

_CONTROL: Final = re.compile(rb'"cache_control":\{[^{}]*\},|,"cache_control":\{[^{}]*\}')
_CONTROL_NAME: Final = b'"cache_control"'


PrefixDigest = tuple[int, bytes, "bytes | None"]
"""A turn's prefix, digested: ``(count, whole, extends)`` — its number of items, the digest of the
head and all its items, and the digest of the head and its first ``previous_count`` items
(``None`` when it has fewer). A tuple: one is made per model call."""


def _canonical(value: Any) -> bytes:
    try:
        data = orjson.dumps(value)
    except TypeError:  # what orjson cannot write (an integer beyond 64 bits, …): the stdlib's bytes
        data = json_dumps(value)
    if data.find(_CONTROL_NAME) != -1:
        data = _CONTROL.sub(b"", data)
    return data


def _parts(protocol: WireProtocol, body: Mapping[str, Any]) -> tuple[tuple[Any, ...], list[Any]]:
    """``(head, items)`` of a body of ``protocol``."""
    if protocol is WireProtocol.MESSAGES:
        return (body.get("system"), body.get("tools")), _items(body.get("messages"))
    if protocol is WireProtocol.GEMINI:
        request = body.get("generateContentRequest")
        request = request if isinstance(request, dict) else body
        return (request.get("systemInstruction"), request.get("tools")), _items(request.get("contents"))
    if protocol is WireProtocol.CHAT_COMPLETIONS:
        return (body.get("tools"),), _items(body.get("messages"))
    # Responses: a string input is one item
    return (body.get("instructions"), body.get("tools")), _items(body.get("input"))


def _items(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def prefix_digest(
    protocol: WireProtocol, body: Mapping[str, Any], previous_count: int | None
) -> PrefixDigest:
    """The digests of a call's prefix (see the module); ``previous_count``: the previous turn's
    item count, ``None`` when no previous turn is known."""
    head, items = _parts(protocol, body)
    start = hashlib.blake2b(_canonical(head), digest_size=16)
    whole = start.copy()
    whole.update(_canonical(items))
    count = len(items)
    extends: bytes | None = None
    if previous_count == count:
        extends = whole.digest()
    elif previous_count is not None and previous_count < count:
        start.update(_canonical(items[:previous_count]))
        extends = start.digest()
    return count, whole.digest(), extends
