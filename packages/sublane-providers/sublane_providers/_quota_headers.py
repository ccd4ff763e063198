"""The few response headers a quota parser reads, picked out cheaply (every answer is looked at).

An httpx response's ``items()`` decodes and merges every header before a parser can skip the ones
it does not want; :func:`headers_with_prefix` reads the raw list and decodes only the names that
start with the prefix, with the same result: lower-case names, repeated fields joined with
``", "``, values decoded as httpx decodes them.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx


def headers_with_prefix(headers: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The headers whose lower-case name starts with ``prefix`` (lower-case), by that name."""
    found: dict[str, str] = {}
    if isinstance(headers, httpx.Headers):
        wanted = prefix.encode("ascii")
        for raw_name, raw_value in headers.raw:
            lower = raw_name.lower()
            if not lower.startswith(wanted):
                continue
            try:  # ASCII reads the same in every encoding httpx may pick
                name, value = lower.decode("ascii"), raw_value.decode("ascii")
            except UnicodeDecodeError:  # anything else: as httpx decodes it
                name, value = lower.decode(headers.encoding), raw_value.decode(headers.encoding)
            if name in found:
                found[name] += f", {value}"
            else:
                found[name] = value
        return found
    for raw, value in headers.items():
        name = raw.lower()
        if name.startswith(prefix):
            found[name] = value
    return found
