"""Translation through one hub: every protocol is translated to and from OpenAI Responses.

Four client protocols and three upstream protocols make twelve cells; nine of them translate.
Instead of nine pairwise translators, each protocol has two sides, written once:

- an :class:`UpstreamSide` (Messages, Gemini) turns a Responses request into its own request and
  its own answers and events back into Responses answers and events;
- a :class:`ClientSide` (Chat Completions, Messages, Gemini) turns its own request into a
  Responses request and Responses answers and events into its own.

A cell is the composition (:class:`HubTranslator`): client request → Responses → upstream request;
upstream events → Responses events → client frames. Responses is the hub because it is the richest
of the four (reasoning items, parallel function calls, images, structured output, usage with
cached and reasoning tokens), so nothing a pair could carry is lost in the middle. The Responses
events a side emits follow the order OpenAI's own stream has (``response.created``, then per output
item ``output_item.added`` … deltas … ``output_item.done``, then one terminal
``response.completed`` / ``response.incomplete`` / ``response.failed``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from sublane_core import PLAIN_DIALECT, Dialect, WireProtocol
from sublane_protocols._collect import Collector
from sublane_protocols._estimate import estimate_input_tokens
from sublane_protocols._translators import StreamTranslator, TranslationRefused, Translator


class EventsToResponses(Protocol):
    """One call's upstream events (decoded, unwrapped) in, Responses events out."""

    def feed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The Responses events for one upstream event (often none, sometimes several)."""
        ...


@runtime_checkable
class EndsAtStreamEnd(Protocol):
    """Events whose terminal event may wait for the end of the stream: an upstream whose last chunk
    is no JSON event (Chat Completions' ``data: [DONE]`` after the usage chunk)."""

    def at_end(self) -> list[dict[str, Any]]:
        """The Responses events still owed once the upstream's stream ended normally."""
        ...


def events_at_end(events: EventsToResponses) -> list[dict[str, Any]]:
    """What ``events`` still owes at the normal end of the stream (usually nothing)."""
    return events.at_end() if isinstance(events, EndsAtStreamEnd) else []


class UpstreamSide(ABC):
    """A protocol as an upstream speaks it, seen from the hub."""

    protocol: ClassVar[WireProtocol]
    #: Its events are the hub's own (Responses): a stream needs no event translation.
    speaks_hub: ClassVar[bool] = False

    @abstractmethod
    def request_from_responses(self, body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
        """The upstream body for a Responses body; raises ``TranslationRefused`` (XLAT-3).

        ``system_prelude`` (the upstream's :class:`~sublane_core.Dialect`): a text that must lead the
        system instructions, exactly once, where this protocol keeps them."""

    @abstractmethod
    def new_events(self, request: Mapping[str, Any], *, model: str) -> EventsToResponses:
        """An incremental translator of this protocol's stream events into Responses events;
        ``request`` is the call's Responses (hub) body (which tools are custom tools, …)."""

    @abstractmethod
    def answer_to_responses(
        self, final: Mapping[str, Any], *, model: str, request: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The Responses ``response`` object for this protocol's JSON answer."""

    def count_request_from_responses(
        self, body: Mapping[str, Any], *, system_prelude: str = ""
    ) -> dict[str, Any] | None:
        """The body of the upstream's own token count for a Responses body; ``None`` without one."""
        return None

    def counted_tokens(self, answer: Mapping[str, Any]) -> int:
        """The input token count in the upstream's count answer. Only asked of a side whose
        :meth:`count_request_from_responses` gives a body, which must then override both."""
        raise NotImplementedError(f"{type(self).__name__} has no token count of its own")


class ClientSide(ABC):
    """A protocol as a client speaks it, seen from the hub."""

    protocol: ClassVar[WireProtocol]

    @abstractmethod
    def request_to_responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The Responses body for the client's body; raises ``TranslationRefused`` (XLAT-3)."""

    @abstractmethod
    def new_frames(
        self, body: Mapping[str, Any], *, model: str, created: int, json_array: bool = False
    ) -> StreamTranslator:
        """Responses events in, the client's stream frames (bytes) out, for one call."""

    @abstractmethod
    def answer_from_responses(self, final: Mapping[str, Any], *, model: str, created: int) -> dict[str, Any]:
        """The client's JSON answer for a Responses ``response`` object."""

    def count_request_to_responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The Responses body of a token-count call (the same translation as an inference)."""
        return self.request_to_responses(body)

    def count_answer(self, tokens: int) -> dict[str, Any]:
        """The client's answer to a token-count call. Only protocols with a count route (Messages,
        Gemini) override it; no route of Responses or Chat Completions asks for one."""
        raise NotImplementedError(f"{type(self).__name__} has no token-count answer")


def led_by(prelude: str, texts: list[str]) -> list[str]:
    """System ``texts`` (empty ones left out) led by exactly one ``prelude`` when there is one: a
    first text that already starts with it keeps only what follows."""
    texts = [text for text in texts if text.strip()]
    if not prelude:
        return texts
    if texts and texts[0].startswith(prelude):
        texts[0] = texts[0][len(prelude) :].lstrip()
    return [prelude, *(text for text in texts if text)]


def _is_set(value: Any) -> bool:
    return value not in (None, "", [], {})


def in_dialect(hub: Mapping[str, Any], dialect: Dialect) -> Mapping[str, Any]:
    """The hub body as an upstream of ``dialect`` may be given it: a field it refuses is refused
    (``TranslationRefused``, XLAT-3, before any slot), the fields it drops are left out."""
    for field, message in dialect.refused:
        if _is_set(hub.get(field)):
            raise TranslationRefused(message, code="unsupported_for_provider", param=field)
    if dialect.dropped and not dialect.dropped.isdisjoint(hub):
        return {key: value for key, value in hub.items() if key not in dialect.dropped}
    return hub


#: Server-side tools of the Responses API: run by OpenAI's backend, by no other upstream.
SERVER_TOOLS = frozenset(
    {"web_search", "web_search_preview", "file_search", "code_interpreter", "image_generation",
     "computer_use_preview", "mcp", "local_shell"}
)  # fmt: skip


def portable_tools(body: dict[str, Any]) -> dict[str, Any]:
    """The hub body with tools another protocol's upstream can be given.

    ``namespace`` tools (the Codex CLI groups its sub-agent tools so) become their function tools.
    A server-side tool the client merely offers (``tool_choice`` does not name it) is dropped: the
    model just cannot search there, while the client's call works — the Codex CLI offers
    ``web_search`` on every request. One the client forces is left for the upstream side to refuse
    (XLAT-3).
    """
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools:
        return body
    choice = body.get("tool_choice")
    forced = choice.get("type") if isinstance(choice, Mapping) else None
    kept: list[Any] = []
    changed = False
    for tool in tools:
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind == "namespace" and isinstance(tool.get("tools"), list):
            kept.extend(tool["tools"])
            changed = True
        elif isinstance(kind, str) and kind in SERVER_TOOLS and kind != forced:
            changed = True
        else:
            kept.append(tool)
    if not changed:
        return body
    return (
        dict(body, tools=kept)
        if kept
        else {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}
    )


def namespaced_tools(body: Mapping[str, Any]) -> dict[str, str]:
    """``{tool name: namespace}`` of the tools a hub body groups in ``namespace`` tools.

    :func:`portable_tools` offers them to other upstreams as plain tools; their calls must go back
    to the client with their ``namespace`` (the Codex CLI refuses ``close_agent`` without
    ``multi_agent_v1``: "unsupported call").
    """
    tools = body.get("tools")
    if not isinstance(tools, list):
        return {}
    names: dict[str, str] = {}
    for tool in tools:
        if not isinstance(tool, Mapping) or tool.get("type") != "namespace":
            continue
        namespace, inner = tool.get("name"), tool.get("tools")
        if not isinstance(namespace, str) or not isinstance(inner, list):
            continue
        for member in inner:
            name = member.get("name") if isinstance(member, Mapping) else None
            if isinstance(name, str):
                names.setdefault(name, namespace)
    return names


def with_namespace(item: Any, namespaces: Mapping[str, str]) -> Any:
    """``item`` with its ``namespace`` when it is a call of a namespaced tool."""
    if (
        isinstance(item, dict)
        and item.get("type") in ("function_call", "custom_tool_call")  # compared, never hashed
        and "namespace" not in item
        and isinstance(item.get("name"), str)
        and item["name"] in namespaces
    ):
        return dict(item, namespace=namespaces[item["name"]])
    return item


def restore_namespaces(event: dict[str, Any], namespaces: Mapping[str, str]) -> dict[str, Any]:
    """A Responses event (or a final ``response``) with the namespaces of its tool calls restored."""
    item = event.get("item")
    if item is not None:
        named = with_namespace(item, namespaces)
        if named is not item:
            event = dict(event, item=named)
    output = event.get("output")
    if isinstance(output, list):
        event = dict(event, output=[with_namespace(entry, namespaces) for entry in output])
    response = event.get("response")
    if isinstance(response, dict) and isinstance(response.get("output"), list):
        event = dict(event, response=restore_namespaces(response, namespaces))
    return event


class _Namespaced:
    """Responses events with the namespaces of namespaced tools' calls put back."""

    __slots__ = ("_events", "_namespaces")

    def __init__(self, events: EventsToResponses, namespaces: Mapping[str, str]) -> None:
        self._events = events
        self._namespaces = namespaces

    def feed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        namespaces = self._namespaces
        return [restore_namespaces(event, namespaces) for event in self._events.feed(payload)]

    def at_end(self) -> list[dict[str, Any]]:
        namespaces = self._namespaces
        return [restore_namespaces(event, namespaces) for event in events_at_end(self._events)]


class _Composed:
    """Upstream events → Responses events → client frames."""

    __slots__ = ("_events", "_frames")

    def __init__(self, events: EventsToResponses, frames: StreamTranslator) -> None:
        self._events = events
        self._frames = frames

    @property
    def finished(self) -> bool:
        return self._frames.finished

    def feed(self, payload: Mapping[str, Any]) -> bytes:
        frames = self._frames
        return b"".join(frames.feed(event) for event in self._events.feed(payload))

    def trailer(self, error_code: str | None) -> bytes:
        frames = self._frames
        owed = b"".join(frames.feed(event) for event in events_at_end(self._events))
        return owed + frames.trailer(None if frames.finished else error_code)


class HubTranslator(Translator):
    """One cell of the matrix: a client side composed with an upstream side.

    ``client is None`` when the client speaks the hub itself (Responses). Every method that works on
    the call's Responses body takes it as ``hub`` when the caller already has it (from
    :meth:`translate`), so a call's body is translated once; without it, it is derived again.
    """

    def __init__(self, client: ClientSide | None, upstream: UpstreamSide, hub: ClientSide) -> None:
        """``hub`` is the Responses client side: the frames when the client speaks Responses."""
        self._client = client
        self._upstream = upstream
        self._hub = hub
        self.client = client.protocol if client is not None else WireProtocol.RESPONSES  # type: ignore[misc]
        self.upstream = upstream.protocol  # type: ignore[misc]

    @property
    def client_side(self) -> ClientSide:
        return self._client if self._client is not None else self._hub

    @property
    def upstream_side(self) -> UpstreamSide:
        return self._upstream

    def to_responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The client's body as a Responses body (the hub's form)."""
        return self._client.request_to_responses(body) if self._client is not None else dict(body)

    def translate(
        self, body: Mapping[str, Any], dialect: Dialect = PLAIN_DIALECT
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(hub body, upstream body)`` for the client's body, in the upstream's ``dialect``;
        raises ``TranslationRefused`` (XLAT-3)."""
        hub = self.to_responses(body)
        upstream = self._upstream
        given = in_dialect(hub if upstream.speaks_hub else portable_tools(hub), dialect)
        request = upstream.request_from_responses(given, system_prelude=dialect.system_prelude)
        for field, value in dialect.required:
            request[field] = value
        return hub, request

    def request(self, body: Mapping[str, Any], dialect: Dialect = PLAIN_DIALECT) -> dict[str, Any]:
        return self.translate(body, dialect)[1]

    def _hub_body(self, body: Mapping[str, Any], hub: Mapping[str, Any] | None) -> Mapping[str, Any]:
        return hub if hub is not None else self.to_responses(body)

    def new_events(
        self, body: Mapping[str, Any], *, model: str, hub: Mapping[str, Any] | None = None
    ) -> EventsToResponses:
        """The upstream's events as Responses events (for transports that frame them themselves);
        ``body`` is the client's."""
        upstream = self._upstream
        if upstream.speaks_hub:
            return upstream.new_events({}, model=model)  # a hub speaker needs no request
        request = self._hub_body(body, hub)
        events = upstream.new_events(request, model=model)
        namespaces = namespaced_tools(request)
        return _Namespaced(events, namespaces) if namespaces else events

    def new_stream(
        self,
        body: Mapping[str, Any],
        *,
        model: str,
        created: int,
        json_array: bool = False,
        hub: Mapping[str, Any] | None = None,
    ) -> StreamTranslator:
        frames = self.client_side.new_frames(body, model=model, created=created, json_array=json_array)
        if self._upstream.speaks_hub:
            return frames  # the upstream speaks the hub: its events go straight to the client side
        return _Composed(self.new_events(body, model=model, hub=hub), frames)

    def count_request(
        self, body: Mapping[str, Any], dialect: Dialect = PLAIN_DIALECT
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``(hub body, upstream count body)`` of a token-count call; the second is ``None`` when the
        upstream has no count of its own (then :func:`estimate_input_tokens` of the first)."""
        hub = self.client_side.count_request_to_responses(body)
        counted = self._upstream.count_request_from_responses(
            in_dialect(hub, dialect), system_prelude=dialect.system_prelude
        )
        return hub, counted

    def count_answer(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        """The client's count answer for the upstream's."""
        return self.client_side.count_answer(self._upstream.counted_tokens(answer))

    def estimated_count_answer(self, hub: Mapping[str, Any]) -> dict[str, Any]:
        """The client's count answer, estimated (an upstream without a count)."""
        return self.client_side.count_answer(estimate_input_tokens(hub))

    def new_collector(
        self, body: Mapping[str, Any], *, model: str, hub: Mapping[str, Any] | None = None
    ) -> Collector:
        """A collector of the upstream's stream into the hub's final ``response`` (a JSON answer
        for a client that did not ask for a stream is collected from a stream, then
        :meth:`ClientSide.answer_from_responses` gives the client's shape)."""
        # Imported here: the responses package registers its sides with this module on import.
        from sublane_protocols.responses._collect import ResponsesCollector

        return _HubCollector(self.new_events(body, model=model, hub=hub), ResponsesCollector())

    def answer(
        self,
        final: Mapping[str, Any],
        *,
        model: str,
        created: int,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        request = self.to_responses(body) if body is not None else {}
        hub_final = self._upstream.answer_to_responses(final, model=model, request=request)
        namespaces = namespaced_tools(request)
        if namespaces:
            hub_final = restore_namespaces(hub_final, namespaces)
        return self.client_side.answer_from_responses(hub_final, model=model, created=created)


class _HubCollector:
    __slots__ = ("_collector", "_events")

    def __init__(self, events: EventsToResponses, collector: Collector) -> None:
        self._events = events
        self._collector = collector

    def wants(self, name: str | None) -> bool:
        return True  # every upstream event may change the translated answer

    def feed(self, payload: Mapping[str, Any]) -> None:
        for event in self._events.feed(payload):
            self._collector.feed(event)

    def result(self) -> dict[str, Any] | None:
        for event in events_at_end(self._events):
            self._collector.feed(event)
        return self._collector.result()


_TRANSLATORS: dict[tuple[WireProtocol, WireProtocol], HubTranslator] = {}
_CLIENT_SIDES: dict[WireProtocol, ClientSide] = {}
_UPSTREAM_SIDES: dict[WireProtocol, UpstreamSide] = {}


def custom_tool_names(body: Mapping[str, Any]) -> frozenset[str]:
    """The names of the tools a hub body declares as ``custom`` (their calls come back as such)."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return frozenset()
    return frozenset(
        tool["name"]
        for tool in tools
        if isinstance(tool, Mapping) and tool.get("type") == "custom" and isinstance(tool.get("name"), str)
    )


def _fill_matrix() -> None:
    hub = _CLIENT_SIDES.get(WireProtocol.RESPONSES)
    if hub is None:
        return
    for client, client_side in _CLIENT_SIDES.items():
        for upstream, upstream_side in _UPSTREAM_SIDES.items():
            if client != upstream:
                side = None if client is WireProtocol.RESPONSES else client_side
                _TRANSLATORS[(client, upstream)] = HubTranslator(side, upstream_side, hub)


def register_client_side(side: ClientSide) -> None:
    """Add a client protocol: every upstream side registered so far gets its cell."""
    _CLIENT_SIDES[side.protocol] = side
    _fill_matrix()


def register_upstream_side(side: UpstreamSide) -> None:
    """Add an upstream protocol: every client side registered so far gets its cell."""
    _UPSTREAM_SIDES[side.protocol] = side
    _fill_matrix()


def client_side(protocol: WireProtocol) -> ClientSide | None:
    return _CLIENT_SIDES.get(protocol)


def upstream_side(protocol: WireProtocol) -> UpstreamSide | None:
    return _UPSTREAM_SIDES.get(protocol)


def translator_for(client: WireProtocol, upstream: WireProtocol) -> HubTranslator | None:
    """The cell of the pair; ``None`` for a pass-through (same protocol) or an unserved pair.

    A pair with no cell cannot be served, so accounts of such providers are not candidates.
    """
    return _TRANSLATORS.get((client, upstream))


def hub_translator(client: WireProtocol, upstream: WireProtocol) -> HubTranslator | None:
    """:func:`translator_for`, and for a hub client on a hub upstream the pass-through cell (the
    body and events unchanged, the upstream's dialect applied): for callers that always work in
    hub events, as a WebSocket turn served by one HTTP stream does."""
    if client is WireProtocol.RESPONSES and upstream is WireProtocol.RESPONSES:
        hub, side = _CLIENT_SIDES.get(client), _UPSTREAM_SIDES.get(upstream)
        return HubTranslator(None, side, hub) if hub is not None and side is not None else None
    return translator_for(client, upstream)


def can_serve(client: WireProtocol, upstream: WireProtocol) -> bool:
    """Whether a client of ``client`` can be served by an upstream speaking ``upstream``."""
    return client == upstream or (client, upstream) in _TRANSLATORS
