"""The few response headers a quota parser reads, picked out cheaply (every answer is looked at).

A mapping's ``items()`` decodes and merges every header before a parser can skip the ones it does
not want; on a model answer's :class:`~sublane_providers.ResponseHeaders`,
:func:`headers_with_prefix` reads the parsed triples and decodes only the names that start with the
prefix, with the same result: lower-case names, repeated fields joined with ``", "``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from itertools import compress
from operator import itemgetter

from sublane_core import signals
from sublane_providers._upstream import ResponseHeaders, header_text


def headers_with_prefix(headers: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The headers whose lower-case name starts with ``prefix`` (lower-case), by that name."""
    found: dict[str, str] = {}
    if isinstance(headers, ResponseHeaders):
        wanted = prefix.encode("ascii")
        for _, lower, raw_value in headers.triples:
            if not lower.startswith(wanted):
                continue
            name, value = header_text(lower), header_text(raw_value)
            found[name] = f"{found[name]}, {value}" if name in found else value
        return found
    for raw, value in headers.items():
        name = raw.lower()
        if name.startswith(prefix):
            found[name] = value
    return found


Quota = tuple[str | None, tuple[signals.QuotaWindow, ...]]  # (plan, windows), as adapters answer
QuotaParse = Callable[[Mapping[str, str], float], Quota]

_LOWER = itemgetter(1)  # of a (raw name, lower-case name, value) triple

MEMO_MAX_AGE_S = 1.0
MEMO_SIZE = 256
NAMES_SIZE = 1024


class QuotaHeaderMemo:
    """A provider's quota header parse, run once per change of the headers it reads.

    Every answer carries the headers and a busy account's answers mostly repeat the last values
    (upstreams count in whole percents and seconds), so an answer whose ``relevant`` raw headers
    are byte for byte those of one parsed less than ``MEMO_MAX_AGE_S`` ago gets that parse again
    (issue #19). A window's reset computed from a relative header is then off by less than that
    age, the upstream's own precision. Other header mappings are parsed every time.
    """

    __slots__ = ("_names", "_parse", "_relevant", "_seen")

    def __init__(self, parse: QuotaParse, relevant: re.Pattern[bytes]) -> None:
        self._parse = parse
        self._relevant = relevant.match
        self._seen: dict[tuple[tuple[bytes, bytes, bytes], ...], tuple[float, Quota]] = {}
        # lower-case header name → whether it is relevant: an upstream sends the same few names
        self._names: dict[bytes, bool] = {}

    def __call__(self, headers: Mapping[str, str], now: float) -> Quota:
        if not isinstance(headers, ResponseHeaders):
            return self._parse(headers, now)
        triples = headers.triples
        # Which headers are relevant, by lower-case name, and the key made of those: in C (a loop
        # over the ~15 headers of an answer was 2.4 % of a call's bytecodes, issue #49)
        wanted = list(map(self._names.get, map(_LOWER, triples)))
        if None in wanted:  # a name not seen before
            wanted = [self._remember_name(lower) for _, lower, _ in triples]
        key = tuple(compress(triples, wanted))
        seen = self._seen.get(key)
        if seen is not None and 0 <= now - seen[0] < MEMO_MAX_AGE_S:
            return seen[1]
        result = self._parse(headers, now)
        if len(self._seen) >= MEMO_SIZE:
            self._seen.clear()
        self._seen[key] = (now, result)
        return result

    def _remember_name(self, lower: bytes) -> bool:
        names = self._names
        wanted = names.get(lower)
        if wanted is None:
            if len(names) >= NAMES_SIZE:  # an upstream that makes up names: bounded all the same
                names.clear()
            wanted = names[lower] = self._relevant(lower) is not None
        return wanted
