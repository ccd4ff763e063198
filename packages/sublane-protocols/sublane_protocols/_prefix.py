"""The prompt prefix of a call, digested, to tell whether a turn extends the previous one (COST-4).

An upstream's prompt cache holds a prefix of what it was sent: the instructions and tools (the
*head*), then the conversation's items in order. A turn extends the previous turn of its
conversation when its head is the previous turn's and its items begin with the previous turn's.
Only a digest and a length are kept — never the prompt.

One serialisation and one pass of a checksum over it: orjson writes the items as one compact list,
``[`` + the items joined by ``,`` + ``]``, so the previous turn's list without its ``]`` is a byte
prefix of this turn's exactly when this turn begins with the previous turn's items (a JSON value
ends where it ends: an item cannot be a byte prefix of a longer one). The checksum (CRC-32, with
the head's checksum as its start) is taken over this turn's list up to the previous turn's length,
compared, and carried on to the end of the list for the next turn: each byte is read once, the
Python work is the same for a conversation of 3 items as for one of 3,000, and the checksum runs
at memory speed (a cryptographic hash was 3 times slower here, and nothing secret depends on it: a
collision only makes one turn's miss reason ``unknown`` instead of ``prefix_changed``). Anthropic's
``cache_control`` markers are left out of the bytes: Claude Code moves its breakpoints to the newest
messages every turn, which does not change the prefix the upstream caches.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

from sublane_core import WireProtocol, json_dumps

_CONTROL: Final = re.compile(rb'"cache_control":\{[^{}]*\},|,"cache_control":\{[^{}]*\}')
_CONTROL_NAME: Final = b'"cache_control"'

PrefixDigest = tuple[int, int, "int | None"]
"""A turn's prefix, digested: ``(length, whole, extends)`` — the length of its items' bytes, the
checksum of its head and all its items, and the checksum of its head and its items' bytes up to the
previous turn's length (``None`` when they are shorter). A tuple: one is made per model call."""


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
    protocol: WireProtocol, body: Mapping[str, Any], previous_length: int | None
) -> PrefixDigest:
    """The checksums of a call's prefix (see the module); ``previous_length``: the previous turn's
    ``length``, ``None`` when no previous turn is known."""
    head, items = _parts(protocol, body)
    data = memoryview(_canonical(items))[:-1]  # without the closing bracket
    running = zlib.crc32(_canonical(head))
    if previous_length is None or previous_length > len(data):
        return len(data), zlib.crc32(data, running), None
    extends = zlib.crc32(data[:previous_length], running)
    return len(data), zlib.crc32(data[previous_length:], extends), extends
