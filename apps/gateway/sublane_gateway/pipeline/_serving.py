"""Which providers can serve a call: the adapters whose upstream protocol the client's can reach
(the same protocol, or one with a translator) and that offer the operation (AFF-6, XLAT-1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import UpstreamOperation, WireProtocol
from sublane_protocols import can_serve
from sublane_providers import OpensSessions, ProviderAdapter

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_JSON, _STREAM = UpstreamOperation.JSON, UpstreamOperation.STREAM


def upstream_operation(
    adapter: ProviderAdapter, operation: UpstreamOperation, *, translated: bool = False
) -> UpstreamOperation:
    """What to ask of ``adapter`` for a client's ``operation``: a JSON answer from an upstream that
    only streams, or one in another protocol (translated through the hub's stream), is collected
    from a stream."""
    if operation is _JSON and (adapter.json_from_stream or translated):
        return _STREAM
    return operation


def serving_providers(
    adapters: Mapping[str, ProviderAdapter],
    protocol: WireProtocol,
    operation: UpstreamOperation,
    prefix: str | None,
    *,
    sessions: bool = False,
) -> tuple[str, ...]:
    """The providers whose accounts can serve a call of ``protocol`` asking for ``operation``,
    the native ones (speaking ``protocol`` itself) first (AFF-6)."""
    names = []
    for name, adapter in adapters.items():
        if prefix is not None and name != prefix:
            continue
        if sessions and not isinstance(adapter, OpensSessions):
            continue
        if not can_serve(protocol, adapter.protocol):
            continue
        translated = adapter.protocol != protocol
        if translated and operation is UpstreamOperation.COMPACT:
            continue  # compaction is state of the upstream's own protocol: never translated
        if upstream_operation(adapter, operation, translated=translated) in adapter.operations or (
            translated and operation is UpstreamOperation.COUNT_TOKENS  # estimated (XLAT)
        ):
            names.append(name)
    native = WireProtocol.RESPONSES if protocol is WireProtocol.CHAT_COMPLETIONS else protocol
    names.sort(key=lambda name: adapters[name].protocol != native)  # stable: native first
    return tuple(names)


class ServingProviders:
    """:func:`serving_providers` of one runtime's adapters, remembered: every model call asks, and
    the answer depends only on the call's protocol, operation and prefix (a bounded set)."""

    __slots__ = ("_adapters", "_known")

    def __init__(self, adapters: Mapping[str, ProviderAdapter]) -> None:
        self._adapters = adapters
        self._known: dict[tuple[Any, ...], tuple[str, ...]] = {}

    def __call__(
        self,
        protocol: WireProtocol,
        operation: UpstreamOperation,
        prefix: str | None,
        *,
        sessions: bool = False,
    ) -> tuple[str, ...]:
        key = (protocol, operation, prefix, sessions)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = serving_providers(
                self._adapters, protocol, operation, prefix, sessions=sessions
            )
        return found
